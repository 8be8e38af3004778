//! `hrec convert --to json`: the JSON `perf data convert --to-json` (perf 6.1) writes, from
//! hrec's files and from perf.data alike.
//!
//! perf's layout, taken from its output: one object, tab-indented, with
//! `"linux-perf-json-version": 1`, then `"headers"` and `"samples"`.
//!
//! * `headers`: `header-version` 1; `captured-on`, the input file's modification time in UTC
//!   (`%FT%TZ`); for a perf.data, where its data section lies (`data-offset`, `data-size`,
//!   `feat-offset`, the end of the data); then the host as the file tells it (`hostname`,
//!   `os-release`, `arch`, `cpu-desc`, `cpuid`, `nrcpus-online`, `nrcpus-avail`,
//!   `perf-version`, `cmdline`), each only when the file has it. An hrec file tells them as
//!   its perf.data (`hrec convert`) would: `perf-version` is `hrec VERSION`.
//! * `samples`, in time order: `timestamp`, `pid`, `tid`, `cpu` (when any event samples it;
//!   -1 in a sample without it), `comm`, and
//!   `callchain`, the sample's frames innermost first (its own address alone without a call
//!   chain), each `{"ip": "0x..."}` with `"symbol"` and `"dso"` (the object's file name) when
//!   the address resolves. The chain is the recorded one: perf unwinds no stack copy here,
//!   so a `--call-graph dwarf` perf.data has its kernel part alone (hrec's chains unwound
//!   while recording are recorded ones). No event name nor period: perf 6.1 writes neither. hrec's
//!   off-CPU marks (`[preempted]`, `[no stack]`) are no frames of perf's.

use std::fmt::Write as _;
use std::io::{self, Write};

use crate::analysis::profile::ProfileOptions;
use crate::analysis::replay::{self, Item, Replay};
use crate::data::stacks::STACK_REF;
use crate::decode::context;
use crate::recording::{Recording, Source};

