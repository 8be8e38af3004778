//! JIT symbols from `/tmp/perf-PID.map`.
//!
//! JIT compilers (V8, the JVM with perf-map-agent, CPython 3.12's `-X perf`, LuaJIT) write
//! one `START SIZE name` line (hex addresses, `0x` optional) per generated function into
//! `/tmp/perf-PID.map`. Their code lives in anonymous memory, which no ELF file describes, so
//! this file is the only source of names. It is read at report time from the machine the
//! report runs on, as perf does: a report elsewhere finds none and says so. The exception is
//! a process in a container (another pid or mount namespace), whose map lies in its own
//! `/tmp`: `record` reads it there and stores it in the recording ([`SIDE`]), and the
//! symbolizer takes a recorded map before the file on this machine.

use std::path::Path;
use std::sync::Arc;

/// One JIT symbol.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JitSym {
    /// First address.
    pub start: u64,
    /// Size in bytes.
    pub size: u64,
    /// Name.
    pub name: Arc<str>,
}

/// The name of the side blocks of an hrec file with the perf maps of processes in containers
/// (`record` reads them from the process's own `/tmp`): the host pid on the first line, the
/// map's text after it.
pub const SIDE: &str = "perf-map";

/// The symbols of one perf map, sorted by address.
#[derive(Debug, Clone, Default)]
pub struct PerfMap {
    syms: Vec<JitSym>,
}

fn hex(s: &str) -> Option<u64> {
    let s = s.strip_prefix("0x").unwrap_or(s);
    u64::from_str_radix(s, 16).ok()
}

impl PerfMap {
    /// Parses the text of a perf map; malformed lines are skipped. Later lines win when
    /// ranges overlap (a JIT reuses memory), as the map is appended to over time.
    pub fn parse(text: &str) -> PerfMap {
        let mut syms: Vec<(usize, JitSym)> = text
            .lines()
            .enumerate()
            .filter_map(|(n, l)| {
                let mut it = l.trim().splitn(3, ' ');
                let start = hex(it.next()?)?;
                let size = hex(it.next()?)?;
                let name = it.next()?.trim();
                (size > 0 && !name.is_empty()).then(|| {
                    (
                        n,
                        JitSym {
                            start,
                            size,
                            name: name.into(),
                        },
                    )
                })
            })
            .collect();
        // Sort by start, the newest line first among equal starts, then drop older duplicates.
        syms.sort_by(|a, b| a.1.start.cmp(&b.1.start).then(b.0.cmp(&a.0)));
        syms.dedup_by_key(|s| s.1.start);
        PerfMap {
            syms: syms.into_iter().map(|(_, s)| s).collect(),
        }
    }

    /// Reads `dir/perf-PID.map`; `None` when it does not exist or cannot be read.
    pub fn load(dir: &Path, pid: u32) -> Option<PerfMap> {
        let text = std::fs::read_to_string(dir.join(format!("perf-{pid}.map"))).ok()?;
        Some(PerfMap::parse(&text))
    }

    /// The symbol covering `addr`.
    pub fn lookup(&self, addr: u64) -> Option<&JitSym> {
        let i = self.syms.partition_point(|s| s.start <= addr);
        let s = self.syms.get(i.checked_sub(1)?)?;
        (addr - s.start < s.size).then_some(s)
    }

    /// Number of symbols.
    pub fn len(&self) -> usize {
        self.syms.len()
    }

    /// No symbols.
    pub fn is_empty(&self) -> bool {
        self.syms.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_parse_and_addresses_resolve_inside_their_size() {
        let m = PerfMap::parse(
            "7f0000001000 40 LazyCompile:~foo app.js:1\n0x7f0000002000 0x10 py::bar:x.py\nbad line\n",
        );
        assert_eq!(m.len(), 2);
        assert_eq!(
            &*m.lookup(0x7f000000103f).unwrap().name,
            "LazyCompile:~foo app.js:1"
        );
        assert!(m.lookup(0x7f0000001040).is_none());
        assert_eq!(&*m.lookup(0x7f0000002000).unwrap().name, "py::bar:x.py");
        assert!(m.lookup(0x7f0000000fff).is_none());
    }

    #[test]
    fn a_later_line_for_the_same_start_wins() {
        let m = PerfMap::parse("1000 10 old\n1000 10 new\n");
        assert_eq!(&*m.lookup(0x1005).unwrap().name, "new");
    }

    #[test]
    fn missing_file_is_none() {
        let d = tempfile::tempdir().unwrap();
        assert!(PerfMap::load(d.path(), 1).is_none());
        std::fs::write(d.path().join("perf-7.map"), "10 4 f\n").unwrap();
        assert_eq!(PerfMap::load(d.path(), 7).unwrap().len(), 1);
    }
}
