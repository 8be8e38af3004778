//! perf's `--time`: which samples a reading command keeps, by their time stamp.
//!
//! Two forms, never mixed in one argument:
//! - **Times**: `START,END` in seconds with up to nine decimals, as `script` prints them
//!   (the recording's clock); either side may be empty (no bound). Several ranges are
//!   separated by spaces (`"1.5,2 3,"`), in increasing order and not overlapping.
//! - **Percentages** of the span from the first to the last sample: `A%/N` (the N-th slice of
//!   A%), `A%-B%` (from A% to B%), `A%` (the first A%), several separated by commas
//!   (`0%-10%,30%-40%`). A slice's end is one nanosecond short of the next slice's start,
//!   except at the last sample, so adjacent slices never share a sample (perf's rule).
//!
//! Ranges include both ends. A sample without a time stamp (time 0) is always kept, as perf
//! keeps it. Unlike perf, a range that ends before it starts (`5%-1%`, `3,2`) is refused
//! rather than keeping nothing.

/// A `--time` argument that does not parse; the message says what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("--time {arg:?}: {why}")]
pub struct TimeError {
    arg: String,
    why: String,
}

/// A parsed `--time`, before the recording's sample times are known.
#[derive(Debug, Clone, PartialEq)]
pub enum TimeSpec {
    /// Absolute ranges in nanoseconds, `None` for an open side.
    Times(Vec<(Option<u64>, Option<u64>)>),
    /// Fractions (0..=1) of the span from the first to the last sample.
    Percent(Vec<(f64, f64)>),
}

/// Resolved ranges, inclusive: a sample is kept when one of them holds its time.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TimeRanges(Vec<(u64, u64)>);

impl TimeSpec {
    /// Parses perf's `--time` syntax (module docs).
    pub fn parse(arg: &str) -> Result<TimeSpec, TimeError> {
        let err = |why: String| TimeError {
            arg: arg.to_string(),
            why,
        };
        let s = arg.trim();
        if s.is_empty() {
            return Err(err(
                "give START,END in seconds or a percentage such as 0%-10%".into(),
            ));
        }
        if s.contains('%') {
            let mut v = Vec::new();
            for part in s.split(',') {
                v.push(percent_range(part.trim()).map_err(err)?);
            }
            return Ok(TimeSpec::Percent(v));
        }
        let mut v: Vec<(Option<u64>, Option<u64>)> = Vec::new();
        for part in s.split_whitespace() {
            let (a, b) = part.split_once(',').ok_or_else(|| {
                err(format!(
                    "{part:?} is not START,END (seconds as `hrec script` prints them, e.g. 12.5,13; either may be empty)"
                ))
            })?;
            let (a, b) = (seconds(a).map_err(&err)?, seconds(b).map_err(&err)?);
            if let (Some(a), Some(b)) = (a, b)
                && b < a
            {
                return Err(err(format!("{part:?} ends before it starts")));
            }
            if let Some(&(_, prev_end)) = v.last()
                && (prev_end.is_none() || a.is_none() || prev_end >= a)
            {
                return Err(err(
                    "ranges must be in increasing order without overlapping".into(),
                ));
            }
            v.push((a, b));
        }
        Ok(TimeSpec::Times(v))
    }

    /// The ranges, with percentages taken of `span` (the first and last sample times), which
    /// is asked for only when needed. A recording without samples (`None`) keeps nothing
    /// under a percentage.
    pub fn resolve(&self, span: impl FnOnce() -> Option<(u64, u64)>) -> TimeRanges {
        match self {
            TimeSpec::Times(v) => TimeRanges(
                v.iter()
                    .map(|&(a, b)| (a.unwrap_or(0), b.unwrap_or(u64::MAX)))
                    .collect(),
            ),
            TimeSpec::Percent(v) => {
                let Some((first, last)) = span() else {
                    return TimeRanges(vec![(u64::MAX, 0)]);
                };
                let total = last.saturating_sub(first);
                let at = |f: f64| first.saturating_add((f * total as f64).round() as u64);
                TimeRanges(
                    v.iter()
                        .map(|&(a, b)| {
                            let (start, mut end) = (at(a), at(b));
                            if end > start && end != last {
                                end -= 1;
                            }
                            (start, end)
                        })
                        .collect(),
                )
            }
        }
    }
}

impl TimeRanges {
    /// Whether a sample at `time` is kept.
    pub fn keeps(&self, time: u64) -> bool {
        time == 0 || self.0.iter().any(|&(a, b)| a <= time && time <= b)
    }
}

/// `SECONDS[.FRACTION]` with at most nine decimals, or empty (`None`), in nanoseconds.
fn seconds(s: &str) -> Result<Option<u64>, String> {
    let s = s.trim();
    if s.is_empty() {
        return Ok(None);
    }
    let bad = || format!("{s:?} is not a time in seconds (digits, a point, at most nine decimals)");
    let (int, frac) = s.split_once('.').unwrap_or((s, ""));
    let digits = |d: &str| d.bytes().all(|c| c.is_ascii_digit());
    if int.is_empty() && frac.is_empty() || !digits(int) || !digits(frac) || frac.len() > 9 {
        return Err(bad());
    }
    let secs: u64 = if int.is_empty() {
        0
    } else {
        int.parse().map_err(|_| bad())?
    };
    let ns: u64 = format!("{frac:0<9}").parse().map_err(|_| bad())?;
    secs.checked_mul(1_000_000_000)
        .and_then(|n| n.checked_add(ns))
        .map(Some)
        .ok_or_else(bad)
}

