//! `hrec script`: every sample in time order, in `perf script`'s default layout, so tools that
//! read perf script output (inferno-collapse-perf, FlameGraph's stackcollapse-perf.pl,
//! speedscope) read hrec's too.
//!
//! A sample is one line `comm tid [cpu] secs.usecs: period event: ` followed, without
//! callchains, by `ip symbol+offset (dso)` on the same line, or, with callchains, by one
//! `\taddress symbol+offset (dso)` line per frame and a blank line. Frames are the sampled
//! location then its callers; every location is expanded into its inline chain (innermost
//! first), the inlined functions on lines of their own, so a collapser builds the same stacks
//! as `hrec report --folded` / `hrec flamegraph`. An address no symbol covers is perf's
//! `[unknown]` (the report's header says why; flame graphs label it `[dso: reason]`).
//!
//! `-F` picks fields as perf does (`-F comm,tid,time,ip,sym`, or `-F +field` / `-F -field`
//! relative to the defaults), plus hrec's `weight`, `ins_lat`, `retire_lat` (the three parts of
//! `WEIGHT_STRUCT`) and `read` (the group values of a sampling-read group).

use std::fmt::Write as _;
use std::io::{self, Write};

use crate::analysis::hist::Filters;
use crate::analysis::profile::{Profile, ProfileOptions};
use crate::analysis::replay::{self, Item, Replay};
use crate::decode::Sample;
use crate::decode::{FileId, Record};
use crate::event::attr::sample;
use crate::recording::Recording;
use crate::symbol::symbolizer::Loc;

use super::flame;

/// A `-F` field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    /// Thread name.
    Comm,
    /// Process id.
    Pid,
    /// Thread id.
    Tid,
    /// CPU.
    Cpu,
    /// Time in seconds.
    Time,
    /// Period.
    Period,
    /// Event name.
    Event,
    /// Address.
    Ip,
    /// Symbol.
    Sym,
    /// `+0x..` after the symbol.
    Symoff,
    /// Shared object.
    Dso,
    /// WEIGHT / WEIGHT_STRUCT var1.
    Weight,
    /// WEIGHT_STRUCT instruction latency.
    InsLat,
    /// WEIGHT_STRUCT retire latency (bits 63:48).
    RetireLat,
    /// Group values of a sampling-read group.
    Read,
}

impl Field {
    const NAMES: [(&'static str, Field); 16] = [
        ("comm", Field::Comm),
        ("pid", Field::Pid),
        ("tid", Field::Tid),
        ("cpu", Field::Cpu),
        ("time", Field::Time),
        ("period", Field::Period),
        ("event", Field::Event),
        ("ip", Field::Ip),
        ("sym", Field::Sym),
        ("symoff", Field::Symoff),
        ("dso", Field::Dso),
        ("weight", Field::Weight),
        ("ins_lat", Field::InsLat),
        ("retire_lat", Field::RetireLat),
        ("read", Field::Read),
        ("group", Field::Read),
    ];

    /// perf script's default fields for a sampled event.
    pub const DEFAULT: [Field; 10] = [
        Field::Comm,
        Field::Tid,
        Field::Cpu,
        Field::Time,
        Field::Period,
        Field::Event,
        Field::Ip,
        Field::Sym,
        Field::Symoff,
        Field::Dso,
    ];
}

/// Parses `-F`: a list, or `+`/`-` changes to the defaults.
pub fn parse_fields(spec: &str) -> Result<Vec<Field>, String> {
    let relative = spec.trim_start().starts_with(['+', '-']);
    let mut out: Vec<Field> = if relative {
        Field::DEFAULT.to_vec()
    } else {
        Vec::new()
    };
    for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (op, name) = match part.as_bytes()[0] {
            b'+' => ('+', &part[1..]),
            b'-' => ('-', &part[1..]),
            _ => ('=', part),
        };
        let f = Field::NAMES
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, f)| *f)
            .ok_or_else(|| {
                let names: Vec<&str> = Field::NAMES.iter().map(|(n, _)| *n).collect();
                format!("-F: unknown field {name:?}; fields: {}", names.join(","))
            })?;
        match op {
            '-' => out.retain(|x| *x != f),
            _ => {
                if !out.contains(&f) {
                    out.push(f);
                }
            }
        }
    }
    Ok(out)
}

