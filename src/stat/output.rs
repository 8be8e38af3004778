//! `hrec stat` output in perf stat's layouts: the text block, `-x SEP` CSV and `--json`
//! lines, with perf's derived metrics ("CPUs utilized", "/sec", "GHz", "insn per cycle",
//! "of all branches") and the share of time a multiplexed counter ran.
//!
//! **Repeated runs** (`-r N`, [`Runs`]): the header says `(N runs)`, each count is the mean
//! of the runs and is followed by its spread, perf's variance column: `( +-  x.xx% )` in the
//! text after the (padded) metric column, left out when it is 0; a `x.xx%` field after the
//! event name in CSV; `"variance"` in JSON (both always there). The elapsed line reads
//! `MEAN +- STDERR seconds time elapsed  ( +- x.xx% )` and the user and system times are not
//! printed. With `-n` no blank line separates the counts from the elapsed time, as in perf.
//!
//! **Counts** are printed like printf's `%.0f` (`%.2f` msec), ties to even, with the locale's
//! thousands separators under `--big-num` ([`super::numeric`]).

use std::fmt::Write as _;
use std::time::Duration;

use serde_json::json;

use super::count::{Aggr, Count, Counter, Group, Label, topdown_counts, topdown_pmus};
use super::numeric::Numeric;
use super::repeat::{precision, rel_pct};
use crate::analysis::topdown::L1_LABELS;

/// How to print.
#[derive(Debug, Clone, Default)]
pub struct StatStyle {
    /// `-x SEP`.
    pub csv: Option<String>,
    /// `--json`.
    pub json: bool,
    /// `--td-level`.
    pub td_level: u8,
    /// `--big-num`: group the digits of text counts as [`StatStyle::numeric`] says.
    pub big_num: bool,
    /// The locale's numeric conventions, for `--big-num`.
    pub numeric: Numeric,
    /// `-n`/`--null`: perf's layout of a run without counters.
    pub null_run: bool,
}

/// `-r N` with N > 1: what the counts are the means of.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Runs {
    /// How many runs.
    pub runs: usize,
    /// Per counter: the standard error of its mean, relative to the mean, in percent.
    pub noise: Vec<f64>,
    /// The standard error of the mean elapsed time, in seconds.
    pub elapsed_sd: f64,
}

/// `1234567` → `1,234,567`.
pub fn thousands(v: u64) -> String {
    let s = v.to_string();
    let mut out = String::new();
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

use crate::event::base_name as base;

fn is_msec(name: &str) -> bool {
    matches!(base(name), "task-clock" | "cpu-clock")
}

/// perf's derived metric of one counter: (value, unit).
fn shadow(
    i: usize,
    counters: &[Counter],
    counts: &[Count],
    elapsed: Duration,
) -> Option<(f64, String)> {
    let c = &counters[i];
    let v = counts[i].value()?;
    let find = |name: &str| {
        counters
            .iter()
            .zip(counts)
            .find(|(o, _)| {
                base(&o.name) == name && (o.pmu == c.pmu || o.pmu.is_none() || c.pmu.is_none())
            })
            .and_then(|(_, n)| n.value())
    };
    let task_ns = counters
        .iter()
        .zip(counts)
        .find(|(o, _)| is_msec(&o.name))
        .and_then(|(_, n)| n.value());
    let per_sec = |v: f64| {
        let secs = task_ns? / 1e9;
        (secs > 0.0).then(|| {
            let r = v / secs;
            if r >= 1e9 {
                (r / 1e9, "G/sec".to_string())
            } else if r >= 1e6 {
                (r / 1e6, "M/sec".to_string())
            } else if r >= 1e3 {
                (r / 1e3, "K/sec".to_string())
            } else {
                (r, "/sec".to_string())
            }
        })
    };
    match base(&c.name) {
        "task-clock" | "cpu-clock" => {
            let e = elapsed.as_nanos() as f64;
            (e > 0.0).then(|| (v / e, "CPUs utilized".to_string()))
        }
        "cycles" | "cpu-cycles" => {
            let t = task_ns?;
            (t > 0.0).then(|| (v / t, "GHz".to_string()))
        }
        "instructions" => {
            let cyc = find("cycles")?;
            (cyc > 0.0).then(|| (v / cyc, "insn per cycle".to_string()))
        }
        "branch-misses" => {
            let b = find("branches")?;
            (b > 0.0).then(|| (100.0 * v / b, "% of all branches".to_string()))
        }
        "context-switches" | "cpu-migrations" | "page-faults" | "branches" | "minor-faults"
        | "major-faults" => per_sec(v)?.into(),
        _ => None,
    }
}

/// The text of a count and its unit: `%.2f` msec or `%.0f`, grouped with `--big-num`.
fn value_text(c: &Counter, n: &Count, style: &StatStyle) -> (String, &'static str) {
    let grouped = |t: String| {
        if style.big_num {
            style.numeric.group(&t)
        } else {
            t
        }
    };
    match n {
        Count::NotSupported(_) => ("<not supported>".into(), ""),
        Count::NotCounted => ("<not counted>".into(), ""),
        Count::Value { scaled, .. } => {
            if is_msec(&c.name) {
                (grouped(format!("{:.2}", scaled / 1e6)), "msec")
            } else {
                (grouped(format!("{scaled:.0}")), "")
            }
        }
    }
}

/// TopDown lines, one block per PMU with TopDown counters.
fn topdown_lines(counters: &[Counter], counts: &[Count], level: u8) -> Vec<String> {
    let mut out = Vec::new();
    for pmu in topdown_pmus(counters) {
        let td = topdown_counts(counters, counts, pmu.as_deref());
        let Some(l1) = td.level1() else {
            out.push(format!(
                "TopDown{}: not counted",
                pmu.as_deref()
                    .map(|p| format!(" ({p})"))
                    .unwrap_or_default()
            ));
            continue;
        };
        let label = pmu
            .as_deref()
            .map(|p| format!(" ({p})"))
            .unwrap_or_default();
        out.push(format!(
            "TopDown level 1{label}, share of {} slots:",
            thousands(td.slots())
        ));
        for (n, v) in L1_LABELS.iter().zip(l1) {
            out.push(format!("  {v:>6.1}%  {n}"));
        }
        if let Some(smt) = td.smt_contention() {
            out.push(format!("  {smt:>6.1}%  SMT Contention"));
        }
        if level >= 2
            && let Some(l2) = td.level2()
        {
            out.push(format!("TopDown level 2{label}:"));
            for (n, v) in l2.iter() {
                out.push(format!("  {v:>6.1}%  {n}"));
            }
        }
    }
    out
}

/// The `-I` header line of an aggregation mode, as perf prints it (again every 25 intervals).
pub fn interval_header(aggr: Aggr) -> &'static str {
    match aggr {
        Aggr::Global => "#           time             counts unit events",
        Aggr::PerCpu => "#           time CPU                    counts unit events",
        Aggr::PerCore => "#           time core            cpus             counts unit events",
        Aggr::PerSocket => "#           time socket cpus             counts unit events",
        Aggr::PerThread => {
            "#           time             comm-pid                  counts unit events"
        }
    }
}