/// One percentage range: `A%/N`, `A%-B%` or `A%`, as fractions.
fn percent_range(s: &str) -> Result<(f64, f64), String> {
    let pct = |p: &str| -> Result<f64, String> {
        let p = p.trim();
        let v: f64 = p
            .strip_suffix('%')
            .and_then(|n| n.trim().parse().ok())
            .filter(|v: &f64| v.is_finite())
            .ok_or_else(|| format!("{p:?} is not a percentage such as 10%"))?;
        if !(0.0..=100.0).contains(&v) {
            return Err(format!("{p:?} is outside 0%..100%"));
        }
        Ok(v / 100.0)
    };
    let (a, b) = if let Some((p, n)) = s.split_once('/') {
        let size = pct(p)?;
        let n: u32 = n
            .trim()
            .parse()
            .ok()
            .filter(|&n| n > 0)
            .ok_or_else(|| format!("{s:?}: the slice number after / must be 1 or more"))?;
        if size <= 0.0 {
            return Err(format!("{s:?}: the slice must be larger than 0%"));
        }
        (size * f64::from(n - 1), size * f64::from(n))
    } else if let Some((a, b)) = s.split_once('-') {
        (pct(a)?, pct(b)?)
    } else {
        (0.0, pct(s)?)
    };
    if b > 1.0 + 1e-9 {
        return Err(format!("{s:?} reaches past 100%"));
    }
    if b < a {
        return Err(format!("{s:?} ends before it starts"));
    }
    Ok((a, b.min(1.0)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ranges(arg: &str, span: (u64, u64)) -> Vec<(u64, u64)> {
        TimeSpec::parse(arg).unwrap().resolve(|| Some(span)).0
    }

    #[test]
    fn times_parse_to_the_nanosecond() {
        assert_eq!(
            ranges("12.5,13", (0, 0)),
            vec![(12_500_000_000, 13_000_000_000)]
        );
        assert_eq!(ranges(",2.000000001", (0, 0)), vec![(0, 2_000_000_001)]);
        assert_eq!(ranges("7,", (0, 0)), vec![(7_000_000_000, u64::MAX)]);
        assert_eq!(
            ranges("1,2 3,4", (0, 0)),
            vec![
                (1_000_000_000, 2_000_000_000),
                (3_000_000_000, 4_000_000_000)
            ]
        );
        // A large clock value keeps every digit (no floating point on the way).
        assert_eq!(
            ranges("2655451.650408065,", (0, 0))[0].0,
            2_655_451_650_408_065
        );
    }

    #[test]
    fn percentages_follow_perfs_slices() {
        let span = (1000, 2000);
        assert_eq!(ranges("10%/2", span), vec![(1100, 1199)]);
        assert_eq!(ranges("0%-10%", span), vec![(1000, 1099)]);
        assert_eq!(ranges("50%", span), vec![(1000, 1499)]);
        assert_eq!(ranges("90%-100%", span), vec![(1900, 2000)]);
        assert_eq!(
            ranges("0%-10%,30%-40%", span),
            vec![(1000, 1099), (1300, 1399)]
        );
        assert_eq!(ranges("25%/4", span), vec![(1750, 2000)]);
        // Without samples a percentage keeps nothing (but time 0 is always kept).
        let none = TimeSpec::parse("0%-50%").unwrap().resolve(|| None);
        assert!(!none.keeps(1));
        assert!(none.keeps(0));
    }

    #[test]
    fn both_ends_are_kept_and_time_zero_always() {
        let r = TimeSpec::parse("1,2").unwrap().resolve(|| None);
        assert!(r.keeps(1_000_000_000) && r.keeps(2_000_000_000) && r.keeps(0));
        assert!(!r.keeps(999_999_999) && !r.keeps(2_000_000_001));
    }

    #[test]
    fn bad_ranges_say_why() {
        for (arg, why) in [
            ("5%-1%", "ends before it starts"),
            ("3,2", "ends before it starts"),
            ("banana", "is not START,END"),
            ("1,x", "is not a time in seconds"),
            ("-1,2", "is not a time in seconds"),
            ("1.1234567891,2", "is not a time in seconds"),
            ("2,3 1,4", "increasing order"),
            ("1, 2,3", "increasing order"),
            ("10%/0", "1 or more"),
            ("0%/2", "larger than 0%"),
            ("60%/2", "past 100%"),
            ("x%", "is not a percentage"),
            ("120%", "outside 0%..100%"),
            ("", "give START,END"),
        ] {
            let e = TimeSpec::parse(arg).unwrap_err().to_string();
            assert!(e.contains(why), "{arg:?}: {e}");
            assert!(e.starts_with("--time"), "{e}");
        }
    }
}
