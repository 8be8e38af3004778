//! The tasks that existed before the recording, as records. The kernel reports a task's
//! COMM, FORK and MMAP2 as they happen; a task that was running when the events were opened
//! (every task of `-a`/`-C`, the attached ones of `-p`/`-t`) had them before, so, like perf
//! (`perf_event__synthesize_threads`), hrec writes them from `/proc`, in the kernel's byte
//! layout with the sample_id trailer of the tracking event, so the decoder treats them like
//! the kernel's:
//!
//! - per process, in pid order: `FORK(pid:pid):(ppid:ppid)` (the parent from `PPid:` in
//!   `/proc/PID/status`; 0 for init and kthreadd), `COMM` from `comm`, and an `MMAP2` for
//!   every executable mapping of `/proc/PID/maps` (anonymous ones as `//anon`, the JIT
//!   convention of the kernel's own records);
//! - per further thread: `FORK(pid:tid):(pid:pid)` and its `COMM`.
//!
//! Their time is 0, as perf's are: the events are enabled before `/proc` is read, so anything
//! a task does after that has a kernel record with a later time, which replay applies after
//! these. A task that exits while it is read is left out (its records would be partial); a
//! process whose maps cannot be read (another user's) keeps its COMM and FORK and is counted.
//! `/proc` is read on a few threads, each over a run of processes, and the records are put
//! back in pid order.
//!
//! Two kinds of records the kernel writes only as things change are synthesized too, as perf
//! writes them:
//!
//! - with `--all-cgroups` (`attr.cgroup` on the tracking event), a CGROUP record per cgroup
//!   that exists: the cgroup2 mount from `/proc/self/mountinfo` walked parents first, each
//!   cgroup's id its inode number and its path relative to the mount ([`cgroups`]), whatever
//!   the target, and again at the start of each `--switch-output` file;
//! - with `--namespaces` (`attr.namespaces`), a NAMESPACES record per task, each namespace the
//!   `{dev, inode}` of its `/proc/PID/task/TID/ns` file in the kernel's order, for every task
//!   synthesized here and for the workload at its start (it was forked before the events were
//!   opened).

use std::path::Path;

use crate::event::Attr;
use crate::event::attr::sample;

/// Encodes records in the kernel's layout with the sample_id trailer of `attr`.
#[derive(Debug, Clone, Copy)]
pub struct Synth {
    sample_type: u64,
    id: u64,
    /// The event has `attr.cgroup` (`--all-cgroups`): the existing cgroups are written too.
    pub cgroups: bool,
    /// The event has `attr.namespaces` (`--namespaces`): each task's namespaces are written.
    pub namespaces: bool,
}

const MMAP2: u32 = 10;
const COMM: u32 = 3;
const FORK: u32 = 7;
const CGROUP: u32 = 19;
const NAMESPACES: u32 = 16;
/// `PERF_RECORD_MISC_USER`
const MISC_USER: u16 = 2;

impl Synth {
    /// Records that look as if `attr`'s event with this `id` had produced them.
    pub fn new(attr: &Attr, id: u64) -> Synth {
        Synth {
            sample_type: attr.sample_type,
            id,
            cgroups: attr.has(crate::event::attr::flag::CGROUP),
            namespaces: attr.has(crate::event::attr::flag::NAMESPACES),
        }
    }

    fn finish(&self, ty: u32, misc: u16, mut body: Vec<u8>, pid: u32, tid: u32, out: &mut Vec<u8>) {
        while !body.len().is_multiple_of(8) {
            body.push(0);
        }
        let st = self.sample_type;
        // Trailer order (perf-abi.md 5.4): TID, TIME, ID, STREAM_ID, CPU, IDENTIFIER.
        if st & sample::TID != 0 {
            body.extend_from_slice(&pid.to_le_bytes());
            body.extend_from_slice(&tid.to_le_bytes());
        }
        if st & sample::TIME != 0 {
            body.extend_from_slice(&0u64.to_le_bytes());
        }
        if st & sample::ID != 0 {
            body.extend_from_slice(&self.id.to_le_bytes());
        }
        if st & sample::STREAM_ID != 0 {
            body.extend_from_slice(&self.id.to_le_bytes());
        }
        if st & sample::CPU != 0 {
            body.extend_from_slice(&u64::MAX.to_le_bytes()[..4]);
            body.extend_from_slice(&0u32.to_le_bytes());
        }
        if st & sample::IDENTIFIER != 0 {
            body.extend_from_slice(&self.id.to_le_bytes());
        }
        let size = 8 + body.len();
        if size > usize::from(u16::MAX) {
            return;
        }
        out.extend_from_slice(&ty.to_le_bytes());
        out.extend_from_slice(&misc.to_le_bytes());
        out.extend_from_slice(&(size as u16).to_le_bytes());
        out.extend_from_slice(&body);
    }

