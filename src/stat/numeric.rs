//! `--big-num` (perf's default, `-B`): counts with the thousands separators of the user's
//! locale, as perf prints them.
//!
//! **The rule is the C library's.** perf prints the count column with printf's `'` flag
//! (`%'18.0f`, `%'18.2f` for msec) after `setlocale(LC_ALL, "")`, so the separator, the
//! decimal point and the size of the groups are those of `LC_NUMERIC`: none in the C and
//! POSIX locales (`C.UTF-8` included, so perf on a bare system prints `21788`), `21,788` in
//! `en_US.UTF-8`, `21.788` in `de_DE.UTF-8`, `2,17,88,000` in `en_IN` (groups of 3 then 2).
//! `--no-big-num` prints plain digits whatever the locale, and CSV (`-x`) never groups
//! (perf refuses `-B` with `-x`: a spreadsheet does its own formatting).
//!
//! **Where hrec gets the locale's conventions.** The locale's name comes from `LC_ALL`, else
//! `LC_NUMERIC`, else `LANG`; a C/POSIX locale (or none) needs nothing more. Any other is
//! asked of the C library through `locale -k thousands_sep decimal_point grouping`, which
//! reads the same compiled locale (and honours `LOCPATH`) as perf's printf; a locale the
//! library does not have is the C locale for it and for perf alike.
//!
//! **What differs from perf.** perf's printf also writes the locale's decimal point into
//! every other number (metrics, times, even CSV fields: `0,83,msec` in `de_DE`); hrec puts
//! the locale's decimal point only where it groups, in the count column, so a grouped count
//! reads as the locale writes numbers, and prints everything else with `.`.

use std::process::Command;

/// The numeric conventions of a locale (`LC_NUMERIC`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Numeric {
    /// Between groups of digits (empty: no grouping).
    pub thousands_sep: String,
    /// Before the fraction.
    pub decimal_point: String,
    /// Group sizes from the right; the last repeats; 0 or a negative size ends grouping (the
    /// C library's `grouping`, `3;3` for most locales).
    pub grouping: Vec<i32>,
}

impl Default for Numeric {
    /// The C locale: no grouping.
    fn default() -> Numeric {
        Numeric {
            thousands_sep: String::new(),
            decimal_point: ".".into(),
            grouping: Vec::new(),
        }
    }
}

impl Numeric {
    /// The conventions of the locale this process runs in (see the module docs); the C
    /// locale's when it is C or POSIX or cannot be asked.
    pub fn from_environment() -> Numeric {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        let name = var("LC_ALL")
            .or_else(|| var("LC_NUMERIC"))
            .or_else(|| var("LANG"));
        match name {
            Some(n) if !is_c_locale(&n) => Command::new("locale")
                .args(["-k", "thousands_sep", "decimal_point", "grouping"])
                .output()
                .ok()
                .filter(|o| o.status.success())
                .map(|o| Numeric::parse(&String::from_utf8_lossy(&o.stdout)))
                .unwrap_or_default(),
            _ => Numeric::default(),
        }
    }

    /// Reads `locale -k` output: `thousands_sep=","`, `decimal_point="."`, `grouping=3;3`.
    /// A missing key keeps the C locale's value.
    pub fn parse(text: &str) -> Numeric {
        let mut n = Numeric::default();
        for line in text.lines() {
            let Some((key, value)) = line.split_once('=') else {
                continue;
            };
            let unquoted = value.trim().trim_matches('"').to_string();
            match key.trim() {
                "thousands_sep" => n.thousands_sep = unquoted,
                "decimal_point" if !unquoted.is_empty() => n.decimal_point = unquoted,
                "grouping" => {
                    n.grouping = unquoted
                        .split(';')
                        .filter_map(|g| g.trim().parse().ok())
                        .collect();
                }
                _ => {}
            }
        }
        n
    }

