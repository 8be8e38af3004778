//! The checks a perf.data file passes before anything in it is used: the header, the attr
//! and id sections, every record's size (and AUXTRACE's trailing data) and every feature
//! section's bounds, in file and pipe mode. A damaged header or attr section is an error; damage
//! in the data stops the records there (the ones before it are read); a damaged feature section
//! is a warning. What passed is a [`Prepared`].

use std::collections::BTreeMap;

use super::features::{RawAttr, parse_event_desc};
use super::layout::{
    ATTR_SIZE_VER0, HEADER_SIZE, PIPE_HEADER_SIZE, feature, has_trailing, trailing_len, u16_at,
    u32_at, u64_at, user,
};

/// What the checks made of the file.
#[derive(Debug, Default)]
pub(super) struct Prepared {
    /// The whole records: file offsets of the first and past the last.
    pub(super) records: (usize, usize),
    /// Some records are zstd-compressed (`perf record -z`).
    pub(super) compressed: bool,
    /// Bodies of ID_INDEX records.
    pub(super) id_index: Vec<Vec<u8>>,
    pub(super) attrs: Vec<RawAttr>,
    pub(super) features: BTreeMap<u32, Vec<u8>>,
    pub(super) data_section: (u64, u64),
    pub(super) user_records: BTreeMap<u32, u64>,
    pub(super) build_id_records: Vec<Vec<u8>>,
    pub(super) truncated: Option<String>,
    pub(super) warnings: Vec<String>,
}

/// Why preparing failed.
pub(super) enum Fail {
    Unsupported(String),
    Damaged(String),
}

/// The header's attr section: entries of `attr_size` bytes, each an attr followed by the file
/// section of its ids. Everything must lie inside `b`.
pub(super) fn parse_attr_section(
    b: &[u8],
    attr_size: u64,
    (off, size): (u64, u64),
) -> Result<Vec<RawAttr>, String> {
    let inside = |o: u64, s: u64| o.checked_add(s).is_some_and(|e| e <= b.len() as u64);
    if !(u64::from(ATTR_SIZE_VER0) + 16..=4096 + 16).contains(&attr_size) {
        return Err(format!("attr size {attr_size} in the header"));
    }
    if !inside(off, size) || size == 0 || size % attr_size != 0 {
        return Err(format!(
            "the attr section (offset {off}, {size} bytes) does not fit the file"
        ));
    }
    let mut out = Vec::new();
    // Every attr's ids are copied: their sections together may hold no more than the file
    // does, or a few thousand attrs pointing at one large range would copy it each time.
    let mut ids_total = 0u64;
    for e in 0..size / attr_size {
        let at = (off + e * attr_size) as usize;
        let own = u64::from(u32_at(b, at + 4).unwrap_or(0));
        if own < u64::from(ATTR_SIZE_VER0) || own + 16 > attr_size {
            return Err(format!("attr {e} has size {own}"));
        }
        let ids_at = at + own as usize;
        let (ids_off, ids_size) = (
            u64_at(b, ids_at).unwrap_or(u64::MAX),
            u64_at(b, ids_at + 8).unwrap_or(u64::MAX),
        );
        if !inside(ids_off, ids_size) || ids_size % 8 != 0 {
            return Err(format!(
                "the ids of attr {e} (offset {ids_off}, {ids_size} bytes) do not fit the file"
            ));
        }
        ids_total += ids_size;
        if ids_total > b.len() as u64 {
            return Err(format!(
                "the id sections of the attrs add up to more than the file's {} bytes (at attr {e}: they overlap)",
                b.len()
            ));
        }
        let (Some(ids), Some(attr)) = (
            b.get(ids_off as usize..(ids_off + ids_size) as usize),
            b.get(at..at + own as usize),
        ) else {
            return Err(format!("attr {e} does not fit the file"));
        };
        let ids = ids.chunks_exact(8).filter_map(|c| u64_at(c, 0)).collect();
        out.push(RawAttr {
            bytes: attr.to_vec(),
            ids,
            name: None,
        });
    }
    Ok(out)
}

/// Walks records in `b[start..end]` by their sizes (plus AUXTRACE's trailing data), counting
/// perf's user records and keeping the ones with facts in them (ID_INDEX, HEADER_BUILD_ID).
/// Returns where the whole records end and, if they end early, why.
pub(super) fn walk_records(
    b: &[u8],
    start: usize,
    end: usize,
    p: &mut Prepared,
    on_record: impl FnMut(usize, u32, &[u8]),
) -> (usize, Option<String>) {
    walk_records_at(b, start, end, 0, p, on_record)
}

