//! Side information stored next to the samples: the host, the kernel's symbols and modules,
//! the build-id of every mapped file, and the existing mappings of tasks recorded with `-p`/`-t`.
//!
//! A report may run on another machine or after the binaries changed. The build-id (the
//! `NT_GNU_BUILD_ID` ELF note) lets it check that the file it symbolizes is the one that ran;
//! `/proc/kallsyms` is snapshotted because kernel addresses mean nothing without it (under
//! `kptr_restrict` the addresses read as zero, which the report must say rather than guess).
//!
//! Tasks attached with `-p`/`-t` mapped their files before the events were opened, so the
//! kernel never sends MMAP2 or COMM records for them; like perf, hrec synthesizes those records
//! from `/proc/PID/maps` and `/proc/PID/task/TID/comm`, in the kernel's byte layout with the
//! sample_id trailer of the tracking event, so the decoder treats them like kernel records.

use std::path::Path;

use crate::event::Attr;
use crate::event::attr::sample;

/// Host facts for the file header.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostInfo {
    /// `/proc/sys/kernel/hostname`
    pub hostname: String,
    /// `/proc/sys/kernel/osrelease`
    pub kernel_release: String,
    /// `model name` from `/proc/cpuinfo`
    pub cpu_model: String,
}

fn read_trim(p: &Path) -> String {
    std::fs::read_to_string(p)
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// Reads the host facts from a procfs tree.
pub fn host_info(procfs_root: &Path) -> HostInfo {
    let cpuinfo = std::fs::read_to_string(procfs_root.join("cpuinfo")).unwrap_or_default();
    let cpu_model = cpuinfo
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == "model name").then(|| v.trim().to_string())
        })
        .unwrap_or_default();
    HostInfo {
        hostname: read_trim(&procfs_root.join("sys/kernel/hostname")),
        kernel_release: read_trim(&procfs_root.join("sys/kernel/osrelease")),
        cpu_model,
    }
}

/// The GNU build-id of an ELF file, as lowercase hex; `None` when the file is gone, not ELF,
/// or has no build-id note.
pub fn build_id(path: &Path) -> Option<String> {
    use object::Object;
    let file = std::fs::File::open(path).ok()?;
    let cache = object::ReadCache::new(file);
    let obj = object::File::parse(&cache).ok()?;
    let id = obj.build_id().ok()??;
    Some(id.iter().map(|b| format!("{b:02x}")).collect())
}

/// The `build-ids` side block: one `build_id path` line per file that has one.
pub fn build_ids<'a>(files: impl IntoIterator<Item = &'a [u8]>) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut out = String::new();
    for f in files {
        let p = Path::new(std::ffi::OsStr::from_bytes(f));
        if let Some(id) = build_id(p) {
            out.push_str(&id);
            out.push(' ');
            out.push_str(&String::from_utf8_lossy(f));
            out.push('\n');
        }
    }
    out
}

/// The part of `/proc/kallsyms` a report of these kernel addresses needs: for every address,
/// the symbol that contains it (the last one starting at or below it) and the one after it
/// (where it ends), plus `_text`/`_stext`/`_etext`, in kallsyms' own line format. A full
/// snapshot is 5 MB (1 MB compressed), more than the samples of a typical recording; the
/// subset is a few KB. Empty when there are no kernel addresses or kallsyms hides them
/// (`kernel.kptr_restrict`: every address reads as 0).
pub fn kallsyms_subset(kallsyms: &str, addrs: &std::collections::BTreeSet<u64>) -> String {
    let mut syms: Vec<(u64, &str)> = kallsyms
        .lines()
        .filter_map(|l| {
            let a = u64::from_str_radix(l.split_whitespace().next()?, 16).ok()?;
            Some((a, l))
        })
        .collect();
    if addrs.is_empty() || syms.iter().all(|(a, _)| *a == 0) {
        return String::new();
    }
    syms.sort_by_key(|(a, _)| *a);
    let mut keep = std::collections::BTreeSet::new();
    for (i, (_, l)) in syms.iter().enumerate() {
        let name = l.split_whitespace().nth(2).unwrap_or("");
        if matches!(name, "_text" | "_stext" | "_etext") {
            keep.insert(i);
        }
    }
    for &a in addrs {
        let i = syms.partition_point(|(s, _)| *s <= a);
        if i > 0 {
            keep.insert(i - 1);
        }
        if i < syms.len() {
            keep.insert(i);
        }
    }
    let mut out = String::new();
    for i in keep {
        out.push_str(syms[i].1);
        out.push('\n');
    }
    out
}

/// Encodes records in the kernel's layout with the sample_id trailer of `attr`.
#[derive(Debug, Clone, Copy)]
pub struct Synth {
    sample_type: u64,
    id: u64,
}

const MMAP2: u32 = 10;
const COMM: u32 = 3;
/// `PERF_RECORD_MISC_USER`
const MISC_USER: u16 = 2;

