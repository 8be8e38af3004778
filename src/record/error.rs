//! Why a recording fails, and the one failure checked before anything starts: the open-file
//! budget. Every event takes one file descriptor per CPU and task it is opened on, and hrec
//! holds [`OWN_FDS`] more of its own; a limit below that is raised to the hard limit (as perf
//! does on EMFILE), and refused with how to raise it if that is not enough, before a workload
//! is forked or a file created.

use std::path::PathBuf;

use crate::data;
use crate::event::plan::Plan;
use crate::kernel::process::{self, SpawnError};

/// Why a recording failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RecordError {
    /// The workload could not be started.
    #[error(transparent)]
    Spawn(#[from] SpawnError),
    /// `-p`/`-t` named a task that does not exist.
    #[error("{0} does not exist (check the id with ps)")]
    NoTask(String),
    /// The target task exited while opening.
    #[error("the target task exited before its events could be opened")]
    NoSuchTask,
    /// The kernel refuses an event.
    #[error("event {event} on PMU {pmu} is not supported by this kernel or CPU")]
    Unsupported {
        /// Event name.
        event: String,
        /// PMU name.
        pmu: String,
        /// The errno.
        #[source]
        source: std::io::Error,
    },
    /// perf_event_paranoid.
    #[error("{0}")]
    Paranoid(String),
    /// EMFILE, or an open-file limit below what the plan needs.
    #[error(
        "too many open files: recording needs about {needed} file descriptors ({events} for the events, one per event, CPU and task, and {OWN_FDS} for hrec itself) and the limit is {limit}; raise it with ulimit -n {needed} (or more; the hard limit is {hard}, only root raises that) or record fewer events or CPUs (-C)"
    )]
    TooManyFiles {
        /// Descriptors needed in all.
        needed: u64,
        /// Of which the events' own.
        events: u64,
        /// The soft limit.
        limit: String,
        /// The hard limit.
        hard: String,
    },
    /// An ioctl failed.
    #[error("{what} failed for {event}")]
    Ioctl {
        /// Which ioctl.
        what: &'static str,
        /// Event name.
        event: String,
        /// The errno.
        #[source]
        source: std::io::Error,
    },
    /// The kernel refused a `--filter`.
    #[error(
        "the kernel refused --filter '{filter}' on {event} ({why}): write FIELD OP VALUE (==, !=, <, <=, >, >=, &, ~ \"glob\") joined with && and ||; its fields: {fields}"
    )]
    Filter {
        /// The tracepoint.
        event: String,
        /// The filter.
        filter: String,
        /// The tracepoint's fields, comma-separated.
        fields: String,
        /// The errno.
        why: std::io::Error,
    },
    /// mmap failed.
    #[error(
        "cannot map a {pages}-page ring buffer; use fewer pages (-m {half}) or raise kernel.perf_event_mlock_kb",
        half = (pages / 2).max(1)
    )]
    Mmap {
        /// Data pages asked for.
        pages: usize,
        /// The errno.
        #[source]
        source: std::io::Error,
    },
    /// The output file.
    #[error(transparent)]
    Data(#[from] data::DataError),
    /// Writing the file failed part-way (disk full, `ulimit -f`): what was written before is
    /// kept, readable up to the last complete block.
    #[error(
        "stopped writing {} after {kept} samples (the file is readable up to its last complete block; {dropped} later samples were not written)",
        path.display()
    )]
    WriteFailed {
        /// The file.
        path: PathBuf,
        /// Samples in the complete blocks.
        kept: u64,
        /// Samples recorded after the failure.
        dropped: u64,
        /// The write error.
        #[source]
        source: data::DataError,
    },
    /// epoll or signal set-up.
    #[error("{0}")]
    Os(String, #[source] std::io::Error),
    /// `--all-cgroups` on a kernel that refuses `attr.cgroup` or `PERF_SAMPLE_CGROUP`.
    #[error(
        "this kernel refused {event} with --all-cgroups (EINVAL): cgroup records and samples (PERF_RECORD_CGROUP, PERF_SAMPLE_CGROUP) need Linux 5.7 or later; record without --all-cgroups"
    )]
    NoCgroupRecords {
        /// Event name.
        event: String,
    },
    /// A broken invariant (a bug in hrec).
    #[error("internal error: {0}")]
    Internal(String),
}

/// File descriptors hrec itself holds while recording, besides the events': stdio, the
/// workload's two gate pipes (four while forking), the signal pipe, epoll, the output file,
/// files the writer thread reads (binaries for build-ids, `/proc`), with room to spare.
pub const OWN_FDS: u64 = 16;

/// The file descriptors the events of `plan` take on `tasks` tasks.
pub fn event_fds(plan: &Plan, tasks: usize) -> u64 {
    let per_task: u64 = plan
        .events
        .iter()
        .map(|e| match &e.placement {
            crate::event::plan::Placement::Cpus(list) => list.cpus().len() as u64,
            crate::event::plan::Placement::AnyCpu => 1,
        })
        .sum();
    per_task * tasks as u64
}

/// [`RecordError::TooManyFiles`] for `plan` on `tasks` tasks, with the limits now.
pub fn too_many_files(plan: &Plan, tasks: usize) -> RecordError {
    let events = event_fds(plan, tasks);
    let (limit, hard) = process::nofile_limit().map_or(("?".into(), "?".into()), |(c, h)| {
        let show = |v: u64| {
            if v == libc::RLIM_INFINITY {
                "unlimited".to_string()
            } else {
                v.to_string()
            }
        };
        (show(c), show(h))
    });
    RecordError::TooManyFiles {
        needed: events + OWN_FDS,
        events,
        limit,
        hard,
    }
}

/// Before anything is started: an open-file limit below what the plan needs is raised to the
/// hard limit (as perf does on EMFILE), and refused with how to raise it if that is not enough.
pub(super) fn check_fd_limit(plan: &Plan, tasks: usize) -> Result<(), RecordError> {
    let needed = event_fds(plan, tasks) + OWN_FDS;
    let enough = || process::nofile_limit().is_none_or(|(cur, _)| cur >= needed);
    if enough() || (process::raise_nofile_limit() && enough()) {
        return Ok(());
    }
    Err(too_many_files(plan, tasks))
}
