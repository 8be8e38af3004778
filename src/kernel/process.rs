//! Process control for the recorder: the workload gate, signals, epoll, clocks and the
//! open-file limit.
//!
//! **The workload gate** (perf's `evlist__prepare_workload`). The recorder forks the child and
//! holds it before `exec` until every event is open on its pid: the child blocks reading one
//! byte from the *go* pipe. The events carry `enable_on_exec`, so counting starts exactly at
//! the exec of the new image and none of hrec's own set-up is sampled. A second pipe, closed on
//! exec (`O_CLOEXEC`), tells the parent whether the exec worked: end-of-file means the new image
//! runs; four bytes are the `errno` of a failed `execvp`. The child does only async-signal-safe
//! work between `fork` and `exec` (raw `read`, `write`, `execvp`, `_exit`), with every string
//! prepared before the fork.
//!
//! **Signals.** SIGINT, SIGTERM and SIGCHLD are caught by a handler that records the signal in
//! an atomic mask and writes one byte to a non-blocking self-pipe; the pipe's read end sits in
//! the recorder's epoll set, so a signal wakes the drain loop at once instead of at the next
//! timeout.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};

/// Why a workload could not be started.
#[derive(Debug, thiserror::Error)]
pub enum SpawnError {
    /// An argument contains a NUL byte.
    #[error("argument {0:?} contains a NUL byte")]
    Nul(String),
    /// No command.
    #[error("no command given")]
    Empty,
    /// pipe/fork failed.
    #[error("cannot start the workload")]
    Os(#[source] io::Error),
    /// `execvp` failed in the child.
    #[error("cannot execute {command:?}")]
    Exec {
        /// `argv[0]`.
        command: String,
        /// The child's errno.
        #[source]
        source: io::Error,
    },
}

/// A forked child held before `exec`.
#[derive(Debug)]
pub struct Workload {
    pid: i32,
    go: OwnedFd,
    exec_status: OwnedFd,
    command: String,
}

fn pipe_cloexec() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: `fds` is a valid array of two ints for pipe2 to fill.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: pipe2 succeeded, so both are new descriptors owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

impl Workload {
    /// Forks a child that will `execvp(argv[0], argv)` once [`Workload::start`] is called.
    pub fn spawn(argv: &[String]) -> Result<Workload, SpawnError> {
        let command = argv.first().ok_or(SpawnError::Empty)?.clone();
        let cargs: Vec<CString> = argv
            .iter()
            .map(|a| CString::new(a.as_bytes()).map_err(|_| SpawnError::Nul(a.clone())))
            .collect::<Result<_, _>>()?;
        let mut ptrs: Vec<*const libc::c_char> = cargs.iter().map(|c| c.as_ptr()).collect();
        ptrs.push(std::ptr::null());
        let (go_r, go_w) = pipe_cloexec().map_err(SpawnError::Os)?;
        let (st_r, st_w) = pipe_cloexec().map_err(SpawnError::Os)?;
        // SAFETY: fork has no preconditions. In the child only async-signal-safe calls follow
        // (close, read, write, execvp, _exit) on memory prepared before the fork.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(SpawnError::Os(io::Error::last_os_error()));
        }
        if pid == 0 {
            let mut byte = 0u8;
            // SAFETY: child side: the closed fds are the parent's pipe ends, not used again here; `byte` is a valid 1-byte buffer; `ptrs` is a NULL-terminated
            // array of pointers into `cargs`, alive until exec; `_exit` never returns.
            unsafe {
                // Drop the parent's ends, so a recorder that dies gives us end-of-file.
                libc::close(go_w.as_raw_fd());
                libc::close(st_r.as_raw_fd());
                // The workload starts with default dispositions where hrec ignores a signal
                // (Rust's runtime ignores SIGPIPE; the recorder ignores SIGXFSZ): an ignored
                // signal would survive the exec and change how the workload behaves. SIGINT
                // and SIGTERM, which the recorder catches and forwards, start at their
                // defaults too, as under perf (its handlers, set before its fork, become the
                // defaults at exec): a recorder started with them ignored (`nohup`, a script's
                // `cmd &`) must not pass that on, or a forwarded Ctrl-C would do nothing.
                // SIGHUP stays as hrec got it (ignored under nohup, as perf leaves it).
                libc::signal(libc::SIGPIPE, libc::SIG_DFL);
                libc::signal(libc::SIGXFSZ, libc::SIG_DFL);
                libc::signal(libc::SIGINT, libc::SIG_DFL);
                libc::signal(libc::SIGTERM, libc::SIG_DFL);
                let n = libc::read(go_r.as_raw_fd(), (&raw mut byte).cast(), 1);
                if n != 1 {
                    // The recorder gave up (or died) before starting us.
                    libc::_exit(127);
                }
                libc::execvp(ptrs[0], ptrs.as_ptr());
                let errno = *libc::__errno_location();
                let b = errno.to_ne_bytes();
                libc::write(st_w.as_raw_fd(), b.as_ptr().cast(), b.len());
                libc::_exit(127);
            }
        }
        drop(go_r);
        drop(st_w);
        Ok(Workload {
            pid,
            go: go_w,
            exec_status: st_r,
            command,
        })
    }