impl Synth {
    /// Records that look as if `attr`'s event with this `id` had produced them.
    pub fn new(attr: &Attr, id: u64) -> Synth {
        Synth {
            sample_type: attr.sample_type,
            id,
        }
    }

    fn finish(&self, ty: u32, misc: u16, mut body: Vec<u8>, pid: u32, tid: u32, out: &mut Vec<u8>) {
        while !body.len().is_multiple_of(8) {
            body.push(0);
        }
        let st = self.sample_type;
        // Trailer order (perf-abi.md 5.4): TID, TIME, ID, STREAM_ID, CPU, IDENTIFIER.
        if st & sample::TID != 0 {
            body.extend_from_slice(&pid.to_le_bytes());
            body.extend_from_slice(&tid.to_le_bytes());
        }
        if st & sample::TIME != 0 {
            body.extend_from_slice(&0u64.to_le_bytes());
        }
        if st & sample::ID != 0 {
            body.extend_from_slice(&self.id.to_le_bytes());
        }
        if st & sample::STREAM_ID != 0 {
            body.extend_from_slice(&self.id.to_le_bytes());
        }
        if st & sample::CPU != 0 {
            body.extend_from_slice(&u64::MAX.to_le_bytes()[..4]);
            body.extend_from_slice(&0u32.to_le_bytes());
        }
        if st & sample::IDENTIFIER != 0 {
            body.extend_from_slice(&self.id.to_le_bytes());
        }
        let size = 8 + body.len();
        if size > usize::from(u16::MAX) {
            return;
        }
        out.extend_from_slice(&ty.to_le_bytes());
        out.extend_from_slice(&misc.to_le_bytes());
        out.extend_from_slice(&(size as u16).to_le_bytes());
        out.extend_from_slice(&body);
    }

    /// A COMM record.
    pub fn comm(&self, pid: u32, tid: u32, comm: &str, out: &mut Vec<u8>) {
        let mut b = Vec::new();
        b.extend_from_slice(&pid.to_le_bytes());
        b.extend_from_slice(&tid.to_le_bytes());
        b.extend_from_slice(comm.as_bytes());
        b.push(0);
        self.finish(COMM, MISC_USER, b, pid, tid, out);
    }

    /// An MMAP2 record (inode form) for one `/proc/PID/maps` line.
    pub fn mmap2(&self, pid: u32, m: &MapsLine, out: &mut Vec<u8>) {
        let mut b = Vec::new();
        b.extend_from_slice(&pid.to_le_bytes());
        b.extend_from_slice(&pid.to_le_bytes());
        b.extend_from_slice(&m.start.to_le_bytes());
        b.extend_from_slice(&(m.end - m.start).to_le_bytes());
        b.extend_from_slice(&m.offset.to_le_bytes());
        b.extend_from_slice(&m.major.to_le_bytes());
        b.extend_from_slice(&m.minor.to_le_bytes());
        b.extend_from_slice(&m.inode.to_le_bytes());
        b.extend_from_slice(&0u64.to_le_bytes());
        b.extend_from_slice(&m.prot.to_le_bytes());
        b.extend_from_slice(&m.flags.to_le_bytes());
        b.extend_from_slice(m.path.as_bytes());
        b.push(0);
        self.finish(MMAP2, MISC_USER, b, pid, pid, out);
    }
}

/// One line of `/proc/PID/maps`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MapsLine {
    /// Start address.
    pub start: u64,
    /// End address.
    pub end: u64,
    /// `PROT_*` bits.
    pub prot: u32,
    /// `MAP_SHARED` or `MAP_PRIVATE`.
    pub flags: u32,
    /// File offset.
    pub offset: u64,
    /// Device major.
    pub major: u32,
    /// Device minor.
    pub minor: u32,
    /// Inode.
    pub inode: u64,
    /// Path or pseudo-name (`[stack]`); empty for anonymous memory.
    pub path: String,
}

/// Parses one maps line; `None` for a malformed one.
pub fn parse_maps_line(line: &str) -> Option<MapsLine> {
    let mut it = line.splitn(6, ' ');
    let range = it.next()?;
    let perms = it.next()?.as_bytes();
    let offset = u64::from_str_radix(it.next()?, 16).ok()?;
    let (maj, min) = it.next()?.split_once(':')?;
    let inode = it.next()?.parse().ok()?;
    let path = it.next().unwrap_or("").trim_start().to_string();
    let (s, e) = range.split_once('-')?;
    if perms.len() < 4 {
        return None;
    }
    let mut prot = 0;
    if perms[0] == b'r' {
        prot |= libc::PROT_READ as u32;
    }
    if perms[1] == b'w' {
        prot |= libc::PROT_WRITE as u32;
    }
    if perms[2] == b'x' {
        prot |= libc::PROT_EXEC as u32;
    }
    let flags = if perms[3] == b's' {
        libc::MAP_SHARED as u32
    } else {
        libc::MAP_PRIVATE as u32
    };
    Some(MapsLine {
        start: u64::from_str_radix(s, 16).ok()?,
        end: u64::from_str_radix(e, 16).ok()?,
        prot,
        flags,
        offset,
        major: u32::from_str_radix(maj, 16).ok()?,
        minor: u32::from_str_radix(min, 16).ok()?,
        inode,
        path,
    })
}

