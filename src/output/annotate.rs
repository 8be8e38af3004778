//! `hrec annotate` output: `perf annotate --stdio`'s layout (a header with the file, event and
//! sample count, then one line per instruction: its share, or its sample count with
//! `--show-nr-samples`, and objdump's address and text), DWARF source lines above the
//! instructions they produced, retire latency per instruction, TopDown per basic block; or
//! JSON (`docs/annotate.md`).

use std::fmt::Write as _;

use serde_json::json;

use crate::analysis::annotate::{Annotated, Annotation};
use crate::analysis::latency::LatencyStats;
use crate::analysis::topdown::L1_LABELS;

/// What the first column shows (perf's `--percent-type`, or `--show-nr-samples`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Column {
    /// Share of the function's period (perf's default).
    #[default]
    LocalPeriod,
    /// Share of the event's period.
    GlobalPeriod,
    /// Share of the function's samples.
    LocalHits,
    /// Share of the event's samples.
    GlobalHits,
    /// Samples (`--show-nr-samples`).
    Samples,
}

impl std::str::FromStr for Column {
    type Err = String;

    fn from_str(s: &str) -> Result<Column, String> {
        Ok(match s {
            "local-period" => Column::LocalPeriod,
            "global-period" => Column::GlobalPeriod,
            "local-hits" => Column::LocalHits,
            "global-hits" => Column::GlobalHits,
            _ => {
                return Err(format!(
                    "--percent-type {s}: use local-period, global-period, local-hits or global-hits"
                ));
            }
        })
    }
}

impl Column {
    fn words(self) -> &'static str {
        match self {
            Column::LocalPeriod | Column::Samples => "local period",
            Column::GlobalPeriod => "global period",
            Column::LocalHits => "local hits",
            Column::GlobalHits => "global hits",
        }
    }
}

/// How the text is laid out.
#[derive(Debug, Clone, Copy, Default)]
pub struct TextOptions {
    /// The first column.
    pub column: Column,
    /// Samples of the event, for the global percentages.
    pub samples: u64,
    /// Their periods.
    pub period: u64,
    /// `--asm-raw`: the instruction's bytes before its text (the first seven, as objdump's
    /// line shows them).
    pub asm_raw: bool,
    /// `--td-level`: 2 adds TopDown level 2 per block.
    pub td_level: u8,
}

fn pct(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        100.0 * part as f64 / whole as f64
    }
}

fn latency_text(s: &LatencyStats) -> String {
    format!(
        "retire lat n={} mean={:.1} p90={} max={}",
        s.count, s.mean, s.p90, s.max
    )
}

/// The text of every annotated function, one after another.
pub fn text(a: &Annotation, o: &TextOptions) -> String {
    let mut s = String::new();
    let mut sources = Sources::default();
    for f in &a.symbols {
        function_text(&mut s, f, &a.event, o, &mut sources);
    }
    s
}

/// Source files read so far, by path (`None`: not readable).
#[derive(Default)]
struct Sources(std::collections::HashMap<String, Option<Vec<String>>>);

/// Source files larger than this are not read.
const MAX_SOURCE: u64 = 16 << 20;

impl Sources {
    /// Line `line` (from 1) of `file`, when it is readable.
    fn line(&mut self, file: &str, line: u32) -> Option<&str> {
        let lines = self.0.entry(file.to_string()).or_insert_with(|| {
            let meta = std::fs::metadata(file).ok()?;
            if !meta.is_file() || meta.len() > MAX_SOURCE {
                return None;
            }
            let text = std::fs::read(file).ok()?;
            Some(
                String::from_utf8_lossy(&text)
                    .lines()
                    .map(str::to_string)
                    .collect(),
            )
        });
        let i = usize::try_from(line).ok()?.checked_sub(1)?;
        lines.as_ref()?.get(i).map(String::as_str)
    }
}