    /// A COMM record.
    pub fn comm(&self, pid: u32, tid: u32, comm: &str, out: &mut Vec<u8>) {
        let mut b = Vec::new();
        b.extend_from_slice(&pid.to_le_bytes());
        b.extend_from_slice(&tid.to_le_bytes());
        b.extend_from_slice(comm.as_bytes());
        b.push(0);
        self.finish(COMM, MISC_USER, b, pid, tid, out);
    }

    /// A FORK record: task `pid/tid` created by `ppid/ptid`.
    pub fn fork(&self, (pid, tid): (u32, u32), (ppid, ptid): (u32, u32), out: &mut Vec<u8>) {
        let mut b = Vec::new();
        for v in [pid, ppid, tid, ptid] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        b.extend_from_slice(&0u64.to_le_bytes());
        self.finish(FORK, 0, b, pid, tid, out);
    }

    /// A NAMESPACES record of task `pid/tid` from `PROCFS/PID/task/TID/ns/*`, in the kernel's
    /// order (net, uts, ipc, pid, user, mnt, cgroup), each as the `{dev, inode}` of its nsfs
    /// file (0, 0 for one that cannot be read), as perf synthesizes them.
    pub fn namespaces(&self, procfs: &Path, pid: u32, tid: u32, out: &mut Vec<u8>) {
        use std::os::unix::fs::MetadataExt;
        const NS: [&str; 7] = ["net", "uts", "ipc", "pid", "user", "mnt", "cgroup"];
        let dir = procfs.join(format!("{pid}/task/{tid}/ns"));
        let mut b = Vec::new();
        b.extend_from_slice(&pid.to_le_bytes());
        b.extend_from_slice(&tid.to_le_bytes());
        b.extend_from_slice(&(NS.len() as u64).to_le_bytes());
        for ns in NS {
            let (dev, ino) = std::fs::metadata(dir.join(ns)).map_or((0, 0), |m| (m.dev(), m.ino()));
            b.extend_from_slice(&dev.to_le_bytes());
            b.extend_from_slice(&ino.to_le_bytes());
        }
        self.finish(NAMESPACES, 0, b, pid, tid, out);
    }

    /// A CGROUP record: cgroup `id` is at `path` (relative to the cgroup2 mount, `/` for
    /// its root).
    pub fn cgroup(&self, id: u64, path: &str, out: &mut Vec<u8>) {
        let mut b = Vec::new();
        b.extend_from_slice(&id.to_le_bytes());
        b.extend_from_slice(path.as_bytes());
        b.push(0);
        self.finish(CGROUP, 0, b, 0, 0, out);
    }

    /// An MMAP2 record (inode form) for one `/proc/PID/maps` line.
    pub fn mmap2(&self, pid: u32, m: &MapsLine, out: &mut Vec<u8>) {
        let mut b = Vec::new();
        b.extend_from_slice(&pid.to_le_bytes());
        b.extend_from_slice(&pid.to_le_bytes());
        b.extend_from_slice(&m.start.to_le_bytes());
        b.extend_from_slice(&(m.end - m.start).to_le_bytes());
        b.extend_from_slice(&m.offset.to_le_bytes());
        b.extend_from_slice(&m.major.to_le_bytes());
        b.extend_from_slice(&m.minor.to_le_bytes());
        b.extend_from_slice(&m.inode.to_le_bytes());
        b.extend_from_slice(&0u64.to_le_bytes());
        b.extend_from_slice(&m.prot.to_le_bytes());
        b.extend_from_slice(&m.flags.to_le_bytes());
        b.extend_from_slice(m.path.as_bytes());
        b.push(0);
        self.finish(MMAP2, MISC_USER, b, pid, pid, out);
    }
}

