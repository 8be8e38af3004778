//! `hrec script`: every sample in time order, in `perf script`'s layout, so tools that read
//! perf script output (inferno-collapse-perf, FlameGraph's stackcollapse-perf.pl, speedscope)
//! read hrec's too, and the same `-F` gives the same bytes on the same perf.data.
//!
//! A sample is `comm tid [cpu] secs.usecs: period event: ` (each field followed by a blank, as
//! perf prints them), then, without call chains, ` ip symbol+offset (dso)` on the same line,
//! or, with call chains, one `\taddress symbol+offset (dso)` line per frame and a blank line.
//! `sym`, `symoff`, `dso` and `srcline` belong to the address: perf prints them, and the call
//! chain, only when `ip` is a field. `srcline` adds `  file:line` under each address (the
//! innermost inline frame's line, the file's base name), nothing where DWARF has no line.
//! Frames are the sampled location then its callers. As in perf 6.1 (`--inline`, its default),
//! each address of an unwound (`--call-graph dwarf`) chain lists the functions inlined there,
//! innermost first, then the function itself, each on a line of its own at the function's
//! offset; an entry not named as the symbol is marked ` (inlined)` and printed without the
//! object (`Loc::inline_entries`); perf 6.1 leaves frame-pointer chains and a sample's lone
//! address (no chain, or `-G`) unexpanded. `--no-inline` expands nothing; `--inline` given
//! expands frame-pointer chains too, so a collapser builds the same stacks as
//! `hrec report --folded` / `hrec flamegraph`.
//! An address no symbol covers is perf's `[unknown]` (the report's header says why; flame
//! graphs label it `[dso: reason]`).
//!
//! `-F` picks fields as perf does (`-F comm,tid,time,ip,sym`, or `-F +field` / `-F -field`
//! relative to the defaults), `weight`, `ins_lat` and `retire_lat` (the parts of
//! `WEIGHT_STRUCT`, 16 columns each as perf prints them), and hrec's `read` (the group values
//! of a sampling-read group, `{event value ...}`).
//!
//! `--show-mmap-events` / `--show-task-events` / `--show-switch-events` print MMAP/MMAP2,
//! COMM/FORK/EXIT and SWITCH/SWITCH_CPU_WIDE records where they occur in time, in perf's text
//! (`PERF_RECORD_MMAP2 pid/tid: [start(len) @ pgoff maj:min ino gen]: prot path`,
//! `PERF_RECORD_FORK(pid:tid):(ppid:ptid)`), after the thread part of their sample_id.

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
    /// `file:line` of the address (the innermost inline frame's), on a line of its own.
    Srcline,
    /// WEIGHT / WEIGHT_STRUCT var1.
    Weight,
    /// WEIGHT_STRUCT instruction latency.
    InsLat,
    /// WEIGHT_STRUCT retire latency (bits 63:48).
    RetireLat,
    /// Group values of a sampling-read group.
    Read,
    /// A tracepoint's fields, printed by its print format.
    Trace,
}