/// perf's `-I` timestamp: seconds in six columns, nanoseconds.
fn timestamp(t: Duration) -> String {
    format!("{:>6}.{:09}", t.as_secs(), t.subsec_nanos())
}

/// perf's name of an aggregate: `CPU3`, `S0-D0-C1` (socket, die, core), `S0`, `comm-tid`.
/// `padded`: each part padded to perf's text columns, as the text output aligns them (the
/// core number, the socket, the comm and the tid, not the whole name); CSV and JSON print it
/// unpadded.
fn label_name(l: &Label, padded: bool) -> String {
    let w = |width: usize| if padded { width } else { 0 };
    match l {
        Label::Cpu(c) => format!("CPU{c:<w$}", w = w(7)),
        Label::Core {
            socket, die, core, ..
        } => format!("S{socket}-D{die}-C{core:<w$}", w = w(8)),
        Label::Socket { socket, .. } => format!("S{socket:<w$}", w = w(5)),
        Label::Thread { comm, tid } => format!("{comm:>w1$}-{tid:<w2$}", w1 = w(16), w2 = w(8)),
    }
}

/// How many CPUs a core or socket aggregate adds up (perf prints it after the name).
fn label_cpus(l: &Label) -> Option<usize> {
    match l {
        Label::Core { cpus, .. } | Label::Socket { cpus, .. } => Some(*cpus),
        Label::Cpu(_) | Label::Thread { .. } => None,
    }
}

/// A label in perf's text columns, with the separating blank.
fn label_text(l: &Label) -> String {
    let mut s = label_name(l, true);
    s.push(' ');
    if let Some(n) = label_cpus(l) {
        let _ = write!(s, "{n:>4} ");
    }
    s
}

/// A label as CSV fields, each followed by the separator.
fn label_csv(l: &Label, sep: &str) -> String {
    let mut s = label_name(l, false);
    s.push_str(sep);
    if let Some(n) = label_cpus(l) {
        let _ = write!(s, "{n}{sep}");
    }
    s
}

/// A label's JSON fields, as perf names them.
fn label_json(l: &Label, o: &mut serde_json::Value) {
    match l {
        // A CPU by its bare number.
        Label::Cpu(c) => o["cpu"] = json!(c.to_string()),
        Label::Core { .. } => o["core"] = json!(label_name(l, false)),
        Label::Socket { .. } => o["socket"] = json!(label_name(l, false)),
        Label::Thread { .. } => o["thread"] = json!(label_name(l, false)),
    }
    if let Some(n) = label_cpus(l) {
        o["cpus"] = json!(n);
    }
}