/// Writes `rec` as perf's JSON to `out`; `captured` is the input file's modification time
/// (seconds since the epoch). Returns the samples written.
pub fn write(
    rec: &Recording,
    opts: &ProfileOptions,
    captured: Option<i64>,
    out: &mut dyn Write,
) -> io::Result<u64> {
    let p = replay::build(rec, opts, &mut |_| {});
    let mut w = io::BufWriter::new(out);
    writeln!(
        w,
        "{{\n\t\"linux-perf-json-version\": 1,\n\t\"headers\": {{"
    )?;
    let mut fields: Vec<String> = vec!["\"header-version\": 1".into()];
    if let Some(t) = captured {
        fields.push(format!("\"captured-on\": \"{}\"", utc(t)));
    }
    let meta = rec.meta();
    let info = match &rec.source {
        Source::PerfData(p) => Some(&p.info),
        Source::Hrec(_) => None,
    };
    if let Some(i) = info
        && !i.pipe
    {
        let (at, size) = i.data_section;
        fields.push(format!("\"data-offset\": {at}"));
        fields.push(format!("\"data-size\": {size}"));
        fields.push(format!("\"feat-offset\": {}", at + size));
    }
    let mut string = |key: &str, v: &str| {
        if !v.is_empty() {
            fields.push(format!("\"{key}\": {}", json_string(v)));
        }
    };
    string("hostname", &meta.hostname);
    string("os-release", &meta.kernel_release);
    string("arch", &meta.arch);
    string("cpu-desc", &meta.cpu_model);
    let host = super::perfdata::convert::HostFacts::of(rec);
    string("cpuid", &host.cpuid);
    if let Some((avail, online)) = host.nr_cpus {
        fields.push(format!("\"nrcpus-online\": {online}"));
        fields.push(format!("\"nrcpus-avail\": {avail}"));
    }
    if !host.version.is_empty() {
        fields.push(format!("\"perf-version\": {}", json_string(&host.version)));
    }
    if !meta.command_line.is_empty() {
        let args: Vec<String> = meta
            .command_line
            .iter()
            .map(|a| format!("\t\t\t{}", json_string(a)))
            .collect();
        fields.push(format!("\"cmdline\": [\n{}\n\t\t]", args.join(",\n")));
    }
    let fields: Vec<String> = fields.into_iter().map(|f| format!("\t\t{f}")).collect();
    writeln!(w, "{}", fields.join(",\n"))?;
    write!(w, "\t}},\n\t\"samples\": [")?;
    let mut n = 0u64;
    let mut failed = None;
    let mut frames: Vec<(u64, Option<u32>)> = Vec::new();
    let (mut locs, mut recorded, mut t) = (Vec::<u32>::new(), Vec::<u64>::new(), String::new());
    let any_cpu = meta
        .events
        .iter()
        .any(|e| e.attr.sample_type & crate::event::attr::sample::CPU != 0);
    let mut r = Replay::new(rec, opts);
    r.run(rec, |item| {
        let Item::Sample(s, v) = item else {
            return;
        };
        if failed.is_some() {
            return;
        }
        // The addresses as this sample recorded them (a location stands for one file offset,
        // which another process may have at another address), where its chain lists exactly
        // the frames the replay found; else the locations' own.
        frames.clear();
        locs.clear();
        locs.push(v.leaf);
        locs.extend_from_slice(v.callers);
        // A chain hrec unwound while recording (`[STACK_REF, id]`) is the replay's frames,
        // as its perf.data holds them.
        recorded.clear();
        match s.callchain {
            Some(c) if c.get(0) == Some(STACK_REF) => {
                recorded.extend(locs.iter().map(|&l| p.locs[l as usize].addr));
            }
            Some(c) if v.callchain => recorded.extend(c.iter().filter(|&a| !context::is_marker(a))),
            _ => recorded.extend(s.ip),
        }
        if recorded.len() == locs.len() {
            frames.extend(recorded.iter().zip(&locs).map(|(&a, &l)| (a, Some(l))));
        } else {
            // The replay's frames are not the chain's (an empty chain, a user part the
            // replay completed): the chain's entries, each named by a frame of the replay at
            // that address.
            frames.extend(recorded.iter().map(|&a| {
                (
                    a,
                    locs.iter().copied().find(|&l| p.locs[l as usize].addr == a),
                )
            }));
        }
        t.clear();
        t.push_str(if n == 0 { "\n\t\t{\n" } else { ",\n\t\t{\n" });
        if let Some(time) = s.time {
            let _ = writeln!(t, "\t\t\t\"timestamp\": {time},");
        }
        if let (Some(pid), Some(tid)) = (s.pid, s.tid) {
            let _ = writeln!(t, "\t\t\t\"pid\": {},", pid as i32);
            let _ = writeln!(t, "\t\t\t\"tid\": {},", tid as i32);
        }
        // perf writes the CPU of every sample when any event samples it (-1 where one does
        // not).
        if any_cpu {
            let _ = writeln!(t, "\t\t\t\"cpu\": {},", s.cpu.map_or(-1, |c| c as i32));
        }
        let _ = writeln!(
            t,
            "\t\t\t\"comm\": {},",
            json_string(&p.comms[v.comm as usize])
        );
        t.push_str("\t\t\t\"callchain\": [");
        let mut first = true;
        // An empty chain is `[`, a new line and `]`, as perf writes it.
        for &(addr, l) in &frames {
            let loc = l.map(|l| &p.locs[l as usize]);
            if loc.is_some_and(|l| &*l.dso == "[off-cpu]") {
                continue;
            }
            t.push_str(if first { "\n" } else { ",\n" });
            first = false;
            let _ = write!(t, "\t\t\t\t{{\n\t\t\t\t\t\"ip\": \"{addr:#x}\"");
            if let Some(loc) = loc
                && let Some(sym) = &loc.sym
            {
                let dso = loc.dso_path.rsplit('/').next().unwrap_or(&loc.dso_path);
                let _ = write!(
                    t,
                    ",\n\t\t\t\t\t\"symbol\": {},\n\t\t\t\t\t\"dso\": {}",
                    json_string(sym),
                    json_string(dso)
                );
            }
            t.push_str("\n\t\t\t\t}");
        }
        t.push_str("\n\t\t\t]\n\t\t}");
        if let Err(e) = w.write_all(t.as_bytes()) {
            failed = Some(e);
        }
        n += 1;
    });
    if let Some(e) = failed {
        return Err(e);
    }
    write!(w, "{}", if n == 0 { "]\n}\n" } else { "\n\t]\n}\n" })?;
    w.flush()?;
    Ok(n)
}

/// `s` as a JSON string.
fn json_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_string())
}

/// Seconds since the epoch as `%FT%TZ` in UTC.
fn utc(t: i64) -> String {
    let (days, secs) = (t.div_euclid(86_400), t.rem_euclid(86_400));
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn times_are_utc_as_perf_prints_them() {
        assert_eq!(super::utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(super::utc(1_795_972_465), "2026-11-29T17:14:25Z");
        assert_eq!(super::utc(951_782_400), "2000-02-29T00:00:00Z");
    }
}
