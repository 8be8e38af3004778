//! Dynamic probe events made through tracefs, as `perf probe` makes them, so perf sees what
//! hrec made and hrec records what perf made.
//!
//! * **User probes** (`uprobe_events`): `-x BINARY FUNCTION` puts a probe at the function's
//!   entry, `FUNCTION%return` at its returns. The line perf writes:
//!   `p:probe_calls/main /path/to/calls:0x0000000000001110` (`r:` for a return probe, whose
//!   event is `main__return`): the group is `probe_` and the binary's name up to its first
//!   `-`, `.` or `_` (`libc.so.6` gives `probe_libc`), the address the function's offset in
//!   the file (its symbol's address through the program header that loads it), in 16 hex
//!   digits, the path the binary's real path.
//! * **Kernel probes** (`kprobe_events`): `FUNCTION` in the group `probe`, where the kernel
//!   has kprobe events (`CONFIG_KPROBE_EVENTS`); one line says so where it has not.
//! * `--del` writes `-:group/event` for every probe event whose `group:event` (or event)
//!   matches the glob; `--list` reads both files back.
//!
//! Each probe becomes a tracepoint `group:event` with its own format (`__probe_ip` and any
//! fetched arguments), recorded like any other.

use std::fs;
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};

use object::{Object as _, ObjectSegment as _, ObjectSymbol as _};

use super::tracefs::Tracefs;

/// A probe to add.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probe {
    /// `probe_calls`.
    pub group: String,
    /// `main`, `main__return`.
    pub event: String,
    /// A return probe (`%return`).
    pub ret: bool,
    /// Where.
    pub place: Place,
}

/// Where a probe is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Place {
    /// A user probe: the binary's real path and the function's file offset.
    User {
        /// Real path of the binary.
        path: PathBuf,
        /// The function.
        function: String,
        /// File offset of its first instruction.
        offset: u64,
    },
    /// A kernel probe on a function.
    Kernel {
        /// The function.
        function: String,
    },
}

/// A probe event as tracefs lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    /// Its group.
    pub group: String,
    /// Its event.
    pub event: String,
    /// A return probe.
    pub ret: bool,
    /// The rest of its line: `PATH:0xOFFSET` or the kernel location.
    pub at: String,
    /// A user probe (`uprobe_events`), else a kernel probe.
    pub user: bool,
}

/// Why a probe could not be added, listed or removed; one line each.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    /// The binary cannot be read.
    #[error("cannot read {}: {source}", .path.display())]
    Binary {
        /// The binary.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// Not an ELF file hrec can read.
    #[error("{} is not an ELF file hrec can read ({why})", .path.display())]
    NotElf {
        /// The binary.
        path: PathBuf,
        /// Why.
        why: String,
    },
    /// No such function.
    #[error("{} has no function {function}{}", .path.display(), closest_text(.closest))]
    NoFunction {
        /// The binary.
        path: PathBuf,
        /// As written.
        function: String,
        /// Closest names.
        closest: Vec<String>,
    },
    /// The function's address is in no loaded segment.
    #[error("{function} of {} lies in no loaded segment", .path.display())]
    NotLoaded {
        /// The binary.
        path: PathBuf,
        /// The function.
        function: String,
    },
    /// A name that is no function name.
    #[error(
        "bad probe {0:?}: give FUNCTION or FUNCTION%return (perf probe's other forms are not supported)"
    )]
    BadSpec(String),
    /// The kernel has no probe events of that kind.
    #[error(
        "this kernel has no {file} in {} (built without {config}): {kind} probes cannot be added",
        .dir.display()
    )]
    NoProbeEvents {
        /// `kprobe_events` or `uprobe_events`.
        file: &'static str,
        /// tracefs.
        dir: PathBuf,
        /// `CONFIG_KPROBE_EVENTS`.
        config: &'static str,
        /// `kernel`, `user`.
        kind: &'static str,
    },
    /// The event exists already.
    #[error("event {0} already exists: remove it with hrec probe --del {0}, or use it")]
    Exists(String),
    /// No probe event matches.
    #[error("no probe event matches {0} (hrec probe --list lists them)")]
    NoMatch(String),
    /// tracefs refused the write.
    #[error("cannot write {}: {source}{}", .path.display(), if .source.kind() == io::ErrorKind::PermissionDenied { " (adding and removing probes needs root)" } else { "" })]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// tracefs itself.
    #[error(transparent)]
    Trace(#[from] super::TraceError),
}

fn closest_text(c: &[String]) -> String {
    if c.is_empty() {
        String::new()
    } else {
        format!(" (closest: {})", c.join(", "))
    }
}

