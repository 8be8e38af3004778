//! `annotate --data-type` text and JSON: each type's members with the samples that hit them,
//! in perf 6.8+'s layout.
//!
//! Text, per type (perf's `hist_entry__annotate_data_tty`):
//! `Annotate type: 'T' in DSO (N samples):`, a rule of `=`, the header
//! (` Percent     offset       size  field`), then the type and each member, nested members
//! indented by 4: the share of the type's period (or, with `-n`, the samples) over the
//! member's bytes, `%#10x` offset and size, the type and the name, and `};` closing a struct
//! or union under its members. Where the samples carry them, hrec adds the mean load latency
//! (`Latency`, cycles, from the weight) and the mean retire latency (`RetLat`) of each
//! member's samples after perf's value column (perf has no such columns).

use std::fmt::Write as _;

use serde_json::{Value, json};

use crate::analysis::typeannotate::{Cell, TypeEntry};
use crate::symbol::datatype::Member;

/// What the value column shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shown {
    /// The share of the type's period (perf's default).
    Percent,
    /// Sample counts (`-n`).
    Samples,
}

/// C's `%#x`: `0` for zero, else `0x` and the hex digits.
fn alt_hex(v: u64) -> String {
    if v == 0 {
        "0".into()
    } else {
        format!("{v:#x}")
    }
}

struct Columns {
    value: Shown,
    latency: bool,
    retire: bool,
}

impl Columns {
    fn width(&self) -> usize {
        8 + 9 * (usize::from(self.latency) + usize::from(self.retire))
    }

    fn cells(&self, c: &Cell, total: &Cell) -> String {
        let mut s = match self.value {
            Shown::Percent => {
                let pct = if total.period == 0 {
                    0.0
                } else {
                    100.0 * c.period as f64 / total.period as f64
                };
                format!(" {pct:7.2}")
            }
            Shown::Samples => format!(" {:7}", c.samples),
        };
        let mean =
            |m: Option<f64>| m.map_or_else(|| format!(" {:>8}", "-"), |v| format!(" {v:8.1}"));
        if self.latency {
            s.push_str(&mean(c.mean_weight()));
        }
        if self.retire {
            s.push_str(&mean(c.mean_retire()));
        }
        s
    }
}

/// The text of `entries`.
pub fn text(entries: &[TypeEntry], value: Shown) -> String {
    let mut out = String::new();
    for e in entries {
        let cols = Columns {
            value,
            latency: e.total.weighed > 0,
            retire: e.total.retired > 0,
        };
        let _ = writeln!(
            out,
            "Annotate type: '{}' in {} ({} samples):",
            e.layout.type_name, e.dso, e.total.samples
        );
        out.push_str(&"=".repeat(76));
        out.push('\n');
        let mut head = format!(
            "{:>8}",
            match value {
                Shown::Percent => "Percent",
                Shown::Samples => "Samples",
            }
        );
        if cols.latency {
            let _ = write!(head, " {:>8}", "Latency");
        }
        if cols.retire {
            let _ = write!(head, " {:>8}", "RetLat");
        }
        let _ = writeln!(out, "{head} {:>10} {:>10}  field", "offset", "size");
        member(&mut out, e, &e.layout, &cols, 0);
        out.push('\n');
    }
    out
}

fn member(out: &mut String, e: &TypeEntry, m: &Member, cols: &Columns, indent: usize) {
    let c = e.over(m.offset, m.size);
    let _ = write!(
        out,
        "{} {:>10} {:>10}  {:indent$}{}\t{}",
        cols.cells(&c, &e.total),
        alt_hex(m.offset),
        alt_hex(m.size),
        "",
        m.type_name,
        m.name.as_deref().unwrap_or("")
    );
    if !m.children.is_empty() {
        out.push_str(" {\n");
        for child in &m.children {
            member(out, e, child, cols, indent + 4);
        }
        let _ = write!(out, "{:w$}}}", "", w = cols.width() + 24 + indent);
    }
    out.push_str(";\n");
}

/// The JSON of `entries`: per type its object, samples, period, mean latencies and members,
/// each member with its offset, size, type, name, samples, period, share of the type's period
/// and mean latencies (`null` without any).
pub fn json(entries: &[TypeEntry]) -> Value {
    Value::Array(
        entries
            .iter()
            .map(|e| {
                json!({
                    "type": e.layout.type_name,
                    "dso": &*e.dso,
                    "samples": e.total.samples,
                    "period": e.total.period,
                    "load_latency": e.total.mean_weight(),
                    "retire_latency": e.total.mean_retire(),
                    "size": e.layout.size,
                    "members": e.layout.children.iter().map(|m| member_json(e, m)).collect::<Vec<_>>(),
                })
            })
            .collect(),
    )
}