/// The frames of a location as script prints them: address, name, offset (outer functions
/// only), dso; with `with_inline` (`--inline`) the inline chain too, innermost first (perf
/// prints only the outer function unless asked).
fn frames_of(
    l: &Loc,
    with_inline: bool,
    chain: bool,
    out: &mut Vec<(u64, String, Option<u64>, String)>,
) {
    // With the inline chain every frame is named from DWARF, the function itself too, as
    // perf lists an address's inline chain; without it the function has its symbol-table
    // name, as perf prints a call-chain entry.
    // perf prints `[unknown]` for an address no symbol covers (the report says why).
    let addr = if chain { l.rel_addr } else { l.addr };
    if l.sym.is_none() {
        out.push((addr, "[unknown]".to_string(), None, l.dso_path.to_string()));
        return;
    }
    let mut names = Vec::new();
    flame::frame_names_pub(l, &mut names);
    if !with_inline {
        names = vec![match &l.sym {
            Some(_) => l.sym_name(),
            None => names.first().cloned().unwrap_or_default(),
        }];
    }
    // `names` is outer function first; script lists the innermost first.
    let n = names.len();
    for (i, name) in names.into_iter().rev().enumerate() {
        let outer = i == n - 1;
        if !outer && !with_inline {
            continue;
        }
        let off = (outer && l.sym.is_some()).then_some(l.sym_offset);
        // perf prints call-chain frames relative to their file, a lone sample's address as
        // it is, and the file by its path.
        out.push((addr, name, off, l.dso_path.to_string()));
    }
}

/// How samples are laid out besides their fields.
#[derive(Debug, Clone, Copy, Default)]
pub struct Layout {
    /// `--inline`: inlined functions as frames of their own.
    pub inline: bool,
    /// `--ns`: times to the nanosecond.
    pub ns: bool,
    /// `-G`/`--hide-call-graph`: one line per sample, its own location only.
    pub hide_call_graph: bool,
    /// `--show-mmap-events`: MMAP and MMAP2 records in the stream, as perf prints them.
    pub show_mmap: bool,
    /// `--show-task-events`: COMM, FORK and EXIT records in the stream, as perf prints them.
    pub show_task: bool,
}

/// Writes every sample. Returns the number of samples written.
pub fn script(
    rec: &Recording,
    fields: &[Field],
    profile_options: &ProfileOptions,
    filters: &Filters,
    layout: Layout,
    out: &mut dyn Write,
    errors: &mut Vec<String>,
) -> io::Result<u64> {
    let inline = layout.inline;
    // Fold once to learn every location and symbolize each once, then replay again and
    // print each sample as it streams by: the same replay gives the same location ids.
    let p: Profile = replay::build(rec, profile_options, &mut |_| {});
    let meta = rec.meta();
    // Event names are right-aligned to the longest of the file (once, not per sample).
    let event_width = meta.events.iter().map(|e| e.name.len()).max().unwrap_or(0);
    let has = |f: Field| fields.contains(&f);
    let mut line = String::new();
    let mut frames = Vec::new();
    let mut io_err = None;
    let mut n = 0u64;
    let mut r = Replay::new(rec, profile_options);
    if layout.show_mmap || layout.show_task {
        r = r.with_side_band();
    }
    // perf leaves the thread name unpadded above call-chain lines, side-band lines too.
    let chain_file = p.callchains && !layout.hide_call_graph && has(Field::Ip);
    r.run(rec, |item| {
        if io_err.is_some() {
            return;
        }
        let (s, ps) = match item {
            Item::Sample(s, ps) => (s, ps),
            Item::Error(e) => {
                if errors.len() < 10 {
                    errors.push(e.to_string());
                }
                return;
            }
            Item::SideBand(record, comm) => {
                line.clear();
                if side_band_line(&mut line, record, comm, fields, layout, chain_file)
                    && let Err(e) = out.write_all(line.as_bytes())
                {
                    io_err = Some(e);
                }
                return;
            }
        };
        if !filters.keep_sample(&p, ps.comm, ps.pid, ps.tid, ps.leaf) {
            return;
        }
        let ev = p.events[usize::from(ps.event)].index;
        n += 1;
        line.clear();
        let event = meta.events.get(ev).map_or("?", |e| e.name.as_str());
        let chain = p.callchains && s.callchain.is_some() && !layout.hide_call_graph;
        header(
            &mut line,
            fields,
            s,
            &p.comms[ps.comm as usize],
            (event, event_width),
            rec,
            (chain && has(Field::Ip), layout.ns),
        );
        frames.clear();
        frames_of(&p.locs[ps.leaf as usize], inline, chain, &mut frames);
        if chain {
            for &c in ps.callers {
                frames_of(&p.locs[c as usize], inline, chain, &mut frames);
            }
        }
        let frame_text =
            |line: &mut String, (addr, name, off, dso): &(u64, String, Option<u64>, String)| {
                if has(Field::Ip) {
                    let _ = write!(line, "{addr:>16x}");
                }
                if has(Field::Sym) {
                    let _ = write!(line, " {name}");
                    if has(Field::Symoff)
                        && let Some(o) = off
                    {
                        let _ = write!(line, "+{o:#x}");
                    }
                }
                if has(Field::Dso) {
                    let _ = write!(line, " ({dso})");
                }
            };
        if chain {
            line.push('\n');
            for f in &frames {
                line.push('\t');
                frame_text(&mut line, f);
                line.push('\n');
            }
            line.push('\n');
        } else {
            if has(Field::Ip) || has(Field::Sym) || has(Field::Dso) {
                line.push(' ');
                // Without callchains the sampled location is one line; inline frames are
                // joined innermost last, as perf does with its srcline-less default.
                if let Some(outer) = frames.last() {
                    frame_text(&mut line, outer);
                }
            }
            line.push('\n');
        }
        if let Err(e) = out.write_all(line.as_bytes()) {
            io_err = Some(e);
        }
    });
    match io_err {
        Some(e) => Err(e),
        None => Ok(n),
    }
}