/// perf's group of a user probe on `binary`: `probe_` and its file name up to the first `-`,
/// `.` or `_`, other characters than letters, digits and `_` made `_`.
pub fn user_group(binary: &Path) -> String {
    let name = binary
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = name.split(['-', '.', '_']).next().unwrap_or_default();
    format!("probe_{stem}")
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

/// The probe `spec` (`FUNCTION` or `FUNCTION%return`) on `binary` (`None`: the kernel).
pub fn probe(spec: &str, binary: Option<&Path>) -> Result<Probe, ProbeError> {
    let (function, ret) = match spec.strip_suffix("%return") {
        Some(f) => (f, true),
        None => (spec, false),
    };
    if function.is_empty()
        || !function
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.'))
    {
        return Err(ProbeError::BadSpec(spec.to_string()));
    }
    // perf's event name: the function's, `.` as `_`, `__return` for a return probe.
    let mut event: String = function
        .chars()
        .map(|c| if c == '.' { '_' } else { c })
        .collect();
    if ret {
        event.push_str("__return");
    }
    let Some(binary) = binary else {
        return Ok(Probe {
            group: "probe".into(),
            event,
            ret,
            place: Place::Kernel {
                function: function.to_string(),
            },
        });
    };
    let path = fs::canonicalize(binary).map_err(|source| ProbeError::Binary {
        path: binary.to_path_buf(),
        source,
    })?;
    let offset = function_offset(&path, function)?;
    Ok(Probe {
        group: user_group(&path),
        event,
        ret,
        place: Place::User {
            path,
            function: function.to_string(),
            offset,
        },
    })
}

/// The file offset of `function`'s first byte in the ELF file at `path`.
pub fn function_offset(path: &Path, function: &str) -> Result<u64, ProbeError> {
    let bytes = fs::read(path).map_err(|source| ProbeError::Binary {
        path: path.to_path_buf(),
        source,
    })?;
    let obj = object::File::parse(&*bytes).map_err(|e| ProbeError::NotElf {
        path: path.to_path_buf(),
        why: e.to_string(),
    })?;
    let functions = || {
        obj.symbols()
            .chain(obj.dynamic_symbols())
            .filter(|s| s.kind() == object::SymbolKind::Text && s.address() != 0)
    };
    let Some(addr) = functions()
        .find(|s| s.name() == Ok(function))
        .map(|s| s.address())
    else {
        let names: Vec<String> = functions()
            .filter_map(|s| s.name().ok().map(str::to_string))
            .collect();
        return Err(ProbeError::NoFunction {
            path: path.to_path_buf(),
            function: function.to_string(),
            closest: crate::names::closest(function, names, 3),
        });
    };
    obj.segments()
        .find_map(|seg| {
            let (file_off, file_len) = seg.file_range();
            let at = addr.checked_sub(seg.address())?;
            (at < file_len).then_some(file_off + at)
        })
        .ok_or_else(|| ProbeError::NotLoaded {
            path: path.to_path_buf(),
            function: function.to_string(),
        })
}

impl Probe {
    /// `group:event`, the tracepoint's name.
    pub fn name(&self) -> String {
        format!("{}:{}", self.group, self.event)
    }

    /// The line perf writes into `uprobe_events` / `kprobe_events`.
    pub fn line(&self) -> String {
        let kind = if self.ret { 'r' } else { 'p' };
        match &self.place {
            Place::User { path, offset, .. } => format!(
                "{kind}:{}/{} {}:{offset:#018x}",
                self.group,
                self.event,
                path.display()
            ),
            Place::Kernel { function } => {
                format!("{kind}:{}/{} {function}", self.group, self.event)
            }
        }
    }

    fn file(&self) -> &'static str {
        match self.place {
            Place::User { .. } => "uprobe_events",
            Place::Kernel { .. } => "kprobe_events",
        }
    }
}

/// Adds `p` to tracefs.
pub fn add(fs: &Tracefs, p: &Probe) -> Result<(), ProbeError> {
    let file = fs.dir.join(p.file());
    if !file.exists() {
        let (config, kind) = match p.place {
            Place::User { .. } => ("CONFIG_UPROBE_EVENTS", "user"),
            Place::Kernel { .. } => ("CONFIG_KPROBE_EVENTS", "kernel"),
        };
        return Err(ProbeError::NoProbeEvents {
            file: p.file(),
            dir: fs.dir.clone(),
            config,
            kind,
        });
    }
    if fs.events_dir().join(&p.group).join(&p.event).exists() {
        return Err(ProbeError::Exists(p.name()));
    }
    append(&file, &p.line())
}

fn append(file: &Path, line: &str) -> Result<(), ProbeError> {
    fs::OpenOptions::new()
        .append(true)
        .open(file)
        .and_then(|mut f| f.write_all(format!("{line}\n").as_bytes()))
        .map_err(|source| ProbeError::Write {
            path: file.to_path_buf(),
            source,
        })
}

/// The probe events tracefs has, user ones first.
pub fn list(fs: &Tracefs) -> Vec<Listed> {
    let mut out = Vec::new();
    for (file, user) in [("uprobe_events", true), ("kprobe_events", false)] {
        let text = fs::read_to_string(fs.dir.join(file)).unwrap_or_default();
        out.extend(text.lines().filter_map(|l| parse_line(l, user)));
    }
    out
}

