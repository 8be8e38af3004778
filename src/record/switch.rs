//! `record --switch-output`: one recording cut into a series of files, as perf rotates
//! `perf.data`.
//!
//! The rules, perf's where perf has one:
//! - **When.** `signal` (the default of a bare `--switch-output`): on each SIGUSR2 to hrec.
//!   `SIZE` with a unit `B`/`K`/`M`/`G` (powers of 1024): once the current file has that many
//!   bytes on disk (hrec's files are compressed, so this is the disk space, not perf's
//!   uncompressed record bytes; a file ends at the first block past the size). `TIME` with a
//!   unit `s`/`m`/`h`/`d`: every period. Anything else is a usage error.
//! - **Names.** The file being written is the `-o` path; when it is switched out it is
//!   finished (trailer, build-ids, kernel symbols) and renamed to
//!   `<output>.<YYYYmmddHHMMSScc>` (local time, centiseconds last), and a new `<output>`
//!   starts. The last file is renamed the same way at the end, so every file of the series
//!   has a timestamp and none is left as `<output>`.
//! - **Each file reads alone.** A new file starts with the tasks alive at the switch
//!   synthesized from `/proc` (COMM, FORK and MMAP2 records, as at the start of `-a`/`-p`;
//!   for a workload: its process tree), the modules and the vdso; its trailer counts its own
//!   samples, losses and threads, and with `--call-graph dwarf` its stack table starts again
//!   from empty. perf 6.1 does the same for the tasks it follows.
//! - **The drain never stalls.** The drain loop flushes every ring when a file is due and
//!   hands the switch to the writer thread, which finishes the file (the build-ids and kernel
//!   symbols are worked out there) and starts the next.
//! - **`--switch-max-files N`**: only the newest N files are kept; older ones are removed
//!   as new ones are written.

use std::path::{Path, PathBuf};
use std::time::Duration;

/// When to switch to a new file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    /// On SIGUSR2.
    Signal,
    /// When the current file reaches this many bytes.
    Size(u64),
    /// Every period.
    Time(Duration),
}

/// `--switch-output` with `--switch-max-files`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SwitchOutput {
    /// When.
    pub trigger: Trigger,
    /// Keep only this many of the newest files (`None`: all).
    pub max_files: Option<usize>,
}

impl std::str::FromStr for Trigger {
    type Err = String;

    fn from_str(s: &str) -> Result<Trigger, String> {
        const HOW: &str = "give signal (switch on SIGUSR2), a size with B, K, M or G (e.g. 100M), or a time with s, m, h or d (e.g. 30s)";
        if s == "signal" {
            return Ok(Trigger::Signal);
        }
        let split = s.len().saturating_sub(1);
        let (digits, unit) = (s.get(..split).unwrap_or(""), s.get(split..).unwrap_or(""));
        let n: u64 = match digits.parse() {
            Ok(n) if !digits.starts_with('+') => n,
            _ => return Err(format!("'{s}' is not a switch-output mode: {HOW}")),
        };
        if n == 0 {
            return Err(format!("'{s}': the threshold must be above 0; {HOW}"));
        }
        let scaled = |mult: u64| {
            n.checked_mul(mult)
                .ok_or_else(|| format!("'{s}' is too large"))
        };
        Ok(match unit {
            "B" => Trigger::Size(n),
            "K" => Trigger::Size(scaled(1 << 10)?),
            "M" => Trigger::Size(scaled(1 << 20)?),
            "G" => Trigger::Size(scaled(1 << 30)?),
            "s" => Trigger::Time(Duration::from_secs(n)),
            "m" => Trigger::Time(Duration::from_secs(scaled(60)?)),
            "h" => Trigger::Time(Duration::from_secs(scaled(3600)?)),
            "d" => Trigger::Time(Duration::from_secs(scaled(86_400)?)),
            _ => return Err(format!("'{s}' is not a switch-output mode: {HOW}")),
        })
    }
}

/// `<output>.<YYYYmmddHHMMSScc>` for local calendar time `t` (year, month, day, hour, minute,
/// second) and `centis` hundredths of a second, as perf names its switched files.
pub fn timestamped(output: &Path, t: [i32; 6], centis: u32) -> PathBuf {
    let mut s = output.as_os_str().to_owned();
    s.push(format!(
        ".{:04}{:02}{:02}{:02}{:02}{:02}{:02}",
        t[0],
        t[1],
        t[2],
        t[3],
        t[4],
        t[5],
        centis.min(99)
    ));
    PathBuf::from(s)
}