impl Field {
    const NAMES: [(&'static str, Field); 18] = [
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
        ("srcline", Field::Srcline),
        ("weight", Field::Weight),
        ("ins_lat", Field::InsLat),
        ("retire_lat", Field::RetireLat),
        ("read", Field::Read),
        ("group", Field::Read),
        ("trace", Field::Trace),
    ];

    /// perf script's default fields for a tracepoint: no period and no address (but under a
    /// call chain, [`Field::CHAIN`]), its fields instead.
    pub const TRACEPOINT: [Field; 6] = [
        Field::Comm,
        Field::Tid,
        Field::Cpu,
        Field::Time,
        Field::Event,
        Field::Trace,
    ];

    /// What perf adds to a tracepoint's default fields when it has call chains.
    pub const CHAIN: [Field; 4] = [Field::Ip, Field::Sym, Field::Symoff, Field::Dso];

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
    if out.is_empty() {
        return Err(format!("-F {spec:?}: no fields left to print"));
    }
    if out.contains(&Field::Symoff) && !out.contains(&Field::Sym) {
        return Err(format!(
            "-F {spec:?}: symoff is an offset into sym, which is not selected (as perf refuses it)"
        ));
    }
    Ok(out)
}

/// One frame as script prints it.
#[derive(Debug)]
struct FrameText {
    /// The address as perf prints it.
    addr: u64,
    /// The function (`[unknown]` where no symbol covers the address).
    name: String,
    /// The offset into the symbol, for `symoff`.
    off: Option<u64>,
    /// The object's path; perf prints none for an inlined entry.
    dso: String,
    /// `file:line`, when DWARF has it.
    line: Option<String>,
    /// perf's `(inlined)` mark.
    inlined: bool,
}

/// `file:line` as perf's srcline prints it: the file's base name (`--full-source-path` is a
/// report flag), nothing when DWARF does not know the line.
fn srcline(f: &crate::symbol::Frame) -> Option<String> {
    let file = f.file.as_deref()?;
    let base = file.rsplit('/').next().unwrap_or(file);
    (f.line > 0).then(|| format!("{base}:{}", f.line))
}

/// The frames of a location as script prints them: with `expand` the entries perf lists for
/// an address of an unwound chain ([`Loc::inline_entries`]: the functions inlined there,
/// innermost first, then the function itself, each entry at the function's offset and with
/// its own line), else the function by its symbol-table name with the address's line.
fn frames_of(l: &Loc, ip: Option<u64>, expand: bool, chain: bool, out: &mut Vec<FrameText>) {
    // perf prints call-chain frames relative to their file, a lone sample's address as it
    // is (`ip`, the sample's own: a location stands for one file offset, which another
    // mapping or process has at another address), and the file by its path; `[unknown]`
    // for an address no symbol covers (the report says why).
    // (A mark, `[preempted]` or `[no stack]`, is at address 0 and stays there.)
    let addr = match ip {
        Some(ip) if !chain && l.addr != 0 => ip,
        _ if chain => l.rel_addr,
        _ => l.addr,
    };
    let dso = || l.dso_path.to_string();
    if l.sym.is_none() {
        out.push(FrameText {
            addr,
            name: "[unknown]".to_string(),
            off: None,
            dso: dso(),
            line: l.frames.first().and_then(srcline),
            inlined: false,
        });
        return;
    }
    if !expand {
        // The address's line is its innermost frame's, as addr2line reports it.
        out.push(FrameText {
            addr,
            name: l.sym_name(),
            off: Some(l.sym_offset),
            dso: dso(),
            line: l.frames.first().and_then(srcline),
            inlined: false,
        });
        return;
    }
    for e in l.inline_entries() {
        out.push(FrameText {
            addr,
            name: e.name.to_string(),
            off: Some(l.sym_offset),
            dso: dso(),
            line: e.frame.and_then(srcline),
            inlined: e.inlined,
        });
    }
}

/// The fields to print. perf 6.1 reading a pipe (`perf record -o -`'s stream) whose events
/// sample call chains adds `ip` and `sym` to the fields `-F` gives, unless `-F` takes them
/// away (`unset`, `-sym`) or `-G` hides the chains: it sets the fields up as the attrs
/// arrive (`process_attr`), after `-F`.
pub fn pipe_fields(
    rec: &Recording,
    fields: &[Field],
    unset: &[Field],
    layout: Layout,
) -> Vec<Field> {
    use crate::event::attr::sample;
    let mut fields = fields.to_vec();
    let pipe = matches!(&rec.source, crate::recording::Source::PerfData(p) if p.info.pipe);
    let chains = rec.meta().events.iter().any(|e| {
        let t = e.attr.sample_type;
        t & (sample::CALLCHAIN | sample::BRANCH_STACK) != 0
            || t & (sample::REGS_USER | sample::STACK_USER)
                == sample::REGS_USER | sample::STACK_USER
    });
    if pipe && chains && !layout.default_fields && !layout.hide_call_graph {
        for f in [Field::Ip, Field::Sym] {
            if !unset.contains(&f) && !fields.contains(&f) {
                fields.push(f);
            }
        }
    }
    fields
}

/// The fields a `-F` spec takes away (`-x`).
pub fn unset_fields(spec: &str) -> Vec<Field> {
    spec.split(',')
        .map(str::trim)
        .filter_map(|p| p.strip_prefix('-'))
        .filter_map(|name| {
            Field::NAMES
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, f)| *f)
        })
        .collect()
}