    /// `number` (as Rust prints it: `1234567.89`) with the locale's grouping and decimal
    /// point.
    pub fn group(&self, number: &str) -> String {
        let (int, frac) = match number.split_once('.') {
            Some((i, f)) => (i, Some(f)),
            None => (number, None),
        };
        let (sign, digits) = match int.strip_prefix('-') {
            Some(d) => ("-", d),
            None => ("", int),
        };
        let mut out = String::with_capacity(number.len() + 8);
        out.push_str(sign);
        out.push_str(&self.group_digits(digits));
        if let Some(f) = frac {
            out.push_str(&self.decimal_point);
            out.push_str(f);
        }
        out
    }

    fn group_digits(&self, digits: &str) -> String {
        if self.thousands_sep.is_empty() || self.grouping.is_empty() {
            return digits.to_string();
        }
        // Cut points from the right, by the group sizes (the last size repeats).
        let mut cuts = Vec::new();
        let mut at = digits.len();
        let mut sizes = self.grouping.iter().copied();
        let mut size = sizes.next().unwrap_or(0);
        // The C library treats CHAR_MAX (127) like a negative size: no further grouping.
        while size > 0 && size < 127 && at > size as usize {
            at -= size as usize;
            cuts.push(at);
            if let Some(next) = sizes.next() {
                size = next;
            }
        }
        let mut out = String::with_capacity(digits.len() + cuts.len() * self.thousands_sep.len());
        let mut from = 0;
        for &cut in cuts.iter().rev() {
            out.push_str(&digits[from..cut]);
            out.push_str(&self.thousands_sep);
            from = cut;
        }
        out.push_str(&digits[from..]);
        out
    }
}

/// The C and POSIX locales (`C.UTF-8` and the like too), which have no thousands separator.
fn is_c_locale(name: &str) -> bool {
    let base = name.split(['.', '@']).next().unwrap_or(name);
    matches!(base, "C" | "POSIX")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `locale -k` output of glibc's en_US.UTF-8, de_DE.UTF-8 and en_IN locales.
    #[test]
    fn locales_group_as_the_c_library_does() {
        let en = Numeric::parse("thousands_sep=\",\"\ndecimal_point=\".\"\ngrouping=3;3\n");
        assert_eq!(en.group("21788"), "21,788");
        assert_eq!(en.group("1234567.89"), "1,234,567.89");
        assert_eq!(en.group("999"), "999");
        assert_eq!(en.group("1000"), "1,000");
        assert_eq!(en.group("0.81"), "0.81");
        assert_eq!(en.group("-1234"), "-1,234");
        let de = Numeric::parse("thousands_sep=\".\"\ndecimal_point=\",\"\ngrouping=3;3\n");
        assert_eq!(de.group("1234567.89"), "1.234.567,89");
        let ind = Numeric::parse("thousands_sep=\",\"\ndecimal_point=\".\"\ngrouping=3;2\n");
        assert_eq!(ind.group("21788000"), "2,17,88,000");
        // One group only, then none (a negative size, or CHAR_MAX, ends grouping).
        let once = Numeric::parse("thousands_sep=\" \"\ngrouping=3;-1\n");
        assert_eq!(once.group("1234567"), "1234 567");
        let once = Numeric::parse("thousands_sep=\" \"\ngrouping=3;127\n");
        assert_eq!(once.group("1234567"), "1234 567");
        // The C locale: `thousands_sep=""`, `grouping=-1`.
        let c = Numeric::parse("thousands_sep=\"\"\ndecimal_point=\".\"\ngrouping=-1\n");
        assert_eq!(
            c,
            Numeric {
                grouping: vec![-1],
                ..Numeric::default()
            }
        );
        assert_eq!(c.group("1234567.5"), "1234567.5");
        assert_eq!(Numeric::default().group("1234567"), "1234567");
    }

    #[test]
    fn c_and_posix_locales_are_recognised_by_name() {
        for n in ["C", "C.UTF-8", "C.utf8", "POSIX", "C@euro"] {
            assert!(is_c_locale(n), "{n}");
        }
        for n in ["en_US.UTF-8", "de_DE", "Cz_XX"] {
            assert!(!is_c_locale(n), "{n}");
        }
    }
}