fn member_json(e: &TypeEntry, m: &Member) -> Value {
    let c = e.over(m.offset, m.size);
    json!({
        "offset": m.offset,
        "size": m.size,
        "type": m.type_name,
        "name": m.name.as_deref(),
        "samples": c.samples,
        "period": c.period,
        "percent": if e.total.period == 0 { 0.0 } else { 100.0 * c.period as f64 / e.total.period as f64 },
        "load_latency": c.mean_weight(),
        "retire_latency": c.mean_retire(),
        "members": m.children.iter().map(|c| member_json(e, c)).collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use std::sync::Arc;

    fn m(offset: u64, size: u64, ty: &str, name: Option<&str>, children: Vec<Member>) -> Member {
        Member {
            offset,
            size,
            type_name: ty.into(),
            name: name.map(Arc::from),
            children,
        }
    }

    fn entry(weights: bool) -> TypeEntry {
        let layout = m(
            0,
            0x18,
            "struct rec",
            None,
            vec![
                m(0, 8, "long int", Some("a"), vec![]),
                m(
                    8,
                    8,
                    "struct inner",
                    Some("in"),
                    vec![
                        m(8, 4, "int", Some("x"), vec![]),
                        m(0xc, 4, "int", Some("y"), vec![]),
                    ],
                ),
                m(0x10, 8, "char[]", Some("pad"), vec![]),
            ],
        );
        let mut offsets = BTreeMap::new();
        let mut total = Cell::default();
        for (off, n, w) in [(0u64, 1u64, 10u64), (0xc, 3, 30)] {
            let c = Cell {
                samples: n,
                period: n,
                weighed: if weights { n } else { 0 },
                weight: if weights { w * n } else { 0 },
                ..Cell::default()
            };
            offsets.insert(off, c);
            total.samples += n;
            total.period += n;
            total.weighed += c.weighed;
            total.weight += c.weight;
        }
        TypeEntry {
            dso: "/bin/prog".into(),
            layout: Arc::new(layout),
            total,
            offsets,
        }
    }

    /// perf's layout, byte for byte (`%7.2f`, `%#10x`, tabs, the closing brace at 32 + indent).
    #[test]
    fn text_as_perf_prints_it() {
        let t = text(&[entry(false)], Shown::Percent);
        let want = "Annotate type: 'struct rec' in /bin/prog (4 samples):\n".to_string()
            + &"=".repeat(76)
            + "\n Percent     offset       size  field\n"
            + "  100.00          0       0x18  struct rec\t {\n"
            + "   25.00          0        0x8      long int\ta;\n"
            + "   75.00        0x8        0x8      struct inner\tin {\n"
            + "    0.00        0x8        0x4          int\tx;\n"
            + "   75.00        0xc        0x4          int\ty;\n"
            + "                                    };\n"
            + "    0.00       0x10        0x8      char[]\tpad;\n"
            + "                                };\n\n";
        assert_eq!(t, want);
        let n = text(&[entry(false)], Shown::Samples);
        assert!(n.contains("\n Samples     offset"), "{n}");
        assert!(
            n.contains("\n       3        0xc        0x4          int\ty;"),
            "{n}"
        );
    }

    /// With load latencies, a Latency column of each member's mean.
    #[test]
    fn latency_column_when_the_samples_have_weights() {
        let t = text(&[entry(true)], Shown::Percent);
        assert!(t.contains("\n Percent  Latency     offset"), "{t}");
        assert!(
            t.contains("\n  100.00     25.0          0       0x18  struct rec\t {"),
            "{t}"
        );
        assert!(
            t.contains("\n    0.00        -        0x8        0x4          int\tx;"),
            "{t}"
        );
        assert!(
            t.contains("\n                                             };"),
            "{t}"
        );
        let j = json(&[entry(true)]);
        assert_eq!(
            j[0]["members"][1]["members"][1]["load_latency"],
            json!(30.0)
        );
        assert_eq!(j[0]["members"][1]["samples"], json!(3));
        assert_eq!(j[0]["load_latency"], json!(25.0));
    }
}