/// [`walk_records`] of bytes that start at file offset `base` (for the messages).
pub(super) fn walk_records_at(
    b: &[u8],
    start: usize,
    end: usize,
    base: usize,
    p: &mut Prepared,
    mut on_record: impl FnMut(usize, u32, &[u8]),
) -> (usize, Option<String>) {
    let mut pos = start;
    while pos < end {
        let (Some(t), Some(size)) = (u32_at(b, pos), u16_at(b, pos + 6)) else {
            return (
                pos,
                Some(format!(
                    "the data ends inside a record header at offset {}",
                    base + pos
                )),
            );
        };
        if pos + 8 > end {
            return (
                pos,
                Some(format!(
                    "the data ends inside a record header at offset {}",
                    base + pos
                )),
            );
        }
        let size = usize::from(size);
        if size < 8 {
            return (
                pos,
                Some(format!(
                    "the record at offset {} has size {size}",
                    base + pos
                )),
            );
        }
        let mut total = size;
        if has_trailing(t) {
            match trailing_len(t, b.get(pos..).unwrap_or_default())
                .filter(|_| size >= 16)
                .and_then(|aux| usize::try_from(aux).ok())
                .and_then(|aux| size.checked_add(aux))
            {
                Some(n) => total = n,
                None => {
                    return (
                        pos,
                        Some(format!(
                            "the {} record at offset {} is damaged",
                            user::name(t),
                            base + pos
                        )),
                    );
                }
            }
        }
        let (Some(whole), Some(own)) = (
            pos.checked_add(total)
                .filter(|&e| e <= end)
                .and_then(|e| b.get(pos..e)),
            b.get(pos..pos + size),
        ) else {
            return (
                pos,
                Some(format!(
                    "the record at offset {} is cut short ({} of {total} bytes)",
                    base + pos,
                    end - pos
                )),
            );
        };
        if t >= 64 {
            *p.user_records.entry(t).or_default() += 1;
            match t {
                user::ID_INDEX => p.id_index.push(own.get(8..).unwrap_or_default().to_vec()),
                user::HEADER_BUILD_ID => p.build_id_records.push(own.to_vec()),
                user::COMPRESSED | user::COMPRESSED2 => p.compressed = true,
                // A pipe's tracing data: the bytes after the record, as much as it says.
                user::HEADER_TRACING_DATA => {
                    let n = u32_at(own, 8).unwrap_or(0) as usize;
                    let data = whole.get(size..).unwrap_or_default();
                    let data = data.get(..n).unwrap_or(data);
                    p.features.insert(feature::TRACING_DATA, data.to_vec());
                }
                _ => {}
            }
        }
        on_record(pos, t, whole);
        pos += total;
    }
    (pos, None)
}

/// Reads the feature sections the header's bits announce from the table at `table_off` (one
/// 16-byte entry, offset and size, per set bit, in bit order). The table's place follows from
/// the data section's, so one damaged data size puts it on garbage and every entry fails: the
/// sections that cannot be read are one warning, naming them all, not one line each.
fn read_feature_table(b: &[u8], table_off: u64, bits: [u64; 4], p: &mut Prepared) {
    let len = b.len() as u64;
    let mut lost = Vec::new();
    let mut cut = false;
    let mut k = 0u64;
    let mut budget = len.saturating_sub(table_off);
    for (w, word) in bits.iter().enumerate() {
        for bit in 0..64 {
            if word & (1 << bit) == 0 {
                continue;
            }
            let f = (w * 64 + bit) as u32;
            let entry = table_off.saturating_add(16 * k);
            k += 1;
            let at = usize::try_from(entry).unwrap_or(usize::MAX);
            let (Some(off), Some(size)) = (u64_at(b, at), u64_at(b, at.saturating_add(8))) else {
                cut = true;
                lost.push(f);
                continue;
            };
            // perf writes the sections after the table, one after the other: one that starts
            // before the table or lies past the end of the file is damage, and together they
            // cannot hold more than the bytes after the table (a damaged table could name the
            // whole file for every one of 256 features).
            if off < table_off || off.checked_add(size).is_none_or(|e| e > len) || size > budget {
                lost.push(f);
                continue;
            }
            let Some(section) = b.get(off as usize..(off + size) as usize) else {
                lost.push(f);
                continue;
            };
            budget -= size;
            p.features.insert(f, section.to_vec());
        }
    }
    let names: Vec<String> = lost.iter().map(|&f| feature::name(f)).collect();
    let where_ = if table_off.saturating_add(16) > len {
        format!("the feature table at offset {table_off} lies outside the file ({len} bytes)")
    } else if cut && lost.len() == 1 {
        format!("the feature table at offset {table_off} is cut short by the end of the file")
    } else if cut {
        format!(
            "the feature table at offset {table_off} is cut short by the end of the file and its entries point outside it"
        )
    } else if lost.len() == 1 {
        format!(
            "its entry in the feature table at offset {table_off} points outside the sections after it"
        )
    } else {
        format!(
            "their entries in the feature table at offset {table_off} point outside the sections after it"
        )
    };
    match lost.len() {
        0 => {}
        1 => p.warnings.push(format!(
            "the {} feature section is unreadable ({where_}); not used",
            names.join("")
        )),
        n => p.warnings.push(format!(
            "{n} feature sections unreadable ({where_}; a damaged data size in the header moves the table): {} not used",
            names.join(", ")
        )),
    }
}

