//! The recorder: launch gate, opening the plan, the drain loop and the file.
//!
//! Order of a recording, and why:
//! 1. Fork the workload and hold it before `exec` ([`crate::kernel::process::Workload`]).
//! 2. Open every planned event on it with `enable_on_exec` and map one buffer per CPU
//!    ([`open`]). Nothing counts yet, so hrec's own set-up is never sampled.
//! 3. Release the child and learn whether `exec` worked. Only then is the output file created:
//!    a command that cannot run leaves no file (and no renamed `.old`) behind.
//! 4. Drain: epoll on the buffers (the kernel wakes us when a buffer is half full, its default
//!    watermark) and on a signal pipe, plus a 100 ms tick; each pass moves every complete
//!    record out with one head load and one tail store per buffer, counts what it needs
//!    ([`account`]), and hands batches to a writer thread that compresses and writes them, so
//!    the drain never waits on the disk.
//! 5. When the workload exits (or SIGINT/SIGTERM/SIGHUP, which are forwarded to it), drain
//!    once more, read every fd for its final count and `read_format LOST`, write the
//!    build-ids, the trailer, and print one summary line. A workload that outlives the
//!    forwarded signal by [`STOP_GRACE`] gets SIGTERM, then SIGKILL: it is never left running
//!    unrecorded.
//!
//! **Faults.** Before anything starts, the output's directory must take a new file and the
//! open-file limit must cover the events' fds (raised to the hard limit if needed, else one
//! line saying how many are needed). A write that fails later (disk full, `ulimit -f`, with
//! SIGXFSZ ignored so it is EFBIG rather than death) ends the file at its last complete
//! block; the workload runs on to its end and the error says how many samples were kept.
//!
//! With `--switch-output` ([`switch`]) step 5's file ending also happens whenever a file is
//! due: the drain loop flushes every buffer, the file is finished and renamed, and the next
//! one starts with the tasks alive synthesized from `/proc`.

pub mod account;
pub mod chains;
pub mod open;
pub mod side;
pub mod switch;
pub mod synth;
#[cfg_attr(
    not(test),
    deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used)
)]
pub mod unwind;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::data::{self, EventId, EventMeta, FinalCount, Meta, PmuMeta, Trailer, Writer};
use crate::decode::ReadValues;
use crate::event::Attr;
use crate::event::attr::read;
use crate::event::plan::{Plan, Role, Target};
use crate::kernel::process::{self, Epoll, ExitStatus, Signals, SpawnError, Workload};
use crate::pmu::Pmus;

use account::Accounting;
use open::{OpenParams, Opened, Ring};
use unwind::RecordUnwinder;

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
    /// A broken invariant (a bug in hrec).
    #[error("internal error: {0}")]
    Internal(String),
}

/// What to record and where.
#[derive(Debug, Clone)]
pub struct Session<'a> {
    /// The plan.
    pub plan: &'a Plan,
    /// The PMUs it was made from (names and types go into the file).
    pub pmus: &'a Pmus,
    /// `-o`.
    pub output: PathBuf,
    /// `-m`: data pages per buffer; `None` for 512 KiB.
    pub mmap_pages: Option<usize>,
    /// The workload command (for [`Target::Workload`]).
    pub command: Vec<String>,
    /// hrec's own command line, for the file header.
    pub command_line: Vec<String>,
    /// `/proc`.
    pub procfs_root: PathBuf,
    /// `-v`.
    pub verbose: u8,
    /// `--call-graph dwarf,SIZE,raw`: keep the user stack copies after unwinding them.
    pub keep_raw_stacks: bool,
    /// `-z N`: zstd level of the blocks (`None`: [`crate::data::ZSTD_LEVEL`]).
    pub zstd_level: Option<i32>,
    /// `-B/--no-buildid`: no build-ids side block (reports then cannot tell a rebuilt binary).
    pub no_buildid: bool,
    /// `--switch-output`: a series of files instead of one.
    pub switch_output: Option<switch::SwitchOutput>,
    /// Each finished file of a `--switch-output` series is sent here once it is complete
    /// (`hrec top` reads them as they come).
    pub on_file: Option<mpsc::Sender<PathBuf>>,
    /// Set by the caller to end the recording as a SIGINT would (without a workload to
    /// forward it to: `hrec top`'s end).
    pub stop: Option<Arc<std::sync::atomic::AtomicBool>>,
    /// Files read at once on this machine (`hrec top`): no modules, build-ids or kernel
    /// symbols blocks, whose reader takes them from the running system.
    pub live: bool,
}

/// How a recording went.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The workload's exit status (shell convention), or 0 without a workload.
    pub exit_code: i32,
    /// The one summary line (without the `hrec:` prefix).
    pub summary: String,
    /// Warnings to print after it (losses).
    pub warnings: Vec<String>,
    /// The trailer written.
    pub trailer: Trailer,
}

enum Msg {
    Records(u32, Vec<u8>),
    /// With record-time unwinding: copies of the side-band records (MMAP, COMM, FORK, EXIT)
    /// of one drain pass over every ring, sent before any batch of that pass, for the
    /// unwinder (they are written with their batches as usual).
    SideBand(Vec<u8>),
    /// The end of a file: the build-ids of these mapped files and the kernel symbols around
    /// these addresses (worked out on the writer thread: reading every binary and
    /// `/proc/kallsyms` would stall the drain).
    FileSides {
        files: std::collections::BTreeSet<Vec<u8>>,
        kernel_addrs: std::collections::BTreeSet<u64>,
    },
    /// `--switch-output`: finish the file with this trailer, rename it `to`, and start the
    /// next one at the output path with this header.
    Switch {
        to: PathBuf,
        trailer: Box<Trailer>,
        meta: Box<Meta>,
    },
}