/// One line of `/proc/PID/maps`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MapsLine {
    /// Start address.
    pub start: u64,
    /// End address.
    pub end: u64,
    /// `PROT_*` bits.
    pub prot: u32,
    /// `MAP_SHARED` or `MAP_PRIVATE`.
    pub flags: u32,
    /// File offset.
    pub offset: u64,
    /// Device major.
    pub major: u32,
    /// Device minor.
    pub minor: u32,
    /// Inode.
    pub inode: u64,
    /// Path or pseudo-name (`[stack]`); empty for anonymous memory.
    pub path: String,
}

/// Parses one maps line; `None` for a malformed one.
pub fn parse_maps_line(line: &str) -> Option<MapsLine> {
    let mut it = line.splitn(6, ' ');
    let range = it.next()?;
    let perms = it.next()?.as_bytes();
    let offset = u64::from_str_radix(it.next()?, 16).ok()?;
    let (maj, min) = it.next()?.split_once(':')?;
    let inode = it.next()?.parse().ok()?;
    let path = it.next().unwrap_or("").trim_start().to_string();
    let (s, e) = range.split_once('-')?;
    if perms.len() < 4 {
        return None;
    }
    let mut prot = 0;
    if perms[0] == b'r' {
        prot |= libc::PROT_READ as u32;
    }
    if perms[1] == b'w' {
        prot |= libc::PROT_WRITE as u32;
    }
    if perms[2] == b'x' {
        prot |= libc::PROT_EXEC as u32;
    }
    let flags = if perms[3] == b's' {
        libc::MAP_SHARED as u32
    } else {
        libc::MAP_PRIVATE as u32
    };
    Some(MapsLine {
        start: u64::from_str_radix(s, 16).ok()?,
        end: u64::from_str_radix(e, 16).ok()?,
        prot,
        flags,
        offset,
        major: u32::from_str_radix(maj, 16).ok()?,
        minor: u32::from_str_radix(min, 16).ok()?,
        inode,
        path,
    })
}

/// What [`synthesize`] wrote and met.
#[derive(Debug, Default)]
pub struct Synthesized {
    /// The records.
    pub bytes: Vec<u8>,
    /// Processes written.
    pub processes: usize,
    /// Threads written (main threads included).
    pub threads: usize,
    /// Processes whose maps could not be read (pid, comm, why).
    pub unreadable_maps: Vec<(u32, String, String)>,
}

/// Which tasks to write.
#[derive(Debug, Clone, Copy)]
pub enum Tasks<'a> {
    /// Every process and thread in `/proc` (`-a`, `-C`).
    All,
    /// These threads (`-p`: every thread of the processes, `-t`: the threads given).
    These(&'a [i32]),
    /// This process and every process descended from it, with all their threads (a
    /// workload's tree, when `--switch-output` starts a new file).
    Tree(u32),
}

/// `Name`-less facts of `/proc/PID/status`: `(tgid, ppid)`.
fn ids(procfs: &Path, tid: u32) -> Option<(u32, u32)> {
    let status = read_proc(&procfs.join(format!("{tid}/status"))).ok()?;
    let status = String::from_utf8_lossy(&status);
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().parse::<u32>().ok())
    };
    Some((field("Tgid:")?, field("PPid:")?))
}

