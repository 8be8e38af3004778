//! tracefs under a sysfs root: where it is, which events it has, and what a `subsys:event`
//! name or glob means.
//!
//! Rules, following perf:
//!
//! * tracefs is `<sysfs>/kernel/tracing`, else the older `<sysfs>/kernel/debug/tracing`; the
//!   first whose `events` directory reads is taken. Mounted but unreadable (tracefs' default
//!   mode is 0700, root only) is its own error, with the remount that fixes it, not "not
//!   mounted".
//! * An event is a directory `events/<subsys>/<event>` with an `id` file (the tracepoint PMU's
//!   `config`); ftrace's internal events have none and are not events. Dynamic probe events
//!   (`probe_libc:malloc`, `uprobes:*`) are events like any other.
//! * A glob (`'syscalls:sys_enter_*'`, `'sched:*'`, perf's `*`, `?`, `[...]`) matches the
//!   subsystem and the event name each, and expands in tracefs' order: subsystems and events
//!   as the directories list them (not sorted), the order perf opens them in.
//! * An unknown name gets the closest known names.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// tracefs, found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tracefs {
    /// The mount (the directory that has `events/`).
    pub dir: PathBuf,
}

/// One tracepoint of tracefs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceEvent {
    /// Subsystem (`sched`).
    pub system: String,
    /// Event (`sched_switch`).
    pub name: String,
    /// Its `id`: `perf_event_attr.config` of the tracepoint PMU (type 2).
    pub id: u64,
    /// Its `format` file, as tracefs gives it.
    pub format: String,
    /// It fires with the user's registers, so it counts with `exclude_kernel` (all that
    /// `kernel.perf_event_paranoid=2` leaves an unprivileged user): the per-system-call
    /// events (`syscalls:*`, handed the system call's user registers) and user probes
    /// (`uprobe_events`). Every other tracepoint fires in the kernel and then counts
    /// nothing: perf stat prints 0, hrec refuses it.
    pub user_regs: bool,
}

impl TraceEvent {
    /// `subsys:event`, perf's name.
    pub fn full_name(&self) -> String {
        format!("{}:{}", self.system, self.name)
    }
}

/// Why tracefs or an event of it cannot be used, one line each with what to do.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// No candidate directory has readable events.
    #[error(
        "cannot read tracepoints ({tried}): tracefs is not mounted (as root: mount -t tracefs nodev /sys/kernel/tracing)"
    )]
    NotMounted {
        /// Each directory tried, with why it failed.
        tried: String,
    },
    /// tracefs is there but only root may read it.
    #[error(
        "cannot read tracepoints: {} is readable by root only (tracefs' default mode 0700): run as root, or as root make it readable with mount -o remount,mode=755 {}",
        .dir.display(), .dir.display()
    )]
    NotReadable {
        /// The mount.
        dir: PathBuf,
    },
    /// No such event.
    #[error("unknown tracepoint {name}{}; 'hrec list tracepoint' lists them", closest_text(.closest))]
    Unknown {
        /// As written.
        name: String,
        /// The closest known names.
        closest: Vec<String>,
    },
    /// A glob that matches nothing.
    #[error("no tracepoint matches {glob}; 'hrec list tracepoint' lists them")]
    NoMatch {
        /// As written.
        glob: String,
    },
    /// An event file only root (and tracefs' group) may read, under a mount others may.
    #[error(
        "cannot read {}: tracefs' event files are readable by root only (mode 0640): run as root",
        .path.display()
    )]
    FileNotReadable {
        /// The file.
        path: PathBuf,
    },
    /// An event file that cannot be read.
    #[error("cannot read {}: {source}", .path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// An `id` file that holds no number.
    #[error("{} holds no event id ({text:?})", .path.display())]
    BadId {
        /// The file.
        path: PathBuf,
        /// What it holds.
        text: String,
    },
}

fn closest_text(closest: &[String]) -> String {
    if closest.is_empty() {
        String::new()
    } else {
        format!(" (closest: {})", closest.join(", "))
    }
}

/// Whether `s` has glob characters (perf's `strglobmatch` set).
pub fn is_glob(s: &str) -> bool {
    s.contains(['*', '?', '['])
}

impl Tracefs {
    /// tracefs under `sysfs_root` (`/sys` on a live system).
    pub fn find(sysfs_root: &Path) -> Result<Tracefs, TraceError> {
        let candidates = [
            sysfs_root.join("kernel/tracing"),
            sysfs_root.join("kernel/debug/tracing"),
        ];
        let mut why: Vec<(PathBuf, io::Error)> = Vec::new();
        for dir in candidates {
            match fs::read_dir(dir.join("events")) {
                Ok(_) => return Ok(Tracefs { dir }),
                Err(e) => why.push((dir, e)),
            }
        }
        if let Some((dir, _)) = why
            .iter()
            .find(|(_, e)| e.kind() == io::ErrorKind::PermissionDenied)
        {
            return Err(TraceError::NotReadable { dir: dir.clone() });
        }
        let tried: Vec<String> = why
            .iter()
            .map(|(d, e)| format!("{}: {e}", d.join("events").display()))
            .collect();
        Err(TraceError::NotMounted {
            tried: tried.join("; "),
        })
    }

