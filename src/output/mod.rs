//! Output of recordings: the `hrec info`, `evlist` and `buildid-list` dumps here (hrec files
//! and perf.data); `hrec script` lines ([`script`]), the report ([`report`], its interactive
//! view [`tui`], the progress bar of every reading command [`progress`]), `annotate`
//! ([`annotate`], [`typeannotate`]), `diff` ([`diff`]), `top`'s screen ([`top`]), `c2c
//! report` ([`c2c`], [`c2c_tui`]), flame graphs ([`flame`]) and the pprof and Firefox
//! Profiler exports ([`pprof`], [`firefox`]) in their modules.
//!
//! Output prints what the stages before it produced (the replay's samples, profiles and
//! `crate::analysis`'s tables, a recording's facts) in the layout of the tool it stands in for
//! (perf's, to the byte where the tests compare them) or in the format another tool reads.

pub mod annotate;
pub mod c2c;
pub mod c2c_tui;
pub mod diff;
pub mod firefox;
pub mod flame;
pub mod perfdata;
pub mod perfjson;
pub mod pprof;
pub mod progress;
pub mod report;
pub mod script;
pub mod top;
pub mod tui;
pub mod typeannotate;

use std::fmt::Write as _;
use std::io::{self, Write};

use crate::data::BlockKind;
use crate::data::Meta;
use crate::recording::perfdata::{KernelCheck, PerfData, user};
use crate::recording::{Recording, Source};

/// Per event of profile `p`: whether it is a CPU-time clock (`cpu-clock` or `task-clock`,
/// software events 0 and 1), whose periods are nanoseconds of CPU time (the exports show
/// them as time).
pub(crate) fn clock_events(meta: &Meta, p: &crate::analysis::profile::Profile) -> Vec<bool> {
    p.events
        .iter()
        .map(|e| {
            meta.events.get(e.index).is_some_and(|m| {
                m.attr.type_ == crate::event::attr::types::SOFTWARE
                    && [0, 1].contains(&m.attr.config)
            })
        })
        .collect()
}

/// Per event of profile `p`: how its samples count as time on the CPU in the wall-clock flame
/// graph ([`flame::OnCpuTime`]): a clock's periods are nanoseconds; another event sampled in
/// frequency mode counts `1e9 / freq` per sample; one with a fixed period cannot count. The
/// `offcpu-time` event (no attr) is in nanoseconds too, and counted as a clock.
pub fn on_cpu_time(meta: &Meta, p: &crate::analysis::profile::Profile) -> Vec<flame::OnCpuTime> {
    let clock = clock_events(meta, p);
    p.events
        .iter()
        .zip(clock)
        .map(|(e, clock)| match meta.events.get(e.index) {
            _ if clock || e.is_off_cpu() => flame::OnCpuTime::Clock,
            Some(m) if m.attr.freq() && m.attr.sample_period_or_freq > 0 => {
                flame::OnCpuTime::PerSample {
                    freq: m.attr.sample_period_or_freq,
                }
            }
            Some(m) => flame::OnCpuTime::FixedPeriod(m.attr.sample_period_or_freq),
            None => flame::OnCpuTime::FixedPeriod(0),
        })
        .collect()
}

/// What `evlist` prints of each event (perf evlist's flags).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EvlistStyle {
    /// `-v`: every non-zero attr field, `name: value` as perf prints them.
    pub verbose: bool,
    /// `-g`: groups as `{leader,member,...}`, members not on lines of their own.
    pub group: bool,
    /// `-F`: the sampling frequency or period.
    pub freq: bool,
}

/// `hrec evlist`: the recording's events, one per line, as `perf evlist` prints them.
pub fn evlist(rec: &Recording, style: EvlistStyle, out: &mut dyn Write) -> io::Result<()> {
    let events = &rec.meta().events;
    for (i, e) in events.iter().enumerate() {
        let members: Vec<&str> = events
            .iter()
            .enumerate()
            .filter(|&(j, m)| m.leader == i && j != i)
            .map(|(_, m)| m.name.as_str())
            .collect();
        let mut line = if style.group && e.leader != i {
            continue;
        } else if style.group && !members.is_empty() {
            format!("{{{},{}}}", e.name, members.join(","))
        } else {
            e.name.clone()
        };
        // perf's separators: a colon before the first detail, commas between the others.
        let mut first = true;
        let mut detail = |line: &mut String, text: String| {
            line.push_str(if first { ":" } else { "," });
            line.push(' ');
            line.push_str(&text);
            first = false;
        };
        // perf: -v prints every field, the frequency among them, so -F adds nothing to it.
        if style.freq && !style.verbose {
            let term = if e.attr.freq() {
                "sample_freq"
            } else {
                "sample_period"
            };
            detail(
                &mut line,
                format!("{term}={}", e.attr.sample_period_or_freq),
            );
        }
        if style.verbose {
            for (k, v) in e.attr.fields() {
                detail(&mut line, format!("{k}: {v}"));
            }
        }
        writeln!(out, "{line}")?;
    }
    Ok(())
}