/// One counter's line: `counts` are those of its aggregate (all places, or one `label`);
/// `noise` is its variance with `-r`.
#[allow(clippy::too_many_arguments)]
fn row(
    s: &mut String,
    label: Option<&Label>,
    i: usize,
    counters: &[Counter],
    counts: &[Count],
    elapsed: Duration,
    style: &StatStyle,
    interval_at: Option<Duration>,
    noise: Option<f64>,
) {
    let (c, n) = (&counters[i], &counts[i]);
    let sh = shadow(i, counters, counts, elapsed);
    let pct = n.running_pct();
    let run_ns = match n {
        Count::Value { running, .. } => *running,
        _ => 0,
    };
    if style.json {
        let (v, unit) = value_text(c, n, style);
        let mut o = json!({
            "counter-value": match n { Count::Value { scaled, .. } => if is_msec(&c.name) { format!("{:.6}", scaled / 1e6) } else { format!("{scaled:.2}") }, _ => v },
            "unit": unit,
            "event": c.name,
            "event-runtime": run_ns,
            "pcnt-running": (pct * 100.0).round() / 100.0,
        });
        if let Some(l) = label {
            label_json(l, &mut o);
        }
        if let Some(pct) = noise {
            o["variance"] = json!((pct * 100.0).round() / 100.0);
        }
        if let Some((mv, mu)) = &sh {
            o["metric-value"] = json!((mv * 1000.0).round() / 1000.0);
            o["metric-unit"] = json!(mu);
        }
        if let Some(t) = interval_at {
            o["interval"] = json!(t.as_secs_f64());
        }
        let _ = writeln!(s, "{o}");
    } else if let Some(sep) = &style.csv {
        let (v, unit) = match n {
            Count::Value { scaled, .. } if is_msec(&c.name) => {
                (format!("{:.2}", scaled / 1e6), "msec")
            }
            Count::Value { scaled, .. } => (format!("{scaled:.0}"), ""),
            other => value_text(c, other, style),
        };
        let var = noise
            .map(|pct| format!("{pct:.2}%{sep}"))
            .unwrap_or_default();
        let (mv, mu) = sh.map(|(v, u)| (format!("{v:.3}"), u)).unwrap_or_default();
        let t = interval_at
            .map(|t| format!("{:.9}{sep}", t.as_secs_f64()))
            .unwrap_or_default();
        let l = label.map(|l| label_csv(l, sep)).unwrap_or_default();
        let _ = writeln!(
            s,
            "{t}{l}{v}{sep}{unit}{sep}{}{sep}{var}{run_ns}{sep}{pct:.2}{sep}{mv}{sep}{mu}",
            c.name
        );
    } else {
        let prefix = interval_at
            .map(|t| format!("{} ", timestamp(t)))
            .unwrap_or_default();
        let l = label.map(label_text).unwrap_or_default();
        let (v, unit) = value_text(c, n, style);
        let mut line = format!("{prefix}{l}{v:>18} {unit:<4} {:<32}", c.name);
        // The metric column is 35 wide (perf's METRIC_LEN) when something follows it.
        match sh {
            Some((mv, mu)) => {
                let _ = write!(line, " # {mv:>8.3} {mu:<23}");
            }
            None => line.push_str(&" ".repeat(35)),
        }
        if let Some(pct) = noise
            && pct != 0.0
        {
            let _ = write!(line, "  ( +-{pct:6.2}% )");
        }
        if matches!(n, Count::Value { .. }) && pct < 99.995 {
            let _ = write!(line, "  ({pct:.2}%)");
        }
        let _ = writeln!(s, "{}", line.trim_end());
    }
}

/// Formats one block of counts (the whole run, or one `-I` interval with its timestamp):
/// `elapsed` is the time they were counted in (the interval's length with `-I`).
pub fn format(
    counters: &[Counter],
    counts: &[Count],
    elapsed: Duration,
    style: &StatStyle,
    interval_at: Option<Duration>,
) -> String {
    format_groups(
        counters,
        counts,
        &[],
        Aggr::Global,
        elapsed,
        style,
        interval_at,
        None,
    )
}

/// [`format`] with the counts per aggregate of `-A`/`--per-*` (`groups`; empty: one value
/// per event), in perf's order: per CPU and per thread, each event's aggregates together
/// (threads by count, highest first, those that counted nothing left out); per core and per
/// socket, each aggregate's events together. With `runs` (`-r`) every line carries its
/// variance: a counter's own in one value per event, 0 per aggregate (perf keeps run
/// statistics of the totals only).
#[allow(clippy::too_many_arguments)]
pub fn format_groups(
    counters: &[Counter],
    counts: &[Count],
    groups: &[Group],
    aggr: Aggr,
    elapsed: Duration,
    style: &StatStyle,
    interval_at: Option<Duration>,
    runs: Option<&Runs>,
) -> String {
    let mut s = String::new();
    let group_noise = runs.map(|_| 0.0);
    // Counter `i`'s line for aggregate `g`.
    let group_row = |s: &mut String, g: &Group, i: usize| {
        row(
            s,
            Some(&g.label),
            i,
            counters,
            &g.counts,
            elapsed,
            style,
            interval_at,
            group_noise,
        );
    };
    if groups.is_empty() {
        for i in 0..counters.len() {
            let noise = runs.map(|r| r.noise.get(i).copied().unwrap_or(0.0));
            row(
                &mut s,
                None,
                i,
                counters,
                counts,
                elapsed,
                style,
                interval_at,
                noise,
            );
        }
    } else if matches!(aggr, Aggr::PerCore | Aggr::PerSocket) {
        for g in groups {
            for i in 0..counters.len() {
                group_row(&mut s, g, i);
            }
        }
    } else {
        for i in 0..counters.len() {
            let mut order: Vec<&Group> = groups.iter().collect();
            if aggr == Aggr::PerThread {
                order.retain(|g| g.counts[i].value().is_some_and(|v| v > 0.0));
                order.sort_by(|a, b| {
                    let v = |g: &Group| g.counts[i].value().unwrap_or(0.0);
                    v(b).total_cmp(&v(a))
                });
            }
            for g in order {
                group_row(&mut s, g, i);
            }
        }
    }
    if !style.json && style.csv.is_none() {
        let prefix = interval_at
            .map(|t| format!("{} ", timestamp(t)))
            .unwrap_or_default();
        let td = topdown_lines(counters, counts, style.td_level);
        if !td.is_empty() {
            s.push('\n');
            for l in td {
                let _ = writeln!(s, "{prefix}{l}");
            }
        }
    }
    s
}

/// The whole report after a run: perf's header (`title` as perf words it, quotes included:
/// `'CMD'`, `process id '42'`; `(N runs)` after it with `runs`), the counts, the elapsed
/// time (`MEAN +- STDERR` with `runs`), and the user and system time of the command when hrec
/// ran one on its own.
#[allow(clippy::too_many_arguments)]
pub fn report(
    title: &str,
    counters: &[Counter],
    counts: &[Count],
    groups: &[Group],
    aggr: Aggr,
    elapsed: Duration,
    user_sys: Option<(f64, f64)>,
    style: &StatStyle,
    runs: Option<&Runs>,
) -> String {
    let body = format_groups(counters, counts, groups, aggr, elapsed, style, None, runs);
    if style.json || style.csv.is_some() {
        return body;
    }
    let times = runs
        .map(|r| format!(" ({} runs)", r.runs))
        .unwrap_or_default();
    let mut s = format!("\n Performance counter stats for {title}{times}:\n\n");
    s.push_str(&body);
    if !style.null_run {
        s.push('\n');
    }
    let secs = elapsed.as_secs_f64();
    match runs {
        Some(r) => {
            let sd = r.elapsed_sd;
            let p = precision(sd);
            let _ = write!(s, " {secs:>17.p$} +- {sd:.p$} seconds time elapsed");
            let pct = rel_pct(sd, secs);
            if pct != 0.0 {
                let _ = write!(s, "  ( +-{pct:6.2}% )");
            }
            s.push_str("\n\n");
        }
        None => {
            let _ = write!(s, "{secs:>18.9} seconds time elapsed\n\n");
            if let Some((user, sys)) = user_sys {
                // perf ends with two blank lines here.
                let _ = write!(
                    s,
                    "{user:>18.9} seconds user\n{sys:>18.9} seconds sys\n\n\n"
                );
            }
        }
    }
    s
}