/// A batch is handed to the writer at [`data::BATCH_BYTES`] (the block size the codec is
/// tuned for), or when it is this old, so a crash loses little.
const BATCH_AGE: Duration = Duration::from_millis(500);
/// A workload still running this long after SIGINT/SIGTERM/SIGHUP was forwarded to it (or
/// at a second signal) gets SIGTERM, and SIGKILL this long after that (or at a third): a
/// workload that ignores signals is never left running unrecorded.
const STOP_GRACE: Duration = Duration::from_secs(2);
/// After SIGKILL, how long to wait for the workload to be reaped (a task in uninterruptible
/// sleep dies only when the sleep ends) before finishing the file without it.
const REAP_GRACE: Duration = Duration::from_secs(5);
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
fn check_fd_limit(plan: &Plan, tasks: usize) -> Result<(), RecordError> {
    let needed = event_fds(plan, tasks) + OWN_FDS;
    let enough = || process::nofile_limit().is_none_or(|(cur, _)| cur >= needed);
    if enough() || (process::raise_nofile_limit() && enough()) {
        return Ok(());
    }
    Err(too_many_files(plan, tasks))
}

/// Records `session`. Notices (fallbacks) go to `err` as they happen.
pub fn record(s: &Session<'_>, err: &mut dyn Write) -> Result<Outcome, RecordError> {
    let plan = s.plan;
    let listed = match &plan.target {
        Target::Pids(p) | Target::Tids(p) => p.len(),
        _ => 1,
    };
    check_fd_limit(plan, listed)?;
    // An output that cannot be created is found before the workload runs.
    Writer::check_can_create(&s.output)?;
    // With -a/-C a command only sets how long to record (perf's `perf record -a -- sleep 1`).
    let workload = if plan.target == Target::Workload || !s.command.is_empty() {
        Some(Workload::spawn(&s.command)?)
    } else {
        None
    };
    let tasks = match open::tasks(
        &plan.target,
        workload.as_ref().map(Workload::pid),
        &s.procfs_root,
    ) {
        Ok(t) => t,
        Err(e) => {
            if let Some(w) = workload {
                w.abort();
            }
            return Err(e);
        }
    };
    let data_pages = s.mmap_pages.unwrap_or_else(open::default_data_pages);
    let params = OpenParams {
        tasks: tasks.clone(),
        data_pages,
        procfs_root: &s.procfs_root,
        verbose: s.verbose,
    };
    let mut log = Vec::new();
    let opened = open::open_plan(plan, &params, &mut log);
    for l in &log {
        let _ = writeln!(err, "hrec: {l}");
    }
    let opened = match opened {
        Ok(o) => o,
        Err(e) => {
            if let Some(w) = workload {
                w.abort();
            }
            return Err(e);
        }
    };
    for n in &opened.notices {
        let _ = writeln!(err, "hrec: {n}");
    }
    let mut caught = vec![libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGCHLD];
    if let Some(switch::SwitchOutput {
        trigger: switch::Trigger::Signal,
        ..
    }) = s.switch_output
    {
        caught.push(libc::SIGUSR2);
    }
    // SIGXFSZ ignored: a write past `ulimit -f` fails with EFBIG, which ends the file cleanly,
    // instead of killing hrec with a file cut anywhere.
    let signals = Signals::catch(&caught, &[libc::SIGXFSZ])
        .map_err(|e| RecordError::Os("cannot install signal handlers".into(), e));
    let signals = match signals {
        Ok(sg) => sg,
        Err(e) => {
            if let Some(w) = workload {
                w.abort();
            }
            return Err(e);
        }
    };

    let start_unix = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let clock_start = process::monotonic_ns();
    // Without enable_on_exec (-p, -t, -a, -C) the events start now.
    if plan.target != Target::Workload {
        for f in &opened.fds {
            if plan.events[f.event].leader == f.event
                && let Err(source) = f.fd.enable(true)
            {
                if let Some(w) = workload {
                    w.abort();
                }
                return Err(RecordError::Ioctl {
                    what: "PERF_EVENT_IOC_ENABLE",
                    event: opened.names[f.event].clone(),
                    source,
                });
            }
        }
    }
    let child = match workload {
        Some(w) => Some(w.start()?),
        None => None,
    };

    let meta = build_meta(s, &opened, data_pages, start_unix, clock_start, child);
    let created = Writer::create(&s.output, &meta).and_then(|mut w| {
        if let Some(level) = s.zstd_level {
            w.set_level(level)?;
        }
        Ok(w)
    });
    let writer = match created {
        Ok(w) => w,
        Err(e) => {
            if let Some(pid) = child {
                process::kill(pid, libc::SIGTERM);
                let _ = process::wait(pid, false);
            }
            return Err(e.into());
        }
    };

    let (tx, rx) = mpsc::sync_channel::<Msg>(64);
    let unwinding = meta.unwound_at_record;
    let unwinder = meta.unwound_at_record.then(|| {
        let events = opened.fds.iter().map(|f| (f.id, opened.attrs[f.event]));
        RecordUnwinder::new(events, s.keep_raw_stacks, &s.procfs_root)
    });
    let file_bytes = Arc::new(AtomicU64::new(writer.bytes_written()));
    let ctx = WriterCtx {
        procfs: s.procfs_root.clone(),
        // The vdso every process of this kernel maps: its frames are named from it, and
        // stacks kept raw unwind through it again later.
        vdso: crate::kernel::own_vdso(&s.procfs_root),
        unwinder,
        output: s.output.clone(),
        level: s.zstd_level,
        file_bytes: Arc::clone(&file_bytes),
        no_buildid: s.no_buildid,
        on_file: s.on_file.clone(),
        live: s.live,
    };
    let writer_thread = std::thread::Builder::new()
        .name("hrec-writer".into())
        .spawn(move || writer_loop(writer, rx, ctx))
        .map_err(|e| RecordError::Os("cannot start the writer thread".into(), e))?;

    let ids = opened.fds.iter().map(|f| (f.id, f.event));
    let mut acc = Accounting::new(&opened.attrs, ids, process::getpid());
    // -a, -C, -p, -t: the kernel will not tell us about tasks and mappings made before now.
    let existing = match &plan.target {
        Target::Workload => None,
        Target::SystemWide | Target::Cpus(_) => Some(synth::Tasks::All),
        Target::Pids(_) | Target::Tids(_) => Some(synth::Tasks::These(&tasks)),
    };
    // The tracking event's attr and id: synthesized records are written as its.
    let synth = plan.events.iter().position(|e| e.tracking).and_then(|t| {
        let f = opened.fds.iter().find(|f| f.event == t)?;
        Some(synth::Synth::new(&opened.attrs[t], f.id))
    });
    if let Some(existing) = existing
        && let Some(synth) = &synth
    {
        let began = Instant::now();
        let found = synth::synthesize(&s.procfs_root, existing, synth);
        if s.verbose > 0 {
            let _ = writeln!(
                err,
                "hrec: synthesized the tasks running before the recording from /proc: {} processes, {} threads, {} bytes in {:.1} ms",
                found.processes,
                found.threads,
                found.bytes.len(),
                began.elapsed().as_secs_f64() * 1e3
            );
        }
        if let Some((pid, comm, why)) = found.unreadable_maps.first() {
            let _ = writeln!(
                err,
                "hrec: warning: cannot read the mappings of {} process(es) that were running (e.g. {pid} {comm}: {why}); their user-space samples will be [unknown] (run as their user or as root)",
                found.unreadable_maps.len()
            );
        }
        acc.account(&found.bytes);
        if unwinding {
            let _ = tx.send(Msg::SideBand(found.bytes.clone()));
        }
        let _ = tx.send(Msg::Records(u32::MAX, found.bytes));
    }
    let mut opened = opened;
    let mut switcher = s.switch_output.map(|so| Switcher {
        due: switch::Due::new(so.trigger),
        file_bytes: Arc::clone(&file_bytes),
        session: s,
        meta: meta.clone(),
        attrs: &opened.attrs,
        fds: &opened.fds,
        tasks: &tasks,
        workload: child,
        synth: synth.as_ref(),
        totals: Accounting::default(),
        lost_read: 0,
        file_start_unix: start_unix,
        err: &mut *err,
    });
    let run = drain_loop(
        &plan.target,
        &mut opened.rings,
        &opened.fds,
        &signals,
        child,
        Outlet {
            tx: &tx,
            side_band: unwinding,
        },
        &mut acc,
        switcher.as_mut(),
        s.stop.as_deref(),
    )?;

    let (counts, lost_read) = final_counts(plan, &opened.attrs, &opened.fds);
    send_file_sides(&tx, &acc);
    drop(tx);
    let WriterEnd {
        writer,
        failed: write_error,
        mut dumped,
        kept,
    } = writer_thread
        .join()
        .map_err(|_| RecordError::Internal("the writer thread panicked".into()))?;

    let (file_start, lost_before, mut totals) = match switcher {
        Some(sw) => (sw.file_start_unix, sw.lost_read, Some(sw.totals)),
        None => (start_unix, 0, None),
    };
    let mut trailer = trailer_of(
        &acc,
        counts,
        lost_read.saturating_sub(lost_before),
        file_start,
    );
    trailer.workload_status = run.status.map(ExitStatus::shell_code);
    let written_to = writer.path().to_path_buf();
    let (size, write_error) = match write_error {
        Some(e) => (writer.bytes_written(), Some(e)),
        None => match writer.finish(trailer.clone()) {
            Ok(n) => (n, None),
            Err(e) => (0, Some(e)),
        },
    };
    // Held to here: SIGXFSZ stays ignored while the writer ends the file (a limit reached by the
    // trailer is EFBIG too), and a late SIGINT does not kill hrec half-way through it.
    drop(signals);
    if let Some(source) = write_error {
        // What is on disk up to the failing block stays readable; the workload ran to its end.
        let path = written_to;
        return Err(match source {
            data::DataError::Io { .. } | data::DataError::WriterFailed { .. } => {
                RecordError::WriteFailed {
                    path,
                    kept,
                    dropped: acc.samples().saturating_sub(kept),
                    source,
                }
            }
            other => other.into(),
        });
    }
    // --switch-output: the last file is named like the others, and the totals cover all.
    let (shown, size, acc) = match totals.as_mut() {
        Some(t) => {
            let to = switch::name_now(&s.output);
            std::fs::rename(&s.output, &to).map_err(|source| {
                RecordError::Data(data::DataError::Io {
                    action: "rename",
                    path: s.output.clone(),
                    source,
                })
            })?;
            let _ = writeln!(err, "[ hrec record: dump {} ]", to.display());
            if let Some(tx) = &s.on_file {
                let _ = tx.send(to.clone());
            }
            dumped.files.push(to);
            keep_newest(&mut dumped.files, s.switch_output.and_then(|x| x.max_files));
            t.absorb(&acc);
            let mut shown = s.output.as_os_str().to_owned();
            shown.push(".<timestamp>");
            (
                format!(
                    "{} file{} {}",
                    dumped.count + 1,
                    if dumped.count == 0 { "" } else { "s" },
                    PathBuf::from(shown).display()
                ),
                dumped.bytes + size,
                &*t,
            )
        }
        None => (s.output.display().to_string(), size, &acc),
    };

    // As perf: the workload's status, unless hrec was stopped by a signal and the workload
    // was not killed by one (it exited on its own, or there is none): then 128 + that signal.
    let exit_code = match (run.status, run.stop_signal) {
        (Some(st @ ExitStatus::Signal(_)), _) | (Some(st), None) => st.shell_code(),
        (_, Some(sig)) => 128 + sig,
        (None, None) if child.is_some() => 128 + libc::SIGINT,
        (None, None) => 0,
    };
    let (summary, mut warnings) = summarize(s, &opened, acc, lost_read, size, &shown, run.woken);
    warnings.extend(workload_warning(&run, child));
    if run.corrupt > 0 {
        warnings.push(format!(
            "warning: {} batches held a corrupt record size and were cut short (see hrec info)",
            run.corrupt
        ));
    }
    Ok(Outcome {
        exit_code,
        summary,
        warnings,
        trailer,
    })
}

