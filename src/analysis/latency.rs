//! Retire-latency statistics.
//!
//! On CPUs with Timed PEBS (Granite Rapids, Lunar Lake and later) a precise sample's
//! `WEIGHT_STRUCT` carries in bits 63:48 the number of cycles the sampled instruction took
//! to retire after the previous one. On other CPUs (and on software events, hrec's fallback)
//! the field is always zero, which is no latency at all rather than a latency of zero; an
//! event counts as having latencies only if at least one of its samples has a non-zero
//! value, and then every one of its `WEIGHT_STRUCT` samples counts (0 is a valid latency on
//! TPEBS CPUs: Intel's own tables list `MIN: 0`).
//!
//! Quantiles use the nearest-rank rule: the p-th percentile of n sorted values is the value
//! at rank ⌈p·n/100⌉ (1-based). The median is the 50th percentile by the same rule, so every
//! statistic is a value that was measured.

use serde::Serialize;

/// Statistics of a set of retire latencies, in core cycles.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Default)]
pub struct LatencyStats {
    /// Samples with a latency.
    pub count: u64,
    /// Smallest.
    pub min: u64,
    /// Mean.
    pub mean: f64,
    /// 50th percentile (nearest rank).
    pub median: u64,
    /// 90th percentile.
    pub p90: u64,
    /// 99th percentile.
    pub p99: u64,
    /// Largest.
    pub max: u64,
    /// Sum of all latencies: the cycles these samples stand for.
    pub total: u64,
}

/// An exact histogram of retire latencies: each distinct value with its count, in value
/// order. Latencies are `u16` cycle counts, so this holds at most 65 536 entries whatever the
/// number of samples, and every statistic of [`LatencyStats`] comes out exactly as from the
/// list of values.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LatHist(Vec<(u16, u64)>);

impl LatHist {
    /// Counts one value.
    pub fn add(&mut self, v: u16) {
        self.add_n(v, 1);
    }

    fn add_n(&mut self, v: u16, n: u64) {
        match self.0.binary_search_by_key(&v, |e| e.0) {
            Ok(i) => self.0[i].1 += n,
            Err(i) => self.0.insert(i, (v, n)),
        }
    }

    /// Adds every value of another histogram.
    pub fn merge(&mut self, o: &LatHist) {
        if self.0.is_empty() {
            self.0.clone_from(&o.0);
            return;
        }
        for &(v, n) in &o.0 {
            self.add_n(v, n);
        }
    }

    /// Number of values.
    pub fn count(&self) -> u64 {
        self.0.iter().map(|e| e.1).sum()
    }

    /// Sum of the values.
    pub fn sum(&self) -> u64 {
        self.0.iter().map(|&(v, n)| u64::from(v) * n).sum()
    }

    /// Whether no value was counted.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The value at 1-based rank `r` in sorted order.
    fn at_rank(&self, r: u64) -> u64 {
        let mut seen = 0;
        for &(v, n) in &self.0 {
            seen += n;
            if seen >= r {
                return u64::from(v);
            }
        }
        self.0.last().map_or(0, |e| u64::from(e.0))
    }

    /// The nearest-rank percentile.
    fn percentile(&self, n: u64, p: u64) -> u64 {
        self.at_rank((p * n).div_ceil(100).max(1))
    }
}

/// The nearest-rank percentile of sorted values.
fn rank(sorted: &[u16], p: u64) -> u64 {
    let n = sorted.len() as u64;
    let r = (p * n).div_ceil(100).max(1);
    u64::from(sorted[(r - 1) as usize])
}

impl LatencyStats {
    /// Statistics of `values` (sorted in place); `None` when empty.
    pub fn of(values: &mut [u16]) -> Option<LatencyStats> {
        if values.is_empty() {
            return None;
        }
        values.sort_unstable();
        let total: u64 = values.iter().map(|&v| u64::from(v)).sum();
        Some(LatencyStats {
            count: values.len() as u64,
            min: u64::from(values[0]),
            mean: total as f64 / values.len() as f64,
            median: rank(values, 50),
            p90: rank(values, 90),
            p99: rank(values, 99),
            max: u64::from(values[values.len() - 1]),
            total,
        })
    }
}