/// The metrics and the retire latencies they used: text lines, JSON lines, or CSV rows.
/// `pmu`: the core PMU they were counted on, named in the text on hybrid parts.
pub fn metrics_block(
    file: &std::path::Path,
    pmu: Option<&str>,
    values: &[super::tma::MetricValue],
    latencies: &[super::tpebs::Resolved],
    missing: &[String],
    style: &StatStyle,
) -> String {
    let mut s = String::new();
    if style.json {
        for v in values {
            let o = match &v.value {
                Ok(x) => json!({"metric-name": v.name, "metric-value": x, "metric-unit": v.unit}),
                Err(why) => json!({"metric-name": v.name, "metric-value": null, "error": why}),
            };
            let _ = writeln!(s, "{o}");
        }
        for l in latencies {
            let _ = writeln!(s, "{}", json!({ "retire-latency": l }));
        }
        for m in missing {
            let _ = writeln!(
                s,
                "{}",
                json!({"retire-latency": {"event": m, "value": null}})
            );
        }
        return s;
    }
    if let Some(sep) = &style.csv {
        for v in values {
            let val = v
                .value
                .as_ref()
                .map(|x| format!("{x:.3}"))
                .unwrap_or_default();
            let _ = writeln!(s, "{sep}{sep}{}{sep}{sep}{sep}{val}{sep}{}", v.name, v.unit);
        }
        return s;
    }
    let name = file.file_name().map_or_else(
        || file.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let on = pmu.map(|p| format!(" on {p}")).unwrap_or_default();
    let _ = writeln!(s, " Metrics{on} (Intel's formulas, {name}):");
    metric_lines(&mut s, values);
    if !latencies.is_empty() || !missing.is_empty() {
        let _ = writeln!(s, "\n Retire latencies used:");
        for l in latencies {
            let _ = writeln!(s, "   {l}");
        }
        for m in missing {
            let _ = writeln!(
                s,
                "   {m}:retire_latency: no value (not measured, not in --tpebs-from, no Intel default); metrics that need it are not computed"
            );
        }
    }
    s.push('\n');
    s
}

/// The text lines of evaluated metrics: the value and unit, or why there is none.
fn metric_lines(s: &mut String, values: &[super::tma::MetricValue]) {
    for v in values {
        match &v.value {
            Ok(x) => {
                let _ = writeln!(s, "{x:>18.3} {:<4} {}", v.unit, v.name);
            }
            Err(why) => {
                let _ = writeln!(s, "{:>18} {:<4} {}: {why}", "<not computed>", "", v.name);
            }
        }
    }
}

/// E-core TopDown level-1 metrics of one PMU ([`super::ecore_tma`]), in the layout of
/// [`metrics_block`]: the text names the PMU (on hybrid parts) and the source of the
/// formulas; JSON rows carry `pmu` and `source`; CSV rows are as Intel's metrics' (a hybrid
/// part's name them `cpu_atom/tma_retiring/`).
pub fn ecore_metrics_block(
    pmu: &str,
    hybrid: bool,
    source: &str,
    values: &[super::tma::MetricValue],
    style: &StatStyle,
) -> String {
    let mut s = String::new();
    if style.json {
        for v in values {
            let mut o = match &v.value {
                Ok(x) => json!({"metric-name": v.name, "metric-value": x, "metric-unit": v.unit}),
                Err(why) => json!({"metric-name": v.name, "metric-value": null, "error": why}),
            };
            o["pmu"] = json!(pmu);
            o["source"] = json!(source);
            let _ = writeln!(s, "{o}");
        }
        return s;
    }
    if let Some(sep) = &style.csv {
        for v in values {
            let val = v
                .value
                .as_ref()
                .map(|x| format!("{x:.3}"))
                .unwrap_or_default();
            let name = if hybrid {
                format!("{pmu}/{}/", v.name)
            } else {
                v.name.clone()
            };
            let _ = writeln!(s, "{sep}{sep}{name}{sep}{sep}{sep}{val}{sep}{}", v.unit);
        }
        return s;
    }
    let on = if hybrid {
        format!(" on {pmu}")
    } else {
        String::new()
    };
    let _ = writeln!(s, " Metrics{on} ({source}):");
    metric_lines(&mut s, values);
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::topdown::TdEvent;
    use crate::event::attr::Attr;

    /// Each aggregate's name in the text, CSV and JSON forms, against perf's spellings: text
    /// pads the parts (core number, socket, comm, tid), CSV and JSON do not, and JSON names a
    /// CPU by its bare number.
    #[test]
    fn labels_in_each_form() {
        let cases = [
            (Label::Cpu(3), "CPU3       ", "CPU3;", json!({"cpu": "3"})),
            (
                Label::Core {
                    socket: 1,
                    die: 0,
                    core: 12,
                    cpus: 2,
                },
                "S1-D0-C12          2 ",
                "S1-D0-C12;2;",
                json!({"core": "S1-D0-C12", "cpus": 2}),
            ),
            (
                Label::Socket {
                    socket: 0,
                    cpus: 16,
                },
                "S0       16 ",
                "S0;16;",
                json!({"socket": "S0", "cpus": 16}),
            ),
            (
                Label::Thread {
                    comm: "worker".into(),
                    tid: 4242,
                },
                "          worker-4242     ",
                "worker-4242;",
                json!({"thread": "worker-4242"}),
            ),
        ];
        for (l, text, csv, want) in cases {
            assert_eq!(label_text(&l), text, "{l:?}");
            assert_eq!(label_csv(&l, ";"), csv, "{l:?}");
            let mut o = json!({});
            label_json(&l, &mut o);
            assert_eq!(o, want, "{l:?}");
        }
    }

    fn counter(name: &str, pmu: Option<&str>, td: Option<TdEvent>) -> Counter {
        Counter {
            name: name.into(),
            pmu: pmu.map(String::from),
            attr: Attr::default(),
            leader: 0,
            td: td.map(crate::analysis::topdown::TdRole::Event),
            kernel_tracepoint: false,
        }
    }

    fn val(v: u64, enabled: u64, running: u64) -> Count {
        Count::from_reads(&[(v, enabled, running)])
    }

    #[test]
    fn perf_layout_with_derived_metrics_and_not_supported() {
        let counters: Vec<Counter> = [
            "task-clock",
            "context-switches",
            "page-faults",
            "cycles",
            "instructions",
            "branches",
            "branch-misses",
        ]
        .iter()
        .map(|n| counter(n, None, None))
        .collect();
        let counts = vec![
            val(500_000_000, 1, 1), // 500 ms
            val(10, 1, 1),          // 20 /sec
            val(2_000_000, 1, 1),   // 4 M/sec
            Count::NotSupported(2),
            val(3_000_000_000, 10, 5), // scaled x2: 6e9, 50% running
            val(1_000, 1, 1),
            val(25, 1, 1), // 2.5% of all branches
        ];
        let s = format(
            &counters,
            &counts,
            Duration::from_secs(1),
            &StatStyle::default(),
            None,
        );
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(
            lines[0],
            "            500.00 msec task-clock                       #    0.500 CPUs utilized"
        );
        assert_eq!(
            lines[1],
            "                10      context-switches                 #   20.000 /sec"
        );
        assert!(lines[2].ends_with("#    4.000 M/sec"), "{}", lines[2]);
        assert_eq!(lines[3], "   <not supported>      cycles");
        // No metric: perf pads the 35-wide metric column before the running share.
        assert_eq!(
            lines[4],
            format!(
                "        6000000000      instructions{}  (50.00%)",
                " ".repeat(20 + 35)
            )
        );
        assert!(
            lines[6].ends_with("#    2.500 % of all branches"),
            "{}",
            lines[6]
        );

        let csv = format(
            &counters[..1],
            &counts[..1],
            Duration::from_secs(1),
            &StatStyle {
                csv: Some(",".into()),
                ..Default::default()
            },
            None,
        );
        assert_eq!(csv, "500.00,msec,task-clock,1,100.00,0.500,CPUs utilized\n");
        let j = format(
            &counters[3..5],
            &counts[3..5],
            Duration::from_secs(1),
            &StatStyle {
                json: true,
                ..Default::default()
            },
            None,
        );
        let rows: Vec<serde_json::Value> = j
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(rows[0]["counter-value"], "<not supported>");
        assert_eq!(rows[1]["pcnt-running"], 50.0);
        assert_eq!(rows[1]["counter-value"], "6000000000.00");
    }

    #[test]
    fn topdown_block_from_counts() {
        let td = [
            ("slots", TdEvent::Slots, 1000),
            ("topdown-retiring", TdEvent::Retiring, 400),
            ("topdown-bad-spec", TdEvent::BadSpec, 100),
            ("topdown-fe-bound", TdEvent::FeBound, 100),
            ("topdown-be-bound", TdEvent::BeBound, 400),
            ("topdown-heavy-ops", TdEvent::HeavyOps, 100),
            ("topdown-br-mispredict", TdEvent::BrMispredict, 80),
            ("topdown-fetch-lat", TdEvent::FetchLat, 60),
            ("topdown-mem-bound", TdEvent::MemBound, 300),
        ];
        let counters: Vec<Counter> = td
            .iter()
            .map(|(n, k, _)| counter(n, Some("cpu"), Some(*k)))
            .collect();
        let counts: Vec<Count> = td.iter().map(|(_, _, v)| val(*v, 1, 1)).collect();
        let s = format(
            &counters,
            &counts,
            Duration::from_secs(1),
            &StatStyle {
                td_level: 2,
                ..Default::default()
            },
            None,
        );
        let want = "TopDown level 1 (cpu), share of 1,000 slots:\n    40.0%  Retiring\n    10.0%  Bad Speculation\n    10.0%  Frontend Bound\n    40.0%  Backend Bound\nTopDown level 2 (cpu):\n    10.0%  Heavy Operations\n    30.0%  Light Operations\n     8.0%  Branch Mispredicts\n     2.0%  Machine Clears\n     6.0%  Fetch Latency\n     4.0%  Fetch Bandwidth\n    30.0%  Memory Bound\n    10.0%  Core Bound\n";
        assert!(s.ends_with(want), "{s}");
    }

    /// An E-core group (Gracemont): the slots are 5 x cycles, each share is of them and Bad
    /// Speculation is the remainder (Intel's E-core TMA), beside a P-core block.
    #[test]
    fn ecore_topdown_block_from_counts() {
        use crate::analysis::topdown::TdRole;
        let mut counters = vec![counter("cpu_atom/cycles/", Some("cpu_atom"), None)];
        counters[0].td = Some(TdRole::EcoreCycles {
            width: 5,
            remainder: true,
        });
        counters.extend([
            counter(
                "TOPDOWN_FE_BOUND.ALL",
                Some("cpu_atom"),
                Some(TdEvent::FeBound),
            ),
            counter(
                "TOPDOWN_BE_BOUND.ALL",
                Some("cpu_atom"),
                Some(TdEvent::BeBound),
            ),
            counter(
                "TOPDOWN_RETIRING.ALL",
                Some("cpu_atom"),
                Some(TdEvent::Retiring),
            ),
        ]);
        let counts: Vec<Count> = [1000, 1000, 1500, 2000]
            .iter()
            .map(|&v| val(v, 1, 1))
            .collect();
        let s = format(
            &counters,
            &counts,
            Duration::from_secs(1),
            &StatStyle {
                td_level: 2,
                ..Default::default()
            },
            None,
        );
        let want = "TopDown level 1 (cpu_atom), share of 5,000 slots:\n    40.0%  Retiring\n    10.0%  Bad Speculation\n    20.0%  Frontend Bound\n    30.0%  Backend Bound\n";
        assert!(s.ends_with(want), "{s}");
    }

    /// AMD Zen 4's level 1 from its two counting groups (the NMI watchdog's split): four
    /// nodes over 6 x the first group's cycles, SMT Contention over its own group's.
    #[test]
    fn vendor_topdown_block_from_counts() {
        use crate::analysis::topdown::TdRole;
        use crate::pmu::vendor::{VEvent, VendorCore};
        let cycles = |smt_only: bool| {
            let mut c = counter("cycles", Some("cpu"), None);
            c.td = Some(TdRole::VendorCycles {
                core: VendorCore::Zen4,
                width: 6,
                smt_only,
            });
            c
        };
        let member = |name: &str, e: VEvent| {
            let mut c = counter(name, Some("cpu"), None);
            c.td = Some(TdRole::Vendor(e));
            c
        };
        let counters = vec![
            cycles(false),
            member("de_src_op_disp.all", VEvent::Dispatched),
            member("ex_ret_ops", VEvent::Retired),
            member(
                "de_no_dispatch_per_slot.no_ops_from_frontend",
                VEvent::Frontend,
            ),
            member("de_no_dispatch_per_slot.backend_stalls", VEvent::Backend),
            cycles(true),
            member("de_no_dispatch_per_slot.smt_contention", VEvent::Smt),
        ];
        let counts: Vec<Count> = [1000, 2700, 2400, 1200, 1800, 500, 300]
            .iter()
            .map(|&v| val(v, 1, 1))
            .collect();
        let s = format(
            &counters,
            &counts,
            Duration::from_secs(1),
            &StatStyle::default(),
            None,
        );
        let want = "TopDown level 1 (cpu), share of 6,000 slots:\n    40.0%  Retiring\n     5.0%  Bad Speculation\n    20.0%  Frontend Bound\n    30.0%  Backend Bound\n    10.0%  SMT Contention\n";
        assert!(s.ends_with(want), "{s}");
    }

    /// `--td-level 2` on Arrow Lake-H's two E-core PMUs: a level-1 and a level-2 block each,
    /// the level-2 labels of Intel's E-core tree, each share of `width x` cycles.
    ///
    /// cpu_atom (Skymont, all five level-2 events counted): slots = 8 x 100 = 800; RET 280,
    /// Bad Speculation 80, FE 200, BE 240 give 35/10/25/30%; Branch Mispredicts 40 = 5%,
    /// Machine Clears 24 = 3%, IFetch Latency 120 = 15%, IFetch Bandwidth 72 = 9%, Core Bound
    /// 96 = 12%, Resource Bound (240 - 96) = 144 = 18%.
    ///
    /// cpu_lowpower (Crestmont, three counted): slots = 6 x 500 = 3000; RET 1200, Bad
    /// Speculation 300, FE 600, BE 900 give 40/10/20/30%; Branch Mispredicts 240 = 8%,
    /// Machine Clears (300 - 240) = 60 = 2%, IFetch Latency 450 = 15%, IFetch Bandwidth
    /// (600 - 450) = 150 = 5%, Core Bound 360 = 12%, Resource Bound (900 - 360) = 540 = 18%.
    #[test]
    fn ecore_level2_blocks_from_counts() {
        use crate::analysis::topdown::TdRole;
        let group = |pmu: &str, width: u32, members: &[(TdEvent, u64)], cycles: u64| {
            let mut c = vec![counter("cycles", Some(pmu), None)];
            c[0].td = Some(TdRole::EcoreCycles {
                width,
                remainder: false,
            });
            let mut n = vec![val(cycles, 1, 1)];
            for &(k, v) in members {
                c.push(counter(&format!("{k:?}"), Some(pmu), Some(k)));
                n.push(val(v, 1, 1));
            }
            (c, n)
        };
        use TdEvent::*;
        let (mut counters, mut counts) = group(
            "cpu_atom",
            8,
            &[
                (FeBound, 200),
                (BadSpec, 80),
                (BeBound, 240),
                (Retiring, 280),
                (FetchLat, 120),
                (BrMispredict, 40),
                (AllocRestrictions, 96),
                (IfetchBandwidth, 72),
                (MachineClears, 24),
            ],
            100,
        );
        let (c, n) = group(
            "cpu_lowpower",
            6,
            &[
                (FeBound, 600),
                (BadSpec, 300),
                (BeBound, 900),
                (Retiring, 1200),
                (FetchLat, 450),
                (BrMispredict, 240),
                (AllocRestrictions, 360),
            ],
            500,
        );
        counters.extend(c);
        counts.extend(n);
        let s = format(
            &counters,
            &counts,
            Duration::from_secs(1),
            &StatStyle {
                td_level: 2,
                ..Default::default()
            },
            None,
        );
        let want = "\
TopDown level 1 (cpu_atom), share of 800 slots:
    35.0%  Retiring
    10.0%  Bad Speculation
    25.0%  Frontend Bound
    30.0%  Backend Bound
TopDown level 2 (cpu_atom):
     5.0%  Branch Mispredicts
     3.0%  Machine Clears
    15.0%  IFetch Latency
     9.0%  IFetch Bandwidth
    12.0%  Core Bound
    18.0%  Resource Bound
TopDown level 1 (cpu_lowpower), share of 3,000 slots:
    40.0%  Retiring
    10.0%  Bad Speculation
    20.0%  Frontend Bound
    30.0%  Backend Bound
TopDown level 2 (cpu_lowpower):
     8.0%  Branch Mispredicts
     2.0%  Machine Clears
    15.0%  IFetch Latency
     5.0%  IFetch Bandwidth
    12.0%  Core Bound
    18.0%  Resource Bound
";
        assert!(s.ends_with(want), "{s}");
        // --td-level 1: the level-1 blocks alone.
        let s = format(
            &counters,
            &counts,
            Duration::from_secs(1),
            &StatStyle {
                td_level: 1,
                ..Default::default()
            },
            None,
        );
        assert!(!s.contains("TopDown level 2"), "{s}");
        assert_eq!(s.matches("TopDown level 1").count(), 2, "{s}");
    }

    /// Lines as perf 6.1 prints them on this machine (trailing blanks aside) for `-A -I`,
    /// `--per-core -I`, `--per-socket -I` and `--per-thread`.
    #[test]
    fn aggregated_lines_in_perfs_columns() {
        let counters = vec![counter("task-clock", None, None)];
        let group = |label, ns| Group {
            label,
            counts: vec![val(ns, 1, 1)],
        };
        let at = Some(Duration::new(0, 300_372_161));
        let ms300 = Duration::from_millis(300);
        let line = |groups: &[Group], aggr, elapsed, at| {
            let s = format_groups(
                &counters,
                &[],
                groups,
                aggr,
                elapsed,
                &StatStyle::default(),
                at,
                None,
            );
            s.lines().next().unwrap().to_string()
        };
        assert_eq!(
            line(
                &[group(Label::Cpu(0), 303_870_000)],
                Aggr::PerCpu,
                ms300,
                at
            ),
            "     0.300372161 CPU0                   303.87 msec task-clock                       #    1.013 CPUs utilized"
        );
        let core = Label::Core {
            socket: 0,
            die: 0,
            core: 0,
            cpus: 1,
        };
        assert_eq!(
            line(
                &[group(core, 302_430_000)],
                Aggr::PerCore,
                ms300,
                Some(Duration::new(0, 300_365_842))
            ),
            "     0.300365842 S0-D0-C0           1             302.43 msec task-clock                       #    1.008 CPUs utilized"
        );
        let socket = Label::Socket { socket: 0, cpus: 2 };
        assert_eq!(
            line(
                &[group(socket, 610_840_000)],
                Aggr::PerSocket,
                ms300,
                Some(Duration::new(0, 300_360_765))
            ),
            "     0.300360765 S0        2             610.84 msec task-clock                       #    2.036 CPUs utilized"
        );
        let thread = |tid, ns| {
            group(
                Label::Thread {
                    comm: "python3".into(),
                    tid,
                },
                ns,
            )
        };
        // Threads by count, highest first; one that counted nothing is left out.
        let s = format_groups(
            &counters,
            &[],
            &[
                thread(943, 101_920_000),
                thread(946, 107_410_000),
                thread(950, 0),
            ],
            Aggr::PerThread,
            Duration::from_nanos(301_702_827),
            &StatStyle::default(),
            None,
            None,
        );
        assert_eq!(
            s,
            "         python3-946                  107.41 msec task-clock                       #    0.356 CPUs utilized\n         python3-943                  101.92 msec task-clock                       #    0.338 CPUs utilized\n"
        );
        assert_eq!(
            interval_header(Aggr::PerThread),
            "#           time             comm-pid                  counts unit events"
        );
        // CSV and JSON carry the label as perf's fields.
        let csv = format_groups(
            &counters,
            &[],
            &[group(
                Label::Core {
                    socket: 1,
                    die: 0,
                    core: 3,
                    cpus: 2,
                },
                1_000_000,
            )],
            Aggr::PerCore,
            ms300,
            &StatStyle {
                csv: Some(";".into()),
                ..Default::default()
            },
            None,
            None,
        );
        assert!(csv.starts_with("S1-D0-C3;2;1.00;msec;task-clock;"), "{csv}");
        let j = format_groups(
            &counters,
            &[],
            &[group(Label::Cpu(5), 1_000_000)],
            Aggr::PerCpu,
            ms300,
            &StatStyle {
                json: true,
                ..Default::default()
            },
            None,
            None,
        );
        let v: serde_json::Value = serde_json::from_str(j.trim()).unwrap();
        assert_eq!(v["cpu"], "5");
    }

    /// `-r 3` lines as perf 6.1 printed them on this machine, from the same means, spreads and
    /// elapsed time.
    #[test]
    fn repeated_runs_in_perfs_layout() {
        let counters: Vec<Counter> = ["task-clock", "context-switches", "cycles"]
            .iter()
            .map(|n| counter(n, None, None))
            .collect();
        let counts = vec![
            val(810_000, 810_000, 810_000),
            val(0, 1, 1),
            Count::NotSupported(libc::ENOENT),
        ];
        let runs = Runs {
            runs: 3,
            noise: vec![4.79, 0.0, 0.0],
            elapsed_sd: 0.0000562,
        };
        // 0.81 ms of task-clock in 1.467391 ms: 0.552 CPUs.
        let elapsed = Duration::from_nanos(1_467_391);
        let text = |style: &StatStyle| {
            report(
                "'true'",
                &counters,
                &counts,
                &[],
                Aggr::Global,
                elapsed,
                None,
                style,
                Some(&runs),
            )
        };
        let s = text(&StatStyle::default());
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(lines[1], " Performance counter stats for 'true' (3 runs):");
        assert_eq!(
            lines[3],
            "              0.81 msec task-clock                       #    0.552 CPUs utilized            ( +-  4.79% )"
        );
        // A spread of 0 is not printed.
        assert_eq!(
            lines[4],
            "                 0      context-switches                 #    0.000 /sec"
        );
        assert_eq!(lines[5], "   <not supported>      cycles");
        assert_eq!(lines[6], "");
        // The elapsed mean with two significant digits of its spread (perf: 0.0012585 +-
        // 0.0000562, 4.47%), and no user and system times.
        let s = report(
            "'true'",
            &[],
            &[],
            &[],
            Aggr::Global,
            Duration::from_nanos(1_258_500),
            Some((0.1, 0.2)),
            &StatStyle::default(),
            Some(&runs),
        );
        assert!(
            s.ends_with(
                "\n\n         0.0012585 +- 0.0000562 seconds time elapsed  ( +-  4.47% )\n\n"
            ),
            "{s:?}"
        );
        assert!(!s.contains("user"), "{s}");
        // A counter without a metric: the metric column is padded before the spread.
        let pf = [counter("page-faults", None, None)];
        let one = Runs {
            runs: 3,
            noise: vec![0.68],
            elapsed_sd: 0.0,
        };
        let s = format_groups(
            &pf,
            &[val(49, 1, 1)],
            &[],
            Aggr::Global,
            elapsed,
            &StatStyle::default(),
            None,
            Some(&one),
        );
        assert_eq!(
            s,
            "                49      page-faults                                                          ( +-  0.68% )\n"
        );
        // CSV: the variance after the event name, 0.00% included; JSON: "variance".
        let csv = text(&StatStyle {
            csv: Some(",".into()),
            ..Default::default()
        });
        let rows: Vec<&str> = csv.lines().collect();
        assert_eq!(
            rows[0],
            "0.81,msec,task-clock,4.79%,810000,100.00,0.552,CPUs utilized"
        );
        assert_eq!(rows[2], "<not supported>,,cycles,0.00%,0,100.00,,");
        let json = text(&StatStyle {
            json: true,
            ..Default::default()
        });
        let first: serde_json::Value = serde_json::from_str(json.lines().next().unwrap()).unwrap();
        assert_eq!(first["variance"], 4.79);
        // Per aggregate the variance is 0 (perf keeps run statistics of the totals only).
        let groups = [Group {
            label: Label::Cpu(0),
            counts: vec![val(49, 1, 1)],
        }];
        let csv = format_groups(
            &pf,
            &[],
            &groups,
            Aggr::PerCpu,
            elapsed,
            &StatStyle {
                csv: Some(",".into()),
                ..Default::default()
            },
            None,
            Some(&one),
        );
        assert_eq!(csv, "CPU0,49,,page-faults,0.00%,1,100.00,,\n");
        // Without -r there is no variance field.
        let csv = format(
            &pf,
            &[val(49, 1, 1)],
            elapsed,
            &StatStyle {
                csv: Some(",".into()),
                ..Default::default()
            },
            None,
        );
        assert_eq!(csv, "49,,page-faults,1,100.00,,\n");
    }

    /// `-n`: no blank line between the counts and the elapsed time (perf's null-run layout).
    #[test]
    fn null_run_layout() {
        let s = report(
            "'sleep 0.25'",
            &[],
            &[],
            &[],
            Aggr::Global,
            Duration::from_nanos(252_364_479),
            Some((0.00235, 0.0)),
            &StatStyle {
                null_run: true,
                ..Default::default()
            },
            None,
        );
        assert_eq!(
            s,
            "\n Performance counter stats for 'sleep 0.25':\n\n       0.252364479 seconds time elapsed\n\n       0.002350000 seconds user\n       0.000000000 seconds sys\n\n\n"
        );
    }

    /// `--big-num` groups the text counts as the locale does; CSV stays plain.
    #[test]
    fn big_num_groups_text_counts_only() {
        let counters = [
            counter("page-faults", None, None),
            counter("task-clock", None, None),
        ];
        let counts = [val(21_788, 1, 1), val(1_234_567_890, 1, 1)];
        let en = Numeric::parse("thousands_sep=\",\"\ndecimal_point=\".\"\ngrouping=3;3\n");
        let style = |big_num| StatStyle {
            big_num,
            numeric: en.clone(),
            ..Default::default()
        };
        let s = format(
            &counters,
            &counts,
            Duration::from_secs(2),
            &style(true),
            None,
        );
        let lines: Vec<&str> = s.lines().collect();
        // perf in en_US.UTF-8: `            21,788      page-faults`.
        assert!(
            lines[0].starts_with("            21,788      page-faults "),
            "{s}"
        );
        assert!(
            lines[1].starts_with("          1,234.57 msec task-clock "),
            "{s}"
        );
        let s = format(
            &counters,
            &counts,
            Duration::from_secs(2),
            &style(false),
            None,
        );
        assert!(s.starts_with("             21788      page-faults "), "{s}");
        let csv = format(
            &counters,
            &counts,
            Duration::from_secs(2),
            &StatStyle {
                csv: Some(",".into()),
                ..style(true)
            },
            None,
        );
        assert!(csv.starts_with("21788,,page-faults,"), "{csv}");
    }

    #[test]
    fn thousands_separators() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(1234567), "1,234,567");
    }
}