/// The fields a `-F` spec names to be printed (`+x` and plain `x`, not `-x`): the ones
/// [`check_fields`] holds to the recording (defaults print where the samples have them).
pub fn named_fields(spec: &str) -> Vec<Field> {
    spec.split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty() && !p.starts_with('-'))
        .filter_map(|p| {
            let name = p.trim_start_matches('+');
            Field::NAMES
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, f)| *f)
        })
        .collect()
}

/// Fields named in `-F` that need a `sample_type` bit no sampling event of the recording has
/// are refused, as perf refuses them (`Samples for 'E' event do not have WEIGHT attribute set`), rather
/// than printing nothing for them.
pub fn check_fields(rec: &Recording, fields: &[Field]) -> Result<(), String> {
    let needs = [
        (Field::Cpu, sample::CPU, "CPU", "cpu"),
        (Field::Time, sample::TIME, "TIME", "time"),
        (Field::Period, sample::PERIOD, "PERIOD", "period"),
        (
            Field::Weight,
            sample::WEIGHT | sample::WEIGHT_STRUCT,
            "WEIGHT",
            "weight",
        ),
        (
            Field::InsLat,
            sample::WEIGHT_STRUCT,
            "WEIGHT_STRUCT",
            "ins_lat",
        ),
        (
            Field::RetireLat,
            sample::WEIGHT_STRUCT,
            "WEIGHT_STRUCT",
            "retire_lat",
        ),
        (Field::Read, sample::READ, "READ", "read"),
    ];
    let events = &rec.meta().events;
    let Some(first) = events.first() else {
        return Ok(());
    };
    for (f, bits, bit_name, name) in needs {
        // A fixed period stands in for PERIOD (perf prints the attr's).
        let has = |e: &crate::data::EventMeta| {
            e.attr.sample_type & bits != 0
                || (f == Field::Period
                    && crate::decode::Layout::from_attr(&e.attr)
                        .fixed_period
                        .is_some())
        };
        if fields.contains(&f) && !events.iter().any(has) {
            return Err(format!(
                "-F {name}: the samples of '{}' do not have {bit_name} set (record with the option that adds it); leave the field out",
                first.name
            ));
        }
    }
    Ok(())
}

/// Which call-chain addresses list the functions inlined there as entries of their own.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Inline {
    /// perf's default (`--inline`): the addresses of unwound (`--call-graph dwarf`) chains,
    /// not frame-pointer chains, as perf 6.1 expands them.
    #[default]
    Unwound,
    /// Every chain's addresses, frame-pointer chains too (`--inline` given), as the folded
    /// stacks of `report --folded` and `flamegraph` list them.
    All,
    /// None (`--no-inline`).
    Off,
}

/// How samples are laid out besides their fields.
#[derive(Debug, Clone, Copy, Default)]
pub struct Layout {
    /// Inlined functions as frames of their own: where perf lists them, on every chain or
    /// nowhere.
    pub inline: Inline,
    /// `--ns`: times to the nanosecond.
    pub ns: bool,
    /// `-G`/`--hide-call-graph`: one line per sample, its own location only.
    pub hide_call_graph: bool,
    /// `--show-mmap-events`: MMAP and MMAP2 records in the stream, as perf prints them.
    pub show_mmap: bool,
    /// `--show-task-events`: COMM, FORK and EXIT records in the stream, as perf prints them.
    pub show_task: bool,
    /// `--show-switch-events`: SWITCH and SWITCH_CPU_WIDE records in the stream, as perf
    /// prints them.
    pub show_switch: bool,
    /// No `-F`: each kind of event gets perf's own defaults (tracepoints
    /// [`Field::TRACEPOINT`]).
    pub default_fields: bool,
}

/// Where `script` writes: the lines, the records it had to skip (at most 10 kept), and the
/// reading commands' progress bar (shown while the samples are first read and symbolized).
pub struct Sinks<'a> {
    /// The sample lines.
    pub out: &'a mut dyn Write,
    /// Records that could not be decoded.
    pub errors: &'a mut Vec<String>,
    /// The progress bar, if any.
    pub progress: Option<&'a mut super::progress::Progress>,
}

