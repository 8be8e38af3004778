//! Text output of recordings: `hrec script` lines and the `hrec info` header dump.
//!
//! `script` follows `perf script`'s default layout so both can be diffed on one recording:
//! `comm pid/tid [cpu] secs.usecs: period event: ip`, then hrec's extras when the sample has
//! them: `weight` (WEIGHT_STRUCT split into var1 / ins_lat / retire_lat, the retire latency
//! being bits 63:48), and the group read of a sampling-read group as `{name value ...}` in
//! group order. A callchain follows on indented lines, one address per frame, with the
//! kernel's context markers left out as perf does. Symbols come with the reporter.

pub mod flame;
pub mod report;

use std::fmt::Write as _;
use std::io::{self, Write};

use crate::data::BlockKind;
use crate::data::Meta;
use crate::decode::{Record, Sample, context};
use crate::event::attr::{read, sample};
use crate::perfdata::{KernelCheck, PerfData, user};
use crate::recording::{Comms, Recording, Source};

/// `hrec script`: one line per sample, in time order. Returns the number of samples printed.
pub fn script(rec: &Recording, out: &mut dyn Write, errors: &mut Vec<String>) -> io::Result<u64> {
    let meta = rec.meta();
    let mut comms = Comms::default();
    let mut n = 0u64;
    let mut io_err = None;
    let mut line = String::new();
    rec.for_each(|r| {
        if io_err.is_some() {
            return;
        }
        let r = match r {
            Ok(r) => r,
            Err(e) => {
                if errors.len() < 10 {
                    errors.push(e.to_string());
                }
                return;
            }
        };
        let s = match &r {
            Record::Sample(s) => s,
            other => {
                comms.apply(other);
                return;
            }
        };
        n += 1;
        line.clear();
        let event = rec
            .event_of_record(&r)
            .and_then(|e| meta.events.get(e))
            .map_or("?", |e| e.name.as_str());
        sample_line(&mut line, s, event, &comms, |id| {
            rec.event_of(id)
                .and_then(|e| meta.events.get(e))
                .map(|e| e.name.as_str())
        });
        if let Err(e) = out.write_all(line.as_bytes()) {
            io_err = Some(e);
        }
    });
    match io_err {
        Some(e) => Err(e),
        None => Ok(n),
    }
}

fn sample_line<'m>(
    line: &mut String,
    s: &Sample<'_>,
    event: &str,
    comms: &Comms,
    name_of: impl Fn(u64) -> Option<&'m str>,
) {
    let tid = s.tid.unwrap_or(0);
    let comm = comms.name(tid);
    let _ = write!(line, "{comm:>16} ");
    if let (Some(pid), Some(tid)) = (s.pid, s.tid) {
        let _ = write!(line, "{pid:>7}/{tid:<7} ");
    }
    if let Some(cpu) = s.cpu {
        let _ = write!(line, "[{cpu:03}] ");
    }
    if let Some(t) = s.time {
        let _ = write!(
            line,
            "{:>5}.{:06}: ",
            t / 1_000_000_000,
            (t % 1_000_000_000) / 1000
        );
    }
    if let Some(p) = s.period {
        let _ = write!(line, "{p:>10} ");
    }
    let _ = write!(line, "{event}: ");
    if let Some(ip) = s.ip {
        let _ = write!(line, "{ip:>16x}");
    }
    if let Some(w) = s.weight {
        if s.sample_type & sample::WEIGHT_STRUCT != 0 {
            let w = s.weight_struct().unwrap_or_default();
            let _ = write!(
                line,
                "  weight {} ins_lat {} retire_lat {}",
                w.var1, w.ins_lat, w.retire_lat
            );
        } else {
            let _ = write!(line, "  weight {w}");
        }
    }
    if let Some(r) = &s.read {
        line.push_str("  {");
        for (i, e) in r.iter().enumerate() {
            let name = e.id.and_then(&name_of).unwrap_or("?");
            if i > 0 {
                line.push(' ');
            }
            let _ = write!(line, "{name} {}", e.value);
        }
        line.push('}');
        if r.read_format() & read::LOST != 0 {
            let lost: u64 = r.iter().filter_map(|e| e.lost).sum();
            if lost > 0 {
                let _ = write!(line, " lost {lost}");
            }
        }
    }
    line.push('\n');
    if let Some(cc) = &s.callchain {
        for ip in cc.iter() {
            if context::is_marker(ip) {
                continue;
            }
            let _ = writeln!(line, "\t{ip:>16x}");
        }
        line.push('\n');
    }
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
        Some(why) => writeln!(
            out,
            "# TRUNCATED: {why}; the recording did not finish (killed?), statistics below are counted from the {} complete blocks",
            r.blocks().len()
        )?,
        None => writeln!(out, "# complete (trailer present)")?,
    }
    writeln!(out, "# hrec version : {}", m.hrec_version)?;
    writeln!(out, "# hostname : {}", m.hostname)?;
    writeln!(out, "# os release : {}", m.kernel_release)?;
    writeln!(out, "# arch : {}", m.arch)?;
    writeln!(out, "# cpudesc : {}", m.cpu_model)?;
    writeln!(out, "# nrcpus online : {} ({})", m.nr_cpus, m.cpus_online)?;
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
    match r.trailer() {
        Some(t) => {
            let per: Vec<String> = m
                .events
                .iter()
                .zip(&t.samples_per_event)
                .filter(|(_, n)| **n > 0)
                .map(|(e, n)| format!("{} {n}", e.name))
                .collect();
            writeln!(
                out,
                "# samples : {} ({}), records {}, {} bytes of records",
                t.samples,
                per.join(", "),
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
            let per: Vec<String> = m
                .events
                .iter()
                .zip(&per_event)
                .filter(|(_, n)| **n > 0)
                .map(|(e, n)| format!("{} {n}", e.name))
                .collect();
            writeln!(
                out,
                "# samples : {total} ({}) in the readable blocks",
                per.join(", ")
            )?;
        }
    }
    let (mut rb, mut raw, mut comp, mut recs) = (0u64, 0u64, 0u64, 0u64);
    for b in r.blocks() {
        match b.kind {
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
    writeln!(
        out,
        "# record blocks : {rb}, {recs} records, {raw} bytes raw, {comp} bytes compressed ({:.1}x)",
        raw as f64 / comp.max(1) as f64
    )?;
    for e in &rec.errors {
        writeln!(out, "# error : {e}")?;
    }
    Ok(())
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
    if let Some((first, last)) = i.sample_time {
        let secs = |t: u64| format!("{}.{:06}", t / 1_000_000_000, (t % 1_000_000_000) / 1000);
        writeln!(out, "# time of first sample : {}", secs(first))?;
        writeln!(out, "# time of last sample : {}", secs(last))?;
        writeln!(
            out,
            "# sample duration : {:10.3} ms",
            last.saturating_sub(first) as f64 / 1e6
        )?;
    }
    if let Some(c) = &i.compression {
        writeln!(out, "# compressed : {c}")?;
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
    let per: Vec<String> = m
        .events
        .iter()
        .zip(&t.samples_per_event)
        .filter(|(_, n)| **n > 0)
        .map(|(e, n)| format!("{} {n}", e.name))
        .collect();
    writeln!(
        out,
        "# samples : {} ({}), records {}, {} bytes of records in {} blocks",
        t.samples,
        per.join(", "),
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
    for e in &rec.errors {
        writeln!(out, "# error : {e}")?;
    }
    Ok(())
}