/// `%#lx` as C prints it: `0` for zero, `0x..` otherwise.
fn c_hex(v: u64) -> String {
    if v == 0 {
        "0".to_string()
    } else {
        format!("{v:#x}")
    }
}

/// A side-band record as `perf script --show-mmap-events / --show-task-events` prints it:
/// the thread's name, tid, cpu and time from its sample_id, then perf's text of the record.
/// Returns false for records the layout does not show.
fn side_band_line(
    line: &mut String,
    r: &Record<'_>,
    comm: &str,
    fields: &[Field],
    layout: Layout,
    chain_file: bool,
) -> bool {
    let show = match r {
        Record::Mmap(_) | Record::Mmap2(_) => layout.show_mmap,
        Record::Comm(_) | Record::Fork(_) | Record::Exit(_) => layout.show_task,
        _ => false,
    };
    let Some(id) = r.sample_id().filter(|_| show) else {
        return false;
    };
    let has = |f: Field| fields.contains(&f);
    if has(Field::Comm) && chain_file {
        line.push_str(comm);
    } else if has(Field::Comm) {
        let _ = write!(line, "{comm:>16}");
    }
    let signed = |v: Option<u32>| v.map(|x| x as i32);
    match (
        has(Field::Pid),
        has(Field::Tid),
        signed(id.pid),
        signed(id.tid),
    ) {
        (true, true, Some(pid), Some(tid)) => {
            let _ = write!(line, " {pid:>5}/{tid:<5}");
        }
        (true, false, Some(pid), _) => {
            let _ = write!(line, " {pid:>5}");
        }
        (false, true, _, Some(tid)) => {
            let _ = write!(line, " {tid:>5}");
        }
        _ => {}
    }
    if has(Field::Cpu)
        && let Some(cpu) = id.cpu
    {
        let _ = write!(line, " [{cpu:03}]");
    }
    if has(Field::Time)
        && let Some(t) = id.time
    {
        let (secs, frac) = (t / 1_000_000_000, t % 1_000_000_000);
        let _ = if layout.ns {
            write!(line, " {secs:>5}.{frac:09}:")
        } else {
            write!(line, " {secs:>5}.{:06}:", frac / 1000)
        };
    }
    line.push_str(" PERF_RECORD_");
    let id2 = |pid: u32, tid: u32| format!("{}/{}", pid as i32, tid as i32);
    let _ = match r {
        Record::Comm(c) => write!(
            line,
            "COMM{}: {}:{}/{}",
            if c.exec { " exec" } else { "" },
            String::from_utf8_lossy(c.comm),
            c.pid as i32,
            c.tid as i32
        ),
        Record::Fork(t) | Record::Exit(t) => write!(
            line,
            "{}({}:{}):({}:{})",
            if matches!(r, Record::Fork(_)) {
                "FORK"
            } else {
                "EXIT"
            },
            t.pid as i32,
            t.tid as i32,
            t.ppid as i32,
            t.ptid as i32
        ),
        Record::Mmap(m) => write!(
            line,
            "MMAP {}: [{}({}) @ {}]: {} {}",
            id2(m.pid, m.tid),
            c_hex(m.addr),
            c_hex(m.len),
            c_hex(m.pgoff),
            if m.data { 'r' } else { 'x' },
            String::from_utf8_lossy(m.filename)
        ),
        Record::Mmap2(m) => {
            let file = match m.file {
                FileId::Inode {
                    maj,
                    min,
                    ino,
                    ino_generation,
                } => format!("{maj:02x}:{min:02x} {ino} {ino_generation}"),
                FileId::BuildId(b) => {
                    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
                    format!("<{hex}>")
                }
            };
            let bit = |mask: u32, c: char| if m.prot & mask != 0 { c } else { '-' };
            write!(
                line,
                "MMAP2 {}: [{}({}) @ {} {file}]: {}{}{}{} {}",
                id2(m.pid, m.tid),
                c_hex(m.addr),
                c_hex(m.len),
                c_hex(m.pgoff),
                bit(1, 'r'),
                bit(2, 'w'),
                bit(4, 'x'),
                if m.flags & 1 != 0 { 's' } else { 'p' },
                String::from_utf8_lossy(m.filename)
            )
        }
        _ => return false,
    };
    line.push('\n');
    true
}

