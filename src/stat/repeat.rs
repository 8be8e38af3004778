//! `hrec stat -r N`: the command is counted N times and each counter is printed as the mean of
//! its runs, with how far that mean can be trusted, as perf stat does.
//!
//! **The statistics are perf's** (`tools/perf/util/stat.c`): every run's value is added to a
//! running mean and sum of squared deviations (Welford's method, numerically stable). The
//! number printed after a count, `( +-  x.xx% )`, is the *standard deviation of the mean*
//! (the standard error), not of the runs: the sample variance `M2 / (n - 1)`, divided by `n`,
//! square-rooted, then taken relative to the mean, in percent. One run has no spread (0).
//!
//! **What is averaged.** Each counter's scaled count, time enabled and time running, so a
//! multiplexed counter prints the mean share of time it ran; derived metrics ("CPUs utilized",
//! "/sec") are computed from the means, the elapsed time included. The wall time of each run
//! is averaged the same way and printed as `MEAN +- STDDEV seconds time elapsed`, with as
//! many decimals as make the standard error show two significant digits ([`precision`]).
//!
//! **Aggregates** (`-A`, `--per-core`, `--per-socket`, `--per-thread`) are averaged per CPU,
//! core, socket or thread over the runs they appear in; perf keeps run statistics only of the
//! global totals, so their variance is 0 there and hrec reports it the same way.
//!
//! perf 6.1 itself prints the *last* run's counts (with the variance relative to that value),
//! a bug fixed upstream by "perf stat: Show average value on multiple runs"; hrec prints the
//! means, which is what `-r` is documented to do.

use std::time::Duration;

use super::count::{Count, Group, Label, StatResult};

/// A running mean and spread (perf's `struct stats`, by Welford's method).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Stats {
    n: f64,
    mean: f64,
    m2: f64,
}

impl Stats {
    /// Adds one value.
    pub fn add(&mut self, v: f64) {
        self.n += 1.0;
        let delta = v - self.mean;
        self.mean += delta / self.n;
        self.m2 += delta * (v - self.mean);
    }

    /// How many values were added.
    pub fn n(&self) -> usize {
        self.n as usize
    }

    /// Their mean (0 with none).
    pub fn mean(&self) -> f64 {
        self.mean
    }

    /// The standard deviation of the mean: `sqrt(M2 / (n - 1) / n)`; 0 with fewer than two
    /// values.
    pub fn stddev_of_mean(&self) -> f64 {
        if self.n < 2.0 {
            return 0.0;
        }
        (self.m2 / (self.n - 1.0) / self.n).sqrt()
    }
}

/// `stddev` relative to `avg`, in percent (0 when `avg` is 0), as perf prints it.
pub fn rel_pct(stddev: f64, avg: f64) -> f64 {
    if avg == 0.0 {
        0.0
    } else {
        100.0 * stddev / avg
    }
}

/// The decimals of perf's `MEAN +- STDDEV seconds time elapsed` line: two more than the
/// position of the standard error's first significant digit, none for a spread above a
/// second (perf's `get_precision(sd) + 2`). A spread of exactly 0 has no digit to place; it
/// gets 2, which is what perf's arithmetic comes to on x86-64.
pub fn precision(sd_secs: f64) -> usize {
    if sd_secs > 1.0 {
        return 2;
    }
    let p = (-sd_secs.log10()).ceil();
    if p.is_finite() {
        p.max(0.0) as usize + 2
    } else {
        2
    }
}

/// The mean and spread of a counter's scaled count, time enabled and time running.
#[derive(Debug, Clone, Default)]
struct CountStats {
    scaled: Stats,
    raw: Stats,
    enabled: Stats,
    running: Stats,
    /// The last run's count (kept when it never counted: `<not supported>` and the like).
    last: Option<Count>,
}

impl CountStats {
    fn add(&mut self, c: &Count) {
        if let Count::Value {
            scaled,
            raw,
            enabled,
            running,
        } = *c
        {
            self.scaled.add(scaled);
            self.raw.add(raw as f64);
            self.enabled.add(enabled as f64);
            self.running.add(running as f64);
        }
        self.last = Some(*c);
    }

    fn mean(&self) -> Count {
        if self.scaled.n() == 0 {
            return self.last.unwrap_or(Count::NotCounted);
        }
        Count::Value {
            scaled: self.scaled.mean(),
            raw: self.raw.mean().round() as u64,
            enabled: self.enabled.mean().round() as u64,
            running: self.running.mean().round() as u64,
        }
    }

    fn noise_pct(&self) -> f64 {
        rel_pct(self.scaled.stddev_of_mean(), self.scaled.mean())
    }
}

/// The runs of `-r` added up.
#[derive(Debug, Clone, Default)]
pub struct Repeated {
    runs: usize,
    counters: Vec<CountStats>,
    groups: Vec<(Label, Vec<CountStats>)>,
    wall: Stats,
}

impl Repeated {
    /// No runs yet.
    pub fn new() -> Repeated {
        Repeated::default()
    }

    /// Adds one run's result (the same counters every run).
    pub fn add(&mut self, res: &StatResult) {
        self.runs += 1;
        if self.counters.len() < res.counts.len() {
            self.counters
                .resize_with(res.counts.len(), CountStats::default);
        }
        for (s, c) in self.counters.iter_mut().zip(&res.counts) {
            s.add(c);
        }
        for g in &res.groups {
            let at = match self.groups.iter().position(|(l, _)| *l == g.label) {
                Some(i) => i,
                None => {
                    self.groups.push((g.label.clone(), Vec::new()));
                    self.groups.len() - 1
                }
            };
            let stats = &mut self.groups[at].1;
            if stats.len() < g.counts.len() {
                stats.resize_with(g.counts.len(), CountStats::default);
            }
            for (s, c) in stats.iter_mut().zip(&g.counts) {
                s.add(c);
            }
        }
        self.wall.add(res.elapsed.as_secs_f64());
    }