impl LatencyStats {
    /// Statistics of a histogram; `None` when empty.
    pub fn of_hist(h: &LatHist) -> Option<LatencyStats> {
        let count = h.count();
        if count == 0 {
            return None;
        }
        let total = h.sum();
        Some(LatencyStats {
            count,
            min: u64::from(h.0[0].0),
            mean: total as f64 / count as f64,
            median: h.percentile(count, 50),
            p90: h.percentile(count, 90),
            p99: h.percentile(count, 99),
            max: u64::from(h.0[h.0.len() - 1].0),
            total,
        })
    }
}

/// [`histogram`] of a [`LatHist`].
pub fn histogram_of(h: &LatHist) -> Vec<(u64, u64)> {
    let Some(&(max, _)) = h.0.last() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut le = 0u64;
    let mut i = 0usize;
    loop {
        let mut n = 0;
        while let Some(&(v, c)) = h.0.get(i)
            && u64::from(v) <= le
        {
            n += c;
            i += 1;
        }
        out.push((le, n));
        if le >= u64::from(max) {
            break;
        }
        le = if le == 0 { 1 } else { le * 2 };
    }
    out
}

/// Power-of-two histogram buckets: `(upper bound inclusive, count)` for bounds 0, 1, 2, 4,
/// ... up to the first bound that holds the maximum.
pub fn histogram(sorted: &[u16]) -> Vec<(u64, u64)> {
    let Some(&max) = sorted.last() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut le = 0u64;
    let mut start = 0usize;
    loop {
        let end = sorted.partition_point(|&v| u64::from(v) <= le);
        out.push((le, (end - start) as u64));
        start = end;
        if le >= u64::from(max) {
            break;
        }
        le = if le == 0 { 1 } else { le * 2 };
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_statistics() {
        let mut v: Vec<u16> = (1..=10).rev().map(|x| x * 10).collect();
        let s = LatencyStats::of(&mut v).unwrap();
        assert_eq!(
            (s.count, s.min, s.median, s.p90, s.p99, s.max, s.total),
            (10, 10, 50, 90, 100, 100, 550)
        );
        assert_eq!(s.mean, 55.0);
        let mut one = [7u16];
        let s = LatencyStats::of(&mut one).unwrap();
        assert_eq!((s.median, s.p90, s.p99, s.max), (7, 7, 7, 7));
        assert_eq!(LatencyStats::of(&mut []), None);
    }

    #[test]
    fn histogram_statistics_equal_those_of_the_values() {
        // Pseudo-random values with many repeats, in several sizes, against the sorted list.
        let mut x = 12345u64;
        for n in [1usize, 2, 3, 7, 10, 99, 100, 101, 1000, 4321] {
            let mut v: Vec<u16> = (0..n)
                .map(|_| {
                    x = x
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    ((x >> 33) % 700) as u16
                })
                .collect();
            let mut h = LatHist::default();
            let (a, b) = v.split_at(n / 3);
            let mut h2 = LatHist::default();
            a.iter().for_each(|&l| h.add(l));
            b.iter().for_each(|&l| h2.add(l));
            h.merge(&h2);
            assert_eq!(h.count(), n as u64);
            let hs = LatencyStats::of_hist(&h);
            let vs = LatencyStats::of(&mut v);
            assert_eq!(hs, vs, "n = {n}");
            assert_eq!(histogram_of(&h), histogram(&v), "n = {n}");
        }
        assert_eq!(LatencyStats::of_hist(&LatHist::default()), None);
        assert!(histogram_of(&LatHist::default()).is_empty());
    }

    #[test]
    fn power_of_two_buckets_hold_every_value_once() {
        let v = [0u16, 1, 2, 3, 4, 9, 300];
        let h = histogram(&v);
        assert_eq!(
            h,
            [
                (0, 1),
                (1, 1),
                (2, 1),
                (4, 2),
                (8, 0),
                (16, 1),
                (32, 0),
                (64, 0),
                (128, 0),
                (256, 0),
                (512, 1)
            ]
        );
        assert_eq!(h.iter().map(|b| b.1).sum::<u64>(), v.len() as u64);
        assert!(histogram(&[]).is_empty());
    }
}
