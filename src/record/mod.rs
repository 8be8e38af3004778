//! The recorder: launch gate, opening the plan, the drain loop and the file.
//!
//! Order of a recording, and why:
//! 1. Fork the workload and hold it before `exec` ([`crate::kernel::process::Workload`]).
//! 2. Open every planned event on it with `enable_on_exec` and map one buffer per CPU
//!    ([`open`]). Nothing counts yet, so hrec's own set-up is never sampled.
//! 3. Create the output file (its header synced to disk, milliseconds) and the drain's epoll
//!    set on every buffer (`drain::watch`), then release the child and learn whether `exec`
//!    worked: the samples start only once everything is ready to take them, as under perf (a
//!    fast workload fills a buffer in a millisecond or two). The file waits under a scratch
//!    name and takes its own once the workload runs (`Writer::prepare`, `publish`): a command
//!    that cannot run leaves the output and its `.old` as they were.
//! 4. Drain (`drain`): epoll on the buffers (the kernel wakes us when a buffer is half full,
//!    its default watermark) and on a signal pipe, plus a 100 ms tick; each pass moves every
//!    complete record out with one head load and one tail store per buffer, counts what it
//!    needs ([`account`]), and hands batches to a writer thread (`writer`) that compresses
//!    and writes them, so the drain never waits on the disk.
//! 5. When the workload exits (or SIGINT/SIGTERM/SIGHUP, which are forwarded to it), drain
//!    once more, read every fd for its final count and `read_format LOST`, write the
//!    build-ids, the trailer, and print one summary line (`finish`). A workload that outlives
//!    the forwarded signal by a grace of 2 s gets SIGTERM, then SIGKILL: it is never left
//!    running unrecorded.
//!
//! **Faults** ([`RecordError`]). Before anything starts, the output's directory must take a
//! new file and the open-file limit must cover the events' fds (raised to the hard limit if
//! needed, else one line saying how many are needed). A write that fails later (disk full,
//! `ulimit -f`, with SIGXFSZ ignored so it is EFBIG rather than death) ends the file at its
//! last complete block; the drain loop says so at once (a warning, the workload still
//! running), the workload runs on to its end and the error says how many samples were kept.
//!
//! With `--switch-output` ([`switch`]) step 5's file ending also happens whenever a file is
//! due: the drain loop flushes every buffer, the file is finished and renamed, and the next
//! one starts with the tasks alive synthesized from `/proc`.
//!
//! The other parts, a file each: the tasks that ran before the recording, as records
//! ([`synth`]); side information, build-ids and kernel symbols ([`side`]); which file each
//! mapping really was, copied while its process lives ([`identity`]); the check of `-g`
//! frame-pointer chains ([`chains`]); record-time unwinding of `--call-graph dwarf` samples
//! on the writer thread ([`unwind`]); `--off-cpu`'s pairing of switch records into intervals
//! on the writer thread (`offcpu`); what is asked and how it went ([`Session`], [`Outcome`]).

pub mod account;
pub mod chains;
mod drain;
mod error;
mod finish;
pub mod identity;
mod offcpu;
pub mod open;
mod session;
pub mod side;
pub mod switch;
pub mod synth;
#[cfg_attr(
    not(test),
    deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used)
)]
pub mod unwind;
mod writer;

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::sync::mpsc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use crate::data::{self, EventId, EventMeta, Meta, PmuMeta, Writer};
use crate::event::plan::Target;
use crate::kernel::process::{self, ExitStatus, Signals, Workload};

use account::Accounting;
use drain::{OffCpuDrain, Outlet, Switcher, drain_loop, workload_warning};
use error::check_fd_limit;
use finish::{final_counts, summarize, trailer_of};
use open::{OpenParams, Opened};
use unwind::RecordUnwinder;
use writer::{Msg, WriterCtx, WriterEnd, keep_newest, send_file_sides, writer_loop};

