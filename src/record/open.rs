//! Opening a [`Plan`] on the kernel, with perf's fallbacks, and mapping one ring buffer per CPU.
//!
//! Where each fd goes:
//! - a workload (default): `pid` = the held child, one fd per CPU of the event's PMU
//!   (per-task, per-CPU, `inherit`), so the child's threads and children are followed on every
//!   CPU and each CPU has its own buffer;
//! - `-p`/`-t`: the same per existing thread (inherit follows threads created later);
//! - `--per-thread`: `cpu = -1` per thread, one buffer per thread (the kernel refuses to map an
//!   inherited `cpu = -1` event, so the planner turns inherit off there);
//! - `-a`/`-C`: `pid = -1` per CPU.
//!
//! With `-a`/`-C`/`-p`/`-t`, a command given too only sets how long to record.
//!
//! **One ring buffer per CPU.** The first fd opened on a CPU is mapped; every later fd on that
//! CPU is redirected into it with `PERF_EVENT_IOC_SET_OUTPUT`, which the kernel allows only
//! within one CPU (or between `cpu = -1` events of one task). Records of different CPUs are
//! therefore ordered only by their `time` field. `--off-cpu`'s two events have rings of their
//! own on each CPU ([`RingKind`]): one for the switch records, one for the stacks threads
//! leave with. A switch storm fills those and loses records there, never on-CPU samples; and
//! the stacks (kilobytes each with `--call-graph dwarf`) never crowd out the switch records
//! that make the intervals. The switch records' rings are four times `-m`
//! ([`switch_pages`]), the stacks' `--off-cpu-mmap-pages` ([`off_cpu_pages`]: by default as
//! many pages as `-m`, four times that with `--call-graph dwarf`); where the locked-memory
//! limit has no room for them they are halved, down to one page, with one line (the on-CPU
//! rings are mapped first and keep their size). Their losses, from the LOST records of their
//! rings and from `read_format` `LOST`, are counted apart from the on-CPU ones (the trailer's
//! `off_cpu_*lost*` fields, the switch records' on their own).
//!
//! **Fallbacks** (perf's `evsel__fallback` and friends), each said in one line and applied to
//! every later fd of the same event so that all fds of an event share one attr:
//! `precise_ip` 3→2→1→0 on EINVAL/EOPNOTSUPP/ENOENT; `inherit` with `PERF_SAMPLE_READ` refused
//! (kernels before 6.12) → no inherit for the whole group; `cycles` without a PMU → `cpu-clock`;
//! EACCES/EPERM → exclude the kernel (naming `kernel.perf_event_paranoid`); EMFILE → raise the
//! soft open-file limit once, then name `ulimit -n`.
//!
//! **Members hrec added on its own** (the E-core TopDown events of the default groups, marked
//! [`IfRefused`] by the planner) are left out when the kernel refuses them, never the whole
//! recording: a refused level-2 event drops the group's level 2 (the group did not fit the
//! counters: the kernel's `validate_group` answers EINVAL at open), a refused level-1 event
//! all its TopDown, each said in one line. A metric group of `--td-level`/`-M` the kernel
//! refuses is left out whole, leader and members ([`IfRefused::DropGroup`]; not the group that
//! carries the side-band records). Their fds already open are closed, which takes
//! them out of the group before any buffer is mapped; the file lists them with no ids.

use std::collections::BTreeMap;
use std::path::Path;

use crate::event::Attr;
use crate::event::attr::{flag, sample, types};
use crate::event::plan::{IfRefused, Placement, Plan, PlannedEvent, Role, Target};
use crate::kernel::{self, EventFd, OpenError, RingBuffer, process};

use super::error::{RecordError, too_many_files};

/// Where one fd points.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Slot {
    /// The task (`-1` for whole CPUs).
    pub pid: i32,
    /// The CPU (`-1` for any CPU).
    pub cpu: i32,
}

/// One open fd.
#[derive(Debug)]
pub struct OpenFd {
    /// Index into the plan's events.
    pub event: usize,
    /// Where it is opened.
    pub slot: Slot,
    /// Its id (`PERF_EVENT_IOC_ID`).
    pub id: u64,
    /// The fd.
    pub fd: EventFd,
}