/// `hrec buildid-list`: `build-id path` per binary the recording has a build-id of, as
/// `perf buildid-list` prints the build-ids of a perf.data header.
pub fn buildid_list(rec: &Recording, out: &mut dyn Write) -> io::Result<()> {
    let text = rec.side("build-ids").unwrap_or_default();
    for line in String::from_utf8_lossy(&text).lines() {
        writeln!(out, "{line}")?;
    }
    Ok(())
}

/// perf's three lines of the first and last sample times (perf clock) and the span between.
fn sample_span((first, last): (u64, u64), out: &mut dyn Write) -> io::Result<()> {
    let secs = |t: u64| format!("{}.{:06}", t / 1_000_000_000, (t % 1_000_000_000) / 1000);
    writeln!(out, "# time of first sample : {}", secs(first))?;
    writeln!(out, "# time of last sample : {}", secs(last))?;
    writeln!(
        out,
        "# sample duration : {:10.3} ms",
        last.saturating_sub(first) as f64 / 1e6
    )
}

/// `--header` of report and script: the `hrec info` lines between perf's `# ========` rules,
/// then a `#` line, as perf frames its header before the report or the samples.
pub fn header_block(rec: &Recording, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "# ========")?;
    info(rec, out)?;
    writeln!(out, "# ========")?;
    writeln!(out, "#")
}