pub use error::{OWN_FDS, RecordError, event_fds, too_many_files};
pub use session::{Outcome, Session};

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
        off_cpu_pages: open::off_cpu_pages(plan, data_pages),
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
    let mut caught = vec![libc::SIGINT, libc::SIGTERM, libc::SIGCHLD];
    // SIGHUP ends the recording cleanly (and is forwarded to the workload), unless hrec was
    // started with it ignored (`nohup hrec record ...`): a hangup then reaches neither, as
    // the user asked.
    if !process::signal_ignored(libc::SIGHUP) {
        caught.push(libc::SIGHUP);
    }
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
    let child = workload.as_ref().map(Workload::pid);

    // --off-cpu with its switch records open: paired while recording into offcpu-time.
    let off_cpu = plan.off_cpu.filter(|_| {
        opened
            .fds
            .iter()
            .any(|f| plan.events[f.event].role == data::Role::Switches)
    });
    let meta = build_meta(
        s,
        &opened,
        data_pages,
        start_unix,
        clock_start,
        child,
        off_cpu.is_some(),
    );
    let created = Writer::prepare(&s.output, &meta).and_then(|mut w| {
        if let Some(level) = s.zstd_level
            && let Err(e) = w.set_level(level)
        {
            w.abandon();
            return Err(e);
        }
        Ok(w)
    });
    let writer = match created {
        Ok(w) => w,
        Err(e) => {
            if let Some(w) = workload {
                w.abort();
            }
            return Err(e.into());
        }
    };
    // The samples start only now, with the file prepared (its header synced: milliseconds)
    // and every ring watched ([`drain::watch`]), as perf starts its workload once all is set
    // up: a fast workload fills a ring in a millisecond or two, and what comes while no one
    // drains it is lost. The file takes its name once the workload runs: one that cannot run
    // leaves no file, and the files already at the output and `.old` as they were.
    let watched = drain::watch(&opened.rings, &opened.fds, &signals)
        .and_then(|epoll| start_events(plan, &opened).map(|()| epoll));
    let epoll = match watched {
        Ok(epoll) => epoll,
        Err(e) => {
            if let Some(w) = workload {
                w.abort();
            }
            writer.abandon();
            return Err(e);
        }
    };
    // (A workload whose exec failed has been reaped by `start`.)
    if let Some(w) = workload
        && let Err(e) = w.start()
    {
        writer.abandon();
        return Err(e.into());
    }
    let mut writer = writer;
    if let Err(e) = writer.publish() {
        if let Some(pid) = child {
            process::kill(pid, libc::SIGTERM);
            let _ = process::wait(pid, false);
        }
        writer.abandon();
        return Err(e.into());
    }

    let (tx, rx) = mpsc::sync_channel::<Msg>(64);
    let unwinding = meta.unwound_at_record;
    let unwinder = meta.unwound_at_record.then(|| {
        let events = opened.fds.iter().map(|f| (f.id, opened.attrs[f.event]));
        RecordUnwinder::new(events, s.keep_raw_stacks, &s.procfs_root)
    });
    let file_bytes = Arc::new(AtomicU64::new(writer.bytes_written()));
    let off_cpu_in_hand = Arc::new(AtomicU64::new(0));
    let off_cpu_in_flight = Arc::new(AtomicU64::new(0));
    let pressure = Arc::new(AtomicU64::new(0));
    let off_cpu_drain = off_cpu.map(|_| {
        let ring_set = |kind: open::RingKind, pages: usize| {
            let rings = opened.rings.iter().filter(|r| r.kind == kind).count() as u64;
            rings * (pages * crate::kernel::page_size()) as u64
        };
        let stacks_cap = (offcpu::RINGS_IN_HAND
            * ring_set(open::RingKind::Stacks, params.off_cpu_pages))
        .max(1 << 20);
        let switches = offcpu::SWITCH_RINGS_IN_HAND
            * ring_set(open::RingKind::Switches, open::switch_pages(data_pages));
        OffCpuDrain {
            in_hand: Arc::clone(&off_cpu_in_hand),
            in_flight: Arc::clone(&off_cpu_in_flight),
            stacks_cap,
            all_cap: stacks_cap + switches.max(16 << 20),
            sent: std::cell::Cell::new(false),
            queue: Default::default(),
        }
    });
    // Which file each mapping really is, found while its process lives (not for `-B`, whose
    // file has no build-ids to match, nor for `hrec top`, which reads the running system).
    let identities = (!s.no_buildid && !s.live)
        .then(|| identity::Identities::start(s.buildid_cache.clone(), s.procfs_root.clone()));
    // The writer's first failure, said by the drain loop as it happens.
    let failure = Arc::new(std::sync::OnceLock::new());
    let ctx = WriterCtx {
        identities_found: identities.as_ref().map(identity::Identities::shared),
        procfs: s.procfs_root.clone(),
        // The vdso every process of this kernel maps: its frames are named from it, and
        // stacks kept raw unwind through it again later.
        vdso: crate::kernel::own_vdso(&s.procfs_root),
        buildid_cache: s.buildid_cache.clone(),
        unwinder,
        output: s.output.clone(),
        level: s.zstd_level,
        file_bytes: Arc::clone(&file_bytes),
        no_buildid: s.no_buildid,
        on_file: s.on_file.clone(),
        live: s.live,
        off_cpu: off_cpu.map(|o| {
            let events = opened.fds.iter().map(|f| {
                let stacks = plan.events[f.event].role == data::Role::SwitchStacks;
                (f.id, opened.attrs[f.event], stacks)
            });
            offcpu::OffCpuRecorder::new(events, o.thresh_ns, o.blocked_only)
        }),
        off_cpu_in_hand,
        off_cpu_in_flight,
        failure: Arc::clone(&failure),
        pressure: Arc::clone(&pressure),
    };
    let writer_thread = std::thread::Builder::new()
        .name("hrec-writer".into())
        .spawn(move || writer_loop(writer, rx, ctx))
        .map_err(|e| RecordError::Os("cannot start the writer thread".into(), e))?;

    let ids = opened.fds.iter().map(|f| (f.id, f.event));
    let mut acc = Accounting::new(&opened.attrs, ids, process::getpid());
    if identities.is_some() {
        acc.track_mapped();
    }
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
        if let Some(ids) = &identities {
            ids.send(acc.take_mapped());
        }
        if unwinding {
            let _ = tx.send(Msg::SideBand(found.bytes.clone()));
        }
        let _ = tx.send(Msg::Records(u32::MAX, found.bytes));
    }
    // --namespaces: the kernel writes NAMESPACES records at forks and namespace changes; the
    // workload, forked before the events were opened, gets one from /proc as perf writes it.
    if let (Some(pid), Some(synth)) = (child, synth.as_ref().filter(|s| s.namespaces)) {
        let mut bytes = Vec::new();
        synth.namespaces(&s.procfs_root, pid as u32, pid as u32, &mut bytes);
        acc.account(&bytes);
        let _ = tx.send(Msg::Records(u32::MAX, bytes));
    }
    // --all-cgroups: the kernel writes a CGROUP record when a cgroup is made; the ones that
    // exist already are written from the cgroup2 tree, whatever the target.
    if let Some(synth) = synth.as_ref().filter(|s| s.cgroups) {
        let bytes = synth::cgroups(&s.procfs_root, synth);
        acc.account(&bytes);
        let _ = tx.send(Msg::Records(u32::MAX, bytes));
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
        lost_read: finish::LostRead::default(),
        file_start_unix: start_unix,
    });
    let run = drain_loop(
        epoll,
        &plan.target,
        &mut opened.rings,
        &opened.fds,
        &signals,
        child,
        Outlet {
            tx: &tx,
            side_band: unwinding,
            off_cpu: off_cpu_drain.as_ref(),
            identities: identities.as_ref(),
            failure: &failure,
            pressure: &pressure,
        },
        &mut acc,
        switcher.as_mut(),
        s.stop.as_deref(),
        &mut *err,
    )?;

    let (counts, lost_read) = final_counts(plan, &opened.attrs, &opened.fds);
    // Every file found before the last build-ids block is written.
    let identity_report = identities.map(identity::Identities::finish);
    for (pid, text) in identity_report.iter().flat_map(|r| &r.perf_maps) {
        let mut block = format!("{pid}\n").into_bytes();
        block.extend_from_slice(text);
        let _ = tx.send(Msg::Side(identity::PERF_MAP_SIDE.to_string(), block));
    }
    send_file_sides(&tx, &acc);
    drop(tx);
    let WriterEnd {
        writer,
        failed: write_error,
        mut dumped,
        kept,
        off_cpu: off_cpu_stats,
    } = writer_thread
        .join()
        .map_err(|_| RecordError::Internal("the writer thread panicked".into()))?;

    let (file_start, lost_before, mut totals) = match switcher {
        Some(sw) => (sw.file_start_unix, sw.lost_read, Some(sw.totals)),
        None => (start_unix, finish::LostRead::default(), None),
    };
    let mut trailer = trailer_of(&acc, counts, lost_read.since(lost_before), file_start);
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
    warnings.extend(
        identity_report
            .iter()
            .flat_map(identity::IdentityReport::lines),
    );
    if let Some(o) = &off_cpu_stats {
        warnings.insert(0, o.line());
        warnings.extend(o.warnings().into_iter().map(|w| format!("warning: {w}")));
    }
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