/// Checks a file-mode perf.data: header, attrs, feature sections and every record's size.
pub(super) fn prepare_file(b: &[u8]) -> Result<Prepared, Fail> {
    prepare_file_with(b, &mut |p, start, end| {
        walk_records(b, start, end, p, |_, _, _| {})
    })
}

/// The walk over the data section's records that [`prepare_file_with`] makes, once the attrs
/// and features are read: from `start` to at most `end`, returning where the whole records
/// end and why they end early.
pub(super) type DataWalk<'a> =
    dyn FnMut(&mut Prepared, usize, usize) -> (usize, Option<String>) + 'a;

/// [`prepare_file`] with the data section walked by `walk` (from the file in chunks when `b`
/// does not hold it).
pub(super) fn prepare_file_with(b: &[u8], walk: &mut DataWalk<'_>) -> Result<Prepared, Fail> {
    let len = b.len() as u64;
    if len < HEADER_SIZE {
        return Err(Fail::Damaged(format!(
            "the file ends inside its header ({len} bytes, the header needs {HEADER_SIZE})"
        )));
    }
    let h = |at: usize| u64_at(b, at).unwrap_or(0);
    if h(8) != HEADER_SIZE {
        return Err(Fail::Unsupported(format!(
            "a perf.data header of {} bytes (this build reads {HEADER_SIZE})",
            h(8)
        )));
    }
    let attr_size = h(16);
    let attr_section = (h(24), h(32));
    let (data_off, mut data_size) = (h(40), h(48));
    let feature_bits = [h(72), h(80), h(88), h(96)];
    if data_off < HEADER_SIZE || data_off > len {
        return Err(Fail::Damaged(format!(
            "the data section starts at offset {data_off}, outside the file ({len} bytes)"
        )));
    }
    let mut p = Prepared::default();
    let mut keep_features = true;
    if data_size == 0 && len > data_off {
        p.truncated = Some(
            "the header has no data size (perf record did not finish?); the records up to the end of the file are read, the feature sections are missing"
                .into(),
        );
        data_size = len - data_off;
        keep_features = false;
    } else if data_off.checked_add(data_size).is_none_or(|e| e > len) {
        p.truncated = Some(format!(
            "the data section needs {data_size} bytes from offset {data_off} but the file ends after {}; the feature sections (names, build-ids, ...) are lost",
            len - data_off
        ));
        data_size = len - data_off;
        keep_features = false;
    }
    let table_off = data_off + data_size;
    if keep_features {
        read_feature_table(b, table_off, feature_bits, &mut p);
    }
    let desc = p
        .features
        .get(&feature::EVENT_DESC)
        .map(|d| parse_event_desc(d));
    let from_desc = match desc {
        Some(Some(attrs)) => Some(attrs),
        Some(None) => {
            p.features.remove(&feature::EVENT_DESC);
            p.warnings
                .push("the EVENT_DESC section is damaged: event names are lost".into());
            None
        }
        None => None,
    };
    // The attrs are read before the records are walked, so the walk can decode them (and
    // count them as it checks them: one pass over the data section). They must lie before
    // the end of the data section.
    let prefix = b.get(..(data_off + data_size) as usize).unwrap_or(b);
    let from_section = parse_attr_section(prefix, attr_size, attr_section);
    p.attrs = match (from_desc, from_section) {
        (Some(a), _) => a,
        (None, Ok(a)) => a,
        (None, Err(why)) => return Err(Fail::Damaged(why)),
    };
    let (end, stop) = walk(&mut p, data_off as usize, (data_off + data_size) as usize);
    if let Some(why) = stop {
        p.truncated
            .get_or_insert_with(|| format!("{why}; the records before it are read"));
    }
    p.data_section = (data_off, end as u64 - data_off);
    p.records = (data_off as usize, end);
    Ok(p)
}