    /// `printk_formats`: the kernel's format strings by address (`0xADDR : "text"` lines),
    /// which tracepoints print for a `const char *` field; empty when unreadable. At most
    /// 16 MiB are read.
    pub fn printk_formats(&self) -> String {
        use std::io::Read;
        let mut text = String::new();
        if let Ok(f) = fs::File::open(self.dir.join("printk_formats")) {
            let _ = f.take(16 << 20).read_to_string(&mut text);
        }
        text
    }

    /// `events/`.
    pub fn events_dir(&self) -> PathBuf {
        self.dir.join("events")
    }

    /// Every event, as `(subsys, event)`, in tracefs' order. An entry that vanishes or cannot
    /// be read while the directories are listed (probes come and go) is skipped, as is a
    /// subsystem that cannot be listed, as perf does.
    pub fn events(&self) -> Result<Vec<(String, String)>, TraceError> {
        let root = self.events_dir();
        let systems = subdirs(&root).map_err(|source| TraceError::Io {
            path: root.clone(),
            source,
        })?;
        let mut out = Vec::new();
        for sys in systems {
            let Ok(events) = subdirs(&root.join(&sys)) else {
                continue;
            };
            for ev in events {
                if root.join(&sys).join(&ev).join("id").exists() {
                    out.push((sys.clone(), ev));
                }
            }
        }
        Ok(out)
    }

    /// The events `system:event` names: one, or a glob's in tracefs' order.
    pub fn resolve(&self, system: &str, event: &str) -> Result<Vec<TraceEvent>, TraceError> {
        if !is_glob(system) && !is_glob(event) {
            let dir = self.events_dir().join(system).join(event);
            if !dir.join("id").exists() || system.contains('/') || event.contains('/') {
                let name = format!("{system}:{event}");
                let all = self.events()?;
                let closest =
                    crate::names::closest(&name, all.iter().map(|(s, e)| format!("{s}:{e}")), 3);
                return Err(TraceError::Unknown { name, closest });
            }
            return Ok(vec![self.event(system, event)?]);
        }
        let glob = |p: &str, t: &str| crate::names::glob_match(p, t, false);
        let matched: Vec<TraceEvent> = self
            .events()?
            .into_iter()
            .filter(|(s, e)| glob(system, s) && glob(event, e))
            .map(|(s, e)| self.event(&s, &e))
            .collect::<Result<_, _>>()?;
        if matched.is_empty() {
            return Err(TraceError::NoMatch {
                glob: format!("{system}:{event}"),
            });
        }
        Ok(matched)
    }

    /// The event `system:event`, with its id and format.
    pub fn event(&self, system: &str, name: &str) -> Result<TraceEvent, TraceError> {
        let dir = self.events_dir().join(system).join(name);
        let read = |file: &str| {
            let path = dir.join(file);
            fs::read_to_string(&path).map_err(|source| {
                if source.kind() == io::ErrorKind::PermissionDenied {
                    TraceError::FileNotReadable { path }
                } else {
                    TraceError::Io { path, source }
                }
            })
        };
        let text = read("id")?;
        let id = text.trim().parse().map_err(|_| TraceError::BadId {
            path: dir.join("id"),
            text: text.trim().to_string(),
        })?;
        Ok(TraceEvent {
            system: system.to_string(),
            name: name.to_string(),
            id,
            format: read("format")?,
            user_regs: system == "syscalls" || self.is_uprobe(system, name),
        })
    }

    /// Whether `system:name` is a user probe: a `p:`/`r:` line of `uprobe_events` names
    /// `system/name` (false when the file cannot be read).
    fn is_uprobe(&self, system: &str, name: &str) -> bool {
        let want = format!("{system}/{name}");
        fs::read_to_string(self.dir.join("uprobe_events")).is_ok_and(|t| {
            t.lines().any(|l| {
                l.split_whitespace()
                    .next()
                    .and_then(|w| w.split_once(':'))
                    .is_some_and(|(_, ev)| ev == want)
            })
        })
    }
}

/// `printk_formats` text as a table: address to string, the quotes around each stripped (as
/// perf reads it). Lines that are not `0xADDR : "text"` are skipped.
pub fn parse_printk_formats(text: &str) -> std::collections::HashMap<u64, String> {
    text.lines()
        .filter_map(|l| {
            let (addr, rest) = l.split_once(" : ")?;
            let addr = u64::from_str_radix(addr.trim().trim_start_matches("0x"), 16).ok()?;
            let s = rest.strip_prefix('"')?;
            Some((addr, s.strip_suffix('"').unwrap_or(s).to_string()))
        })
        .collect()
}

