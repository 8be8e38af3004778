//! From readings to the counts perf stat prints. Each fd reads (value, time enabled, time
//! running); a PMU with fewer counters than events time-multiplexes them, so a count is
//! scaled by `enabled / running` and shown with the share of time it ran, as perf does. The
//! readings of every place are added up per aggregate, and an `-I` interval is the difference
//! from the reading before. TopDown counts are gathered per PMU for the level-1/level-2
//! breakdown.

use std::collections::HashMap;

use crate::analysis::topdown::{TdCounts, TdEvent, TdRole};

use super::places::Label;
use super::plan::Counter;

/// A counter's result.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Count {
    /// The kernel refused the event (errno).
    NotSupported(i32),
    /// Opened but never scheduled (running time 0).
    NotCounted,
    /// Counted.
    Value {
        /// Scaled count (`raw * enabled / running` summed over fds).
        scaled: f64,
        /// Raw count.
        raw: u64,
        /// Time enabled (ns, summed over fds).
        enabled: u64,
        /// Time running (ns).
        running: u64,
    },
}

impl Count {
    /// The scaled value, when counted.
    pub fn value(&self) -> Option<f64> {
        match self {
            Count::Value { scaled, .. } => Some(*scaled),
            _ => None,
        }
    }

    /// Share of the enabled time the counter ran (100 without multiplexing).
    pub fn running_pct(&self) -> f64 {
        match self {
            Count::Value {
                enabled, running, ..
            } if *enabled > 0 => 100.0 * *running as f64 / *enabled as f64,
            _ => 100.0,
        }
    }

    /// Sums raw reads: (value, enabled, running) per fd.
    pub fn from_reads(reads: &[(u64, u64, u64)]) -> Count {
        let (mut raw, mut enabled, mut running, mut scaled) = (0u64, 0u64, 0u64, 0f64);
        for &(v, e, r) in reads {
            raw += v;
            enabled += e;
            running += r;
            if r > 0 {
                scaled += v as f64 * e as f64 / r as f64;
            }
        }
        if running == 0 {
            Count::NotCounted
        } else {
            Count::Value {
                scaled,
                raw,
                enabled,
                running,
            }
        }
    }

    /// The difference from an earlier reading (for `-I`).
    pub fn since(&self, earlier: &Count) -> Count {
        match (self, earlier) {
            (
                Count::Value {
                    raw,
                    enabled,
                    running,
                    ..
                },
                Count::Value {
                    raw: r0,
                    enabled: e0,
                    running: n0,
                    ..
                },
            ) => Count::from_reads(&[(
                raw.saturating_sub(*r0),
                enabled.saturating_sub(*e0),
                running.saturating_sub(*n0),
            )]),
            (now, _) => *now,
        }
    }
}

/// The TopDown slot counts of counted TopDown counters of one PMU.
pub fn topdown_counts(counters: &[Counter], counts: &[Count], pmu: Option<&str>) -> TdCounts {
    let mut td = TdCounts::default();
    for (c, n) in counters.iter().zip(counts) {
        if let (Some(role), Some(v)) = (c.td, n.value())
            && c.pmu.as_deref() == pmu
        {
            let v = v.round() as u64;
            match role {
                TdRole::Event(k) => td.0[k as usize] += v,
                TdRole::EcoreCycles { width, remainder } => {
                    let slots = v.saturating_mul(u64::from(width));
                    td.0[TdEvent::Slots as usize] += slots;
                    td.0[TdCounts::ECORE_SLOTS] += slots;
                    if remainder {
                        td.0[TdCounts::REMAINDER_SLOTS] += slots;
                    }
                }
                TdRole::VendorCycles { .. } | TdRole::Vendor(_) => td.1.add_role(role, v),
            }
        }
    }
    td
}

/// The counts of one aggregate (a CPU, core, socket or thread).
#[derive(Debug, Clone)]
pub struct Group {
    /// What it covers.
    pub label: Label,
    /// Per counter, in plan order.
    pub counts: Vec<Count>,
}

/// Every fd's reading, `[counter][place]`: (value, enabled, running); `None` for an event
/// the kernel refused (with its errno) or an fd that did not read.
pub(super) type Readings = Vec<Result<Vec<Option<(u64, u64, u64)>>, i32>>;

/// The readings added up per aggregate (`key[place]`, `n` aggregates), minus an earlier
/// reading when given (an interval).
pub(super) fn aggregate(
    now: &Readings,
    before: Option<&Readings>,
    key: &[usize],
    n: usize,
) -> Vec<Vec<Count>> {
    let mut out = vec![Vec::with_capacity(now.len()); n];
    for (c, fds) in now.iter().enumerate() {
        match fds {
            Err(e) => out.iter_mut().for_each(|g| g.push(Count::NotSupported(*e))),
            Ok(fds) => {
                let mut per: Vec<Vec<(u64, u64, u64)>> = vec![Vec::new(); n];
                for (place, r) in fds.iter().enumerate() {
                    let Some(&(v, e, r)) = r.as_ref() else {
                        continue;
                    };
                    let (v0, e0, r0) = before
                        .and_then(|b| b.get(c)?.as_ref().ok()?.get(place).copied().flatten())
                        .unwrap_or((0, 0, 0));
                    if let Some(&k) = key.get(place)
                        && let Some(g) = per.get_mut(k)
                    {
                        g.push((
                            v.saturating_sub(v0),
                            e.saturating_sub(e0),
                            r.saturating_sub(r0),
                        ));
                    }
                }
                for (g, reads) in out.iter_mut().zip(per) {
                    g.push(Count::from_reads(&reads));
                }
            }
        }
    }
    out
}

/// Counts per PMU name, for printing TopDown per PMU.
pub fn topdown_pmus(counters: &[Counter]) -> Vec<Option<String>> {
    let mut seen: HashMap<Option<String>, ()> = HashMap::new();
    let mut out = Vec::new();
    for c in counters.iter().filter(|c| c.td.is_some()) {
        if seen.insert(c.pmu.clone(), ()).is_none() {
            out.push(c.pmu.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readings_add_up_per_aggregate_and_per_interval() {
        let now: Readings = vec![
            Ok(vec![Some((100, 10, 10)), Some((50, 10, 5)), None]),
            Err(libc::ENOENT),
        ];
        let before: Readings = vec![Ok(vec![Some((40, 4, 4)), Some((10, 4, 2)), None]), Err(2)];
        let g = aggregate(&now, None, &[0, 1, 1], 2);
        assert_eq!(g[0][0], Count::from_reads(&[(100, 10, 10)]));
        assert_eq!(g[1][0], Count::from_reads(&[(50, 10, 5)]));
        assert_eq!(g[1][1], Count::NotSupported(libc::ENOENT));
        let d = aggregate(&now, Some(&before), &[0, 0, 0], 1);
        assert_eq!(d[0][0], Count::from_reads(&[(60, 6, 6), (40, 6, 3)]));
    }
}