/// COMM and executable MMAP2 records for existing tasks (`-p`, `-t`): what the kernel would
/// have sent had the events been open since their exec.
pub fn synthesize_tasks(procfs_root: &Path, tids: &[i32], synth: &Synth) -> Vec<u8> {
    let mut out = Vec::new();
    let mut seen_pids = std::collections::BTreeSet::new();
    for &tid in tids {
        if tid < 0 {
            continue;
        }
        let status =
            std::fs::read_to_string(procfs_root.join(format!("{tid}/status"))).unwrap_or_default();
        let pid = status
            .lines()
            .find_map(|l| l.strip_prefix("Tgid:"))
            .and_then(|v| v.trim().parse::<u32>().ok())
            .unwrap_or(tid as u32);
        let comm = read_trim(&procfs_root.join(format!("{pid}/task/{tid}/comm")));
        synth.comm(pid, tid as u32, &comm, &mut out);
        if seen_pids.insert(pid) {
            let maps = std::fs::read_to_string(procfs_root.join(format!("{pid}/maps")))
                .unwrap_or_default();
            for m in maps.lines().filter_map(parse_maps_line) {
                if m.prot & libc::PROT_EXEC as u32 != 0 && !m.path.is_empty() {
                    synth.mmap2(pid, &m, &mut out);
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kallsyms_subset_keeps_containing_and_next_symbols() {
        let ks = "ffffffff81000000 T _text\nffffffff81001000 T do_one\nffffffff81002000 t helper\nffffffff81003000 T do_two\nffffffff81004000 T last\nffffffffc0001000 t mod_fn\t[kvm]\n";
        let addrs = [0xffff_ffff_8100_2010u64, 0xffff_ffff_c000_1004]
            .into_iter()
            .collect();
        let sub = kallsyms_subset(ks, &addrs);
        assert_eq!(
            sub,
            "ffffffff81000000 T _text\nffffffff81002000 t helper\nffffffff81003000 T do_two\nffffffffc0001000 t mod_fn\t[kvm]\n"
        );
        let hidden = "0000000000000000 T _text\n0000000000000000 T do_one\n";
        assert_eq!(kallsyms_subset(hidden, &addrs), "");
        assert_eq!(kallsyms_subset(ks, &Default::default()), "");
    }

    #[test]
    fn maps_lines_parse() {
        let m = parse_maps_line(
            "7f1c2a000000-7f1c2a028000 r-xp 00028000 fd:01 1835032                    /usr/lib/x86_64-linux-gnu/libc.so.6",
        )
        .unwrap();
        assert_eq!(m.start, 0x7f1c_2a00_0000);
        assert_eq!(m.end, 0x7f1c_2a02_8000);
        assert_eq!(m.offset, 0x28000);
        assert_eq!((m.major, m.minor, m.inode), (0xfd, 1, 1_835_032));
        assert_eq!(m.prot, (libc::PROT_READ | libc::PROT_EXEC) as u32);
        assert_eq!(m.flags, libc::MAP_PRIVATE as u32);
        assert_eq!(m.path, "/usr/lib/x86_64-linux-gnu/libc.so.6");
        let anon = parse_maps_line("7ffd1000-7ffd2000 rw-p 00000000 00:00 0 ").unwrap();
        assert_eq!(anon.path, "");
        assert!(parse_maps_line("garbage").is_none());
    }

    #[test]
    fn own_executable_has_a_build_id() {
        let exe = std::env::current_exe().unwrap();
        let id = build_id(&exe).expect("rustc links test binaries with a build-id");
        assert!(
            id.len() >= 16 && id.chars().all(|c| c.is_ascii_hexdigit()),
            "{id}"
        );
        assert_eq!(build_id(Path::new("/nonexistent")), None);
    }

    #[test]
    fn synthesized_records_have_the_tracking_trailer() {
        let mut a = Attr::new(1, 0);
        a.sample_type = sample::IP | sample::TID | sample::TIME | sample::IDENTIFIER;
        let s = Synth::new(&a, 77);
        let mut out = Vec::new();
        s.comm(10, 11, "worker", &mut out);
        let size = usize::from(u16::from_le_bytes([out[6], out[7]]));
        assert_eq!(size, out.len());
        assert_eq!(size % 8, 0);
        // Last u64 is the IDENTIFIER, before it TIME, before it pid/tid.
        let last = u64::from_le_bytes(out[size - 8..].try_into().unwrap());
        assert_eq!(last, 77);
        assert_eq!(&out[size - 24..size - 20], &10u32.to_le_bytes());
        assert_eq!(&out[16..22], b"worker");
    }
}