    /// The child's pid (the events' target).
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// Lets the child exec and waits for the outcome: `Ok` once the new image runs.
    /// On failure the child has exited and been reaped.
    pub fn start(self) -> Result<i32, SpawnError> {
        let byte = [1u8];
        // SAFETY: writes one byte from a valid buffer to our pipe end.
        let w = unsafe { libc::write(self.go.as_raw_fd(), byte.as_ptr().cast(), 1) };
        if w != 1 {
            let e = io::Error::last_os_error();
            kill(self.pid, libc::SIGKILL);
            let _ = wait(self.pid, false);
            return Err(SpawnError::Os(e));
        }
        let mut buf = [0u8; 4];
        let mut got = 0usize;
        loop {
            // SAFETY: reads into the unfilled tail of a valid 4-byte buffer.
            let n = unsafe {
                libc::read(
                    self.exec_status.as_raw_fd(),
                    buf[got..].as_mut_ptr().cast(),
                    buf.len() - got,
                )
            };
            if n < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(SpawnError::Os(e));
            }
            if n == 0 {
                break;
            }
            got += n as usize;
            if got == buf.len() {
                break;
            }
        }
        if got == 0 {
            return Ok(self.pid);
        }
        let _ = wait(self.pid, false);
        Err(SpawnError::Exec {
            command: self.command.clone(),
            source: io::Error::from_raw_os_error(i32::from_ne_bytes(buf)),
        })
    }

    /// Kills and reaps the held child (the recording could not be set up).
    pub fn abort(self) {
        kill(self.pid, libc::SIGKILL);
        let _ = wait(self.pid, false);
    }
}

/// How a child ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitStatus {
    /// `exit(code)`.
    Code(i32),
    /// Killed by this signal.
    Signal(i32),
}

impl ExitStatus {
    /// The shell's convention: the code, or 128 + the signal.
    pub fn shell_code(self) -> i32 {
        match self {
            ExitStatus::Code(c) => c,
            ExitStatus::Signal(s) => 128 + s,
        }
    }
}

/// Whether process `pid` has not had its chance to act on `sig` yet: the signal is still
/// pending (sent, not delivered: the process was not scheduled since, as on a loaded machine),
/// or the process is already dying (a zombie, or exiting: its threads are still being torn
/// down). A stopped process (`T`) is not waiting to be scheduled: false. From
/// `/proc/PID/status`; false when it cannot be read.
pub fn signal_in_flight(pid: i32, sig: i32) -> bool {
    let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
        return false;
    };
    in_flight(&status, sig)
}

fn in_flight(status: &str, sig: i32) -> bool {
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .map(str::trim)
    };
    let state = field("State:").and_then(|s| s.chars().next());
    match state {
        Some('Z' | 'X' | 'x') => return true,
        Some('T' | 't') | None => return false,
        _ => {}
    }
    let bit = 1u64.checked_shl((sig - 1) as u32).unwrap_or(0);
    ["ShdPnd:", "SigPnd:"].iter().any(|f| {
        field(f)
            .and_then(|v| u64::from_str_radix(v, 16).ok())
            .is_some_and(|mask| mask & bit != 0)
    })
}