/// One line when the workload did not end as asked, or died of a signal of its own.
fn workload_warning(run: &RunEnd, child: Option<i32>) -> Option<String> {
    let pid = child?;
    let name = process::signal_name;
    let asked = run.stop_signal.map(name).unwrap_or_default();
    match (run.status, run.escalated) {
        (None, _) => Some(format!(
            "warning: the workload (pid {pid}) was still running {} s after SIGKILL; the file is complete up to then",
            REAP_GRACE.as_secs()
        )),
        (Some(_), Some(libc::SIGTERM)) => Some(format!(
            "warning: the workload did not exit within {} s of {asked}: ended it with SIGTERM",
            STOP_GRACE.as_secs()
        )),
        (Some(_), Some(sig)) => Some(format!(
            "warning: the workload did not exit on {asked} or SIGTERM: ended it with {}",
            name(sig)
        )),
        (Some(ExitStatus::Signal(sig)), None)
            if run.stop_signal.is_none()
                || ![libc::SIGINT, libc::SIGTERM, libc::SIGHUP].contains(&sig) =>
        {
            Some(format!(
                "warning: the workload was killed by {} (exit status {}); the recording up to then is complete",
                name(sig),
                128 + sig
            ))
        }
        _ => None,
    }
}

fn build_meta(
    s: &Session<'_>,
    o: &Opened,
    data_pages: usize,
    start_unix: u64,
    clock_start: u64,
    child: Option<i32>,
) -> Meta {
    let host = side::host_info(&s.procfs_root);
    // Samples with user stacks are unwound on the writer thread and stored without them.
    let unwound = o
        .attrs
        .iter()
        .any(|a| a.sample_type & crate::event::attr::sample::STACK_USER != 0);
    let events = s
        .plan
        .events
        .iter()
        .map(|e| EventMeta {
            name: o.names[e.index].clone(),
            pmu: e.pmu.clone(),
            attr: {
                let mut a = o.attrs[e.index];
                a.sample_type = unwind::stored_sample_type(a.sample_type, s.keep_raw_stacks);
                a
            },
            leader: e.leader,
            role: e.role,
            ids: o
                .fds
                .iter()
                .filter(|f| f.event == e.index)
                .map(|f| EventId {
                    id: f.id,
                    cpu: f.slot.cpu,
                    tid: f.slot.pid,
                })
                .collect(),
        })
        .collect();
    let target = match &s.plan.target {
        Target::Workload => "workload".to_string(),
        Target::Pids(p) => format!("pid {}", join(p)),
        Target::Tids(t) => format!("tid {}", join(t)),
        Target::SystemWide => "system-wide".to_string(),
        Target::Cpus(c) => format!("cpus {c}"),
    };
    let mut notices = s.plan.notices.clone();
    notices.extend(o.notices.iter().cloned());
    Meta {
        hrec_version: env!("CARGO_PKG_VERSION").to_string(),
        command_line: s.command_line.clone(),
        hostname: host.hostname,
        kernel_release: host.kernel_release,
        arch: std::env::consts::ARCH.to_string(),
        cpu_model: host.cpu_model,
        cpus_online: s.pmus.online.to_string(),
        nr_cpus: s.pmus.online.len() as u32,
        page_size: crate::kernel::page_size() as u64,
        start_time_unix_ns: start_unix,
        clock_start_ns: clock_start,
        clockid: None,
        target,
        workload_pid: child.map(|p| p as u32),
        recorder_pid: process::getpid(),
        pmus: s
            .pmus
            .pmus
            .iter()
            .map(|p| PmuMeta {
                name: p.name.clone(),
                type_: p.type_,
            })
            .collect(),
        events,
        notices,
        mmap_pages: data_pages as u64,
        unwound_at_record: unwound,
    }
}