/// A `/proc` file's contents: read until the end without asking its size first (procfs
/// files have none; `std::fs::read` would `statx` each one).
fn read_proc(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read as _;
    let mut f = std::fs::File::open(path)?;
    let mut out = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        match f.read(&mut chunk) {
            Ok(0) => return Ok(out),
            Ok(n) => out.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// A thread's `comm`, without its newline; `None` when the thread is gone.
fn comm(procfs: &Path, pid: u32, tid: u32) -> Option<String> {
    let c = read_proc(&procfs.join(format!("{pid}/task/{tid}/comm"))).ok()?;
    let c = c.strip_suffix(b"\n").unwrap_or(&c);
    Some(String::from_utf8_lossy(c).into_owned())
}

/// The numeric entries of a `/proc` directory, sorted.
fn numeric_entries(dir: &Path) -> Vec<u32> {
    let mut v: Vec<u32> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    v.sort_unstable();
    v
}

/// Writes the COMM, FORK and MMAP2 records of `tasks` (see the module docs).
pub fn synthesize(procfs: &Path, tasks: Tasks<'_>, synth: &Synth) -> Synthesized {
    // Processes in pid order, each with the threads to write (its main thread first).
    let mut procs: std::collections::BTreeMap<u32, Vec<u32>> = Default::default();
    match tasks {
        Tasks::All => {
            for pid in numeric_entries(procfs) {
                let mut tids = numeric_entries(&procfs.join(format!("{pid}/task")));
                tids.retain(|&t| t != pid);
                tids.insert(0, pid);
                procs.insert(pid, tids);
            }
        }
        Tasks::Tree(root) => {
            let parents: std::collections::HashMap<u32, u32> = numeric_entries(procfs)
                .into_iter()
                .filter_map(|pid| Some((pid, ids(procfs, pid)?.1)))
                .collect();
            for &pid in parents.keys() {
                // Up the parent chain (bounded: pid 1 and 0 end it, a loop cannot).
                let mut at = pid;
                let mut steps = 0;
                while at != root && at > 1 && steps < parents.len() {
                    at = parents.get(&at).copied().unwrap_or(0);
                    steps += 1;
                }
                if at == root {
                    let mut tids = numeric_entries(&procfs.join(format!("{pid}/task")));
                    tids.retain(|&t| t != pid);
                    tids.insert(0, pid);
                    procs.insert(pid, tids);
                }
            }
        }
        Tasks::These(tids) => {
            for &tid in tids {
                let Ok(tid) = u32::try_from(tid) else {
                    continue;
                };
                let Some((tgid, _)) = ids(procfs, tid) else {
                    continue;
                };
                let v = procs.entry(tgid).or_default();
                if !v.contains(&tid) {
                    v.push(tid);
                }
            }
        }
    }
    let procs: Vec<(u32, Vec<u32>)> = procs.into_iter().collect();
    // Parallel over contiguous runs of processes, put back together in pid order.
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, MAX_WORKERS)
        .min(procs.len().div_ceil(PER_WORKER).max(1));
    let chunk = procs.len().div_ceil(workers).max(1);
    let parts: Vec<Vec<Process>> = if workers == 1 {
        vec![
            procs
                .iter()
                .filter_map(|(p, t)| process(procfs, *p, t, synth))
                .collect(),
        ]
    } else {
        std::thread::scope(|scope| {
            let handles: Vec<_> = procs
                .chunks(chunk)
                .map(|run| {
                    scope.spawn(move || {
                        run.iter()
                            .filter_map(|(p, t)| process(procfs, *p, t, synth))
                            .collect::<Vec<Process>>()
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_default())
                .collect()
        })
    };
    let mut out = Synthesized::default();
    for p in parts.into_iter().flatten() {
        out.bytes.extend_from_slice(&p.bytes);
        out.processes += 1;
        out.threads += p.threads;
        out.unreadable_maps.extend(p.unreadable_maps);
    }
    out
}

/// Threads reading `/proc` at most, and processes per thread at least.
const MAX_WORKERS: usize = 8;
const PER_WORKER: usize = 32;

/// The records of one process.
struct Process {
    bytes: Vec<u8>,
    threads: usize,
    unreadable_maps: Option<(u32, String, String)>,
}

/// The records of process `pid` and its threads `tids`; `None` when it is gone.
fn process(procfs: &Path, pid: u32, tids: &[u32], synth: &Synth) -> Option<Process> {
    let (_, ppid) = ids(procfs, pid)?;
    let name = comm(procfs, pid, pid)?;
    let mut p = Process {
        bytes: Vec::new(),
        threads: 1,
        unreadable_maps: None,
    };
    synth.fork((pid, pid), (ppid, ppid), &mut p.bytes);
    synth.comm(pid, pid, &name, &mut p.bytes);
    if synth.namespaces {
        synth.namespaces(procfs, pid, pid, &mut p.bytes);
    }
    match read_proc(&procfs.join(format!("{pid}/maps"))) {
        Ok(maps) => {
            let maps = String::from_utf8_lossy(&maps);
            for mut m in maps.lines().filter_map(parse_maps_line) {
                if m.prot & libc::PROT_EXEC as u32 == 0 {
                    continue;
                }
                if m.path.is_empty() {
                    m.path = "//anon".into();
                }
                synth.mmap2(pid, &m, &mut p.bytes);
            }
        }
        // Gone since: leave the whole process out.
        Err(_) if !procfs.join(pid.to_string()).exists() => return None,
        Err(e) => p.unreadable_maps = Some((pid, name, e.to_string())),
    }
    for &tid in tids.iter().filter(|&&t| t != pid) {
        let Some(name) = comm(procfs, pid, tid) else {
            continue;
        };
        synth.fork((pid, tid), (pid, pid), &mut p.bytes);
        synth.comm(pid, tid, &name, &mut p.bytes);
        if synth.namespaces {
            synth.namespaces(procfs, pid, tid, &mut p.bytes);
        }
        p.threads += 1;
    }
    Some(p)
}

/// Where the cgroup2 hierarchy is mounted, from `PROCFS/self/mountinfo` (the first `cgroup2`
/// mount of its root, as perf's `cgroupfs_find_mountpoint`).
pub fn cgroup2_mount(procfs: &Path) -> Option<std::path::PathBuf> {
    let text = std::fs::read_to_string(procfs.join("self/mountinfo")).ok()?;
    text.lines().find_map(|line| {
        // ID PARENT MAJ:MIN ROOT MOUNT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER
        let (left, right) = line.split_once(" - ")?;
        let f: Vec<&str> = left.split(' ').collect();
        if right.split(' ').next() != Some("cgroup2") || f.get(3) != Some(&"/") {
            return None;
        }
        Some(std::path::PathBuf::from(unescape_mount(f.get(4)?)))
    })
}

/// mountinfo's octal escapes (`\040` for a space).
fn unescape_mount(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 3 < b.len()
            && let Ok(v) = u8::from_str_radix(&s[i + 1..i + 4], 8)
        {
            out.push(v);
            i += 4;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The CGROUP records of every cgroup that exists now (`--all-cgroups`), as perf's
/// `perf_event__synthesize_cgroups`: the cgroup2 tree walked from its mount point, parents
/// before children, each directory's id its inode number (kernfs gives a cgroup's id as its
/// inode number on 64-bit kernels, which is what `name_to_handle_at` returns perf) and its
/// path relative to the mount (`/` for the root). Nothing without a cgroup2 mount.
pub fn cgroups(procfs: &Path, synth: &Synth) -> Vec<u8> {
    use std::os::unix::fs::MetadataExt;
    let mut out = Vec::new();
    let Some(root) = cgroup2_mount(procfs) else {
        return out;
    };
    // Depth-first with an explicit stack, children in name order.
    let mut stack = vec![(root, "/".to_string())];
    while let Some((dir, rel)) = stack.pop() {
        let Ok(meta) = std::fs::symlink_metadata(&dir) else {
            continue;
        };
        synth.cgroup(meta.ino(), &rel, &mut out);
        let mut children: Vec<(std::path::PathBuf, String)> = std::fs::read_dir(&dir)
            .map(|rd| {
                rd.filter_map(Result::ok)
                    .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                    .map(|e| {
                        let name = e.file_name().to_string_lossy().into_owned();
                        let rel = if rel == "/" {
                            format!("/{name}")
                        } else {
                            format!("{rel}/{name}")
                        };
                        (e.path(), rel)
                    })
                    .collect()
            })
            .unwrap_or_default();
        children.sort_by(|a, b| b.1.cmp(&a.1));
        stack.extend(children);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_lines_parse() {
        let m = parse_maps_line(
            "7f1c2a000000-7f1c2a028000 r-xp 00028000 fd:01 1835032                    /usr/lib/x86_64-linux-gnu/libc.so.6",
        )
        .unwrap();
        assert_eq!(m.start, 0x7f1c_2a00_0000);
        assert_eq!(m.end, 0x7f1c_2a02_8000);
        assert_eq!(m.offset, 0x28000);
        assert_eq!((m.major, m.minor, m.inode), (0xfd, 1, 1_835_032));
        assert_eq!(m.prot, (libc::PROT_READ | libc::PROT_EXEC) as u32);
        assert_eq!(m.flags, libc::MAP_PRIVATE as u32);
        assert_eq!(m.path, "/usr/lib/x86_64-linux-gnu/libc.so.6");
        let anon = parse_maps_line("7ffd1000-7ffd2000 rw-p 00000000 00:00 0 ").unwrap();
        assert_eq!(anon.path, "");
        assert!(parse_maps_line("garbage").is_none());
    }

    #[test]
    fn synthesized_records_have_the_tracking_trailer() {
        let mut a = Attr::new(1, 0);
        a.sample_type = sample::IP | sample::TID | sample::TIME | sample::IDENTIFIER;
        let s = Synth::new(&a, 77);
        let mut out = Vec::new();
        s.comm(10, 11, "worker", &mut out);
        let size = usize::from(u16::from_le_bytes([out[6], out[7]]));
        assert_eq!(size, out.len());
        assert_eq!(size % 8, 0);
        // Last u64 is the IDENTIFIER, before it TIME, before it pid/tid.
        let last = u64::from_le_bytes(out[size - 8..].try_into().unwrap());
        assert_eq!(last, 77);
        assert_eq!(&out[size - 24..size - 20], &10u32.to_le_bytes());
        assert_eq!(&out[16..22], b"worker");
    }

    #[test]
    fn cgroup_records_carry_id_and_padded_path() {
        let mut a = Attr::new(1, 0);
        a.sample_type = sample::IP | sample::TID | sample::TIME | sample::IDENTIFIER;
        a.set(crate::event::attr::flag::CGROUP, true);
        let s = Synth::new(&a, 5);
        assert!(s.cgroups);
        let mut out = Vec::new();
        s.cgroup(0x1234, "/a/b", &mut out);
        assert_eq!(u32::from_le_bytes(out[..4].try_into().unwrap()), CGROUP);
        let size = usize::from(u16::from_le_bytes([out[6], out[7]]));
        // header, id, "/a/b\0" padded to 8, pid/tid, time, identifier.
        assert_eq!(size, 8 + 8 + 8 + 8 + 8 + 8);
        assert_eq!(&out[8..16], &0x1234u64.to_le_bytes());
        assert_eq!(&out[16..24], b"/a/b\0\0\0\0");
        assert_eq!(&out[size - 8..], &5u64.to_le_bytes());
    }

    #[test]
    fn cgroup2_mount_is_read_from_mountinfo() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("self")).unwrap();
        std::fs::write(
            dir.path().join("self/mountinfo"),
            "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n\
             40 31 0:38 /sub /elsewhere rw - cgroup2 cgroup2 rw\n\
             41 31 0:38 / /sys/fs/cgroup/uni\\040fied rw,relatime - cgroup2 cgroup2 rw\n",
        )
        .unwrap();
        assert_eq!(
            cgroup2_mount(dir.path()),
            Some(std::path::PathBuf::from("/sys/fs/cgroup/uni fied"))
        );
        std::fs::write(dir.path().join("self/mountinfo"), "").unwrap();
        assert_eq!(cgroup2_mount(dir.path()), None);
        assert!(cgroups(dir.path(), &Synth::new(&Attr::new(1, 0), 1)).is_empty());
    }

    /// Decodes `(type, pid, tid, text)` of synthesized records: COMM's name, MMAP2's path,
    /// FORK's `ppid/ptid`.
    fn decoded(bytes: &[u8]) -> Vec<(u32, u32, u32, String)> {
        let mut v = Vec::new();
        let mut at = 0;
        while at + 8 <= bytes.len() {
            let ty = u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap());
            let size = usize::from(u16::from_le_bytes([bytes[at + 6], bytes[at + 7]]));
            let body = &bytes[at + 8..at + size];
            let u32_at = |o: usize| u32::from_le_bytes(body[o..o + 4].try_into().unwrap());
            let cstr = |o: usize| {
                let s = &body[o..];
                String::from_utf8_lossy(&s[..s.iter().position(|&b| b == 0).unwrap()]).into_owned()
            };
            v.push(match ty {
                COMM => (ty, u32_at(0), u32_at(4), cstr(8)),
                FORK => (
                    ty,
                    u32_at(0),
                    u32_at(8),
                    format!("{}/{}", u32_at(4), u32_at(12)),
                ),
                MMAP2 => (ty, u32_at(0), u32_at(4), cstr(64)),
                _ => panic!("type {ty}"),
            });
            at += size;
        }
        v
    }

    #[test]
    fn running_tasks_become_fork_comm_and_mmap2_records() {
        let dir = tempfile::tempdir().unwrap();
        let proc = dir.path();
        let task = |pid: u32, tid: u32, comm: &str, ppid: u32| {
            let t = proc.join(format!("{pid}/task/{tid}"));
            std::fs::create_dir_all(&t).unwrap();
            std::fs::write(t.join("comm"), format!("{comm}\n")).unwrap();
            if pid == tid {
                let status = format!("Name:\t{comm}\nTgid:\t{pid}\nPPid:\t{ppid}\n");
                std::fs::write(proc.join(format!("{pid}/status")), status).unwrap();
            }
        };
        // kthreadd: no mappings; a two-thread program with its code, a data mapping and JIT
        // code; a process whose maps cannot be read; one that exits while it is read.
        task(2, 2, "kthreadd", 0);
        std::fs::write(proc.join("2/maps"), "").unwrap();
        task(40, 40, "server", 1);
        task(40, 41, "worker one", 1);
        std::fs::write(
            proc.join("40/maps"),
            "5000-6000 r-xp 00001000 fe:00 12 /usr/bin/server\n\
             6000-7000 rw-p 00000000 00:00 0 \n\
             7000-8000 r-xp 00000000 00:00 0 \n",
        )
        .unwrap();
        task(50, 50, "secret", 1);
        std::fs::create_dir(proc.join("50/maps")).unwrap();
        std::fs::create_dir_all(proc.join("60/task/60")).unwrap();

        let mut a = Attr::new(1, 0);
        a.sample_type = sample::IP | sample::TID | sample::TIME;
        let s = Synth::new(&a, 1);
        let all = synthesize(proc, Tasks::All, &s);
        assert_eq!((all.processes, all.threads), (3, 4));
        assert_eq!(all.unreadable_maps.len(), 1);
        assert_eq!(all.unreadable_maps[0].0, 50);
        let r = |ty, pid, tid, text: &str| (ty, pid, tid, text.to_string());
        assert_eq!(
            decoded(&all.bytes),
            [
                r(FORK, 2, 2, "0/0"),
                r(COMM, 2, 2, "kthreadd"),
                r(FORK, 40, 40, "1/1"),
                r(COMM, 40, 40, "server"),
                r(MMAP2, 40, 40, "/usr/bin/server"),
                r(MMAP2, 40, 40, "//anon"),
                r(FORK, 40, 41, "40/40"),
                r(COMM, 40, 41, "worker one"),
                r(FORK, 50, 50, "1/1"),
                r(COMM, 50, 50, "secret"),
            ]
        );
        // -t 40: its process's records, not its other thread's; a vanished tid is skipped.
        // (A thread's own `/proc/TID` is hidden from readdir, so this tree cannot hold one.)
        let some = synthesize(proc, Tasks::These(&[40, 99]), &s);
        assert_eq!(
            decoded(&some.bytes),
            [
                r(FORK, 40, 40, "1/1"),
                r(COMM, 40, 40, "server"),
                r(MMAP2, 40, 40, "/usr/bin/server"),
                r(MMAP2, 40, 40, "//anon"),
            ]
        );
        // A workload's tree: 40, and 70 whose parent 65 is 40's child; not 50 or 2.
        task(65, 65, "child", 40);
        std::fs::write(proc.join("65/maps"), "").unwrap();
        task(70, 70, "grandchild", 65);
        std::fs::write(proc.join("70/maps"), "").unwrap();
        let tree = synthesize(proc, Tasks::Tree(40), &s);
        let pids: std::collections::BTreeSet<u32> =
            decoded(&tree.bytes).iter().map(|d| d.1).collect();
        assert_eq!(pids, [40, 65, 70].into());
        assert_eq!((tree.processes, tree.threads), (3, 4));
    }
}