/// The subdirectories of `d`, in directory order.
fn subdirs(d: &Path) -> io::Result<Vec<String>> {
    let mut v = Vec::new();
    for e in fs::read_dir(d)?.flatten() {
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            v.push(e.file_name().to_string_lossy().into_owned());
        }
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sysfs root with tracefs at `kernel/tracing` holding `events` (`sys/ev` names).
    fn tree(events: &[&str]) -> tempfile::TempDir {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("kernel/tracing/events");
        fs::create_dir_all(root.join("ftrace/function")).unwrap();
        for (i, e) in events.iter().enumerate() {
            let dir = root.join(e);
            fs::create_dir_all(&dir).unwrap();
            fs::write(dir.join("id"), format!("{}\n", 300 + i)).unwrap();
            fs::write(dir.join("format"), format!("name: {e}\n")).unwrap();
        }
        t
    }

    #[test]
    fn names_and_globs_find_their_events() {
        let t = tree(&[
            "sched/sched_switch",
            "sched/sched_wakeup",
            "syscalls/sys_enter_openat",
            "syscalls/sys_enter_openat2",
            "syscalls/sys_exit_openat",
        ]);
        let fs = Tracefs::find(t.path()).unwrap();
        let one = fs.resolve("sched", "sched_switch").unwrap();
        assert_eq!(one.len(), 1);
        assert_eq!(
            (one[0].id, one[0].full_name()),
            (300, "sched:sched_switch".into())
        );
        assert_eq!(one[0].format, "name: sched/sched_switch\n");
        let mut names: Vec<String> = fs
            .resolve("syscalls", "sys_enter_*")
            .unwrap()
            .iter()
            .map(TraceEvent::full_name)
            .collect();
        names.sort();
        assert_eq!(
            names,
            ["syscalls:sys_enter_openat", "syscalls:sys_enter_openat2"]
        );
        assert_eq!(fs.resolve("s*", "*").unwrap().len(), 5);
        // ftrace's internal events have no id: not events.
        assert!(fs.events().unwrap().iter().all(|(s, _)| s != "ftrace"));
        let e = fs.resolve("sched", "sched_swich").unwrap_err().to_string();
        assert_eq!(
            e,
            "unknown tracepoint sched:sched_swich (closest: sched:sched_switch); 'hrec list tracepoint' lists them"
        );
        let e = fs.resolve("block", "*").unwrap_err().to_string();
        assert_eq!(
            e,
            "no tracepoint matches block:*; 'hrec list tracepoint' lists them"
        );
        assert!(fs.resolve("..", "sched/sched_switch").is_err());
    }

    #[test]
    fn a_glob_expands_in_directory_order() {
        let t = tree(&[
            "sched/sched_switch",
            "sched/sched_wakeup",
            "sched/sched_waking",
        ]);
        let fs = Tracefs::find(t.path()).unwrap();
        let want: Vec<String> = fs::read_dir(t.path().join("kernel/tracing/events/sched"))
            .unwrap()
            .map(|e| format!("sched:{}", e.unwrap().file_name().to_string_lossy()))
            .collect();
        let got: Vec<String> = fs
            .resolve("sched", "*")
            .unwrap()
            .iter()
            .map(TraceEvent::full_name)
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn no_tracefs_says_how_to_mount_it() {
        let t = tempfile::tempdir().unwrap();
        let e = Tracefs::find(t.path()).unwrap_err().to_string();
        assert!(e.starts_with("cannot read tracepoints ("), "{e}");
        assert!(
            e.ends_with(
                "tracefs is not mounted (as root: mount -t tracefs nodev /sys/kernel/tracing)"
            ),
            "{e}"
        );
        // The older place is taken too.
        fs::create_dir_all(
            t.path()
                .join("kernel/debug/tracing/events/sched/sched_switch"),
        )
        .unwrap();
        let found = Tracefs::find(t.path()).unwrap();
        assert!(found.dir.ends_with("kernel/debug/tracing"));
    }

    /// tracefs there but not readable (mode 0700, its default) says so and how to open it
    /// up, in one line (`tests/list.rs` meets it for real as `nobody`).
    #[test]
    fn unreadable_tracefs_says_how_to_open_it() {
        let m = TraceError::NotReadable {
            dir: "/sys/kernel/tracing".into(),
        }
        .to_string();
        assert_eq!(
            m,
            "cannot read tracepoints: /sys/kernel/tracing is readable by root only (tracefs' default mode 0700): run as root, or as root make it readable with mount -o remount,mode=755 /sys/kernel/tracing"
        );
    }

    #[test]
    fn printk_formats_map_addresses_to_strings() {
        let t = parse_printk_formats(
            "0xffffffff828195af : \"thaw_processes\"\n0xffffffff8281a3e9 : \"rcu_preempt-GPS\"\njunk\n",
        );
        assert_eq!(t.len(), 2);
        assert_eq!(t[&0xffffffff8281a3e9], "rcu_preempt-GPS");
    }

    #[test]
    fn a_bad_id_file_is_named() {
        let t = tree(&["sched/sched_switch"]);
        fs::write(
            t.path().join("kernel/tracing/events/sched/sched_switch/id"),
            "x\n",
        )
        .unwrap();
        let e = Tracefs::find(t.path())
            .unwrap()
            .resolve("sched", "sched_switch")
            .unwrap_err()
            .to_string();
        assert!(
            e.ends_with("sched_switch/id holds no event id (\"x\")"),
            "{e}"
        );
    }
}