fn header(
    line: &mut String,
    fields: &[Field],
    s: &Sample<'_>,
    comm: &str,
    (event, width): (&str, usize),
    rec: &Recording,
    (chain_lines, ns): (bool, bool),
) {
    let has = |f: Field| fields.contains(&f);
    // perf pads the name to 16 columns, except above call-chain lines.
    if has(Field::Comm) && chain_lines {
        line.push_str(comm);
    } else if has(Field::Comm) {
        let _ = write!(line, "{comm:>16}");
    }
    match (has(Field::Pid), has(Field::Tid), s.pid, s.tid) {
        (true, true, Some(pid), Some(tid)) => {
            let _ = write!(line, " {pid:>5}/{tid:<5}");
        }
        (true, false, Some(pid), _) => {
            let _ = write!(line, " {pid:>5}");
        }
        (false, true, _, Some(tid)) => {
            let _ = write!(line, " {tid:>5}");
        }
        _ => {}
    }
    if has(Field::Cpu)
        && let Some(cpu) = s.cpu
    {
        let _ = write!(line, " [{cpu:03}]");
    }
    if has(Field::Time)
        && let Some(t) = s.time
    {
        let (secs, frac) = (t / 1_000_000_000, t % 1_000_000_000);
        let _ = if ns {
            write!(line, " {secs:>5}.{frac:09}:")
        } else {
            write!(line, " {secs:>5}.{:06}:", frac / 1000)
        };
    }
    if has(Field::Period)
        && let Some(p) = s.period
    {
        let _ = write!(line, " {p:>10}");
    }
    if has(Field::Event) {
        // Right-aligned to the longest event name of the file, a blank after the colon.
        let _ = write!(line, " {event:>width$}: ");
    }
    let w = s.weight_struct();
    if has(Field::Weight)
        && let Some(v) = s.weight
    {
        let v = if s.sample_type & sample::WEIGHT_STRUCT != 0 {
            u64::from(w.unwrap_or_default().var1)
        } else {
            v
        };
        let _ = write!(line, " weight {v}");
    }
    if let Some(w) = w {
        if has(Field::InsLat) {
            let _ = write!(line, " ins_lat {}", w.ins_lat);
        }
        if has(Field::RetireLat) {
            let _ = write!(line, " retire_lat {}", w.retire_lat);
        }
    }
    if has(Field::Read)
        && let Some(r) = &s.read
    {
        line.push_str(" {");
        for (i, e) in r.iter().enumerate() {
            let name =
                e.id.and_then(|id| rec.event_of(id))
                    .and_then(|i| rec.meta().events.get(i))
                    .map_or("?", |e| e.name.as_str());
            if i > 0 {
                line.push(' ');
            }
            let _ = write!(line, "{name} {}", e.value);
        }
        line.push('}');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_parse_like_perf() {
        assert_eq!(
            parse_fields("comm,tid,ip").unwrap(),
            [Field::Comm, Field::Tid, Field::Ip]
        );
        let f = parse_fields("+retire_lat,-period").unwrap();
        assert!(
            f.contains(&Field::RetireLat) && !f.contains(&Field::Period) && f.contains(&Field::Sym)
        );
        assert!(
            parse_fields("bogus")
                .unwrap_err()
                .contains("unknown field \"bogus\"")
        );
        assert_eq!(parse_fields("group").unwrap(), [Field::Read]);
    }
}