/// `p:group/event AT` (or `r:`, `r16:`...).
fn parse_line(l: &str, user: bool) -> Option<Listed> {
    let (head, at) = l.split_once(' ')?;
    let (kind, name) = head.split_once(':')?;
    let (group, event) = name.split_once('/')?;
    Some(Listed {
        group: group.to_string(),
        event: event.to_string(),
        ret: kind.starts_with('r'),
        at: at.split(' ').next().unwrap_or(at).to_string(),
        user,
    })
}

/// Removes every probe event matching `pattern` (`group:event` or `event`, globs); returns
/// their names.
pub fn del(fs: &Tracefs, pattern: &str) -> Result<Vec<String>, ProbeError> {
    let (gp, ep) = match pattern.split_once(':') {
        Some((g, e)) => (g, e),
        None => ("*", pattern),
    };
    let glob = |p: &str, t: &str| crate::names::glob_match(p, t, false);
    let mut gone = Vec::new();
    for l in list(fs)
        .into_iter()
        .filter(|l| glob(gp, &l.group) && glob(ep, &l.event))
    {
        let file = fs.dir.join(if l.user {
            "uprobe_events"
        } else {
            "kprobe_events"
        });
        append(&file, &format!("-:{}/{}", l.group, l.event))?;
        gone.push(format!("{}:{}", l.group, l.event));
    }
    if gone.is_empty() {
        return Err(ProbeError::NoMatch(pattern.to_string()));
    }
    Ok(gone)
}

/// `on FUNCTION in PATH` for a listed user probe, the function found by its offset (as perf
/// lists its probes without debug information); the location itself otherwise.
pub fn describe(l: &Listed) -> String {
    if !l.user {
        return format!("on {}", l.at);
    }
    let Some((path, off)) = l.at.rsplit_once(':') else {
        return format!("on {}", l.at);
    };
    let function = u64::from_str_radix(off.trim_start_matches("0x"), 16)
        .ok()
        .and_then(|off| function_at(Path::new(path), off));
    let ret = if l.ret { "%return" } else { "" };
    match function {
        Some(f) => format!("on {f}{ret} in {path}"),
        None => format!("on {off}{ret} in {path}"),
    }
}

/// The function whose first byte is at file offset `off` of the ELF file at `path`.
fn function_at(path: &Path, off: u64) -> Option<String> {
    let bytes = fs::read(path).ok()?;
    let obj = object::File::parse(&*bytes).ok()?;
    let addr = obj.segments().find_map(|seg| {
        let (file_off, file_len) = seg.file_range();
        let at = off.checked_sub(file_off)?;
        (at < file_len).then_some(seg.address() + at)
    })?;
    obj.symbols()
        .chain(obj.dynamic_symbols())
        .filter(|s| s.kind() == object::SymbolKind::Text && s.address() == addr)
        .filter_map(|s| s.name().ok().map(str::to_string))
        .min_by_key(|n| (n.starts_with('_'), n.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_and_lines_are_perfs() {
        assert_eq!(user_group(Path::new("/usr/lib/libc.so.6")), "probe_libc");
        assert_eq!(user_group(Path::new("/tmp/calls")), "probe_calls");
        assert_eq!(user_group(Path::new("/opt/my-app")), "probe_my");
        assert_eq!(user_group(Path::new("/opt/a+b")), "probe_a_b");
        let p = Probe {
            group: "probe_calls".into(),
            event: "main".into(),
            ret: false,
            place: Place::User {
                path: "/tmp/rec/calls".into(),
                function: "main".into(),
                offset: 0x1110,
            },
        };
        assert_eq!(
            p.line(),
            "p:probe_calls/main /tmp/rec/calls:0x0000000000001110"
        );
        let k = probe("do_sys_openat2%return", None).unwrap();
        assert_eq!(k.line(), "r:probe/do_sys_openat2__return do_sys_openat2");
        assert!(matches!(
            probe("main:10", None),
            Err(ProbeError::BadSpec(_))
        ));
        let l = parse_line(
            "r:probe_libc/malloc__return /usr/lib/x86_64-linux-gnu/libc.so.6:0x0000000000098930",
            true,
        )
        .unwrap();
        assert_eq!(
            (l.group.as_str(), l.event.as_str(), l.ret),
            ("probe_libc", "malloc__return", true)
        );
    }

    /// This test binary's own `main` is found, at an offset inside the file.
    #[test]
    fn a_function_has_its_file_offset() {
        let exe = std::env::current_exe().unwrap();
        let off = function_offset(&exe, "main").unwrap();
        assert!(off > 0 && off < fs::metadata(&exe).unwrap().len());
        assert_eq!(function_at(&exe, off).as_deref(), Some("main"));
        let e = function_offset(&exe, "mian").unwrap_err().to_string();
        assert!(e.contains("has no function mian (closest: main"), "{e}");
    }
}
