//! The drain loop: the recording's main thread from the workload's release to its end.
//!
//! epoll waits on every ring buffer (the kernel wakes it when a buffer is half full, its
//! default watermark) and on the signal pipe, with a 100 ms tick. Each pass moves every
//! complete record out of every buffer, counts what the summary and trailer need
//! ([`super::account`]) and hands a buffer's batch to the writer thread once it holds
//! [`data::BATCH_BYTES`] or is [`BATCH_AGE`] old. SIGINT/SIGTERM/SIGHUP are forwarded to the
//! workload, which gets [`STOP_GRACE`] to exit before SIGTERM and SIGKILL follow: a workload
//! is never left running unrecorded. The grace is counted from when the workload could act on
//! the signal: while it is still pending (a loaded machine has not run the workload since) or
//! the workload is already dying, it goes on ([`IN_FLIGHT_LIMIT`] at most). `-p`/`-t` end
//! when every task they follow has exited.
//! With `--switch-output` the loop also flushes every buffer when a file is due and lets the
//! [`Switcher`] end that file and start the next.

use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use crate::data::{self, Meta};
use crate::event::Attr;
use crate::event::plan::Target;
use crate::kernel::process::{self, Epoll, ExitStatus, Signals};

use super::account::Accounting;
use super::error::RecordError;
use super::finish::{LostRead, final_counts, trailer_of, unix_now_ns};
use super::offcpu::{self, Pass};
use super::open::{self, Ring, RingKind};
use super::session::Session;
use super::writer::{Msg, send_file_sides};
use super::{switch, synth, unwind};

/// A batch is handed to the writer at [`data::BATCH_BYTES`] (the block size the codec is
/// tuned for), or when it is this old, so a crash loses little.
const BATCH_AGE: Duration = Duration::from_secs(1);
/// A workload still running this long after SIGINT/SIGTERM/SIGHUP was forwarded to it (or
/// at a second signal) gets SIGTERM, and SIGKILL this long after that (or at a third): a
/// workload that ignores signals is never left running unrecorded.
const STOP_GRACE: Duration = Duration::from_secs(2);
/// The grace is extended while the signal sent is still in flight (pending, or the workload
/// already dying: [`process::signal_in_flight`]), so that a workload the machine's load kept
/// off the CPUs is not taken for one that ignores signals; for at most this long.
const IN_FLIGHT_LIMIT: Duration = Duration::from_secs(60);
/// After SIGKILL, how long to wait for the workload to be reaped (a task in uninterruptible
/// sleep dies only when the sleep ends) before finishing the file without it.
const REAP_GRACE: Duration = Duration::from_secs(5);

/// `--switch-output` on the drain thread: decides when a file is due and, once the drain
/// loop has flushed every buffer, sends the file's side blocks and trailer to the writer
/// (which renames it and starts the next), then writes the tasks alive into the next file.
pub(super) struct Switcher<'a> {
    pub(super) due: switch::Due,
    pub(super) file_bytes: Arc<AtomicU64>,
    pub(super) session: &'a Session<'a>,
    /// The first file's header: each next one is this with its own start time.
    pub(super) meta: Meta,
    pub(super) attrs: &'a [Attr],
    pub(super) fds: &'a [open::OpenFd],
    /// `-p`/`-t`'s tasks.
    pub(super) tasks: &'a [i32],
    /// The workload's pid.
    pub(super) workload: Option<i32>,
    pub(super) synth: Option<&'a synth::Synth>,
    /// Counts of the files finished so far.
    pub(super) totals: Accounting,
    /// `read_format LOST` summed at the last switch.
    pub(super) lost_read: LostRead,
    /// When the current file started.
    pub(super) file_start_unix: u64,
}