fn join(v: &[u32]) -> String {
    v.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
}

/// What the writer thread works with besides the first file and the channel.
struct WriterCtx {
    procfs: PathBuf,
    vdso: Option<Vec<u8>>,
    unwinder: Option<RecordUnwinder>,
    /// `-o`: where each file is written while it is the current one.
    output: PathBuf,
    /// `-z N`.
    level: Option<i32>,
    /// The current file's size, for `--switch-output=SIZE`.
    file_bytes: Arc<AtomicU64>,
    /// `-B`: no build-ids block.
    no_buildid: bool,
    /// Where finished files are announced.
    on_file: Option<mpsc::Sender<PathBuf>>,
    /// [`Session::live`].
    live: bool,
}

/// The files `--switch-output` finished before the last one.
#[derive(Debug, Default)]
struct Dumped {
    /// Their names, oldest first (those removed by `--switch-max-files` left out).
    files: Vec<PathBuf>,
    /// How many there were.
    count: usize,
    /// Their sizes added up.
    bytes: u64,
}

/// The side blocks every file starts with: the kernel's modules and the vdso.
fn start_file(w: &mut Writer, ctx: &WriterCtx) -> Result<(), data::DataError> {
    if !ctx.live
        && let Ok(bytes) = std::fs::read(ctx.procfs.join("modules"))
    {
        w.write_side("modules", &bytes)?;
    }
    if let Some(image) = &ctx.vdso {
        w.write_side("vdso", image)?;
    }
    Ok(())
}

