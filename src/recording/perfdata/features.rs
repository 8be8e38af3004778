//! The feature sections and the records perf writes about the recording (the attrs of
//! EVENT_DESC, the build-id table, groups, PMU mappings, the command line, ID_INDEX), parsed by
//! hrec itself: every count is checked against the bytes that hold it before anything is
//! allocated for it, so a damaged section loses only itself.

use std::collections::HashMap;

use super::layout::{ATTR_SIZE_VER0, hex, string_at, u16_at, u32_at, u64_at};

/// `PERF_RECORD_MISC_BUILD_ID_SIZE` in a build-id record's misc.
pub(super) const MISC_BUILD_ID_SIZE: u16 = 1 << 15;

/// One entry of the build-id table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildIdEntry {
    /// Lowercase hex.
    pub build_id: String,
    /// The file (`[kernel.kallsyms]` for the kernel, `[vdso]`, a module or a path).
    pub path: String,
    /// A kernel-side entry (the kernel image or a module).
    pub kernel: bool,
}

/// A group as `GROUP_DESC` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupDesc {
    /// The group's name as perf wrote it (often `{a,b,c}` or empty).
    pub name: String,
    /// Index of the leader in the event list.
    pub leader: usize,
    /// Number of events, leader included.
    pub members: usize,
}

/// An attr as the file stores it.
#[derive(Debug, Clone, Default)]
pub(super) struct RawAttr {
    pub(super) bytes: Vec<u8>,
    pub(super) ids: Vec<u64>,
    pub(super) name: Option<String>,
}

/// `EVENT_DESC`: u32 nr, u32 attr_size, then per event the attr, u32 nr_ids, the name and
/// the ids. `None` when any count does not fit the section.
pub(super) fn parse_event_desc(b: &[u8]) -> Option<Vec<RawAttr>> {
    let nr = u32_at(b, 0)? as usize;
    let attr_size = u32_at(b, 4)? as usize;
    if !(ATTR_SIZE_VER0 as usize..=4096).contains(&attr_size) || nr == 0 {
        return None;
    }
    // Each event takes at least the attr, nr_ids and an empty string's length.
    if nr > b.len() / (attr_size + 8) {
        return None;
    }
    let mut at = 8usize;
    let mut out = Vec::with_capacity(nr);
    for _ in 0..nr {
        let attr = b.get(at..at.checked_add(attr_size)?)?;
        let own = u32_at(attr, 4)? as usize;
        if own < ATTR_SIZE_VER0 as usize || own > attr_size {
            return None;
        }
        at += attr_size;
        let nr_ids = u32_at(b, at)? as usize;
        at += 4;
        let name = string_at(b, &mut at)?;
        let ids_bytes = b.get(at..at.checked_add(nr_ids.checked_mul(8)?)?)?;
        at += ids_bytes.len();
        out.push(RawAttr {
            bytes: attr.get(..own)?.to_vec(),
            ids: ids_bytes
                .chunks_exact(8)
                .filter_map(|c| u64_at(c, 0))
                .collect(),
            name: Some(name),
        });
    }
    Some(out)
}

/// The build-id table: records of header, pid, 24 bytes of build-id (the length at byte 20
/// when misc has `BUILD_ID_SIZE`, else the 20 bytes less trailing zero words) and the path.
pub(super) fn parse_build_ids(b: &[u8], out: &mut Vec<BuildIdEntry>) {
    let mut at = 0usize;
    while let Some(size) = u16_at(b, at + 6) {
        let size = usize::from(size);
        let Some(rec) = b.get(at..at + size).filter(|_| size >= 36) else {
            break;
        };
        let misc = u16_at(rec, 4).unwrap_or(0);
        let (Some(id), Some(path)) = (rec.get(12..36), rec.get(36..)) else {
            break;
        };
        let n = if misc & MISC_BUILD_ID_SIZE != 0 {
            id.get(20).map_or(20, |&n| usize::from(n).min(20))
        } else {
            let mut n = 20;
            while n >= 4 && id.get(n - 4..n).is_some_and(|w| w.iter().all(|&x| x == 0)) {
                n -= 4;
            }
            n
        };
        let path = path.split(|&c| c == 0).next().unwrap_or(path);
        out.push(BuildIdEntry {
            build_id: hex(id.get(..n).unwrap_or(id)),
            path: String::from_utf8_lossy(path).into_owned(),
            kernel: misc & 7 == 1 || misc & 7 == 4,
        });
        at += size;
    }
}

/// `GROUP_DESC`: u32 nr, then per group its name, leader index and member count.
pub(super) fn parse_group_desc(b: &[u8], events: usize) -> Vec<GroupDesc> {
    let mut out = Vec::new();
    let Some(nr) = u32_at(b, 0) else { return out };
    let mut at = 4usize;
    for _ in 0..nr.min(4096) {
        let Some(name) = string_at(b, &mut at) else {
            break;
        };
        let (Some(leader), Some(members)) = (u32_at(b, at), u32_at(b, at + 4)) else {
            break;
        };
        at += 8;
        let (leader, members) = (leader as usize, members as usize);
        if leader < events && members >= 1 && leader + members <= events {
            out.push(GroupDesc {
                name,
                leader,
                members,
            });
        }
    }
    out
}

/// `PMU_MAPPINGS`: u32 nr, then per PMU its type and name.
pub(super) fn parse_pmu_mappings(b: &[u8]) -> Vec<(u32, String)> {
    let mut out = Vec::new();
    let Some(nr) = u32_at(b, 0) else { return out };
    let mut at = 4usize;
    for _ in 0..nr.min(65536) {
        let Some(t) = u32_at(b, at) else { break };
        at += 4;
        let Some(name) = string_at(b, &mut at) else {
            break;
        };
        out.push((t, name));
    }
    out.sort();
    out
}

/// `CMDLINE`: u32 nr, then nr strings.
pub(super) fn parse_string_list(b: &[u8]) -> Vec<String> {
    let mut out = Vec::new();
    let Some(nr) = u32_at(b, 0) else { return out };
    let mut at = 4usize;
    for _ in 0..nr.min(1 << 16) {
        match string_at(b, &mut at) {
            Some(s) => out.push(s),
            None => break,
        }
    }
    out
}

/// `ID_INDEX`: u64 nr, then nr entries of {id, idx, cpu, tid}.
pub(super) fn parse_id_index(body: &[u8], out: &mut HashMap<u64, (i32, i32)>) {
    let Some(nr) = u64_at(body, 0) else { return };
    let Some(entries) = body.get(8..) else { return };
    let nr = usize::try_from(nr)
        .unwrap_or(usize::MAX)
        .min(entries.len() / 32);
    for e in entries.chunks_exact(32).take(nr) {
        let (Some(id), Some(cpu), Some(tid)) = (u64_at(e, 0), u64_at(e, 16), u64_at(e, 24)) else {
            continue;
        };
        out.insert(id, (cpu as i64 as i32, tid as i64 as i32));
    }
}