/// `waitpid(pid)`; `Ok(None)` when `nohang` and the child is still running.
pub fn wait(pid: i32, nohang: bool) -> io::Result<Option<ExitStatus>> {
    let mut status = 0;
    loop {
        // SAFETY: `status` is a valid int for waitpid to fill.
        let r = unsafe { libc::waitpid(pid, &mut status, if nohang { libc::WNOHANG } else { 0 }) };
        if r < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if r == 0 {
            return Ok(None);
        }
        if libc::WIFEXITED(status) {
            return Ok(Some(ExitStatus::Code(libc::WEXITSTATUS(status))));
        }
        if libc::WIFSIGNALED(status) {
            return Ok(Some(ExitStatus::Signal(libc::WTERMSIG(status))));
        }
        // Stopped/continued: keep waiting (only reachable with WUNTRACED, which we do not pass).
        if nohang {
            return Ok(None);
        }
    }
}

/// The name of signal `sig` (`SIGSEGV`), or `signal N` for one without a usual name.
pub fn signal_name(sig: i32) -> String {
    let name = match sig {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGUSR2 => "SIGUSR2",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGXCPU => "SIGXCPU",
        libc::SIGXFSZ => "SIGXFSZ",
        libc::SIGSYS => "SIGSYS",
        _ => return format!("signal {sig}"),
    };
    name.to_string()
}

/// `kill(pid, sig)`, ignoring a child that is already gone.
pub fn kill(pid: i32, sig: i32) {
    // SAFETY: kill has no memory-safety preconditions.
    unsafe {
        libc::kill(pid, sig);
    }
}

/// CPU time of the reaped children of this process: (user, system) in seconds.
pub fn children_cpu_time() -> (f64, f64) {
    // SAFETY: `ru` is a zeroed rusage that getrusage fills; RUSAGE_CHILDREN takes no pointer
    // other than it.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru);
        ru
    };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (secs(ru.ru_utime), secs(ru.ru_stime))
}

/// The caller's process id.
pub fn getpid() -> u32 {
    std::process::id()
}

static WAKE_FD: AtomicI32 = AtomicI32::new(-1);
static PENDING: AtomicU64 = AtomicU64::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    if (0..64).contains(&sig) {
        PENDING.fetch_or(1 << sig, Ordering::SeqCst);
    }
    let fd = WAKE_FD.load(Ordering::SeqCst);
    if fd >= 0 {
        let b = [sig as u8];
        // SAFETY: write is async-signal-safe; the buffer is valid; errors (a full pipe) are
        // harmless because the mask already records the signal.
        unsafe {
            libc::write(fd, b.as_ptr().cast(), 1);
        }
    }
}

/// Whether signal `sig` is ignored (`SIG_IGN`) in this process now: a SIGHUP ignored at start
/// (`nohup`) is left so, as perf leaves it, rather than caught.
pub fn signal_ignored(sig: i32) -> bool {
    // SAFETY: a null new action only queries the disposition into the zeroed `old`.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        libc::sigaction(sig, std::ptr::null(), &mut old) == 0 && old.sa_sigaction == libc::SIG_IGN
    }
}

/// Caught signals, readable from an fd that can sit in an epoll set.
#[derive(Debug)]
pub struct Signals {
    read: OwnedFd,
    _write: OwnedFd,
    installed: Vec<(i32, libc::sigaction)>,
}