/// Runs on the writer thread: side blocks first, then every batch, in arrival order, its
/// samples unwound first when the recording has user stacks ([`unwind`]). After a write
/// error it keeps receiving (so the drain never blocks on a full channel) but drops data.
fn writer_loop(mut w: Writer, rx: mpsc::Receiver<Msg>, mut ctx: WriterCtx) -> WriterEnd {
    let mut failed = start_file(&mut w, &ctx).err();
    let mut dumped = Dumped::default();
    // Samples in the complete blocks of the current file.
    let mut kept = 0u64;
    // /proc/kallsyms, read once (at the first file's end) for every file of a series.
    let mut kallsyms = None;
    for msg in rx {
        if failed.is_some() {
            continue;
        }
        let r = match msg {
            Msg::Records(source, bytes) => match &mut ctx.unwinder {
                Some(u) => {
                    let (records, stacks) = u.process(&bytes);
                    match stacks {
                        Some(b) => w.write_side("stacks", &b).map(|_| ()),
                        None => Ok(()),
                    }
                    .and_then(|()| w.write_records(&records, source).map(|_| ()))
                    .map(|()| kept += count_samples(&records))
                }
                None => w
                    .write_records(&bytes, source)
                    .map(|_| kept += count_samples(&bytes)),
            },
            Msg::FileSides {
                files,
                kernel_addrs,
            } => write_file_sides(&mut w, &ctx, &files, &kernel_addrs, &mut kallsyms),
            Msg::SideBand(bytes) => {
                if let Some(u) = &mut ctx.unwinder {
                    u.apply_side_band(&bytes);
                }
                Ok(())
            }
            Msg::Switch { to, trailer, meta } => switch_file(&mut w, &ctx, &to, *trailer, &meta)
                .map(|size| {
                    if let Some(tx) = &ctx.on_file {
                        let _ = tx.send(to.clone());
                    }
                    dumped.files.push(to);
                    dumped.count += 1;
                    dumped.bytes += size;
                    kept = 0;
                    if let Some(u) = &mut ctx.unwinder {
                        u.new_file();
                    }
                }),
        };
        if let Err(e) = r {
            failed = Some(e);
        }
        ctx.file_bytes.store(w.bytes_written(), Ordering::Relaxed);
    }
    if let (Some(u), None) = (&ctx.unwinder, &failed)
        && let Ok(json) = serde_json::to_vec(u.stats())
        && let Err(e) = w.write_side("unwind", &json)
    {
        failed = Some(e);
    }
    WriterEnd {
        writer: w,
        failed,
        dumped,
        kept,
    }
}

/// What the writer thread hands back.
struct WriterEnd {
    writer: Writer,
    /// The write that failed, after which nothing more was written.
    failed: Option<data::DataError>,
    dumped: Dumped,
    /// Samples in the complete blocks of the last file.
    kept: u64,
}

/// The SAMPLE records among whole kernel records (a damaged size ends the count).
fn count_samples(mut bytes: &[u8]) -> u64 {
    const SAMPLE: u32 = 9;
    let mut n = 0;
    while let (Some(ty), Some(size)) = (bytes.get(..4), bytes.get(6..8)) {
        let ty = u32::from_ne_bytes([ty[0], ty[1], ty[2], ty[3]]);
        let size = usize::from(u16::from_ne_bytes([size[0], size[1]]));
        if size < 8 {
            break;
        }
        n += u64::from(ty == SAMPLE);
        bytes = bytes.get(size..).unwrap_or_default();
    }
    n
}

/// Renames the current file `to`, starts the next one at the output path and finishes the
/// renamed one with `trailer`; returns the finished file's size.
fn switch_file(
    w: &mut Writer,
    ctx: &WriterCtx,
    to: &Path,
    trailer: Trailer,
    meta: &Meta,
) -> Result<u64, data::DataError> {
    w.rename(to)?;
    let mut next = Writer::create(&ctx.output, meta)?;
    if let Some(level) = ctx.level {
        next.set_level(level)?;
    }
    let done = std::mem::replace(w, next);
    let size = done.finish(trailer)?;
    start_file(w, ctx)?;
    Ok(size)
}

