//! `hrec top`'s table: the rows of successive intervals merged with perf top's decay.
//!
//! perf top keeps one histogram for the whole run. After each refresh it is shown, then every
//! entry's period and sample count are multiplied by 7/8 (integer arithmetic, perf's
//! `hists__decay_entries`), and entries that reach zero leave the table; the next interval's
//! samples are added on top. So a function that stopped running fades out over a few
//! refreshes instead of vanishing, and a steady one converges to its share of the recent
//! samples. `-z` (perf's `--zero`) clears the table after each refresh instead: every
//! refresh then shows only its own interval.
//!
//! Percentages are of the table's total period at the time it is shown, as perf top prints
//! them. Rows are keyed by the display values of the sort keys (perf top's default is
//! `dso,sym`), so the same function keeps its row across intervals whatever ids the interval's
//! profile gave it.
//!
//! **Intel's metrics** (`top --metrics LIST`): the live recording then has the metric groups
//! of `record -M LIST`, and each row keeps, per group, the sum of its members' deltas and
//! the reads behind them ([`super::hist::Row::members`]), decayed with the row (every sum
//! and the reads times 7/8), so a metric, a ratio of those sums, follows the recent samples
//! as the shares do. A metric is evaluated from them as a report row is
//! ([`super::metrics::RowMetricsSetup::evaluate`]), `None` when the decayed reads of a group
//! it needs fall below the minimum; `:R` terms take Intel's default (top records no `-W`
//! samples).

use std::collections::HashMap;

use super::hist::Table;
use super::profile::Profile;
use super::topdown::TdCounts;

/// One row's weight.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Weight {
    /// Sum of the periods (the event counts the samples stand for), decayed.
    pub period: u64,
    /// Samples, decayed.
    pub samples: u64,
    /// TopDown slots of the samples that carried group reads (a slots-led group on a PMU
    /// with perf metrics, or an E-core's cycles-led group), decayed alike, so the shares
    /// follow the recent samples; shown through [`TdCounts::level1`], which applies each
    /// core's rule (an E-core's `width x` cycles and Gracemont's remainder are decayed with
    /// the counts, so the shares stay Intel's within the decay's rounding).
    pub td: TdCounts,
}

/// `v` times 7/8 without overflow, as perf's integer decay.
fn decayed(v: u64) -> u64 {
    v / 8 * 7 + v % 8 * 7 / 8
}

/// What one interval saw, for the header line.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Interval {
    /// Samples in the interval.
    pub samples: u64,
    /// Of which in the kernel (the sampled location is a kernel address).
    pub kernel_samples: u64,
    /// Samples the kernel dropped (LOST records).
    pub lost: u64,
    /// The interval's length in seconds.
    pub seconds: f64,
}

impl Interval {
    /// Adds a following interval (files read together for one refresh).
    pub fn merge(&mut self, next: &Interval) {
        self.samples += next.samples;
        self.kernel_samples += next.kernel_samples;
        self.lost += next.lost;
        self.seconds += next.seconds;
    }

    /// Samples per second.
    pub fn rate(&self) -> f64 {
        if self.seconds > 0.0 {
            self.samples as f64 / self.seconds
        } else {
            0.0
        }
    }

    /// The kernel's share of the samples, in percent.
    pub fn kernel_pct(&self) -> f64 {
        if self.samples == 0 {
            0.0
        } else {
            self.kernel_samples as f64 * 100.0 / self.samples as f64
        }
    }
}

/// The samples of `p` and how many of them are in the kernel.
pub fn interval_of(p: &Profile, lost: u64, seconds: f64) -> Interval {
    let mut iv = Interval {
        lost,
        seconds,
        ..Interval::default()
    };
    for g in &p.groups {
        iv.samples += g.samples;
        if p.locs.get(g.leaf as usize).is_some_and(|l| l.kernel) {
            iv.kernel_samples += g.samples;
        }
    }
    iv
}

/// The decayed histogram (see the module docs).
#[derive(Debug, Clone, Default)]
pub struct Live {
    rows: HashMap<Vec<String>, Weight>,
    /// Per row key, per metric group (in [`super::metrics::RowMetricsSetup::group_events`]'
    /// order): member sums and reads, decayed alike.
    members: HashMap<Vec<String>, Vec<Option<MemberSums>>>,
}

/// One metric group's member sums in a row and the reads behind them.
type MemberSums = (Vec<u64>, u64);