impl Switcher<'_> {
    /// Finishes the current file (every buffer was just flushed into it) and starts the next.
    pub(super) fn switch(
        &mut self,
        tx: &mpsc::SyncSender<Msg>,
        acc: &mut Accounting,
        err: &mut dyn Write,
    ) {
        let s = self.session;
        let file = acc.take_file();
        send_file_sides(tx, &file);
        let (counts, lost_read) = final_counts(s.plan, self.attrs, self.fds);
        let trailer = trailer_of(
            &file,
            counts,
            lost_read.since(self.lost_read),
            self.file_start_unix,
        );
        self.lost_read = lost_read;
        self.totals.absorb(&file);
        let to = switch::name_now(&s.output);
        let mut meta = self.meta.clone();
        meta.start_time_unix_ns = unix_now_ns();
        meta.clock_start_ns = process::monotonic_ns();
        self.file_start_unix = meta.start_time_unix_ns;
        let _ = writeln!(err, "[ hrec record: dump {} ]", to.display());
        let _ = tx.send(Msg::Switch {
            to,
            trailer: Box::new(trailer),
            meta: Box::new(meta),
        });
        // The next file reads alone: the cgroups (--all-cgroups) and the tasks alive now,
        // with their names and mappings.
        if let Some(synth) = self.synth.filter(|s| s.cgroups) {
            let bytes = synth::cgroups(&s.procfs_root, synth);
            acc.account(&bytes);
            let _ = tx.send(Msg::Records(u32::MAX, bytes));
        }
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
pub(super) struct Outlet<'a> {
    pub(super) tx: &'a mpsc::SyncSender<Msg>,
    /// Send copies of each pass's side-band records first ([`Msg::SideBand`]).
    pub(super) side_band: bool,
    /// `--off-cpu`: each pass's off-CPU records go to the pairing ([`Msg::OffCpu`]).
    pub(super) off_cpu: Option<&'a OffCpuDrain>,
    /// Each pass's file mappings go to the thread that finds their files.
    pub(super) identities: Option<&'a super::identity::Identities>,
    /// The writer's first failure ([`super::writer::WriterCtx::failure`]), said once.
    pub(super) failure: &'a std::sync::OnceLock<String>,
    /// Until when (monotonic ns) the writer stores Records blocks with zstd alone
    /// ([`super::writer::WriterCtx::pressure`]): [`PRESSURE_HOLD`] from any pass that finds
    /// a ring [`PRESSED`] full.
    pub(super) pressure: &'a AtomicU64,
}

/// A ring found this full (three quarters) by a pass was not drained in time: the kernel
/// wakes the drain at half a ring, and at high rates (a tracepoint on every system call) the
/// second half fills in a millisecond or two. What keeps the drain off a CPU then is mostly
/// the writer's column transform (about six times zstd's time, for 2.6 bytes a sample
/// rather than 3.5 on `scripts/bench-trace.sh`'s records), so the writer leaves it out for
/// a while ([`PRESSURE_HOLD`]).
pub(super) const PRESSED: (u64, u64) = (3, 4);
/// Two passes that each drain half a ring or more this close together are pressure too (the
/// ring takes more than 25 MB/s at the default 512 KiB): the column transform is left out
/// before a ring is ever found [`PRESSED`] full.
const FAST_HALVES: Duration = Duration::from_millis(10);
/// How long the writer leaves the column transform out after a pass found the drain pressed
/// ([`pressed`]).
pub(super) const PRESSURE_HOLD: Duration = Duration::from_secs(1);

/// The drain loop's side of `--off-cpu` (see [`super::offcpu`]): off-CPU records never make
/// the drain wait for the writer thread. A pass the channel has no room for waits in a queue
/// here; past `stacks_cap` bytes in hand (sent or queued, not yet paired) the stacks rings
/// are emptied unread, past `all_cap` the switch records' rings too (a gap, after which the
/// pairing starts again).
#[derive(Debug)]
pub(super) struct OffCpuDrain {
    /// Bytes of off-CPU records queued or sent and not yet paired by the writer thread.
    pub(super) in_hand: Arc<AtomicU64>,
    /// Passes sent and not yet paired: at most [`super::offcpu::PASSES_IN_FLIGHT`], so the
    /// channel keeps room for the on-CPU batches, whose sends may wait.
    pub(super) in_flight: Arc<AtomicU64>,
    /// Past this many bytes in hand the stacks rings are emptied unread.
    pub(super) stacks_cap: u64,
    /// Past this many the switch records' rings too.
    pub(super) all_cap: u64,
    /// The last pass held records: the next one goes even when empty, so the pairing sees
    /// that the rings were drained past them.
    pub(super) sent: std::cell::Cell<bool>,
    /// Passes waiting for room in the channel, oldest first.
    pub(super) queue: std::cell::RefCell<std::collections::VecDeque<Pass>>,
}