/// `hrec info`: the header, the events, the statistics and the blocks of a recording; for a
/// perf.data file, its header and feature sections in the style of `perf report --header-only`.
pub fn info(rec: &Recording, out: &mut dyn Write) -> io::Result<()> {
    let r = match &rec.source {
        Source::Hrec(r) => r,
        Source::PerfData(p) => return perf_data_info(rec, p, out),
    };
    let m = rec.meta();
    writeln!(
        out,
        "# file: {} ({} bytes)",
        r.path().display(),
        r.file_len()
    )?;
    match r.truncated() {
        Some(why) => {
            // The reader's reason says so itself when the trailer is missing.
            let unfinished = if why.contains("did not finish") {
                ""
            } else {
                "; the recording did not finish (killed?)"
            };
            writeln!(
                out,
                "# TRUNCATED: {why}{unfinished}, statistics below are counted from the {} complete blocks",
                r.blocks().len()
            )?
        }
        None => writeln!(out, "# complete (trailer present)")?,
    }
    writeln!(out, "# hrec version : {}", m.hrec_version)?;
    writeln!(out, "# hostname : {}", m.hostname)?;
    writeln!(out, "# os release : {}", m.kernel_release)?;
    writeln!(out, "# arch : {}", m.arch)?;
    writeln!(out, "# cpudesc : {}", m.cpu_model)?;
    if !m.cpuid.is_empty() {
        writeln!(out, "# cpuid : {}", m.cpuid)?;
    }
    writeln!(out, "# nrcpus online : {} ({})", m.nr_cpus, m.cpus_online)?;
    if let Some(t) = m.threads_per_core {
        writeln!(out, "# threads per core : {t}")?;
    }
    if let Some(c) = &m.metric_choice {
        writeln!(
            out,
            "# metric groups for : {}",
            c.report_args().replace("--metrics ", "-M ")
        )?;
    }
    writeln!(out, "# cmdline : {}", m.command_line.join(" "))?;
    let target = match m.workload_pid {
        Some(p) => format!("{} (pid {p})", m.target),
        None => m.target.clone(),
    };
    writeln!(out, "# target : {target}")?;
    writeln!(
        out,
        "# captured on : {} (unix ns), perf clock {} ns at start",
        m.start_time_unix_ns, m.clock_start_ns
    )?;
    writeln!(
        out,
        "# mmap pages : {} per buffer (page size {})",
        m.mmap_pages, m.page_size
    )?;
    let pmus: Vec<String> = m
        .pmus
        .iter()
        .map(|p| format!("{}={}", p.name, p.type_))
        .collect();
    writeln!(out, "# pmu mappings : {}", pmus.join(", "))?;
    for n in &m.notices {
        writeln!(out, "# notice : {n}")?;
    }
    write_events(m, out)?;
    if let Some(span) = rec.sample_time() {
        sample_span(span, out)?;
    }
    match r.trailer() {
        Some(t) => {
            writeln!(
                out,
                "# samples : {} ({}), records {}, {} bytes of records",
                t.samples,
                samples_per_event(m, &t.samples_per_event),
                t.records,
                t.record_bytes
            )?;
            writeln!(
                out,
                "# lost : {} LOST records ({} samples), {} by read_format LOST; throttled {} times",
                t.lost_records, t.lost_samples, t.lost_samples_read, t.throttles
            )?;
            writeln!(
                out,
                "# duration : {:.3} s; workload status {}",
                t.duration_ns as f64 / 1e9,
                t.workload_status.map_or("-".into(), |s| s.to_string())
            )?;
            writeln!(out, "# threads : {}", t.threads.len())?;
            for th in &t.threads {
                writeln!(out, "#   {}/{} {} samples", th.pid, th.tid, th.samples)?;
            }
            if let Some(times) = crate::analysis::threads::thread_times(rec) {
                for th in &times {
                    writeln!(
                        out,
                        "# thread time : {}/{} {}: on-CPU {:.3} ms + off-CPU {:.3} ms (blocked {:.3}, preempted {:.3}; {} intervals) = {:.3} ms",
                        th.pid,
                        th.tid,
                        th.comm,
                        th.on_ns as f64 / 1e6,
                        th.off_ns() as f64 / 1e6,
                        th.blocked_ns as f64 / 1e6,
                        th.preempted_ns as f64 / 1e6,
                        th.intervals,
                        th.lifetime_ns() as f64 / 1e6
                    )?;
                }
            }
            for c in &t.counts {
                let name = m.events.get(c.event).map_or("?", |e| e.name.as_str());
                let times = if c.time_enabled > 0 {
                    format!(
                        " (enabled {} ns, running {} ns)",
                        c.time_enabled, c.time_running
                    )
                } else {
                    String::new()
                };
                writeln!(
                    out,
                    "# count : {name} id {} cpu {} = {}{times}",
                    c.id, c.cpu, c.value
                )?;
            }
        }
        None => {
            let (total, per_event) = crate::recording::count_samples(rec);
            writeln!(
                out,
                "# samples : {total} ({}) in the readable blocks",
                samples_per_event(m, &per_event)
            )?;
        }
    }
    if m.unwound_at_record {
        let stack = m
            .events
            .iter()
            .map(|e| e.attr.sample_stack_user)
            .max()
            .unwrap_or(0);
        let kept = m
            .events
            .iter()
            .any(|e| e.attr.sample_type & crate::event::attr::sample::STACK_USER != 0);
        write!(
            out,
            "# call graph : dwarf, unwound while recording; user stack copies of {stack} bytes ({})",
            if kept { "kept" } else { "not kept" }
        )?;
        match r
            .side("unwind")
            .ok()
            .flatten()
            .and_then(|b| serde_json::from_slice::<crate::unwind::UnwindStats>(&b).ok())
        {
            Some(u) => writeln!(
                out,
                "; {} of {} stacks reached the process root, {} copies filled all {stack} bytes",
                u.complete, u.samples, u.stack_full
            )?,
            None => writeln!(out)?,
        }
    }
    let (mut rb, mut raw, mut comp, mut recs) = (0u64, 0u64, 0u64, 0u64);
    let (mut stack_blocks, mut stack_raw, mut stack_comp) = (0u64, 0u64, 0u64);
    for b in r.blocks() {
        match b.kind {
            // The stack table comes in many small blocks: one line for all.
            BlockKind::Side if b.name == "stacks" => {
                stack_blocks += 1;
                stack_raw += b.raw_len;
                stack_comp += b.compressed_len;
            }
            BlockKind::Side => writeln!(
                out,
                "# side block : {}, {} bytes ({} compressed) at offset {}",
                b.name, b.raw_len, b.compressed_len, b.offset
            )?,
            BlockKind::Records => {
                rb += 1;
                raw += b.raw_len;
                comp += b.compressed_len;
                recs += b.records;
            }
            BlockKind::Trailer => {}
        }
    }
    if stack_blocks > 0 {
        writeln!(
            out,
            "# stack table : {stack_blocks} side blocks, {stack_raw} bytes ({stack_comp} compressed)"
        )?;
    }
    writeln!(
        out,
        "# record blocks : {rb}, {recs} records, {raw} bytes raw, {comp} bytes compressed ({:.1}x)",
        raw as f64 / comp.max(1) as f64
    )?;
    if r.trailer().is_some() {
        // Every block decompressed once (not decoded), so a damaged one is named here too.
        rec.check_blocks();
    }
    for e in &rec.errors() {
        writeln!(out, "# error : {e}")?;
    }
    Ok(())
}