impl Live {
    /// An empty table.
    pub fn new() -> Live {
        Live::default()
    }

    /// Adds an interval's rows.
    pub fn add(&mut self, t: &Table) {
        for r in &t.rows {
            self.add_row(&r.key, r.period, r.samples);
            if r.td_samples > 0 {
                self.add_topdown(&r.key, &r.td);
            }
        }
    }

    /// Adds one row's period and samples under its key.
    pub fn add_row(&mut self, key: &[String], period: u64, samples: u64) {
        let w = match self.rows.get_mut(key) {
            Some(w) => w,
            None => self.rows.entry(key.to_vec()).or_default(),
        };
        w.period = w.period.saturating_add(period);
        w.samples = w.samples.saturating_add(samples);
    }

    /// Adds TopDown slots to the row of `key` (made by [`Live::add_row`] before).
    pub fn add_topdown(&mut self, key: &[String], td: &TdCounts) {
        if let Some(w) = self.rows.get_mut(key) {
            w.td.add(td);
        }
    }

    /// Adds group `group`'s member sums and reads (of `groups` groups) to the row of `key`.
    pub fn add_members(
        &mut self,
        key: &[String],
        group: usize,
        groups: usize,
        sums: &[u64],
        reads: u64,
    ) {
        let m = match self.members.get_mut(key) {
            Some(m) => m,
            None => self.members.entry(key.to_vec()).or_default(),
        };
        if m.len() < groups {
            m.resize(groups, None);
        }
        let Some(slot) = m.get_mut(group) else {
            return;
        };
        let (sum, n) = slot.get_or_insert_with(|| (Vec::new(), 0));
        if sum.len() < sums.len() {
            sum.resize(sums.len(), 0);
        }
        for (a, b) in sum.iter_mut().zip(sums) {
            *a = a.saturating_add(*b);
        }
        *n = n.saturating_add(reads);
    }

    /// Adds the member sums of an interval's metric group tables: `group_events[g]` is the
    /// profile event of group `g`.
    pub fn add_member_tables(&mut self, tables: &[Table], group_events: &[usize]) {
        for t in tables {
            let Some(g) = group_events.iter().position(|&e| e == t.event) else {
                continue;
            };
            for r in &t.rows {
                if let Some((m, n)) = &r.members {
                    self.add_members(&r.key, g, group_events.len(), m, *n);
                }
            }
        }
    }