impl std::fmt::Debug for Sinks<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sinks")
            .field("errors", &self.errors.len())
            .field("progress", &self.progress.is_some())
            .finish_non_exhaustive()
    }
}

/// Writes every sample. Returns the number of samples written.
pub fn script(
    rec: &Recording,
    fields: &[Field],
    profile_options: &ProfileOptions,
    filters: &Filters,
    layout: Layout,
    sinks: Sinks<'_>,
) -> io::Result<u64> {
    let Sinks {
        out,
        errors,
        progress,
    } = sinks;
    // Fold once to learn every location and symbolize each once, then replay again and
    // print each sample as it streams by: the same replay gives the same location ids. The
    // progress bar covers the fold (the silent part) and is gone before the first line.
    let p: Profile = match progress {
        Some(bar) => {
            let p = replay::build(rec, profile_options, &mut |n| bar.update(n));
            bar.finish();
            p
        }
        None => replay::build(rec, profile_options, &mut |_| {}),
    };
    let meta = rec.meta();
    // Each tracepoint's printer, from the format the recording kept.
    let trace = crate::analysis::tracetext::TraceText::new(rec);
    let mut tp_fields: Vec<Field> = Field::TRACEPOINT.to_vec();
    // Event names are right-aligned to the longest of the file (once, not per sample).
    let event_width = meta.events.iter().map(|e| e.name.len()).max().unwrap_or(0);
    let has = |f: Field| fields.contains(&f);
    let mut line = String::new();
    let mut frames = Vec::new();
    // Each counter id's value at its previous read, and one sample's lines (event, period).
    let mut read_last: std::collections::HashMap<(Option<u32>, u64), u64> = Default::default();
    let mut deliveries: Vec<(&str, Option<u64>)> = Vec::new();
    let mut head = String::new();
    let mut io_err = None;
    let mut n = 0u64;
    let mut r = Replay::new(rec, profile_options);
    if layout.show_mmap || layout.show_task || layout.show_switch {
        r = r.with_side_band();
    }
    // perf leaves the thread name unpadded above call-chain lines, side-band lines too: when
    // the file's events sample call chains (the replay's `offcpu-time`, whose stacks come
    // from another event, aside).
    let file_chains = p.events.iter().any(|e| e.callchains && !e.is_off_cpu());
    let chain_file = file_chains && !layout.hide_call_graph && has(Field::Ip);
    // perf lists the functions inlined at the addresses of unwound chains (whatever the
    // fields: `-F ip` repeats the address), not of frame-pointer chains.
    let expand = match layout.inline {
        Inline::Unwound => p.dwarf_stacks,
        Inline::All => true,
        Inline::Off => false,
    };
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
            // Not asked for: `run` keeps every location by address.
            Item::Rows(_) => return,
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
        let info = &p.events[usize::from(ps.event)];
        n += 1;
        line.clear();
        let tracepoint = trace.as_ref().filter(|t| t.is_tracepoint(info.index));
        // perf's own defaults for a tracepoint: its fields, and the chain when it has one.
        let fields: &[Field] = match tracepoint {
            Some(_) if layout.default_fields => {
                tp_fields.truncate(Field::TRACEPOINT.len());
                if s.callchain.is_some() && !layout.hide_call_graph {
                    tp_fields.extend(Field::CHAIN);
                }
                &tp_fields
            }
            _ => fields,
        };
        let has = |f: Field| fields.contains(&f);
        // The replay's `offcpu-time` is no event of the file: its own name (the width stays
        // that of the file's events, as perf's lines of them are).
        let event = meta
            .events
            .get(info.index)
            .map_or(info.name.as_str(), |e| e.name.as_str());
        // perf prints a call chain only under the address (`ip`), one frame per line.
        let chain =
            p.callchains && s.callchain.is_some() && !layout.hide_call_graph && has(Field::Ip);
        // A sample that reads its counters is one line per value read, each with what its
        // counter added since that id's previous read as the period (no line when nothing
        // was added), as perf delivers it (`deliver_sample_group`, `deliver_sample_value`).
        deliveries.clear();
        // An inherited counter reads per thread (the kernel gives the parent's id in every
        // thread): its previous value is the thread's, as perf 6.12 keeps it per thread.
        let per_thread = meta
            .events
            .get(info.index)
            .is_some_and(|e| e.attr.has(crate::event::attr::flag::INHERIT));
        let tid = if per_thread { s.tid } else { None };
        match &s.read {
            Some(read) if read.iter().all(|e| e.id.is_some()) => {
                for e in read.iter() {
                    let id = e.id.unwrap_or_default();
                    let last = read_last.entry((tid, id)).or_insert(0);
                    let delta = e.value.wrapping_sub(*last);
                    *last = e.value;
                    if delta == 0 {
                        continue;
                    }
                    if let Some(ev) = rec.event_of(id).and_then(|i| meta.events.get(i)) {
                        deliveries.push((ev.name.as_str(), Some(delta)));
                    }
                }
            }
            _ => deliveries.push((event, s.period)),
        }
        if deliveries.is_empty() {
            // Nothing counted since the last read: no line (nor a sample printed).
            n -= 1;
            return;
        }
        // Each line's start (the sample's fields, the event and period of that line), then
        // in `line` what every line of the sample ends with.
        head.clear();
        for &(event, period) in &deliveries {
            sample_start(
                &mut head,
                fields,
                &Sample { period, ..*s },
                &p.comms[ps.comm as usize],
                (event, event_width),
                rec,
                (chain_file, layout.ns),
            );
            head.push('\u{0}');
        }
        if let (Some(t), Some(raw), true) = (tracepoint, s.raw, has(Field::Trace)) {
            t.print(info.index, raw, &mut line);
        }
        frames.clear();
        // Without a chain the sampled location is one line, its function by the symbol
        // table with the line of the innermost frame, as perf prints it.
        frames_of(
            &p.locs[ps.leaf as usize],
            s.ip,
            chain && expand,
            chain,
            &mut frames,
        );
        if chain {
            for &c in ps.callers {
                frames_of(&p.locs[c as usize], None, expand, chain, &mut frames);
            }
        }
        // perf's order: address, name+offset, the object (none for an inlined entry), the
        // source line on a line of its own, then the `(inlined)` mark.
        let frame_text = |line: &mut String, f: &FrameText| {
            let _ = write!(line, "{:>16x}", f.addr);
            if has(Field::Sym) {
                let _ = write!(line, " {}", f.name);
                if has(Field::Symoff)
                    && let Some(o) = f.off
                {
                    let _ = write!(line, "+{o:#x}");
                }
            }
            if has(Field::Dso) && !f.inlined {
                let _ = write!(line, " ({})", f.dso);
            }
            if has(Field::Srcline)
                && let Some(t) = &f.line
            {
                line.push_str("\n  ");
                line.push_str(t);
            }
            if f.inlined {
                line.push_str(" (inlined)");
            }
        };
        if chain {
            // The frames start on a new line (an empty one under an empty header, as perf).
            line.push('\n');
            // A chain perf discards as corrupt prints no frame at all.
            if s.callchain
                .as_ref()
                .is_some_and(crate::data::stacks::is_discarded)
            {
                frames.clear();
            }
            for f in &frames {
                line.push('\t');
                frame_text(&mut line, f);
                line.push('\n');
            }
        } else if has(Field::Ip)
            && let Some(f) = frames.first()
        {
            line.push(' ');
            frame_text(&mut line, f);
        }
        line.push('\n');
        // Each delivery's start, then what every line has.
        for start in head.split_terminator('\u{0}') {
            if let Err(e) = out
                .write_all(start.as_bytes())
                .and_then(|()| out.write_all(line.as_bytes()))
            {
                io_err = Some(e);
            }
        }
        n += deliveries.len() as u64 - 1;
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

/// A side-band record as `perf script --show-mmap-events / --show-task-events /
/// --show-switch-events` prints it: the thread's name, tid, cpu and time from its sample_id,
/// then perf's text of the record (perf's `perf_event__fprintf`; a switch's direction padded
/// to the width of `OUT preempt`, and for a CPU-wide one the thread switched to or from).
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
        Record::Switch { .. } | Record::SwitchCpuWide { .. } => layout.show_switch,
        _ => false,
    };
    let Some(id) = r.sample_id().filter(|_| show) else {
        return false;
    };
    thread_start(
        line,
        fields,
        (id.pid, id.tid, id.cpu, id.time),
        comm,
        (chain_file, layout.ns),
    );
    line.push_str("PERF_RECORD_");
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
        Record::Switch { out, preempt, .. } => {
            write!(line, "SWITCH {}", switch_direction(*out, *preempt))
        }
        Record::SwitchCpuWide {
            out,
            preempt,
            next_prev_pid,
            next_prev_tid,
            ..
        } => write!(
            line,
            "SWITCH_CPU_WIDE {}  {} pid/tid: {:>5}/{:<5}",
            switch_direction(*out, *preempt),
            if *out { "next" } else { "prev" },
            *next_prev_pid as i32,
            *next_prev_tid as i32
        ),
        _ => return false,
    };
    line.push('\n');
    true
}