/// The events that have samples, with their counts, as the `# samples` line of `hrec info`
/// lists them: `cycles 812, instructions 790` (events without samples left out).
fn samples_per_event(m: &Meta, per_event: &[u64]) -> String {
    let per: Vec<String> = m
        .events
        .iter()
        .zip(per_event)
        .filter(|(_, n)| **n > 0)
        .map(|(e, n)| format!("{} {n}", e.name))
        .collect();
    per.join(", ")
}

/// One `# event` line per event: name, PMU, role, leader, ids (with CPU and thread when known)
/// and the attr's non-zero fields in perf's order.
fn write_events(m: &Meta, out: &mut dyn Write) -> io::Result<()> {
    for (i, e) in m.events.iter().enumerate() {
        let ids: Vec<String> = e
            .ids
            .iter()
            .map(|x| {
                let mut s = x.id.to_string();
                if x.cpu >= 0 {
                    let _ = write!(s, "@cpu{}", x.cpu);
                }
                if x.tid >= 0 {
                    let _ = write!(s, "@tid{}", x.tid);
                }
                s
            })
            .collect();
        let mut fields = String::new();
        for (k, v) in e.attr.fields() {
            let _ = write!(fields, ", {k} = {v}");
        }
        writeln!(
            out,
            "# event {i} : name = {}, pmu = {}, role = {}, leader = {}, id = {{ {} }}{fields}",
            e.name,
            e.pmu.as_deref().unwrap_or("-"),
            e.role,
            e.leader,
            ids.join(", ")
        )?;
    }
    Ok(())
}