/// A mapped ring buffer and the CPU (or thread) it serves.
#[derive(Debug)]
pub struct Ring {
    /// CPU, or `-1` for a per-thread buffer.
    pub cpu: i32,
    /// Thread for a per-thread buffer.
    pub tid: i32,
    /// Index into [`Opened::fds`] of the mapped fd.
    pub fd: usize,
    /// What it holds.
    pub kind: RingKind,
    /// The buffer.
    pub buffer: RingBuffer,
}

/// Which records a ring buffer holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RingKind {
    /// On-CPU samples and the side-band records.
    Main,
    /// `--off-cpu`'s switch records ([`Role::Switches`]).
    Switches,
    /// `--off-cpu`'s stacks at each switch-out ([`Role::SwitchStacks`]).
    Stacks,
}

impl RingKind {
    /// The ring an event's records go to.
    pub fn of(role: Role) -> RingKind {
        match role {
            Role::Switches => RingKind::Switches,
            Role::SwitchStacks => RingKind::Stacks,
            _ => RingKind::Main,
        }
    }
}

impl Ring {
    /// The source an on-CPU ring's records are written under in the file: the CPU (or the
    /// thread with `--per-thread`). The off-CPU rings' records are paired while recording
    /// (`record::offcpu`), not written.
    pub fn source(&self) -> u32 {
        if self.cpu >= 0 {
            self.cpu as u32
        } else {
            self.tid as u32
        }
    }
}

/// Whether an event's records go to an off-CPU ring (`--off-cpu`'s own events).
pub fn in_off_cpu_ring(role: Role) -> bool {
    RingKind::of(role) != RingKind::Main
}

/// The plan, open.
#[derive(Debug)]
pub struct Opened {
    /// Every fd, in open order.
    pub fds: Vec<OpenFd>,
    /// One buffer per CPU (or per thread with `--per-thread`).
    pub rings: Vec<Ring>,
    /// The attrs actually opened, per plan event (after fallbacks).
    pub attrs: Vec<Attr>,
    /// The event names actually opened (a `cycles` fallen back to `cpu-clock` is renamed).
    pub names: Vec<String>,
    /// One line per fallback taken.
    pub notices: Vec<String>,
}

/// What opening needs besides the plan.
#[derive(Debug, Clone)]
pub struct OpenParams<'a> {
    /// The tasks to attach to (`[-1]` for whole CPUs).
    pub tasks: Vec<i32>,
    /// Data pages per ring buffer (a power of two).
    pub data_pages: usize,
    /// Data pages per stacks ring buffer (`--off-cpu`, a power of two).
    pub off_cpu_pages: usize,
    /// `/proc` (for the paranoid sysctl in messages).
    pub procfs_root: &'a Path,
    /// `-v`: print each retry.
    pub verbose: u8,
}

/// Default data pages: 512 KiB per buffer, as perf (129 pages of 4 KiB with the control page).
pub fn default_data_pages() -> usize {
    (512 * 1024 / kernel::page_size())
        .max(1)
        .next_power_of_two()
}

/// Data pages of each ring of switch records: four times the on-CPU rings' (2 MiB by
/// default: a quarter of a second of a storm of 160 000 records a second, 48 bytes each).
pub fn switch_pages(data_pages: usize) -> usize {
    data_pages.saturating_mul(4)
}

/// Data pages of each stacks ring: `--off-cpu-mmap-pages`, else as many as the on-CPU rings'
/// `data_pages`, four times that when the stacks carry user stack copies (`--call-graph
/// dwarf`: 8 KiB each by default, so 512 KiB holds only 64 switches).
pub fn off_cpu_pages(plan: &Plan, data_pages: usize) -> usize {
    let o = plan.off_cpu.and_then(|o| o.mmap_pages);
    let stack_copies = plan
        .events
        .iter()
        .any(|e| e.role == Role::SwitchStacks && e.attr.sample_type & sample::STACK_USER != 0);
    o.unwrap_or(if stack_copies {
        data_pages.saturating_mul(4)
    } else {
        data_pages
    })
}