pub(super) struct RunEnd {
    pub(super) status: Option<ExitStatus>,
    /// The first SIGINT/SIGTERM/SIGHUP hrec got (forwarded to the workload).
    pub(super) stop_signal: Option<i32>,
    /// The last signal hrec sent a workload that outlived the forwarded one (SIGTERM, then
    /// SIGKILL).
    pub(super) escalated: Option<i32>,
    pub(super) woken: u64,
    /// Batches cut short by a corrupt record size.
    pub(super) corrupt: u64,
}

/// The epoll token of the signal pipe (a ring's token is its index).
const SIGNAL_TOKEN: u64 = u64::MAX;

/// The epoll set of the drain loop: every ring's fd and the signal pipe. Made before the
/// workload runs (or the events are enabled): the kernel wakes a ring's readers once, as the
/// ring passes its watermark, and a perf fd's poll reports that wakeup only once, so an fd
/// added to epoll after it (its state read, and cleared, by the add) is not reported by the
/// next wait. The ring then fills, and a full ring writes nothing more, so wakes no one: the
/// loop slept to its tick (100 ms) while the samples of a fast workload were lost.
pub(super) fn watch(
    rings: &[Ring],
    fds: &[open::OpenFd],
    signals: &Signals,
) -> Result<Epoll, RecordError> {
    use std::os::fd::AsRawFd;
    let epoll = Epoll::new().map_err(|e| RecordError::Os("epoll_create1 failed".into(), e))?;
    epoll
        .add(signals.fd(), SIGNAL_TOKEN)
        .map_err(|e| RecordError::Os("epoll_ctl failed".into(), e))?;
    for (i, r) in rings.iter().enumerate() {
        epoll
            .add(fds[r.fd].fd.as_raw_fd(), i as u64)
            .map_err(|e| RecordError::Os("epoll_ctl failed".into(), e))?;
    }
    Ok(epoll)
}