/// `hrec info` of a perf.data file.
fn perf_data_info(rec: &Recording, p: &PerfData, out: &mut dyn Write) -> io::Result<()> {
    let (i, m) = (&p.info, &p.meta);
    let mode = if i.pipe { "pipe mode" } else { "file mode" };
    writeln!(
        out,
        "# file: {} ({} bytes), perf.data ({mode})",
        i.path.display(),
        i.file_len
    )?;
    match &i.truncated {
        Some(why) => writeln!(out, "# TRUNCATED: {why}")?,
        None => writeln!(out, "# complete")?,
    }
    if !i.pipe {
        writeln!(
            out,
            "# data : offset {}, {} bytes",
            i.data_section.0, i.data_section.1
        )?;
    }
    let opt = |s: &Option<String>| s.clone().unwrap_or_else(|| "-".into());
    let or_dash = |s: &str| {
        if s.is_empty() {
            "-".to_string()
        } else {
            s.to_string()
        }
    };
    writeln!(out, "# hostname : {}", or_dash(&m.hostname))?;
    writeln!(out, "# os release : {}", or_dash(&m.kernel_release))?;
    writeln!(out, "# perf version : {}", opt(&i.perf_version))?;
    writeln!(out, "# arch : {}", or_dash(&m.arch))?;
    if let Some((avail, online)) = i.nr_cpus {
        writeln!(out, "# nrcpus online : {online}")?;
        writeln!(out, "# nrcpus avail : {avail}")?;
    }
    writeln!(out, "# cpudesc : {}", or_dash(&m.cpu_model))?;
    writeln!(out, "# cpuid : {}", opt(&i.cpuid))?;
    if let Some(kb) = i.total_mem_kb {
        writeln!(out, "# total memory : {kb} kB")?;
    }
    writeln!(out, "# cmdline : {}", m.command_line.join(" "))?;
    write_events(m, out)?;
    let pmus: Vec<String> = i
        .pmu_mappings
        .iter()
        .map(|(t, n)| format!("{n} = {t}"))
        .collect();
    writeln!(out, "# pmu mappings : {}", or_dash(&pmus.join(", ")))?;
    for g in &i.groups {
        let members: Vec<&str> = m.events[g.leader..g.leader + g.members]
            .iter()
            .map(|e| e.name.as_str())
            .collect();
        writeln!(
            out,
            "# group : {} {{{}}}",
            or_dash(&g.name),
            members.join(", ")
        )?;
    }
    if let Some(span) = i.sample_time {
        sample_span(span, out)?;
    }
    if let Some(c) = &i.compression {
        writeln!(out, "# compressed : {c}")?;
    }
    if let Some(size) = m
        .events
        .iter()
        .filter(|e| e.attr.sample_type & crate::event::attr::sample::STACK_USER != 0)
        .map(|e| e.attr.sample_stack_user)
        .max()
    {
        let (with, full) = crate::recording::stack_copies(rec);
        writeln!(
            out,
            "# call graph : dwarf, user stack copies of {size} bytes; {full} of {with} filled all {size} bytes{}",
            if full > 0 {
                " (their stacks may go on past the copy: record with --call-graph dwarf,SIZE for more)"
            } else {
                ""
            }
        )?;
    }
    writeln!(out, "# features : {}", or_dash(&i.features.join(" ")))?;
    writeln!(out, "# build-ids : {}", i.build_ids.len())?;
    for b in &i.build_ids {
        writeln!(out, "#   {} {}", b.build_id, b.path)?;
    }
    let kernel = match &i.kernel {
        KernelCheck::Matches { build_id } => match p.kernel_relocated() {
            None => format!(
                "this machine's /proc/kallsyms (kernel build-id {build_id} matches the recording's)"
            ),
            Some((recorded, running)) => format!(
                "none: the recording's kernel build ({build_id}) is this machine's, but it was loaded at {recorded:#x} and now is at {running:#x} (KASLR, another boot), kernel frames stay unresolved"
            ),
        },
        KernelCheck::SameRelease { release } => match (
            p.kernel_symbols().is_empty(),
            p.kernel_relocated(),
        ) {
            (false, _) => format!(
                "this machine's /proc/kallsyms (no build-id in the recording; its kernel release {release} and _text address are this machine's)"
            ),
            (true, Some((recorded, running))) => format!(
                "none: no build-id in the recording; its kernel release {release} is this machine's but it was loaded at {recorded:#x} and now is at {running:#x} (another boot), kernel frames stay unresolved"
            ),
            (true, None) => format!(
                "none: no build-id in the recording; its kernel release {release} is this machine's but its symbols could not be read, kernel frames stay unresolved"
            ),
        },
        KernelCheck::Differs { recorded, running } => format!(
            "none: the recording's kernel (build-id {recorded}) is not this machine's ({}), kernel frames stay unresolved",
            running.as_deref().unwrap_or("unknown")
        ),
        KernelCheck::NoBuildId => {
            "none: the recording has no [kernel.kallsyms] build-id to check this machine's kernel against".into()
        }
    };
    writeln!(out, "# kernel symbols : {kernel}")?;
    let t = &p.trailer;
    writeln!(
        out,
        "# samples : {} ({}), records {}, {} bytes of records in {} blocks",
        t.samples,
        samples_per_event(m, &t.samples_per_event),
        t.records,
        t.record_bytes,
        rec.block_count()
    )?;
    writeln!(
        out,
        "# lost : {} LOST records ({} samples); throttled {} times",
        t.lost_records, t.lost_samples, t.throttles
    )?;
    let users: Vec<String> = i
        .user_records
        .iter()
        .map(|(k, n)| format!("{} {n}", user::name(*k)))
        .collect();
    writeln!(
        out,
        "# perf user records (not kept) : {}",
        or_dash(&users.join(", "))
    )?;
    for w in &i.warnings {
        writeln!(out, "# warning : {w}")?;
    }
    for e in &rec.errors() {
        writeln!(out, "# error : {e}")?;
    }
    Ok(())
}