fn function_text(
    s: &mut String,
    f: &Annotated,
    event: &str,
    o: &TextOptions,
    sources: &mut Sources,
) {
    let column = o.column;
    let file = std::path::Path::new(&f.dso)
        .file_name()
        .map_or_else(|| f.dso.clone(), |n| n.to_string_lossy().into_owned());
    let rest = format!(
        "Source code & Disassembly of {file} for {event} ({} samples, percent: {})",
        f.samples,
        column.words()
    );
    let head = if column == Column::Samples {
        " Samples"
    } else {
        " Percent"
    };
    let _ = writeln!(s, "{head} |\t{rest}");
    // perf's rule of dashes: as wide as the header with its tab expanded.
    let _ = writeln!(s, "{}", "-".repeat(16 + rest.len()));
    let _ = writeln!(s, "         :");
    let _ = writeln!(s, "         : {:016x} <{}>:", f.start, f.name);
    let mut last_source = None;
    for i in &f.instructions {
        if let Some(src) = &i.source
            && last_source != Some((&src.file, src.line))
        {
            last_source = Some((&src.file, src.line));
            let base = std::path::Path::new(&src.file)
                .file_name()
                .map_or_else(|| src.file.clone(), |n| n.to_string_lossy().into_owned());
            let mut l = format!("         : {base}:{}", src.line);
            if let Some(text) = sources.line(&src.file, src.line) {
                let _ = write!(l, "    {}", text.trim());
            }
            if !src.inlined.is_empty() {
                let _ = write!(l, "    [inlined: {}]", src.inlined.join(" > "));
            }
            let _ = writeln!(s, "{}", l.trim_end());
        }
        let col = match column {
            Column::Samples => format!("{:>8}", i.samples),
            Column::LocalPeriod => format!("{:>8.2}", pct(i.period, f.period)),
            Column::GlobalPeriod => format!("{:>8.2}", pct(i.period, o.period)),
            Column::LocalHits => format!("{:>8.2}", pct(i.samples, f.samples)),
            Column::GlobalHits => format!("{:>8.2}", pct(i.samples, o.samples)),
        };
        let addr = format!("{:x}:", i.address);
        let raw = if o.asm_raw {
            let hex: Vec<String> = i.raw.iter().take(7).map(|b| format!("{b:02x}")).collect();
            format!("{:<20}    ", hex.join(" "))
        } else {
            String::new()
        };
        let gap = if addr.len() >= 8 { " " } else { "" };
        let mut line = format!("{col} :   {addr:<8}{gap}{raw}{}", i.text);
        if let Some(l) = &i.retire_latency {
            let _ = write!(line, "    # {}", latency_text(l));
        }
        let _ = writeln!(s, "{line}");
        // objdump goes on with the bytes past the seventh on lines of their own, which perf
        // shows as instructions without samples.
        if o.asm_raw {
            let zero = match column {
                Column::Samples => format!("{:>8}", 0),
                _ => format!("{:>8.2}", 0.0),
            };
            for (k, chunk) in i.raw.chunks(7).enumerate().skip(1) {
                let hex: Vec<String> = chunk.iter().map(|b| format!("{b:02x}")).collect();
                let addr = format!("{:x}:", i.address + 7 * k as u64);
                let gap = if addr.len() >= 8 { " " } else { "" };
                let _ = writeln!(s, "{zero} :   {addr:<8}{gap}{}", hex.join(" "));
            }
        }
    }
    latency_histograms(s, f);
    topdown_blocks(s, f, o.td_level >= 2);
    s.push('\n');
}

/// The retire-latency histograms of the three hottest instructions that have latencies.
fn latency_histograms(s: &mut String, f: &Annotated) {
    let mut hot: Vec<_> = f
        .instructions
        .iter()
        .filter(|i| i.retire_latency.is_some())
        .collect();
    if hot.is_empty() {
        return;
    }
    hot.sort_by(|a, b| b.samples.cmp(&a.samples).then(a.address.cmp(&b.address)));
    let _ = writeln!(s, "\n Retire latency (cycles) of the hottest instructions:");
    for i in hot.iter().take(3) {
        let _ = writeln!(s, "   {:x}: {}", i.address, i.text);
        let most = i
            .latency_values
            .iter()
            .map(|v| v.1)
            .max()
            .unwrap_or(1)
            .max(1);
        for &(v, n) in &i.latency_values {
            let bar = "#".repeat(((n * 40).div_ceil(most)) as usize);
            let _ = writeln!(s, "     {v:>6} {n:>8}  {bar}");
        }
    }
}

/// TopDown per basic block, when the samples carried group-read deltas.
fn topdown_blocks(s: &mut String, f: &Annotated, want_level2: bool) {
    if f.blocks.iter().all(|b| b.topdown_l1.is_none()) {
        return;
    }
    let tree = f
        .blocks
        .iter()
        .find_map(|b| b.topdown_l2)
        .map(|l| l.tree())
        .filter(|_| want_level2);
    let _ = write!(
        s,
        "\n TopDown per basic block (% of slots):\n   block              samples"
    );
    for l in L1_LABELS {
        let _ = write!(s, "  {l:>16}");
    }
    if let Some(tree) = tree {
        for l in tree.labels() {
            let _ = write!(s, "  {l:>18}");
        }
    }
    s.push('\n');
    for b in f.blocks.iter().filter(|b| b.topdown_l1.is_some()) {
        let _ = write!(s, "   {:>6x}-{:<6x}  {:>9}", b.start, b.end, b.samples);
        for v in b.topdown_l1.unwrap_or_default() {
            let _ = write!(s, "  {v:>16.1}");
        }
        if let Some(tree) = tree {
            match b.topdown_l2.filter(|l| l.tree() == tree) {
                Some(l2) => {
                    for v in l2.values() {
                        let _ = write!(s, "  {v:>18.1}");
                    }
                }
                None => {
                    for _ in tree.labels() {
                        let _ = write!(s, "  {:>18}", "-");
                    }
                }
            }
        }
        s.push('\n');
    }
}

/// The JSON document (`docs/annotate.md`).
pub fn json(a: &Annotation) -> serde_json::Value {
    json!({
        "event": a.event,
        "symbols": a.symbols,
        "problems": a.problems,
    })
}