/// A switch record's direction as perf prints it, padded to one width.
fn switch_direction(out: bool, preempt: bool) -> &'static str {
    match (out, preempt) {
        (false, _) => "IN         ",
        (true, false) => "OUT        ",
        (true, true) => "OUT preempt",
    }
}

/// What perf prints before every record: the thread's name, pid/tid, cpu and time, each
/// followed by a blank (`--ns`: time to the nanosecond). Above call-chain lines the name is
/// not padded.
fn thread_start(
    line: &mut String,
    fields: &[Field],
    id: (Option<u32>, Option<u32>, Option<u32>, Option<u64>),
    comm: &str,
    (chain_file, ns): (bool, bool),
) {
    let (pid, tid, cpu, time) = id;
    let has = |f: Field| fields.contains(&f);
    if has(Field::Comm) && chain_file {
        let _ = write!(line, "{comm} ");
    } else if has(Field::Comm) {
        let _ = write!(line, "{comm:>16} ");
    }
    let signed = |v: Option<u32>| v.map(|x| x as i32);
    match (has(Field::Pid), has(Field::Tid), signed(pid), signed(tid)) {
        (true, true, Some(pid), Some(tid)) => {
            let _ = write!(line, "{pid:>5}/{tid:<5} ");
        }
        (true, false, Some(pid), _) => {
            let _ = write!(line, "{pid:>5} ");
        }
        (false, true, _, Some(tid)) => {
            let _ = write!(line, "{tid:>5} ");
        }
        _ => {}
    }
    if has(Field::Cpu)
        && let Some(cpu) = cpu
    {
        let _ = write!(line, "[{cpu:03}] ");
    }
    if has(Field::Time)
        && let Some(t) = time
    {
        let (secs, frac) = (t / 1_000_000_000, t % 1_000_000_000);
        let _ = if ns {
            write!(line, "{secs:>5}.{frac:09}: ")
        } else {
            write!(line, "{secs:>5}.{:06}: ", frac / 1000)
        };
    }
}

/// A sample's fields before its location, as perf prints them: the thread part, the period
/// (10 columns and a blank), the event (right-aligned to the file's longest name, `: `), the
/// weights (16 columns each, as perf's `weight`, `ins_lat` and `retire_lat`), and hrec's
/// sampling-read group values in braces.
fn sample_start(
    line: &mut String,
    fields: &[Field],
    s: &Sample<'_>,
    comm: &str,
    (event, width): (&str, usize),
    rec: &Recording,
    layout: (bool, bool),
) {
    let has = |f: Field| fields.contains(&f);
    thread_start(line, fields, (s.pid, s.tid, s.cpu, s.time), comm, layout);
    if has(Field::Period)
        && let Some(p) = s.period
    {
        let _ = write!(line, "{p:>10} ");
    }
    if has(Field::Event) {
        let _ = write!(line, "{event:>width$}: ");
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
        let _ = write!(line, "{v:>16}");
    }
    if let Some(w) = w {
        if has(Field::InsLat) {
            let _ = write!(line, "{:>16}", w.ins_lat);
        }
        if has(Field::RetireLat) {
            let _ = write!(line, "{:>16}", w.retire_lat);
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