/// `--switch-max-files N`: removes all but the newest `max` of `files` (oldest first).
fn keep_newest(files: &mut Vec<PathBuf>, max: Option<usize>) {
    let Some(max) = max else { return };
    let extra = files.len().saturating_sub(max);
    for old in files.drain(..extra) {
        let _ = std::fs::remove_file(old);
    }
}

/// The side blocks that end a file: the build-ids of the files mapped and the kernel
/// symbols around the kernel addresses sampled.
fn write_file_sides(
    w: &mut Writer,
    ctx: &WriterCtx,
    files: &std::collections::BTreeSet<Vec<u8>>,
    kernel_addrs: &std::collections::BTreeSet<u64>,
    kallsyms: &mut Option<String>,
) -> Result<(), data::DataError> {
    if ctx.live {
        return Ok(());
    }
    if !ctx.no_buildid {
        let build_ids = side::build_ids(files.iter().map(Vec::as_slice));
        w.write_side("build-ids", build_ids.as_bytes())?;
    }
    if !kernel_addrs.is_empty() {
        let all = kallsyms.get_or_insert_with(|| {
            std::fs::read_to_string(ctx.procfs.join("kallsyms")).unwrap_or_default()
        });
        let subset = side::kallsyms_subset(all, kernel_addrs);
        w.write_side("kallsyms", subset.as_bytes())?;
    }
    Ok(())
}

/// Asks the writer for the side blocks that end the current file ([`Msg::FileSides`]).
fn send_file_sides(tx: &mpsc::SyncSender<Msg>, acc: &Accounting) {
    let _ = tx.send(Msg::FileSides {
        files: acc.mapped_files.clone(),
        kernel_addrs: acc.kernel_addrs.clone(),
    });
}

fn unix_now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// The trailer of a file from its counts (the workload's status is the caller's to add).
fn trailer_of(
    acc: &Accounting,
    counts: Vec<FinalCount>,
    lost_read: u64,
    start_unix: u64,
) -> Trailer {
    let end_unix = unix_now_ns();
    let mut threads: Vec<data::ThreadCount> = acc
        .per_thread
        .iter()
        .map(|(&(pid, tid), &samples)| data::ThreadCount { pid, tid, samples })
        .collect();
    threads.sort_by_key(|t| (t.pid, t.tid));
    Trailer {
        end_time_unix_ns: end_unix,
        duration_ns: end_unix.saturating_sub(start_unix),
        sample_time: acc.time_range,
        records: acc.records,
        record_bytes: acc.bytes,
        samples: acc.samples(),
        samples_per_event: acc.samples_per_event.clone(),
        threads,
        self_samples: acc.self_samples,
        lost_records: acc.lost_records,
        lost_samples: acc.lost_samples,
        lost_samples_read: lost_read,
        throttles: acc.throttles,
        unthrottles: acc.unthrottles,
        counts,
        ..Trailer::default()
    }
}

/// `--switch-output` on the drain thread: decides when a file is due and, once the drain
/// loop has flushed every buffer, sends the file's side blocks and trailer to the writer
/// (which renames it and starts the next), then writes the tasks alive into the next file.
struct Switcher<'a> {
    due: switch::Due,
    file_bytes: Arc<AtomicU64>,
    session: &'a Session<'a>,
    /// The first file's header: each next one is this with its own start time.
    meta: Meta,
    attrs: &'a [Attr],
    fds: &'a [open::OpenFd],
    /// `-p`/`-t`'s tasks.
    tasks: &'a [i32],
    /// The workload's pid.
    workload: Option<i32>,
    synth: Option<&'a synth::Synth>,
    /// Counts of the files finished so far.
    totals: Accounting,
    /// `read_format LOST` summed at the last switch.
    lost_read: u64,
    /// When the current file started.
    file_start_unix: u64,
    err: &'a mut dyn Write,
}

impl Switcher<'_> {
    /// Finishes the current file (every buffer was just flushed into it) and starts the next.
    fn switch(&mut self, tx: &mpsc::SyncSender<Msg>, acc: &mut Accounting) {
        let s = self.session;
        let file = acc.take_file();
        send_file_sides(tx, &file);
        let (counts, lost_read) = final_counts(s.plan, self.attrs, self.fds);
        let trailer = trailer_of(
            &file,
            counts,
            lost_read.saturating_sub(self.lost_read),
            self.file_start_unix,
        );
        self.lost_read = lost_read;
        self.totals.absorb(&file);
        let to = switch::name_now(&s.output);
        let mut meta = self.meta.clone();
        meta.start_time_unix_ns = unix_now_ns();
        meta.clock_start_ns = process::monotonic_ns();
        self.file_start_unix = meta.start_time_unix_ns;
        let _ = writeln!(self.err, "[ hrec record: dump {} ]", to.display());
        let _ = tx.send(Msg::Switch {
            to,
            trailer: Box::new(trailer),
            meta: Box::new(meta),
        });
        // The next file reads alone: the tasks alive now, with their names and mappings.
        let tasks = match (&s.plan.target, self.workload) {
            (Target::SystemWide | Target::Cpus(_), _) => synth::Tasks::All,
            (Target::Pids(_) | Target::Tids(_), _) => synth::Tasks::These(self.tasks),
            (Target::Workload, Some(pid)) => synth::Tasks::Tree(pid.unsigned_abs()),
            (Target::Workload, None) => return,
        };
        if let Some(synth) = self.synth {
            let found = synth::synthesize(&s.procfs_root, tasks, synth);
            acc.account(&found.bytes);
            let _ = tx.send(Msg::Records(u32::MAX, found.bytes));
        }
    }
}