    /// How many runs were added.
    pub fn runs(&self) -> usize {
        self.runs
    }

    /// Each counter's mean over the runs.
    pub fn counts(&self) -> Vec<Count> {
        self.counters.iter().map(CountStats::mean).collect()
    }

    /// Each aggregate's means, in the order they first appeared.
    pub fn groups(&self) -> Vec<Group> {
        self.groups
            .iter()
            .map(|(label, stats)| Group {
                label: label.clone(),
                counts: stats.iter().map(CountStats::mean).collect(),
            })
            .collect()
    }

    /// Each counter's standard error relative to its mean, in percent.
    pub fn noise(&self) -> Vec<f64> {
        self.counters.iter().map(CountStats::noise_pct).collect()
    }

    /// The mean wall time of a run.
    pub fn elapsed(&self) -> Duration {
        Duration::from_secs_f64(self.wall.mean().max(0.0))
    }

    /// The standard error of the mean wall time, in seconds.
    pub fn elapsed_sd(&self) -> f64 {
        self.wall.stddev_of_mean()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The per-run task-clock values `perf stat -v -r 3` printed on this machine, and the
    /// variance perf printed for them relative to its value (`( +- 18.55% )` of 83.91 msec).
    #[test]
    fn standard_error_of_the_mean_as_perf_computes_it() {
        let mut s = Stats::default();
        for v in [29_987_005.0, 56_993_646.0, 83_909_920.0] {
            s.add(v);
        }
        assert_eq!(s.n(), 3);
        let mean = (29_987_005.0 + 56_993_646.0 + 83_909_920.0) / 3.0;
        assert!((s.mean() - mean).abs() < 1e-6);
        // By the textbook: sqrt(sum((x - mean)^2) / (n - 1) / n).
        let ss: f64 = [29_987_005.0f64, 56_993_646.0, 83_909_920.0]
            .iter()
            .map(|x| (x - mean).powi(2))
            .sum();
        let want = (ss / 2.0 / 3.0).sqrt();
        assert!((s.stddev_of_mean() - want).abs() < 1e-6 * want);
        assert_eq!(
            format!("{:.2}", rel_pct(s.stddev_of_mean(), 83_909_920.0)),
            "18.55"
        );
        // Context switches of the same runs: 9, 20, 15, printed as `( +- 21.20% )` of 15.
        let mut cs = Stats::default();
        [9.0, 20.0, 15.0].iter().for_each(|&v| cs.add(v));
        assert_eq!(
            format!("{:.2}", rel_pct(cs.stddev_of_mean(), 15.0)),
            "21.20"
        );
        // One value, or none, has no spread; a mean of 0 has no relative spread.
        let mut one = Stats::default();
        one.add(7.0);
        assert_eq!(one.stddev_of_mean(), 0.0);
        assert_eq!(Stats::default().stddev_of_mean(), 0.0);
        assert_eq!(rel_pct(1.0, 0.0), 0.0);
        // Identical values: no spread.
        let mut same = Stats::default();
        [49.0, 49.0, 49.0].iter().for_each(|&v| same.add(v));
        assert_eq!(same.stddev_of_mean(), 0.0);
    }

    /// Decimals of the elapsed line as perf printed them: `0.0011616 +- 0.0000156`,
    /// `0.001473 +- 0.000306`, `0.0969 +- 0.0213`.
    #[test]
    fn elapsed_precision_shows_two_digits_of_the_spread() {
        assert_eq!(precision(0.0000156), 7);
        assert_eq!(precision(0.000306), 6);
        assert_eq!(precision(0.0213), 4);
        assert_eq!(precision(0.5), 3);
        assert_eq!(precision(2.5), 2);
        assert_eq!(precision(0.0), 2);
    }

    #[test]
    fn runs_are_averaged_per_counter_and_per_aggregate() {
        let run = |v: u64, ns: u64, running: u64| StatResult {
            counters: Vec::new(),
            counts: vec![
                Count::from_reads(&[(v, 100, running)]),
                Count::NotSupported(libc::ENOENT),
            ],
            groups: vec![Group {
                label: Label::Cpu(1),
                counts: vec![Count::from_reads(&[(v * 2, 100, 100)])],
            }],
            elapsed: Duration::from_nanos(ns),
            user_sys: (0.0, 0.0),
            exit_code: Some(0),
            notes: Vec::new(),
            tpebs: Default::default(),
            interrupted: false,
        };
        let mut r = Repeated::new();
        r.add(&run(10, 1_000_000, 100));
        r.add(&run(20, 3_000_000, 50));
        assert_eq!(r.runs(), 2);
        let c = r.counts();
        // Scaled: 10 and 40 (20 counted in half the time): mean 25.
        assert_eq!(c[0].value(), Some(25.0));
        assert_eq!(c[0].running_pct(), 75.0);
        assert_eq!(c[1], Count::NotSupported(libc::ENOENT));
        let mut want = Stats::default();
        want.add(10.0);
        want.add(40.0);
        assert_eq!(r.noise()[0], rel_pct(want.stddev_of_mean(), 25.0));
        assert_eq!(r.noise()[1], 0.0);
        assert_eq!(r.elapsed(), Duration::from_millis(2));
        assert!((r.elapsed_sd() - 0.001).abs() < 1e-12);
        let g = r.groups();
        assert_eq!(g.len(), 1);
        assert_eq!(g[0].counts[0].value(), Some(30.0));
    }
}