/// Without enable_on_exec (`-p`, `-t`, `-a`, `-C`) the events start here; a workload's start
/// at its exec.
fn start_events(plan: &crate::event::plan::Plan, opened: &Opened) -> Result<(), RecordError> {
    if plan.target == Target::Workload {
        return Ok(());
    }
    for f in &opened.fds {
        if plan.events[f.event].leader == f.event
            && let Err(source) = f.fd.enable(true)
        {
            return Err(RecordError::Ioctl {
                what: "PERF_EVENT_IOC_ENABLE",
                event: opened.names[f.event].clone(),
                source,
            });
        }
    }
    Ok(())
}

fn build_meta(
    s: &Session<'_>,
    o: &Opened,
    data_pages: usize,
    start_unix: u64,
    clock_start: u64,
    child: Option<i32>,
    off_cpu: bool,
) -> Meta {
    let host = side::host_info(&s.procfs_root);
    // Samples with user stacks are unwound on the writer thread and stored without them.
    let unwound = o
        .attrs
        .iter()
        .any(|a| a.sample_type & crate::event::attr::sample::STACK_USER != 0);
    let mut events: Vec<EventMeta> = s
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
            trace_format: e.tracepoint.as_ref().map(|t| t.format.clone()),
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
    if off_cpu {
        events.push(data::offcpu::event_meta(events.len()));
    }
    let target = match &s.plan.target {
        Target::Workload => "workload".to_string(),
        Target::Pids(p) => format!("pid {}", join(p)),
        Target::Tids(t) => format!("tid {}", join(t)),
        Target::SystemWide => "system-wide".to_string(),
        Target::Cpus(c) => format!("cpus {c}"),
    };
    let mut notices = s.plan.notices.clone();
    notices.extend(o.notices.iter().cloned());
    let numa_nodes = crate::pmu::numa_nodes(&s.pmus.root);
    Meta {
        hrec_version: env!("CARGO_PKG_VERSION").to_string(),
        command_line: s.command_line.clone(),
        hostname: host.hostname,
        kernel_release: host.kernel_release,
        arch: std::env::consts::ARCH.to_string(),
        cpu_model: host.cpu_model,
        cpuid: host.cpuid,
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
                cpus: p.cpus.as_ref().map(ToString::to_string),
            })
            .collect(),
        events,
        notices,
        mmap_pages: data_pages as u64,
        unwound_at_record: unwound,
        off_cpu_blocked_only: s.plan.off_cpu.is_some_and(|o| o.blocked_only),
        numa_memory_kb: crate::pmu::numa_memory(&s.pmus.root, &numa_nodes),
        numa_nodes,
        threads_per_core: crate::pmu::threads_per_core(&s.pmus.root, &s.pmus.online),
        cpu_topology: crate::pmu::cpu_topology(&s.pmus.root, &s.pmus.online),
        total_mem_kb: std::fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|m| mem_total_kb(&m)),
        metric_choice: s.plan.metrics.as_ref().map(|m| data::MetricChoiceMeta {
            td_level: m.choice.td_level,
            metrics: m.choice.metrics.clone(),
        }),
        // A few KB, for the tracepoints' `%s` of kernel strings.
        trace_printk: if s.plan.events.iter().any(|e| e.tracepoint.is_some()) {
            crate::trace::Tracefs::find(&s.pmus.root)
                .map(|t| t.printk_formats())
                .unwrap_or_default()
        } else {
            String::new()
        },
    }
}

fn join(v: &[u32]) -> String {
    v.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
}

/// `MemTotal:` of `/proc/meminfo`, in kB.
fn mem_total_kb(meminfo: &str) -> Option<u64> {
    meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    #[test]
    fn total_memory_is_meminfos_first_line() {
        let m = "MemTotal:       131876812 kB\nMemFree:        1234 kB\n";
        assert_eq!(super::mem_total_kb(m), Some(131_876_812));
        assert_eq!(super::mem_total_kb("MemFree: 1 kB\n"), None);
    }
}