/// Where the drain loop hands its batches.
#[derive(Clone, Copy)]
struct Outlet<'a> {
    tx: &'a mpsc::SyncSender<Msg>,
    /// Send copies of each pass's side-band records first ([`Msg::SideBand`]).
    side_band: bool,
}

struct RunEnd {
    status: Option<ExitStatus>,
    /// The first SIGINT/SIGTERM/SIGHUP hrec got (forwarded to the workload).
    stop_signal: Option<i32>,
    /// The last signal hrec sent a workload that outlived the forwarded one (SIGTERM, then
    /// SIGKILL).
    escalated: Option<i32>,
    woken: u64,
    /// Batches cut short by a corrupt record size.
    corrupt: u64,
}

/// The drain loop. Returns when the workload has exited, or on SIGINT/SIGTERM.
#[allow(clippy::too_many_arguments)]
fn drain_loop(
    target: &Target,
    rings: &mut [Ring],
    fds: &[open::OpenFd],
    signals: &Signals,
    child: Option<i32>,
    out: Outlet<'_>,
    acc: &mut Accounting,
    mut switcher: Option<&mut Switcher<'_>>,
    stop: Option<&std::sync::atomic::AtomicBool>,
) -> Result<RunEnd, RecordError> {
    let epoll = Epoll::new().map_err(|e| RecordError::Os("epoll_create1 failed".into(), e))?;
    const SIGNAL_TOKEN: u64 = u64::MAX;
    epoll
        .add(signals.fd(), SIGNAL_TOKEN)
        .map_err(|e| RecordError::Os("epoll_ctl failed".into(), e))?;
    for (i, r) in rings.iter().enumerate() {
        use std::os::fd::AsRawFd;
        epoll
            .add(fds[r.fd].fd.as_raw_fd(), i as u64)
            .map_err(|e| RecordError::Os("epoll_ctl failed".into(), e))?;
    }
    let mut batches: Vec<(Vec<u8>, Instant)> =
        rings.iter().map(|_| (Vec::new(), Instant::now())).collect();
    let mut ready = Vec::new();
    let mut status = None;
    let mut stop_signal = None;
    // The caller's stop, or a signal with no workload to wait for.
    let mut stopping = false;
    // With a workload: when to escalate next (SIGTERM, then SIGKILL, then give up).
    let mut escalate_at: Option<Instant> = None;
    let mut escalated = None;
    let mut abandoned = false;
    let mut woken = 0u64;
    let mut corrupt = 0u64;
    let mut hung = vec![false; rings.len()];
    let attached = matches!(target, Target::Pids(_) | Target::Tids(_));
    loop {
        epoll
            .wait(100, &mut ready)
            .map_err(|e| RecordError::Os("epoll_wait failed".into(), e))?;
        let mut data_ready = false;
        for &(token, hup) in &ready {
            if token == SIGNAL_TOKEN {
                continue;
            }
            if hup {
                // Its tasks are gone; what is left in the buffer is drained below.
                use std::os::fd::AsRawFd;
                if let Some(r) = rings.get(token as usize) {
                    let _ = epoll.delete(fds[r.fd].fd.as_raw_fd());
                    hung[token as usize] = true;
                }
            } else {
                data_ready = true;
            }
        }
        if data_ready {
            woken += 1;
        }
        let sigs = signals.take();
        for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            if sigs & (1 << sig) != 0 {
                stopping = true;
                if stop_signal.is_some() {
                    // A second signal: escalate now.
                    escalate_at = Some(Instant::now());
                } else {
                    stop_signal = Some(sig);
                    escalate_at = Some(Instant::now() + STOP_GRACE);
                    if let Some(pid) = child {
                        process::kill(pid, sig);
                    }
                }
            }
        }
        // The caller's stop: now, as a second signal would.
        if stop.is_some_and(|s| s.load(Ordering::Relaxed)) && !stopping {
            stopping = true;
            escalate_at = Some(Instant::now());
        }
        let last = match child {
            Some(pid) => {
                if let Ok(Some(st)) = process::wait(pid, true) {
                    status = Some(st);
                    true
                } else {
                    // Still running: a workload that ignores the signal is ended, never left
                    // running detached.
                    if let Some(at) = escalate_at
                        && Instant::now() >= at
                    {
                        let (next, wait) = match escalated {
                            None => (Some(libc::SIGTERM), STOP_GRACE),
                            Some(libc::SIGTERM) => (Some(libc::SIGKILL), REAP_GRACE),
                            _ => (None, REAP_GRACE),
                        };
                        match next {
                            Some(sig) => {
                                process::kill(pid, sig);
                                escalated = Some(sig);
                                escalate_at = Some(Instant::now() + wait);
                            }
                            None => abandoned = true,
                        }
                    }
                    abandoned
                }
            }
            // -p/-t end when every task they follow has exited, as in perf.
            None => stopping || (attached && hung.iter().all(|h| *h)),
        };
        // --switch-output: every buffer goes into the file being finished.
        let switch = !last
            && switcher.as_mut().is_some_and(|sw| {
                let usr2 = sigs & (1 << libc::SIGUSR2) != 0;
                sw.due.check(usr2, sw.file_bytes.load(Ordering::Relaxed))
            });
        drain_all(rings, &mut batches, out, acc, last || switch, &mut corrupt);
        if last {
            break;
        }
        if switch && let Some(sw) = switcher.as_mut() {
            sw.switch(out.tx, acc);
        }
    }
    Ok(RunEnd {
        status,
        stop_signal,
        escalated,
        woken,
        corrupt,
    })
}