/// The drain loop, on the epoll set of [`watch`]. Returns when the workload has exited, or
/// on SIGINT/SIGTERM.
#[allow(clippy::too_many_arguments)]
pub(super) fn drain_loop(
    epoll: Epoll,
    target: &Target,
    rings: &mut [Ring],
    fds: &[open::OpenFd],
    signals: &Signals,
    child: Option<i32>,
    out: Outlet<'_>,
    acc: &mut Accounting,
    mut switcher: Option<&mut Switcher<'_>>,
    stop: Option<&std::sync::atomic::AtomicBool>,
    err: &mut dyn Write,
) -> Result<RunEnd, RecordError> {
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
    // When a pass last drained half a ring or more (see [`PRESSED`]).
    let mut last_half: Option<Instant> = None;
    let mut hung = vec![false; rings.len()];
    let attached = matches!(target, Target::Pids(_) | Target::Tids(_));
    // When the workload's grace began to be extended (a signal still in flight), and whether
    // a second signal asked for no more grace.
    let mut in_flight_since: Option<Instant> = None;
    let mut hurry = false;
    let mut told_failure = false;
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
        // A write failed (disk full, `ulimit -f`): said now, the workload still running; the
        // error with its counts follows at the end.
        if !told_failure && let Some(why) = out.failure.get() {
            told_failure = true;
            let _ = writeln!(
                err,
                "hrec: warning: {why}: nothing more is written; the workload goes on, and the file keeps its complete blocks"
            );
        }
        let sigs = signals.take();
        for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            if sigs & (1 << sig) != 0 {
                stopping = true;
                if stop_signal.is_some() {
                    // A second signal: escalate now.
                    escalate_at = Some(Instant::now());
                    hurry = true;
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
            hurry = true;
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
                        && (hurry
                            || !grace_extended(
                                pid,
                                &mut in_flight_since,
                                escalated.or(stop_signal),
                            ))
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
        drain_all(
            rings,
            &mut batches,
            out,
            acc,
            last || switch,
            &mut corrupt,
            &mut last_half,
        );
        if last {
            break;
        }
        if switch && let Some(sw) = switcher.as_mut() {
            sw.switch(out.tx, acc, err);
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

/// Whether the workload's grace goes on past its time: the signal last sent (`sig`) has not
/// reached it yet or it is already dying, and that has lasted less than [`IN_FLIGHT_LIMIT`].
/// Not after SIGKILL, whose wait is [`REAP_GRACE`].
fn grace_extended(pid: i32, since: &mut Option<Instant>, sig: Option<i32>) -> bool {
    let Some(sig) = sig.filter(|&s| s != libc::SIGKILL) else {
        return false;
    };
    let start = *since.get_or_insert_with(Instant::now);
    if start.elapsed() < IN_FLIGHT_LIMIT && process::signal_in_flight(pid, sig) {
        return true;
    }
    *since = None;
    false
}

/// Whether a pass that drained `bytes` of a ring of `cap` bytes at `now` finds the drain
/// pressed: the ring [`PRESSED`] full, or half full for the second time in [`FAST_HALVES`]
/// (`last_half`: when a pass last drained half a ring or more, updated here).
fn pressed(bytes: usize, cap: usize, last_half: &mut Option<Instant>, now: Instant) -> bool {
    let (bytes, cap) = (bytes as u64, cap as u64);
    let mut pressed = bytes * PRESSED.1 >= cap * PRESSED.0;
    if bytes * 2 >= cap {
        pressed |= last_half.is_some_and(|t| now.duration_since(t) < FAST_HALVES);
        *last_half = Some(now);
    }
    pressed
}

fn drain_all(
    rings: &mut [Ring],
    batches: &mut [(Vec<u8>, Instant)],
    out: Outlet<'_>,
    acc: &mut Accounting,
    flush: bool,
    corrupt: &mut u64,
    last_half: &mut Option<Instant>,
) {
    let mut side_band = Vec::new();
    let mut pass = out.off_cpu.map(|_| Pass::default());
    let in_hand = out.off_cpu.map_or(0, |o| o.in_hand.load(Ordering::Relaxed));
    let behind = out.off_cpu.map_or((false, false), |o| {
        (in_hand > o.stacks_cap, in_hand > o.all_cap)
    });
    for (r, (batch, since)) in rings.iter_mut().zip(batches.iter_mut()) {
        if r.kind != RingKind::Main
            && let Some(p) = pass.as_mut()
        {
            off_cpu_ring(r, p, acc, behind, corrupt);
            continue;
        }
        let before = batch.len();
        let res = r.buffer.drain(batch);
        match &res {
            Err(_) => *corrupt += 1,
            Ok(d) => {
                if pressed(d.bytes, r.buffer.capacity(), last_half, Instant::now()) {
                    out.pressure.store(
                        process::monotonic_ns() + PRESSURE_HOLD.as_nanos() as u64,
                        Ordering::Relaxed,
                    );
                }
            }
        }
        acc.account_ring(&batch[before..], r.kind != open::RingKind::Main);
        if out.side_band {
            unwind::side_band(&batch[before..], &mut side_band);
        }
        if let Some(p) = pass.as_mut() {
            offcpu::exits(&batch[before..], &mut p.exits);
        }
        if before == 0 && !batch.is_empty() {
            *since = Instant::now();
        }
    }
    acc.end_pass();
    if let Some(ids) = out.identities {
        ids.send(acc.take_mapped());
    }
    // The unwinder learns every mapping of this pass before any sample of it: a CPU's
    // samples can use a library whose MMAP is in another CPU's buffer.
    if !side_band.is_empty() {
        let _ = out.tx.send(Msg::SideBand(side_band));
    }
    for (r, (batch, since)) in rings.iter().zip(batches.iter_mut()) {
        if !batch.is_empty()
            && (flush || batch.len() >= data::BATCH_BYTES || since.elapsed() >= BATCH_AGE)
        {
            let bytes = std::mem::take(batch);
            let _ = out.tx.send(Msg::Records(r.source(), bytes));
        }
    }
    if let (Some(o), Some(p)) = (out.off_cpu, pass) {
        send_pass(o, out.tx, p, flush);
    }
}

/// Hands a pass's off-CPU records to the writer thread without waiting (but for the last pass
/// of a file, `flush`): with the channel full they wait in the queue for the next pass.
fn send_pass(o: &OffCpuDrain, tx: &mpsc::SyncSender<Msg>, p: Pass, flush: bool) {
    let held = !p.rings.is_empty() || !p.exits.is_empty();
    let counts = p.discarded > 0 || p.switches_discarded > 0;
    let mut queue = o.queue.borrow_mut();
    if held || counts || o.sent.get() {
        o.in_hand.fetch_add(p.bytes, Ordering::Relaxed);
        queue.push_back(p);
    }
    o.sent.set(held);
    while let Some(front) = queue.pop_front() {
        if !flush && o.in_flight.load(Ordering::Relaxed) >= offcpu::PASSES_IN_FLIGHT {
            queue.push_front(front);
            break;
        }
        o.in_flight.fetch_add(1, Ordering::Relaxed);
        let msg = Msg::OffCpu(Box::new(front));
        let sent = if flush {
            tx.send(msg)
                .map_err(|e| mpsc::TrySendError::Disconnected(e.0))
        } else {
            tx.try_send(msg)
        };
        match sent {
            Ok(()) => {}
            Err(mpsc::TrySendError::Full(Msg::OffCpu(back))) => {
                o.in_flight.fetch_sub(1, Ordering::Relaxed);
                queue.push_front(*back);
                break;
            }
            // The writer thread is gone (it ended on an error): nothing more to send.
            Err(_) => {
                o.in_flight.fetch_sub(1, Ordering::Relaxed);
                queue.clear();
                break;
            }
        }
    }
}

/// Drains an off-CPU ring into this pass's records; empties it unread when the writer
/// thread has too much in hand (`behind`: stacks, everything).
fn off_cpu_ring(
    r: &mut Ring,
    p: &mut Pass,
    acc: &mut Accounting,
    behind: (bool, bool),
    corrupt: &mut u64,
) {
    let stacks = r.kind == RingKind::Stacks;
    if (stacks && behind.0) || behind.1 {
        match r.buffer.discard() {
            Ok(d) if stacks => p.discarded += d.records as u64,
            Ok(d) => {
                p.switches_discarded += d.records as u64;
                p.gap |= d.records > 0;
            }
            Err(_) => *corrupt += 1,
        }
        return;
    }
    let mut bytes = Vec::new();
    if r.buffer.drain(&mut bytes).is_err() {
        *corrupt += 1;
    }
    acc.account_ring(&bytes, true);
    p.bytes += bytes.len() as u64;
    if !bytes.is_empty() {
        p.rings.push((r.kind, bytes));
    }
}

/// One line when the workload did not end as asked, or died of a signal of its own.
pub(super) fn workload_warning(run: &RunEnd, child: Option<i32>) -> Option<String> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pressure_is_a_nearly_full_ring_or_half_rings_in_quick_succession() {
        let cap = 512 << 10;
        let t0 = Instant::now();
        let mut last = None;
        // Three quarters at once.
        assert!(pressed(cap * 3 / 4, cap, &mut last, t0));
        // A watermark's worth (half) alone is the normal wakeup.
        let mut last = None;
        assert!(!pressed(cap / 2, cap, &mut last, t0));
        assert_eq!(last, Some(t0));
        // Again 20 ms later: a ring's worth in 20 ms is no pressure.
        let t1 = t0 + Duration::from_millis(20);
        assert!(!pressed(cap / 2, cap, &mut last, t1));
        // Again 2 ms after that: half a ring a millisecond or two is.
        assert!(pressed(
            cap / 2,
            cap,
            &mut last,
            t1 + Duration::from_millis(2)
        ));
        // Small passes change nothing.
        let mut last = None;
        assert!(!pressed(cap / 4, cap, &mut last, t0));
        assert_eq!(last, None);
    }
}
