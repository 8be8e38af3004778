//! Output of recordings: the `hrec info` header dump here; `hrec script` lines ([`script`]),
//! the report ([`report`]) and flame graphs ([`flame`]) in their modules.

pub mod flame;
pub mod pprof;
pub mod report;
pub mod script;

use std::fmt::Write as _;
use std::io::{self, Write};

use crate::data::BlockKind;
use crate::recording::Recording;

/// `hrec info`: the header, the events, the statistics and the blocks of a recording.
pub fn info(rec: &Recording, out: &mut dyn Write) -> io::Result<()> {
    let r = &rec.reader;
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