fn drain_all(
    rings: &mut [Ring],
    batches: &mut [(Vec<u8>, Instant)],
    out: Outlet<'_>,
    acc: &mut Accounting,
    flush: bool,
    corrupt: &mut u64,
) {
    let mut side_band = Vec::new();
    for (r, (batch, since)) in rings.iter_mut().zip(batches.iter_mut()) {
        let before = batch.len();
        let res = r.buffer.drain(batch);
        if res.is_err() {
            *corrupt += 1;
        }
        acc.account(&batch[before..]);
        if out.side_band {
            unwind::side_band(&batch[before..], &mut side_band);
        }
        if before == 0 && !batch.is_empty() {
            *since = Instant::now();
        }
    }
    acc.end_pass();
    // The unwinder learns every mapping of this pass before any sample of it: a CPU's
    // samples can use a library whose MMAP is in another CPU's buffer.
    if !side_band.is_empty() {
        let _ = out.tx.send(Msg::SideBand(side_band));
    }
    for (r, (batch, since)) in rings.iter().zip(batches.iter_mut()) {
        if !batch.is_empty()
            && (flush || batch.len() >= data::BATCH_BYTES || since.elapsed() >= BATCH_AGE)
        {
            let source = if r.cpu >= 0 {
                r.cpu as u32
            } else {
                r.tid as u32
            };
            let bytes = std::mem::take(batch);
            let _ = out.tx.send(Msg::Records(source, bytes));
        }
    }
}

/// Reads every fd once more: final counts, and the samples the kernel dropped
/// (`read_format LOST`) even when no LOST record reached the buffer.
fn final_counts(plan: &Plan, attrs: &[Attr], fds: &[open::OpenFd]) -> (Vec<FinalCount>, u64) {
    let mut counts = Vec::new();
    let mut lost = 0u64;
    let mut buf = vec![0u8; 64 * 1024];
    for f in fds {
        let rf = attrs[f.event].read_format;
        if rf & read::GROUP != 0 && plan.events[f.event].leader != f.event {
            continue; // the leader's read covers the whole group
        }
        let Ok(n) = f.fd.read_raw(&mut buf) else {
            continue;
        };
        let Ok(values) = ReadValues::from_read(&buf[..n], rf) else {
            continue;
        };
        for e in values.iter() {
            let id = e.id.unwrap_or(f.id);
            lost += e.lost.unwrap_or(0);
            counts.push(FinalCount {
                event: fds.iter().find(|x| x.id == id).map_or(f.event, |x| x.event),
                id,
                cpu: f.slot.cpu,
                value: e.value,
                time_enabled: values.time_enabled.unwrap_or(0),
                time_running: values.time_running.unwrap_or(0),
            });
        }
    }
    (counts, lost)
}

/// The summary line and warnings; `shown` names where it went (the file, or a switched
/// series), `size` its bytes.
fn summarize(
    s: &Session<'_>,
    o: &Opened,
    acc: &Accounting,
    lost_read: u64,
    size: u64,
    shown: &str,
    woken: u64,
) -> (String, Vec<String>) {
    let samples = acc.samples();
    let per_event: Vec<String> = s
        .plan
        .events
        .iter()
        .filter(|e| e.role == Role::Sampler)
        .map(|e| format!("{} {}", o.names[e.index], acc.samples_per_event[e.index]))
        .collect();
    let lost = acc.lost_samples.max(lost_read);
    let bps = if samples > 0 {
        format!(", {:.1} bytes/sample", size as f64 / samples as f64)
    } else {
        String::new()
    };
    let summary = format!(
        "[ hrec record: woken up {woken} times; wrote {:.3} MB to {shown} ({samples} samples: {}; {} threads; {lost} lost{bps}) ]",
        size as f64 / 1e6,
        per_event.join(", "),
        acc.per_thread.len(),
    );
    let mut warnings = Vec::new();
    let total = samples + lost;
    if total > 0 && lost * 1000 > total {
        warnings.push(format!(
            "warning: {lost} of {total} samples ({:.2}%) were lost: the ring buffers filled faster than hrec drained them; use bigger buffers (-m {}) or a lower frequency (-F)",
            lost as f64 * 100.0 / total as f64,
            (s.mmap_pages.unwrap_or_else(open::default_data_pages) * 4).min(1 << 16)
        ));
    }
    if acc.throttles > 0 {
        warnings.push(format!(
            "warning: the kernel throttled sampling {} times (kernel.perf_event_max_sample_rate); lower the frequency (-F) for even coverage",
            acc.throttles
        ));
    }
    warnings.extend(acc.chains_warning());
    if acc.self_samples > 0 {
        warnings.push(format!(
            "{} samples ({:.2}%) are of hrec itself (pid {}, stored in the file as recorder_pid)",
            acc.self_samples,
            acc.self_samples as f64 * 100.0 / samples.max(1) as f64,
            process::getpid()
        ));
    }
    (summary, warnings)
}