impl Signals {
    /// Catches `sigs` and ignores `ignored` until dropped (the previous dispositions are
    /// restored then).
    pub fn catch(sigs: &[i32], ignored: &[i32]) -> io::Result<Signals> {
        let (r, w) = pipe_cloexec()?;
        for fd in [r.as_raw_fd(), w.as_raw_fd()] {
            // SAFETY: fcntl on descriptors we own, with integer arguments.
            unsafe {
                let fl = libc::fcntl(fd, libc::F_GETFL);
                libc::fcntl(fd, libc::F_SETFL, fl | libc::O_NONBLOCK);
            }
        }
        WAKE_FD.store(w.as_raw_fd(), Ordering::SeqCst);
        PENDING.store(0, Ordering::SeqCst);
        let mut installed = Vec::new();
        for &sig in sigs {
            // SAFETY: a zeroed sigaction is a valid starting point; we set the handler and an
            // empty mask, and pass valid pointers for the new and old actions.
            unsafe {
                let mut act: libc::sigaction = std::mem::zeroed();
                act.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
                act.sa_flags = libc::SA_RESTART;
                libc::sigemptyset(&mut act.sa_mask);
                let mut old: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(sig, &act, &mut old) < 0 {
                    return Err(io::Error::last_os_error());
                }
                installed.push((sig, old));
            }
        }
        for &sig in ignored {
            // SAFETY: as above, with SIG_IGN as the handler.
            unsafe {
                let mut act: libc::sigaction = std::mem::zeroed();
                act.sa_sigaction = libc::SIG_IGN;
                libc::sigemptyset(&mut act.sa_mask);
                let mut old: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(sig, &act, &mut old) < 0 {
                    return Err(io::Error::last_os_error());
                }
                installed.push((sig, old));
            }
        }
        Ok(Signals {
            read: r,
            _write: w,
            installed,
        })
    }

    /// The fd that becomes readable when a signal arrives.
    pub fn fd(&self) -> RawFd {
        self.read.as_raw_fd()
    }

    /// Signals caught since the last call (bit `1 << sig`); empties the wake pipe.
    pub fn take(&self) -> u64 {
        let mut buf = [0u8; 64];
        // SAFETY: non-blocking reads into a valid buffer until the pipe is empty.
        while unsafe { libc::read(self.read.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) } > 0 {
        }
        PENDING.swap(0, Ordering::SeqCst)
    }
}

impl Drop for Signals {
    fn drop(&mut self) {
        for (sig, old) in &self.installed {
            // SAFETY: restores a disposition previously returned by sigaction.
            unsafe {
                libc::sigaction(*sig, old, std::ptr::null_mut());
            }
        }
        WAKE_FD.store(-1, Ordering::SeqCst);
    }
}

/// An epoll set of fds, each registered with a `u64` token.
#[derive(Debug)]
pub struct Epoll(OwnedFd);