    /// The chosen metrics of `setup` for the row of `key`, in its order (`None`: not
    /// computed).
    pub fn metrics(
        &self,
        key: &[String],
        setup: &super::metrics::RowMetricsSetup<'_>,
    ) -> Vec<(String, Option<f64>)> {
        let groups = setup.group_events().len();
        let sums: Vec<super::metrics::GroupSums<'_>> = match self.members.get(key) {
            Some(m) => (0..groups)
                .map(|g| {
                    m.get(g)
                        .and_then(Option::as_ref)
                        .map(|(s, n)| (s.as_slice(), *n))
                })
                .collect(),
            None => vec![None; groups],
        };
        setup.evaluate(&sums, &|_| None).metrics
    }

    /// perf top's decay after a refresh: every weight times 7/8, empty rows dropped.
    pub fn decay(&mut self) {
        self.members.retain(|_, groups| {
            for g in groups.iter_mut() {
                if let Some((sums, n)) = g {
                    sums.iter_mut().for_each(|v| *v = decayed(*v));
                    *n = decayed(*n);
                    if *n == 0 {
                        *g = None;
                    }
                }
            }
            groups.iter().any(Option::is_some)
        });
        self.rows.retain(|_, w| {
            w.period = decayed(w.period);
            w.samples = decayed(w.samples);
            for v in &mut w.td.0 {
                *v = decayed(*v);
            }
            w.period > 0
        });
    }

    /// `-z`: forgets every row.
    pub fn zero(&mut self) {
        self.rows.clear();
        self.members.clear();
    }

    /// Whether any row has TopDown slots (the columns are shown then).
    pub fn has_topdown(&self) -> bool {
        self.rows.values().any(|w| w.td.slots() > 0)
    }

    /// The sum of the rows' periods.
    pub fn total_period(&self) -> u64 {
        self.rows.values().map(|w| w.period).sum()
    }

    /// The rows, heaviest first (ties by key, so equal rows keep their place between
    /// refreshes).
    pub fn rows(&self) -> Vec<(&[String], Weight)> {
        let mut v: Vec<(&[String], Weight)> =
            self.rows.iter().map(|(k, w)| (k.as_slice(), *w)).collect();
        v.sort_by(|a, b| b.1.period.cmp(&a.1.period).then_with(|| a.0.cmp(b.0)));
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(rows: &[(&str, u64)]) -> Live {
        let mut live = Live::new();
        for &(k, p) in rows {
            live.add_row(&[k.to_string()], p, p / 10);
        }
        live
    }

    impl Live {
        fn merge(&mut self, other: &Live) {
            for (k, w) in &other.rows {
                self.add_row(k, w.period, w.samples);
            }
        }
    }

    #[test]
    fn rows_merge_by_key_and_decay_by_seven_eighths() {
        let mut live = Live::new();
        live.merge(&table(&[("a", 800), ("b", 80)]));
        live.merge(&table(&[("a", 800)]));
        let rows = live.rows();
        assert_eq!(rows[0].0, ["a".to_string()]);
        assert_eq!(rows[0].1.period, 1600);
        assert_eq!(live.total_period(), 1680);
        live.decay();
        assert_eq!(live.rows()[0].1.period, 1400);
        assert_eq!(live.rows()[0].1.samples, 140);
        assert_eq!(live.rows()[1].1.period, 70);
        // A row that stopped fades away: 70 → 61 → 53 → ... → 0, then it is gone.
        let mut steps = 0;
        while live.rows().len() > 1 {
            live.decay();
            steps += 1;
            assert!(steps < 64);
        }
        assert!(steps > 10, "{steps}");
        // No overflow on big periods.
        let mut big = Live::new();
        big.merge(&table(&[("x", u64::MAX)]));
        big.decay();
        assert_eq!(big.rows()[0].1.period, u64::MAX / 8 * 7 + 7 * 7 / 8);
    }

    #[test]
    fn topdown_slots_add_up_and_decay_with_the_row() {
        let mut live = Live::new();
        assert!(!live.has_topdown());
        live.add_row(&["f".to_string()], 100, 10);
        live.add_topdown(
            &["f".to_string()],
            &TdCounts::pcore([800, 400, 80, 80, 240, 0, 0, 0, 0]),
        );
        assert!(live.has_topdown());
        live.decay();
        let w = live.rows()[0].1;
        assert_eq!(w.td.0[..5], [700, 350, 70, 70, 210]);
        assert_eq!(w.td.level1(), Some([50.0, 10.0, 10.0, 30.0]));
    }

    #[test]
    fn member_sums_add_per_group_and_decay_with_their_reads() {
        let mut live = Live::new();
        let k = ["f".to_string()];
        live.add_row(&k, 100, 10);
        live.add_members(&k, 1, 2, &[800, 80], 16);
        live.add_members(&k, 1, 2, &[800, 80], 16);
        let m = &live.members[&k[..]];
        assert_eq!(m.len(), 2);
        assert_eq!(m[0], None);
        assert_eq!(m[1], Some((vec![1600, 160], 32)));
        // Sums and reads decay alike: the ratios stay.
        live.decay();
        assert_eq!(live.members[&k[..]][1], Some((vec![1400, 140], 28)));
        // Reads that reach zero drop the group, then the row's entry.
        for _ in 0..64 {
            live.decay();
        }
        assert!(live.members.is_empty());
        live.add_members(&k, 0, 2, &[1], 1);
        live.zero();
        assert!(live.members.is_empty());
    }

    #[test]
    fn zero_forgets_and_ties_keep_their_order() {
        let mut live = Live::new();
        live.merge(&table(&[("b", 5), ("a", 5), ("c", 9)]));
        let keys: Vec<String> = live.rows().iter().map(|r| r.0[0].clone()).collect();
        assert_eq!(keys, ["c", "a", "b"]);
        live.zero();
        assert!(live.rows().is_empty());
        assert_eq!(live.total_period(), 0);
    }

    #[test]
    fn interval_rates() {
        let iv = Interval {
            samples: 3000,
            kernel_samples: 750,
            lost: 0,
            seconds: 1.5,
        };
        assert_eq!(iv.rate(), 2000.0);
        assert_eq!(iv.kernel_pct(), 25.0);
        assert_eq!(Interval::default().rate(), 0.0);
        assert_eq!(Interval::default().kernel_pct(), 0.0);
    }
}