fn paranoid(procfs_root: &Path) -> Option<i32> {
    std::fs::read_to_string(procfs_root.join("sys/kernel/perf_event_paranoid"))
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// `cycles` as a legacy hardware event, with or without a PMU type in `config[63:32]`.
fn is_cycles(a: &Attr) -> bool {
    a.type_ == types::HARDWARE && (a.config & 0xffff_ffff) == 0
}

/// Opens every event of `plan` on every slot and maps the buffers.
pub fn open_plan(
    plan: &Plan,
    p: &OpenParams<'_>,
    log: &mut Vec<String>,
) -> Result<Opened, RecordError> {
    let mut attrs: Vec<Attr> = plan.events.iter().map(|e| e.attr).collect();
    let mut names: Vec<String> = plan.events.iter().map(|e| e.name.clone()).collect();
    let mut notices = Vec::new();
    let mut fds: Vec<OpenFd> = Vec::new();
    let mut raised_nofile = false;
    let cpu_wide = plan.target.is_cpu_wide();

    let mut dropped = vec![false; plan.events.len()];
    for &pid in &p.tasks {
        for ev in &plan.events {
            if dropped[ev.index] {
                continue;
            }
            let cpus: Vec<i32> = match &ev.placement {
                Placement::Cpus(list) => list.cpus().iter().map(|&c| c as i32).collect(),
                Placement::AnyCpu => vec![-1],
            };
            for cpu in cpus {
                let slot = Slot { pid, cpu };
                let group = if ev.leader == ev.index {
                    None
                } else {
                    let at = fds
                        .iter()
                        .position(|f| f.event == ev.leader && f.slot == slot)
                        .ok_or_else(|| {
                            RecordError::Internal(format!(
                                "group leader of {} is not open on cpu {cpu}",
                                ev.name
                            ))
                        })?;
                    Some(at)
                };
                let fd = loop {
                    let attempt =
                        kernel::open(&attrs[ev.index], pid, cpu, group.map(|g| &fds[g].fd));
                    let e = match attempt {
                        Ok(fd) => break Some(fd),
                        Err(e) => e,
                    };
                    if p.verbose > 0 {
                        log.push(format!(
                            "opening {} on pid {pid} cpu {cpu}: {}",
                            names[ev.index], e.source
                        ));
                    }
                    if attrs[ev.index].precise_ip() == 0
                        && let Some(msg) =
                            leave_out(plan, ev, &e, &names, p.procfs_root, &mut dropped)
                    {
                        // Closing a member takes it out of its group; no buffer is mapped yet.
                        fds.retain(|f| !dropped[f.event]);
                        if !notices.contains(&msg) {
                            notices.push(msg);
                        }
                        break None;
                    }
                    match fallback(
                        plan,
                        ev,
                        &mut attrs,
                        &mut names,
                        &e,
                        cpu_wide,
                        &mut raised_nofile,
                        p,
                    )? {
                        Some(msg) => {
                            if !notices.contains(&msg) {
                                notices.push(msg);
                            }
                        }
                        None => continue,
                    }
                };
                let Some(fd) = fd else { break };
                let id = fd.id().map_err(|source| RecordError::Ioctl {
                    what: "PERF_EVENT_IOC_ID",
                    event: names[ev.index].clone(),
                    source,
                })?;
                if let Some(filter) = &ev.filter {
                    fd.set_filter(filter)
                        .map_err(|source| RecordError::Filter {
                            event: names[ev.index].clone(),
                            filter: filter.clone(),
                            fields: filter_fields(ev),
                            why: source,
                        })?;
                }
                fds.push(OpenFd {
                    event: ev.index,
                    slot,
                    id,
                    fd,
                });
            }
        }
    }

    let kinds: Vec<RingKind> = plan.events.iter().map(|e| RingKind::of(e.role)).collect();
    let rings = map_rings(
        &fds,
        &kinds,
        (p.data_pages, p.off_cpu_pages),
        &names,
        &mut notices,
    )?;
    Ok(Opened {
        fds,
        rings,
        attrs,
        names,
        notices,
    })
}

/// The fields a filter of tracepoint `ev` may name, for the message when one is refused:
/// the event's own and the common ones.
fn filter_fields(ev: &crate::event::plan::PlannedEvent) -> String {
    let format = ev
        .tracepoint
        .as_ref()
        .and_then(|t| crate::trace::EventFormat::parse(&t.format).ok());
    match format {
        Some(f) => {
            let (own, common): (Vec<_>, Vec<_>) = f.fields.iter().partition(|x| !x.common);
            own.iter()
                .chain(&common)
                .map(|x| x.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        }
        None => "(its format file could not be read)".into(),
    }
}

/// When the refused event is a member hrec added on its own ([`IfRefused`]), marks what is
/// left out in `dropped` and returns the line that says so; `None` for any other event or
/// error (permissions, limits, a missing task are never answered by leaving events out, but
/// for `--off-cpu`'s stacks, which need more than the intervals).
fn leave_out(
    plan: &Plan,
    ev: &PlannedEvent,
    e: &OpenError,
    names: &[String],
    procfs_root: &Path,
    dropped: &mut [bool],
) -> Option<String> {
    let how = ev.if_refused?;
    let errno = e.errno();
    let err = std::io::Error::from_raw_os_error(errno);
    let refused = matches!(
        errno,
        libc::EINVAL | libc::EOPNOTSUPP | libc::ENOENT | libc::ENODEV
    );
    if how == IfRefused::OffCpuStacks {
        // Too many files or a task gone are not about the stacks: the usual fallbacks.
        if !refused && !matches!(errno, libc::EACCES | libc::EPERM) {
            return None;
        }
        dropped[ev.index] = true;
        if matches!(errno, libc::EACCES | libc::EPERM) {
            let lv = paranoid(procfs_root).map_or("?".to_string(), |l| l.to_string());
            return Some(format!(
                "off-CPU stacks need kernel samples, which kernel.perf_event_paranoid={lv} does not allow: recording the off-CPU intervals without their stacks (run as root, or sysctl -w kernel.perf_event_paranoid=1, for the stacks)"
            ));
        }
        return Some(format!(
            "the kernel refused {} sampled at every switch ({err}): recording the off-CPU intervals without their stacks",
            names[ev.index]
        ));
    }
    if !refused {
        return None;
    }
    let leader = &plan.events[ev.leader];
    let pmu = ev.pmu.as_deref().unwrap_or("?");
    let why = match errno {
        libc::EINVAL => "the group does not fit the PMU's counters",
        _ => "this kernel or PMU does not have it",
    };
    let left = |x: &PlannedEvent| match how {
        IfRefused::DropLevel2 => x.if_refused == Some(IfRefused::DropLevel2),
        IfRefused::DropGroup => x.if_refused == Some(IfRefused::DropGroup),
        IfRefused::DropTopdown | IfRefused::OffCpuStacks => x.if_refused.is_some(),
    };
    for x in group_of(plan, ev.leader) {
        if left(&plan.events[x]) {
            dropped[x] = true;
        }
    }
    let rest = match how {
        IfRefused::DropLevel2 => "recording TopDown level 1 only",
        IfRefused::DropGroup => {
            "recording without this metric group (the metrics that need its events will have no value)"
        }
        IfRefused::DropTopdown | IfRefused::OffCpuStacks => "sampling without TopDown",
    };
    Some(format!(
        "{pmu}: the kernel refused {} in {}'s group ({err}: {why}): {rest}",
        names[ev.index], names[leader.index],
    ))
}

/// Decides how to retry after a refused open. `Ok(Some(msg))`: retry, and say `msg` once;
/// `Ok(None)`: retry silently; `Err`: give up with a message naming the event and PMU.
#[allow(clippy::too_many_arguments)]
fn fallback(
    plan: &Plan,
    ev: &PlannedEvent,
    attrs: &mut [Attr],
    names: &mut [String],
    e: &OpenError,
    cpu_wide: bool,
    raised_nofile: &mut bool,
    p: &OpenParams<'_>,
) -> Result<Option<String>, RecordError> {
    let errno = e.errno();
    let a = attrs[ev.index];
    let name = names[ev.index].clone();
    let pmu = ev.pmu.clone().unwrap_or_else(|| "?".into());
    match errno {
        libc::EMFILE | libc::ENFILE => {
            if !*raised_nofile && process::raise_nofile_limit() {
                *raised_nofile = true;
                return Ok(None);
            }
            Err(too_many_files(plan, p.tasks.len()))
        }
        libc::EACCES | libc::EPERM => {
            let level = paranoid(p.procfs_root);
            let lv = level.map_or("?".to_string(), |l| l.to_string());
            let user = if level.is_some_and(|l| l >= 2) {
                ", user space only"
            } else {
                ""
            };
            if cpu_wide {
                return Err(RecordError::Paranoid(format!(
                    "kernel.perf_event_paranoid={lv} does not allow recording whole CPUs (-a/-C) without root; set it to 0 or lower (sysctl -w kernel.perf_event_paranoid=0), or record a command or your own processes (-p PID) instead{user}"
                )));
            }
            if a.has(flag::EXCLUDE_USER) && !a.has(flag::EXCLUDE_KERNEL) {
                // `:k`: kernel only, so excluding the kernel would leave nothing to count.
                return Err(RecordError::Paranoid(format!(
                    "kernel.perf_event_paranoid={lv} does not allow kernel profiling, and {name} counts only the kernel; run as root, or sysctl -w kernel.perf_event_paranoid=1, or count user space ({}:u)",
                    name.split(':').next().unwrap_or(&name)
                )));
            }
            if !a.has(flag::EXCLUDE_KERNEL) {
                if ev.tracepoint.as_ref().is_some_and(|t| !t.user_regs) {
                    return Err(RecordError::Paranoid(format!(
                        "{name} fires in the kernel, and kernel.perf_event_paranoid={lv} lets this user record user space only, where it would record nothing; run as root or sysctl -w kernel.perf_event_paranoid=1"
                    )));
                }
                for x in group_of(plan, ev.leader) {
                    attrs[x].set(flag::EXCLUDE_KERNEL | flag::EXCLUDE_HV, true);
                }
                return Ok(Some(format!(
                    "kernel.perf_event_paranoid={lv} does not allow kernel profiling: recording user space only (run as root, or sysctl -w kernel.perf_event_paranoid=1, to include the kernel)"
                )));
            }
            if level.is_some_and(|l| l >= 3) {
                return Err(RecordError::Paranoid(format!(
                    "kernel.perf_event_paranoid={lv} refuses {name} even for user space only; run as root or set it to 2 or lower: sysctl -w kernel.perf_event_paranoid=2"
                )));
            }
            if let Target::Pids(ids) | Target::Tids(ids) = &plan.target {
                let ids: Vec<String> = ids.iter().map(u32::to_string).collect();
                return Err(RecordError::Paranoid(format!(
                    "permission denied recording {name} on task {}: without root only your own processes can be recorded (kernel.perf_event_paranoid={lv}); run as root or as the process's user",
                    ids.join(",")
                )));
            }
            Err(RecordError::Paranoid(format!(
                "{name} was refused (permission denied) although kernel.perf_event_paranoid={lv} allows profiling your own processes in user space (a security module may forbid perf_event_open); run as root"
            )))
        }
        libc::ESRCH => Err(RecordError::NoSuchTask),
        libc::EINVAL | libc::EOPNOTSUPP | libc::ENOENT | libc::ENODEV => {
            if a.precise_ip() > 0 {
                let to = a.precise_ip() - 1;
                attrs[ev.index].set_precise_ip(to);
                return Ok(if p.verbose > 0 {
                    Some(format!(
                        "{name}: precise_ip {} refused, trying {to}",
                        to + 1
                    ))
                } else {
                    None
                });
            }
            if errno == libc::EINVAL && a.has(flag::INHERIT) && a.sample_type & sample::READ != 0 {
                for x in group_of(plan, ev.leader) {
                    attrs[x].set(flag::INHERIT, false);
                }
                return Ok(Some(format!(
                    "this kernel refuses inherit with sample-read (it needs Linux 6.12): recording {name}'s group without inherit, so child processes and threads created later are not followed"
                )));
            }
            if errno == libc::EINVAL && a.has(flag::BUILD_ID) {
                // Before Linux 5.12: MMAP2 records with device and inode, as perf without
                // --buildid-mmap; the build-ids come from the files at the end, by path.
                for x in attrs.iter_mut() {
                    x.set(flag::BUILD_ID, false);
                }
                return Ok(p.verbose.gt(&0).then(|| {
                    "this kernel does not put build-ids in MMAP2 records (Linux 5.12+): the files' build-ids are read by path".to_string()
                }));
            }
            if errno == libc::EINVAL && (a.has(flag::CGROUP) || a.sample_type & sample::CGROUP != 0)
            {
                return Err(RecordError::NoCgroupRecords { event: name });
            }
            if errno != libc::EINVAL && is_cycles(&a) && ev.role != Role::Tracking {
                let mut c = Attr::new(types::SOFTWARE, 0);
                c.flags = a.flags;
                c.sample_period_or_freq = a.sample_period_or_freq;
                c.sample_type = a.sample_type;
                c.read_format = a.read_format;
                c.set_precise_ip(0);
                attrs[ev.index] = c;
                names[ev.index] = "cpu-clock".into();
                return Ok(Some(format!(
                    "{name} is not supported by this kernel (no hardware PMU): sampling cpu-clock instead"
                )));
            }
            Err(RecordError::Unsupported {
                event: name,
                pmu,
                source: e.source.raw_os_error().map_or_else(
                    || std::io::Error::other("unknown error"),
                    std::io::Error::from_raw_os_error,
                ),
            })
        }
        _ => Err(RecordError::Unsupported {
            event: name,
            pmu,
            source: e.source.raw_os_error().map_or_else(
                || std::io::Error::other("unknown error"),
                std::io::Error::from_raw_os_error,
            ),
        }),
    }
}

fn group_of(plan: &Plan, leader: usize) -> Vec<usize> {
    plan.events
        .iter()
        .filter(|e| e.leader == leader)
        .map(|e| e.index)
        .collect()
}

/// Maps the first fd of each CPU (or each per-thread slot) and redirects the rest into it,
/// one ring per CPU and kind (`kinds`: per event). `pages`: data pages of the on-CPU and of
/// the off-CPU rings.
fn map_rings(
    fds: &[OpenFd],
    kinds: &[RingKind],
    pages: (usize, usize),
    names: &[String],
    notices: &mut Vec<String>,
) -> Result<Vec<Ring>, RecordError> {
    // Key: the CPU, or (-1, tid) for cpu = -1 fds; and the kind.
    let mut owners: BTreeMap<(i32, i32, RingKind), usize> = BTreeMap::new();
    let mut rings = Vec::new();
    for (i, f) in fds.iter().enumerate() {
        let kind = kinds.get(f.event).copied().unwrap_or(RingKind::Main);
        let key = if f.slot.cpu >= 0 {
            (f.slot.cpu, -1, kind)
        } else {
            (-1, f.slot.pid, kind)
        };
        let data_pages = match kind {
            RingKind::Main => pages.0,
            RingKind::Switches => switch_pages(pages.0),
            RingKind::Stacks => pages.1,
        };
        match owners.get(&key) {
            Some(&owner) => {
                f.fd.set_output(&fds[owner].fd)
                    .map_err(|source| RecordError::Ioctl {
                        what: "PERF_EVENT_IOC_SET_OUTPUT",
                        event: names[f.event].clone(),
                        source,
                    })?;
            }
            None => {
                let buffer = map_ring(f, kind, data_pages, notices)?;
                owners.insert(key, i);
                rings.push(Ring {
                    cpu: key.0,
                    tid: key.1,
                    fd: i,
                    kind,
                    buffer,
                });
            }
        }
    }
    Ok(rings)
}

/// Maps one ring of `pages` data pages. An off-CPU ring the locked-memory limit has no room
/// for (EPERM, ENOMEM: `kernel.perf_event_mlock_kb` per CPU, then `ulimit -l`, without
/// CAP_IPC_LOCK) gets half as many pages, down to one, with one line; the on-CPU rings come
/// first and keep their size.
fn map_ring(
    f: &OpenFd,
    kind: RingKind,
    pages: usize,
    notices: &mut Vec<String>,
) -> Result<RingBuffer, RecordError> {
    let mut n = pages;
    loop {
        match RingBuffer::new(&f.fd, n) {
            Ok(b) => {
                if n < pages {
                    let what = match kind {
                        RingKind::Stacks => "stacks",
                        _ => "switch records",
                    };
                    let msg = format!(
                        "the locked-memory limit (kernel.perf_event_mlock_kb, ulimit -l) leaves the rings of the {what} fewer than {pages} pages: more of them may be lost in a switch storm (run as root for the full size)"
                    );
                    if !notices.contains(&msg) {
                        notices.push(msg);
                    }
                }
                return Ok(b);
            }
            Err(e)
                if kind != RingKind::Main
                    && n > 1
                    && matches!(e.raw_os_error(), Some(libc::EPERM | libc::ENOMEM)) =>
            {
                n /= 2;
            }
            Err(source) => return Err(RecordError::Mmap { pages: n, source }),
        }
    }
}

/// The tasks to open on for a target: the workload's pid, every thread of `-p` processes,
/// the `-t` threads, or `-1` for whole CPUs.
pub fn tasks(
    target: &Target,
    workload: Option<i32>,
    procfs_root: &Path,
) -> Result<Vec<i32>, RecordError> {
    Ok(match target {
        Target::Workload => {
            vec![workload.ok_or_else(|| RecordError::Internal("no workload pid".into()))?]
        }
        Target::SystemWide | Target::Cpus(_) => vec![-1],
        Target::Tids(t) => {
            for &tid in t {
                if !procfs_root.join(tid.to_string()).exists() {
                    return Err(RecordError::NoTask(format!("thread {tid}")));
                }
            }
            t.iter().map(|&x| x as i32).collect()
        }
        Target::Pids(pids) => {
            let mut out = Vec::new();
            for &pid in pids {
                let dir = procfs_root.join(pid.to_string()).join("task");
                let rd = std::fs::read_dir(&dir)
                    .map_err(|_| RecordError::NoTask(format!("process {pid}")))?;
                let mut tids: Vec<i32> = rd
                    .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                    .collect();
                tids.sort_unstable();
                out.extend(tids);
            }
            out
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::plan::{self, Host, RecordOptions, metric};

    /// The Granite Rapids fixture's `--td-level 3` plan, when Intel's files are beside the
    /// repository.
    fn td3_plan() -> Option<(Plan, std::path::PathBuf)> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let dir = root.join("../shared/perfmon");
        if !dir.join("mapfile.csv").exists() {
            eprintln!("skipped: ../shared/perfmon not found");
            return None;
        }
        let procfs = root.join("tests/fixtures/procfs/graniterapids");
        let pmus = crate::pmu::Pmus::read(&root.join("tests/fixtures/sysfs/graniterapids")).ok()?;
        let host = Host::read(&procfs);
        let id = crate::stat::tma::cpuid(&procfs).ok()?;
        let (pm, _) = crate::stat::tma::load(&dir, &id).ok()?;
        let choice = metric::MetricChoice {
            td_level: Some(3),
            metrics: Vec::new(),
        };
        let m = metric::plan_metrics(&pmus, &host, Ok(&pm), &choice).ok()?;
        let p = plan::plan_record_with(&pmus, &host, &RecordOptions::default(), Some(&m)).ok()?;
        Some((p, procfs))
    }

    /// A metric group the kernel refuses is left out whole (leader and members), said in one
    /// line; the group carrying the side-band records is never left out.
    #[test]
    fn a_refused_metric_group_is_left_out_whole() {
        let Some((p, procfs)) = td3_plan() else {
            return;
        };
        let names: Vec<String> = p.events.iter().map(|e| e.name.clone()).collect();
        let einval = OpenError {
            source: std::io::Error::from_raw_os_error(libc::EINVAL),
        };
        let tracking = p.events.iter().find(|e| e.tracking).unwrap().leader;
        let leaders: Vec<usize> = p
            .events
            .iter()
            .filter(|e| e.metric.is_some() && e.leader == e.index && e.leader != tracking)
            .map(|e| e.index)
            .collect();
        assert!(leaders.len() >= 6, "{leaders:?}");
        // A member of the third group.
        let leader = leaders[2];
        let member = p
            .events
            .iter()
            .find(|e| e.leader == leader && e.index != leader)
            .unwrap();
        let mut dropped = vec![false; p.events.len()];
        let msg = leave_out(&p, member, &einval, &names, &procfs, &mut dropped).unwrap();
        let group: Vec<usize> = group_of(&p, leader);
        for e in &p.events {
            assert_eq!(dropped[e.index], group.contains(&e.index), "{}", e.name);
        }
        assert!(msg.contains("recording without this metric group"), "{msg}");
        assert!(msg.contains("the group does not fit"), "{msg}");
        // The tracking group: not left out (the open fails as any other would).
        let mut dropped = vec![false; p.events.len()];
        let member = p
            .events
            .iter()
            .find(|e| e.leader == tracking && e.index != tracking)
            .unwrap();
        assert!(leave_out(&p, member, &einval, &names, &procfs, &mut dropped).is_none());
        assert!(dropped.iter().all(|d| !d));
        // Permissions are never answered by leaving a group out.
        let eacces = OpenError {
            source: std::io::Error::from_raw_os_error(libc::EACCES),
        };
        let member = p
            .events
            .iter()
            .find(|e| e.leader == leader && e.index != leader)
            .unwrap();
        assert!(leave_out(&p, member, &eacces, &names, &procfs, &mut dropped).is_none());
    }
}