impl Epoll {
    /// `epoll_create1(EPOLL_CLOEXEC)`.
    pub fn new() -> io::Result<Epoll> {
        // SAFETY: no preconditions.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a new descriptor owned by nobody else.
        Ok(Epoll(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    /// Watches `fd` for input (a perf fd is readable once its wakeup watermark is crossed).
    pub fn add(&self, fd: RawFd, token: u64) -> io::Result<()> {
        let mut ev = libc::epoll_event {
            events: libc::EPOLLIN as u32,
            u64: token,
        };
        // SAFETY: `ev` is a valid epoll_event for the duration of the call.
        if unsafe { libc::epoll_ctl(self.0.as_raw_fd(), libc::EPOLL_CTL_ADD, fd, &mut ev) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Stops watching `fd`.
    pub fn delete(&self, fd: RawFd) -> io::Result<()> {
        let mut ev = libc::epoll_event { events: 0, u64: 0 };
        // SAFETY: `ev` is valid for the call (ignored by EPOLL_CTL_DEL on current kernels).
        if unsafe { libc::epoll_ctl(self.0.as_raw_fd(), libc::EPOLL_CTL_DEL, fd, &mut ev) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Waits up to `timeout_ms`; returns the ready `(token, hang-up)` pairs (empty on timeout
    /// or EINTR). A perf fd hangs up once every task it follows has exited; it stays hung up,
    /// so the caller should [`Epoll::delete`] it rather than poll it again.
    pub fn wait(&self, timeout_ms: i32, out: &mut Vec<(u64, bool)>) -> io::Result<()> {
        out.clear();
        let mut evs = [libc::epoll_event { events: 0, u64: 0 }; 64];
        // SAFETY: `evs` is a valid array of 64 events for the kernel to fill.
        let n = unsafe { libc::epoll_wait(self.0.as_raw_fd(), evs.as_mut_ptr(), 64, timeout_ms) };
        if n < 0 {
            let e = io::Error::last_os_error();
            return if e.kind() == io::ErrorKind::Interrupted {
                Ok(())
            } else {
                Err(e)
            };
        }
        for ev in &evs[..n as usize] {
            let (token, events) = (ev.u64, ev.events);
            out.push((
                token,
                events & (libc::EPOLLHUP | libc::EPOLLERR) as u32 != 0,
            ));
        }
        Ok(())
    }
}

/// `clock_gettime(CLOCK_MONOTONIC)` in ns: the clock perf sample times are closest to.
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec for the kernel to fill.
    unsafe {
        libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts);
    }
    (ts.tv_sec as u64) * 1_000_000_000 + ts.tv_nsec as u64
}

/// `RLIMIT_NOFILE` (soft, hard).
pub fn nofile_limit() -> Option<(u64, u64)> {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `r` is a valid rlimit for the kernel to fill.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) } < 0 {
        return None;
    }
    Some((r.rlim_cur, r.rlim_max))
}

/// Raises the soft `RLIMIT_NOFILE` to the hard limit (perf does the same on EMFILE).
pub fn raise_nofile_limit() -> bool {
    let Some((cur, max)) = nofile_limit() else {
        return false;
    };
    if cur >= max {
        return false;
    }
    let r = libc::rlimit {
        rlim_cur: max,
        rlim_max: max,
    };
    // SAFETY: `r` is a valid rlimit.
    unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &r) == 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exec_failure_is_reported_with_errno() {
        let w = Workload::spawn(&["/nonexistent/hrec-test-binary".to_string()]).unwrap();
        match w.start() {
            Err(SpawnError::Exec { command, source }) => {
                assert_eq!(command, "/nonexistent/hrec-test-binary");
                assert_eq!(source.raw_os_error(), Some(libc::ENOENT));
            }
            other => panic!("expected an exec error, got {other:?}"),
        }
    }

    #[test]
    fn held_child_runs_only_after_start_and_exit_code_passes_through() {
        let w = Workload::spawn(&["sh".into(), "-c".into(), "exit 7".into()]).unwrap();
        let pid = w.pid();
        // Held: still running (blocked on the go pipe).
        assert_eq!(wait(pid, true).unwrap(), None);
        let pid = w.start().unwrap();
        assert_eq!(wait(pid, false).unwrap(), Some(ExitStatus::Code(7)));
    }

    #[test]
    fn a_signal_is_in_flight_while_pending_or_while_the_process_dies() {
        let st = |state: &str, shd: &str| {
            format!("Name:\tx\nState:\t{state}\nSigPnd:\t0000000000000000\nShdPnd:\t{shd}\n")
        };
        // SIGINT (2) pending: bit 1.
        assert!(in_flight(&st("R (running)", "0000000000000002"), 2));
        assert!(!in_flight(&st("R (running)", "0000000000000000"), 2));
        assert!(!in_flight(&st("S (sleeping)", "0000000000004000"), 2));
        assert!(in_flight(&st("S (sleeping)", "0000000000004000"), 15));
        assert!(in_flight(&st("Z (zombie)", "0000000000000000"), 2));
        // Stopped: it will not act on it until continued.
        assert!(!in_flight(&st("T (stopped)", "0000000000000002"), 2));
        assert!(!in_flight("", 2));
        assert!(!signal_in_flight(-1, 2));
        // This process has nothing pending.
        assert!(!signal_in_flight(std::process::id() as i32, libc::SIGUSR1));
    }

    #[test]
    fn killed_child_reports_the_signal() {
        let w = Workload::spawn(&["sleep".into(), "10".into()]).unwrap();
        let pid = w.start().unwrap();
        kill(pid, libc::SIGTERM);
        let st = wait(pid, false).unwrap().unwrap();
        assert_eq!(st, ExitStatus::Signal(libc::SIGTERM));
        assert_eq!(st.shell_code(), 128 + libc::SIGTERM);
    }

    #[test]
    fn aborted_child_never_execs() {
        let dir = std::env::temp_dir().join(format!("hrec-abort-{}", std::process::id()));
        let w = Workload::spawn(&["mkdir".into(), dir.display().to_string()]).unwrap();
        w.abort();
        assert!(!dir.exists());
    }
}
