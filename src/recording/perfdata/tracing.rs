//! perf's tracing data (the `TRACING_DATA` feature section, or a pipe's
//! `HEADER_TRACING_DATA` record and the bytes after it): the tracefs files of the recorded
//! tracepoints, which say how to read and print their samples' raw records.
//!
//! ```text
//! "\x17\x08\x44tracing" "0.6\0"  u8 big-endian  u8 long size  u32 page size
//! "header_page\0"  u64 size, bytes      "header_event\0"  u64 size, bytes
//! u32 ftrace formats; each: u64 size, bytes
//! u32 systems; each: name "\0", u32 events; each: u64 size, the event's format file
//! u32 size, kallsyms      u32 size, printk formats      (0.6) u64 size, saved cmdlines
//! ```
//!
//! Numbers are in the file's byte order (only little-endian files are read). Every size is
//! checked against the bytes that remain before anything is copied; a damaged section gives
//! the formats read before the damage.

use super::layout::{u32_at, u64_at};

/// One event's format file, with its subsystem.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceFormat {
    /// The subsystem (`sched`).
    pub system: String,
    /// The `format` file's text.
    pub format: String,
}

/// What a tracing-data blob holds that hrec reads.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TracingData {
    /// The event format files, in order.
    pub formats: Vec<TraceFormat>,
    /// The kernel's printk formats (`0xADDR : "text"` lines), which `%s` of a `const char *`
    /// field prints.
    pub printk: String,
}

/// The event format files and printk formats of a tracing-data blob; the error says where
/// it went wrong (with what was read before it).
pub fn read_tracing_data(b: &[u8]) -> (TracingData, Option<String>) {
    let mut out = TracingData::default();
    let why = read(b, &mut out).err();
    (out, why)
}

struct Cursor<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], String> {
        let s = self
            .at
            .checked_add(n)
            .and_then(|end| self.b.get(self.at..end))
            .ok_or_else(|| format!("{what} at byte {} runs past the end", self.at))?;
        self.at += n;
        Ok(s)
    }

    fn u32(&mut self, what: &str) -> Result<u32, String> {
        let v = u32_at(self.b, self.at).ok_or_else(|| format!("no {what} at byte {}", self.at))?;
        self.at += 4;
        Ok(v)
    }

    fn u64(&mut self, what: &str) -> Result<usize, String> {
        let v = u64_at(self.b, self.at).ok_or_else(|| format!("no {what} at byte {}", self.at))?;
        self.at += 8;
        usize::try_from(v).map_err(|_| format!("{what} {v} is too large"))
    }

    fn string(&mut self, what: &str) -> Result<String, String> {
        let rest = self.b.get(self.at..).unwrap_or_default();
        let n = rest
            .iter()
            .position(|&c| c == 0)
            .ok_or_else(|| format!("{what} at byte {} has no end", self.at))?;
        let s = String::from_utf8_lossy(rest.get(..n).unwrap_or_default()).into_owned();
        self.at += n + 1;
        Ok(s)
    }

    /// A u64 size and that many bytes.
    fn sized(&mut self, what: &str) -> Result<&'a [u8], String> {
        let n = self.u64(what)?;
        self.take(n, what)
    }
}

fn read(b: &[u8], out: &mut TracingData) -> Result<(), String> {
    let mut c = Cursor { b, at: 0 };
    if c.take(10, "the magic")? != b"\x17\x08\x44tracing" {
        return Err("no tracing-data magic".into());
    }
    let version = c.string("the version")?;
    if c.take(1, "the byte order")? != [0] {
        return Err("big-endian tracing data".into());
    }
    let _long_size = c.take(1, "the long size")?;
    let _page_size = c.u32("the page size")?;
    if c.take(12, "header_page")? != b"header_page\0" {
        return Err("no header_page".into());
    }
    c.sized("header_page")?;
    if c.take(13, "header_event")? != b"header_event\0" {
        return Err("no header_event".into());
    }
    c.sized("header_event")?;
    let ftrace = c.u32("the ftrace format count")?;
    for _ in 0..ftrace {
        c.sized("an ftrace format")?;
    }
    let systems = c.u32("the system count")?;
    for _ in 0..systems {
        let system = c.string("a system name")?;
        let events = c.u32("an event count")?;
        for _ in 0..events {
            let f = c.sized("an event format")?;
            out.formats.push(TraceFormat {
                system: system.clone(),
                format: String::from_utf8_lossy(f).into_owned(),
            });
        }
    }
    let kallsyms = c.u32("the kallsyms size")? as usize;
    c.take(kallsyms, "kallsyms")?;
    let printk = c.u32("the printk size")? as usize;
    out.printk = String::from_utf8_lossy(c.take(printk, "the printk formats")?).into_owned();
    if version.parse::<f64>().is_ok_and(|v| v >= 0.6) {
        c.sized("the saved command lines")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A blob as perf writes it, with `events` as (system, format) pairs.
    pub(crate) fn blob(events: &[(&str, &str)]) -> Vec<u8> {
        let mut b = b"\x17\x08\x44tracing0.6\0".to_vec();
        b.push(0);
        b.push(8);
        b.extend(4096u32.to_le_bytes());
        for (name, body) in [("header_page", "page"), ("header_event", "event")] {
            b.extend(name.as_bytes());
            b.push(0);
            b.extend((body.len() as u64).to_le_bytes());
            b.extend(body.as_bytes());
        }
        b.extend(1u32.to_le_bytes());
        b.extend(3u64.to_le_bytes());
        b.extend(b"fmt");
        let mut systems: Vec<&str> = events.iter().map(|e| e.0).collect();
        systems.dedup();
        b.extend((systems.len() as u32).to_le_bytes());
        for s in systems {
            b.extend(s.as_bytes());
            b.push(0);
            let of: Vec<&str> = events.iter().filter(|e| e.0 == s).map(|e| e.1).collect();
            b.extend((of.len() as u32).to_le_bytes());
            for f in of {
                b.extend((f.len() as u64).to_le_bytes());
                b.extend(f.as_bytes());
            }
        }
        b.extend(0u32.to_le_bytes());
        let printk = b"0xffffffff82000000 : \"rcu_preempt\"\n";
        b.extend((printk.len() as u32).to_le_bytes());
        b.extend(printk);
        b.extend(0u64.to_le_bytes());
        b
    }

    #[test]
    fn formats_come_with_their_systems() {
        let b = blob(&[
            ("sched", "name: a\n"),
            ("sched", "name: b\n"),
            ("irq", "name: c\n"),
        ]);
        let (t, why) = read_tracing_data(&b);
        assert_eq!(why, None);
        assert_eq!(t.printk, "0xffffffff82000000 : \"rcu_preempt\"\n");
        let names: Vec<(&str, &str)> = t
            .formats
            .iter()
            .map(|t| (t.system.as_str(), t.format.as_str()))
            .collect();
        assert_eq!(
            names,
            [
                ("sched", "name: a\n"),
                ("sched", "name: b\n"),
                ("irq", "name: c\n")
            ]
        );
        // Cut anywhere: what came before, and why it stopped; never a panic.
        for n in 0..b.len() {
            let (t, why) = read_tracing_data(&b[..n]);
            assert!(t.formats.len() <= 3);
            assert!(why.is_some(), "{n}");
        }
        // A size that lies is refused before anything is copied.
        let mut lie = b.clone();
        let at = b.windows(8).position(|w| w == b"name: a\n").unwrap() - 8;
        lie[at..at + 8].copy_from_slice(&u64::MAX.to_le_bytes());
        let (t, why) = read_tracing_data(&lie);
        assert!(t.formats.is_empty() && why.is_some());
    }
}