/// The name for a file switched out now: [`timestamped`] with the local time, with `.1`,
/// `.2`, ... added if two switches fall in the same hundredth of a second (perf would
/// overwrite the first).
pub fn name_now(output: &Path) -> PathBuf {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let secs = i64::try_from(now.as_secs()).unwrap_or(i64::MAX);
    let t = crate::kernel::local_time(secs).unwrap_or([1970, 1, 1, 0, 0, 0]);
    let base = timestamped(output, t, now.subsec_millis() / 10);
    if base.symlink_metadata().is_err() {
        return base;
    }
    (1u32..)
        .map(|i| {
            let mut s = base.as_os_str().to_owned();
            s.push(format!(".{i}"));
            PathBuf::from(s)
        })
        .find(|p| p.symlink_metadata().is_err())
        .unwrap_or(base)
}

/// Decides when to switch: the trigger against the signals, bytes and time of the current
/// file.
#[derive(Debug)]
pub struct Due {
    trigger: Trigger,
    since: std::time::Instant,
}

impl Due {
    /// Starts the first file's clock.
    pub fn new(trigger: Trigger) -> Due {
        Due {
            trigger,
            since: std::time::Instant::now(),
        }
    }

    /// Whether to switch now, given whether SIGUSR2 arrived and the current file's size; a
    /// `true` restarts the clock for the next file.
    pub fn check(&mut self, usr2: bool, file_bytes: u64) -> bool {
        let due = match self.trigger {
            Trigger::Signal => usr2,
            Trigger::Size(max) => file_bytes >= max,
            Trigger::Time(every) => self.since.elapsed() >= every,
        };
        if due {
            self.since = std::time::Instant::now();
        }
        due
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse_as_perf_spells_them() {
        assert_eq!("signal".parse(), Ok(Trigger::Signal));
        assert_eq!("100M".parse(), Ok(Trigger::Size(100 << 20)));
        assert_eq!("2G".parse(), Ok(Trigger::Size(2 << 30)));
        assert_eq!("512K".parse(), Ok(Trigger::Size(512 << 10)));
        assert_eq!("4096B".parse(), Ok(Trigger::Size(4096)));
        assert_eq!("30s".parse(), Ok(Trigger::Time(Duration::from_secs(30))));
        assert_eq!("2m".parse(), Ok(Trigger::Time(Duration::from_secs(120))));
        assert_eq!("1h".parse(), Ok(Trigger::Time(Duration::from_secs(3600))));
        assert_eq!("1d".parse(), Ok(Trigger::Time(Duration::from_secs(86_400))));
        for bad in [
            "banana",
            "",
            "10",
            "M",
            "0s",
            "0M",
            "-1s",
            "+5s",
            "1.5s",
            "10k",
            "10S",
            "signals",
            "99999999999999999G",
        ] {
            let e = bad.parse::<Trigger>().unwrap_err();
            assert!(e.contains(&format!("'{bad}'")), "{bad}: {e}");
        }
    }

    #[test]
    fn names_follow_perfs_timestamp() {
        let p = timestamped(Path::new("out/perf.data"), [2026, 11, 25, 14, 9, 10], 23);
        assert_eq!(p, PathBuf::from("out/perf.data.2026112514091023"));
        let p = timestamped(Path::new("x"), [2027, 1, 2, 3, 4, 5], 150);
        assert_eq!(p, PathBuf::from("x.2027010203040599"));
    }

    #[test]
    fn name_now_never_reuses_a_name() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("hrec.data");
        let a = name_now(&out);
        std::fs::write(&a, b"x").unwrap();
        let b = name_now(&out);
        assert_ne!(a, b);
        assert!(b.to_string_lossy().starts_with(&*out.to_string_lossy()));
    }

    #[test]
    fn due_follows_the_trigger() {
        let mut d = Due::new(Trigger::Signal);
        assert!(!d.check(false, u64::MAX));
        assert!(d.check(true, 0));
        let mut d = Due::new(Trigger::Size(1000));
        assert!(!d.check(true, 999));
        assert!(d.check(false, 1000));
        let mut d = Due::new(Trigger::Time(Duration::from_secs(3600)));
        assert!(!d.check(true, u64::MAX));
        let mut d = Due::new(Trigger::Time(Duration::ZERO));
        assert!(d.check(false, 0));
    }
}