/// Checks a pipe-mode perf.data: its attr and feature records and every record's size.
pub(super) fn prepare_pipe(b: &[u8]) -> Result<Prepared, Fail> {
    prepare_pipe_with(b, &mut |p, start, end, on_record| {
        walk_records(b, start, end, p, on_record)
    })
}

/// A walk over a stream's records from `start` to at most `end`, calling the function with
/// each record's file offset, type and bytes; returns where the whole records end and why
/// they end early.
pub(super) type StreamWalk<'a> = dyn FnMut(&mut Prepared, usize, usize, &mut dyn FnMut(usize, u32, &[u8])) -> (usize, Option<String>)
    + 'a;

/// [`prepare_pipe`] with the records walked by `walk` (from the file in chunks when `b` holds
/// only the header, zeros after it: `b` is as long as the file).
pub(super) fn prepare_pipe_with(b: &[u8], walk: &mut StreamWalk<'_>) -> Result<Prepared, Fail> {
    let size = u64_at(b, 8).ok_or_else(|| {
        Fail::Damaged(format!(
            "the file ends inside its header ({} bytes)",
            b.len()
        ))
    })?;
    if size != PIPE_HEADER_SIZE {
        return Err(Fail::Unsupported(format!(
            "a perf.data pipe header of {size} bytes (this build reads {PIPE_HEADER_SIZE})"
        )));
    }
    let mut p = Prepared::default();
    let mut names: Vec<(Vec<u64>, String)> = Vec::new();
    let mut warnings = Vec::new();
    let mut attrs = Vec::new();
    let mut features = BTreeMap::new();
    let (end, stop) = walk(&mut p, 16, b.len(), &mut |_, t, rec| {
        let body = rec.get(8..).unwrap_or_default();
        match t {
            user::HEADER_ATTR => {
                let own = u32_at(body, 4).unwrap_or(0) as usize;
                if let (Some(attr), Some(ids)) = (body.get(..own), body.get(own..))
                    && own >= ATTR_SIZE_VER0 as usize
                {
                    attrs.push(RawAttr {
                        bytes: attr.to_vec(),
                        ids: ids.chunks_exact(8).filter_map(|c| u64_at(c, 0)).collect(),
                        name: None,
                    });
                } else {
                    warnings.push(format!("a HEADER_ATTR record has attr size {own}; dropped"));
                }
            }
            user::HEADER_FEATURE => {
                let f = u64_at(body, 0).unwrap_or(u64::MAX);
                let data = body.get(8..).unwrap_or_default();
                if f == u64::from(feature::EVENT_DESC) {
                    match parse_event_desc(data) {
                        Some(d) => {
                            names.extend(d.into_iter().filter_map(|a| Some((a.ids, a.name?))))
                        }
                        None => {
                            warnings.push(
                                "the EVENT_DESC record is damaged: event names are lost".into(),
                            );
                        }
                    }
                }
                // perf ends the features with an empty HEADER_LAST_FEATURE record.
                if let Ok(f) = u32::try_from(f)
                    && !data.is_empty()
                {
                    features.insert(f, data.to_vec());
                }
            }
            _ => {}
        }
    });
    if let Some(why) = stop {
        p.truncated = Some(format!("{why}; the records before it are read"));
    }
    for a in &mut attrs {
        a.name = names
            .iter()
            .find(|(ids, _)| !ids.is_empty() && a.ids.first() == ids.first())
            .map(|(_, n)| n.clone());
    }
    if attrs.is_empty() {
        return Err(Fail::Damaged(
            "the stream has no HEADER_ATTR record: there are no events".into(),
        ));
    }
    p.attrs = attrs;
    // The walk kept the tracing data of a HEADER_TRACING_DATA record among the features.
    features.append(&mut p.features);
    p.features = features;
    p.warnings = warnings;
    p.data_section = (16, (end - 16) as u64);
    p.records = (16, end);
    Ok(p)
}
