//! Which file a process really mapped, found while it lives.
//!
//! A path names a file only in one mount namespace: a process in a container or a chroot can
//! map `/opt/app/busy` where the host has another build at that path, and once the process
//! has exited nothing on the host leads to its file. So, while recording:
//!
//! - **The identity of each mapping.** With `attr.build_id` (Linux 5.12+, asked by the planner
//!   unless `-B`) the kernel puts the mapped file's build-id in each MMAP2 record, which the
//!   reader keys the file by ([`crate::symbol::maps::MappedFile::build_id`]). Older kernels
//!   (and the records hrec synthesizes from `/proc` for tasks that were already running) give
//!   the file's device and inode instead: a candidate file counts only if its own device and
//!   inode are those.
//! - **The file, while its process lives.** Each mapped file is looked at as soon as the drain
//!   loop has seen its MMAP2 record, on a thread of its own (the drain loop only queues it):
//!   when the file at its path in hrec's own view is not the one mapped (another build, or
//!   none), it is read through `/proc/PID/map_files/START-END` (the mapping itself; root), or
//!   `/proc/PID/root/PATH` (the process's own root, its mount namespace or chroot; without
//!   entering any namespace), checked against the build-id or device and inode, and copied
//!   into the build-id cache under the path the process saw (`<cache>/<path>/<build-id>/elf`,
//!   perf's layout), where `report` looks first, with its separate debug file where the
//!   process's root has one (`/usr/lib/debug/.build-id`, or its `.gnu_debuglink` name as gdb
//!   looks for it). `-N` turns the copies off. A file that matches at its path is left where
//!   it is, as hrec has always done.
//! - **JIT code in a container.** A process with anonymous executable mappings whose pid or
//!   root is not hrec's writes its perf map as `/tmp/perf-<its own pid>.map` under its own
//!   root; that `/tmp` is held open while recording and the map read at the end, stored in a
//!   `perf-map` side block ([`crate::symbol::perfmap`]) that the report reads before any
//!   `/tmp/perf-PID.map` of its own machine.
//! - **The build-ids block.** For mappings in device-and-inode form, the build-id of the file
//!   found this way is the one the file's `build-ids` block gives for its path, not the build-id
//!   of whatever file sits at that path when the recording ends.
//!
//! A file that cannot be read before its process exits is counted and said once; its samples
//! stay unresolved when the file at its path is another build, never named from it.

use std::collections::{HashMap, HashSet};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use crate::symbol::buildid_cache::{self, Cache};

/// How a mapping's record says which file it is.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum MappedId {
    /// Anonymous executable memory (JIT code): named by the process's perf map.
    Jit,
    /// The build-id the kernel read from the mapped file.
    BuildId(Vec<u8>),
    /// The file's device (`makedev(maj, min)`) and inode.
    Inode {
        /// `st_dev`.
        dev: u64,
        /// `st_ino`.
        ino: u64,
    },
}

/// One file mapping of a process, from an MMAP2 record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mapped {
    /// The process.
    pub pid: u32,
    /// First address.
    pub start: u64,
    /// One past the last.
    pub end: u64,
    /// The path as the process saw it.
    pub path: Vec<u8>,
    /// Which file.
    pub id: MappedId,
}

/// Reads the file mapping of a raw MMAP2 record (`None` for anonymous and pseudo files, data
/// mappings and the kernel's).
pub fn parse_mmap2(r: &[u8]) -> Option<Mapped> {
    const MISC_MMAP_DATA: u16 = 1 << 13;
    const MISC_MMAP_BUILD_ID: u16 = 1 << 14;
    let u32_at = |o: usize| Some(u32::from_le_bytes(r.get(o..o + 4)?.try_into().ok()?));
    let u64_at = |o: usize| Some(u64::from_le_bytes(r.get(o..o + 8)?.try_into().ok()?));
    let misc = u16::from_le_bytes(r.get(4..6)?.try_into().ok()?);
    if misc & MISC_MMAP_DATA != 0 {
        return None;
    }
    let pid = u32_at(8)?;
    let (start, len) = (u64_at(16)?, u64_at(24)?);
    let name = r.get(72..)?;
    let path = &name[..name.iter().position(|&b| b == 0).unwrap_or(name.len())];
    if pid == u32::MAX {
        return None;
    }
    if path.starts_with(b"//anon") && u32_at(64)? & libc::PROT_EXEC as u32 != 0 {
        return Some(Mapped {
            pid,
            start,
            end: start.saturating_add(len),
            path: path.to_vec(),
            id: MappedId::Jit,
        });
    }
    if path.first() != Some(&b'/') || path.starts_with(b"//") {
        return None;
    }
    let id = if misc & MISC_MMAP_BUILD_ID != 0 {
        let size = usize::from(*r.get(40)?).min(20);
        let id = r.get(44..44 + size)?;
        if id.is_empty() {
            return None;
        }
        MappedId::BuildId(id.to_vec())
    } else {
        let (maj, min) = (u32_at(40)?, u32_at(44)?);
        MappedId::Inode {
            dev: libc::makedev(maj, min),
            ino: u64_at(48)?,
        }
    };
    Some(Mapped {
        pid,
        start,
        end: start.saturating_add(len),
        path: path.to_vec(),
        id,
    })
}

/// The most of one perf map kept (a JIT's map grows with its compiled functions).
const PERF_MAP_LIMIT: u64 = 64 << 20;

pub use crate::symbol::perfmap::SIDE as PERF_MAP_SIDE;

/// Build-ids (hex) by path, of files found in device-and-inode form.
pub type Found = Arc<Mutex<HashMap<Vec<u8>, String>>>;

/// What the files' identities came to, for the summary.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IdentityReport {
    /// Files copied into the build-id cache: the path the process saw and the build-id (hex).
    pub copied: Vec<(PathBuf, String)>,
    /// Files whose process was gone, or whose file could not be read, before hrec could
    /// read it (the path, and why).
    pub missed: Vec<(PathBuf, String)>,
    /// The cache written to.
    pub cache: Option<PathBuf>,
    /// The perf maps (`/tmp/perf-PID.map`) of processes with JIT code in another mount or pid
    /// namespace, read from their own `/tmp` at the end: the host pid and the map's text.
    pub perf_maps: Vec<(u32, Vec<u8>)>,
}

impl IdentityReport {
    /// Lines for the end of the recording (none when there is nothing to say).
    pub fn lines(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let (false, Some(c)) = (self.copied.is_empty(), &self.cache) {
            let n = self.copied.len();
            out.push(format!(
                "{n} {} mapped from another mount namespace or root (a container, a chroot) or changed on disk copied into the build-id cache {} (-N: no copies)",
                if n == 1 { "file" } else { "files" },
                c.display()
            ));
        }
        if !self.missed.is_empty() {
            let names: Vec<String> = self
                .missed
                .iter()
                .take(3)
                .map(|(p, why)| format!("{} ({why})", p.display()))
                .collect();
            out.push(format!(
                "warning: {} mapped {} could not be read while their process lived, and the file at their path is another build: their samples stay unresolved: {}{}",
                self.missed.len(),
                if self.missed.len() == 1 { "file" } else { "files" },
                names.join(", "),
                if self.missed.len() > 3 { ", ..." } else { "" }
            ));
        }
        out
    }
}

/// The thread that finds the files (see the module docs).
#[derive(Debug)]
pub struct Identities {
    tx: Option<mpsc::Sender<Vec<Mapped>>>,
    handle: Option<JoinHandle<IdentityReport>>,
    found: Arc<Mutex<HashMap<Vec<u8>, String>>>,
}

impl Identities {
    /// Starts the thread; `cache`: where to copy files (`None` with `-N`); `procfs`: `/proc`.
    pub fn start(cache: Option<PathBuf>, procfs: PathBuf) -> Identities {
        let (tx, rx) = mpsc::channel::<Vec<Mapped>>();
        let found = Arc::new(Mutex::new(HashMap::new()));
        let shared = Arc::clone(&found);
        let handle = std::thread::Builder::new()
            .name("hrec-identity".into())
            .spawn(move || {
                let mut w = Worker::new(cache.map(Cache::new), procfs, shared);
                for batch in rx {
                    for m in batch {
                        w.take(&m);
                    }
                }
                w.report()
            })
            .ok();
        Identities {
            tx: Some(tx),
            handle,
            found,
        }
    }

    /// Queues the mappings the drain loop saw (never waits).
    pub fn send(&self, batch: Vec<Mapped>) {
        if batch.is_empty() {
            return;
        }
        if let Some(tx) = &self.tx {
            let _ = tx.send(batch);
        }
    }

    /// The build-ids (hex) found for mappings in device-and-inode form, by path, as the
    /// thread fills them in.
    pub fn shared(&self) -> Found {
        Arc::clone(&self.found)
    }

    /// Waits for the queue to be worked off; what it came to.
    pub fn finish(mut self) -> IdentityReport {
        self.tx = None;
        self.handle
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default()
    }
}

/// The file at a path in hrec's own view: its device and inode, and its build-id once asked
/// for (records in device-and-inode form that match need none).
#[derive(Debug, Clone, Default)]
struct Local {
    dev_ino: Option<(u64, u64)>,
    build_id: Option<Option<Vec<u8>>>,
}

struct Worker {
    cache: Option<Cache>,
    procfs: PathBuf,
    /// (path, id) settled: the file is where the reader will find it, or was copied.
    done: HashSet<(Vec<u8>, MappedId)>,
    /// (path, id) that could not be read, and why (another process may still map it).
    missed: HashMap<(Vec<u8>, MappedId), String>,
    local: HashMap<Vec<u8>, Local>,
    found: Arc<Mutex<HashMap<Vec<u8>, String>>>,
    copied: Vec<(PathBuf, String)>,
    /// Processes with JIT code seen (each looked at once), and for those in another
    /// namespace their `/tmp` held open (so it can be read after they exit) with the pid their
    /// perf map is named by.
    jit_seen: HashSet<u32>,
    jits: Vec<(u32, u32, std::fs::File)>,
}

impl Worker {
    fn new(
        cache: Option<Cache>,
        procfs: PathBuf,
        found: Arc<Mutex<HashMap<Vec<u8>, String>>>,
    ) -> Worker {
        Worker {
            cache,
            procfs,
            done: HashSet::new(),
            missed: HashMap::new(),
            local: HashMap::new(),
            found,
            copied: Vec::new(),
            jit_seen: HashSet::new(),
            jits: Vec::new(),
        }
    }

    fn local(&mut self, path: &[u8]) -> &mut Local {
        self.local.entry(path.to_vec()).or_insert_with(|| {
            let p = Path::new(std::ffi::OsStr::from_bytes(path));
            Local {
                dev_ino: std::fs::metadata(p).ok().map(|m| (m.dev(), m.ino())),
                build_id: None,
            }
        })
    }

    /// The build-id of the file at `path` in hrec's own view.
    fn local_id(&mut self, path: &[u8]) -> Option<Vec<u8>> {
        self.local(path)
            .build_id
            .get_or_insert_with(|| read_id(Path::new(std::ffi::OsStr::from_bytes(path))))
            .clone()
    }

    /// Where the process's file may be read: the mapping itself, then the path under the
    /// process's root.
    fn candidates(&self, m: &Mapped) -> [PathBuf; 2] {
        let proc = self.procfs.join(m.pid.to_string());
        let rel = Path::new(std::ffi::OsStr::from_bytes(&m.path[1..]));
        [
            proc.join("map_files")
                .join(format!("{:x}-{:x}", m.start, m.end)),
            proc.join("root").join(rel),
        ]
    }

    fn take(&mut self, m: &Mapped) {
        if m.id == MappedId::Jit {
            self.jit(m.pid);
            return;
        }
        let key = (m.path.clone(), m.id.clone());
        if self.done.contains(&key) {
            return;
        }
        let path = PathBuf::from(std::ffi::OsStr::from_bytes(&m.path));
        let mut why = "the process exited first".to_string();
        let file = match &m.id {
            MappedId::Jit => None,
            MappedId::BuildId(id) => {
                if self.local_id(&m.path).as_deref() == Some(id) {
                    self.settle(key);
                    return;
                }
                if self.cache.as_ref().is_some_and(|c| c.binary(id).is_some()) {
                    self.settle(key);
                    return;
                }
                self.candidates(m).into_iter().find_map(|c| {
                    let got = read_id(&c);
                    match got {
                        Some(g) if g == *id => Some((c, g)),
                        Some(_) => {
                            why = "its file there is another build".into();
                            None
                        }
                        None => None,
                    }
                })
            }
            MappedId::Inode { dev, ino } => {
                if same_file(self.local(&m.path).dev_ino, *dev, *ino) {
                    // The very file at its path: its build-id is read there at the end.
                    self.settle(key);
                    return;
                }
                self.candidates(m).into_iter().find_map(|c| {
                    let meta = std::fs::metadata(&c).ok()?;
                    if !same_file(Some((meta.dev(), meta.ino())), *dev, *ino) {
                        why = "its file there is another file".into();
                        return None;
                    }
                    read_id(&c).map(|g| (c, g))
                })
            }
        };
        let Some((source, id)) = file else {
            let maps = std::fs::read(self.procfs.join(m.pid.to_string()).join("maps"));
            if why.starts_with("the process exited")
                && maps.is_err_and(|e| e.kind() == std::io::ErrorKind::PermissionDenied)
            {
                why = "its files cannot be read here: another user's process (run as root)".into();
            }
            self.missed.insert(key, why);
            return;
        };
        let hex = buildid_cache::hex(&id);
        if matches!(m.id, MappedId::Inode { .. })
            && let Ok(mut f) = self.found.lock()
        {
            f.insert(m.path.clone(), hex.clone());
        }
        self.missed.remove(&key);
        if self.local_id(&m.path).as_deref() != Some(&id[..])
            && let Some(c) = &self.cache
            && c.binary(&id).is_none()
        {
            match c.add_mapped(&source, &path, &id) {
                Ok(_) => {
                    // Its debug file, where the process's own root has one.
                    if let Some(debug) = self.debug_file(m, &source, &id) {
                        let _ = c.add_debug_mapped(&debug, &path, &id);
                    }
                    self.copied.push((path, hex));
                }
                Err(e) => {
                    self.missed
                        .insert((m.path.clone(), m.id.clone()), e.to_string());
                    return;
                }
            }
        }
        self.settle((m.path.clone(), m.id.clone()));
    }

    /// The separate debug file of the binary `elf` (mapped by `m`, with `id`) under the
    /// process's root: `/usr/lib/debug/.build-id/xx/rest.debug`, then its `.gnu_debuglink`
    /// name next to the binary, in `.debug/` there and under `/usr/lib/debug/<dir>/`, as gdb
    /// and perf look; the one whose build-id is `id`.
    fn debug_file(&self, m: &Mapped, elf: &Path, id: &[u8]) -> Option<PathBuf> {
        use object::Object;
        let root = self.procfs.join(m.pid.to_string()).join("root");
        let hex = buildid_cache::hex(id);
        let mut cands = Vec::new();
        if hex.len() > 2 {
            cands.push(root.join(format!(
                "usr/lib/debug/.build-id/{}/{}.debug",
                &hex[..2],
                &hex[2..]
            )));
        }
        let link = std::fs::File::open(elf).ok().and_then(|f| {
            let cache = object::ReadCache::new(f);
            let obj = object::File::parse(&cache).ok()?;
            let (name, _) = obj.gnu_debuglink().ok()??;
            Some(PathBuf::from(std::ffi::OsStr::from_bytes(name)))
        });
        let dir = Path::new(std::ffi::OsStr::from_bytes(&m.path[1..]))
            .parent()
            .map(Path::to_path_buf);
        let own = Path::new(std::ffi::OsStr::from_bytes(&m.path)).file_name();
        if let (Some(name), Some(dir)) = (link, dir)
            && name.file_name() == Some(name.as_os_str())
            && own != Some(name.as_os_str())
        {
            cands.push(root.join(&dir).join(&name));
            cands.push(root.join(&dir).join(".debug").join(&name));
            cands.push(root.join("usr/lib/debug").join(&dir).join(&name));
        }
        cands
            .into_iter()
            .find(|c| read_id(c).as_deref() == Some(id))
    }

    /// A process with JIT code: when its pid in its own pid namespace (`NStgid`) or its root
    /// is not hrec's, its perf map is `/tmp/perf-<NStgid>.map` under its root (perf's
    /// `dso__find_perf_map` looks there first too); that `/tmp` is held open.
    fn jit(&mut self, pid: u32) {
        if !self.jit_seen.insert(pid) {
            return;
        }
        let proc = self.procfs.join(pid.to_string());
        let Ok(status) = std::fs::read_to_string(proc.join("status")) else {
            return;
        };
        let nstgid = status
            .lines()
            .find_map(|l| l.strip_prefix("NStgid:"))
            .and_then(|v| v.split_whitespace().last()?.parse::<u32>().ok())
            .unwrap_or(pid);
        let ns = |p: &Path| std::fs::read_link(p.join("ns/mnt")).ok();
        let other_root = std::fs::read_link(proc.join("root")).ok() != Some(PathBuf::from("/"))
            || ns(&proc) != ns(&self.procfs.join("self"));
        if nstgid == pid && !other_root {
            return;
        }
        use std::os::unix::fs::OpenOptionsExt;
        if let Ok(tmp) = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_PATH | libc::O_DIRECTORY)
            .open(proc.join("root/tmp"))
        {
            self.jits.push((pid, nstgid, tmp));
        }
    }

    fn settle(&mut self, key: (Vec<u8>, MappedId)) {
        self.missed.remove(&key);
        self.done.insert(key);
    }

    fn report(self) -> IdentityReport {
        let mut missed: Vec<(PathBuf, String)> = self
            .missed
            .into_iter()
            .filter(|((path, id), _)| {
                // Only files whose path now holds another build (or nothing) matter: a file
                // that matches at its path resolves without a copy.
                let p = Path::new(std::ffi::OsStr::from_bytes(path));
                match id {
                    MappedId::Jit => false,
                    MappedId::BuildId(id) => read_id(p).as_deref() != Some(&id[..]),
                    MappedId::Inode { dev, ino } => {
                        let here = std::fs::metadata(p).ok().map(|m| (m.dev(), m.ino()));
                        !same_file(here, *dev, *ino)
                    }
                }
            })
            .map(|((p, _), why)| (PathBuf::from(std::ffi::OsStr::from_bytes(&p)), why))
            .collect();
        missed.sort();
        missed.dedup_by(|a, b| a.0 == b.0);
        let perf_maps = self
            .jits
            .iter()
            .filter_map(|(pid, nstgid, tmp)| {
                use std::io::Read;
                use std::os::fd::AsRawFd;
                let path = self
                    .procfs
                    .join("self/fd")
                    .join(tmp.as_raw_fd().to_string())
                    .join(format!("perf-{nstgid}.map"));
                let mut text = Vec::new();
                std::fs::File::open(path)
                    .ok()?
                    .take(PERF_MAP_LIMIT)
                    .read_to_end(&mut text)
                    .ok()?;
                Some((*pid, text))
            })
            .collect();
        IdentityReport {
            copied: self.copied,
            missed,
            cache: self.cache.map(|c| c.root().to_path_buf()),
            perf_maps,
        }
    }
}

/// Whether a file's `(st_dev, st_ino)` is the record's device and inode. The inode decides
/// alone: `/proc/PID/maps` (and so the kernel's records) give a file's superblock device,
/// which `stat` does not on btrfs subvolumes and overlay mounts; the path is the same too.
fn same_file(file: Option<(u64, u64)>, _dev: u64, ino: u64) -> bool {
    file.is_some_and(|(_, i)| i == ino)
}

/// The build-id of the ELF file at `p` (reading only its headers and notes).
fn read_id(p: &Path) -> Option<Vec<u8>> {
    use object::Object;
    let file = std::fs::File::open(p).ok()?;
    let cache = object::ReadCache::new(file);
    let obj = object::File::parse(&cache).ok()?;
    let id = obj.build_id().ok()??;
    (!id.is_empty()).then(|| id.to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mmap2(misc: u16, pid: u32, file: [u8; 24], name: &[u8]) -> Vec<u8> {
        let mut r = Vec::new();
        r.extend_from_slice(&10u32.to_le_bytes());
        r.extend_from_slice(&misc.to_le_bytes());
        r.extend_from_slice(&0u16.to_le_bytes());
        r.extend_from_slice(&pid.to_le_bytes());
        r.extend_from_slice(&pid.to_le_bytes());
        r.extend_from_slice(&0x1000u64.to_le_bytes());
        r.extend_from_slice(&0x2000u64.to_le_bytes());
        r.extend_from_slice(&0u64.to_le_bytes());
        r.extend_from_slice(&file);
        r.extend_from_slice(&5u32.to_le_bytes());
        r.extend_from_slice(&2u32.to_le_bytes());
        r.extend_from_slice(name);
        r.extend_from_slice(&[0; 8][..8 - name.len() % 8]);
        let len = r.len() as u16;
        r[6..8].copy_from_slice(&len.to_le_bytes());
        r
    }

    #[test]
    fn mmap2_records_give_the_build_id_or_the_device_and_inode() {
        let mut f = [0u8; 24];
        f[0] = 3;
        f[4..7].copy_from_slice(&[0xab, 0xcd, 0xef]);
        let m = parse_mmap2(&mmap2(1 << 14, 7, f, b"/opt/app/busy")).unwrap();
        assert_eq!(
            (m.pid, m.start, m.end, &m.path[..]),
            (7, 0x1000, 0x3000, &b"/opt/app/busy"[..])
        );
        assert_eq!(m.id, MappedId::BuildId(vec![0xab, 0xcd, 0xef]));
        let mut f = [0u8; 24];
        f[0..4].copy_from_slice(&0xfdu32.to_le_bytes());
        f[4..8].copy_from_slice(&1u32.to_le_bytes());
        f[8..16].copy_from_slice(&4242u64.to_le_bytes());
        let m = parse_mmap2(&mmap2(0, 7, f, b"/usr/lib/libc.so.6")).unwrap();
        assert_eq!(
            m.id,
            MappedId::Inode {
                dev: libc::makedev(0xfd, 1),
                ino: 4242
            }
        );
        // Anonymous executable memory: JIT code.
        let jit = parse_mmap2(&mmap2(0, 7, f, b"//anon")).unwrap();
        assert_eq!(
            (jit.id, jit.start, jit.end),
            (MappedId::Jit, 0x1000, 0x3000)
        );
        // Data mappings, pseudo files, anonymous memory that is not executable, an empty
        // build-id, a cut record: none.
        assert_eq!(parse_mmap2(&mmap2(1 << 13, 7, f, b"/usr/lib/x")), None);
        assert_eq!(parse_mmap2(&mmap2(0, 7, f, b"[vdso]")), None);
        let mut rw = mmap2(0, 7, f, b"//anon");
        rw[64..68].copy_from_slice(&3u32.to_le_bytes());
        assert_eq!(parse_mmap2(&rw), None);
        assert_eq!(parse_mmap2(&mmap2(1 << 14, 7, [0; 24], b"/x")), None);
        assert_eq!(parse_mmap2(&mmap2(0, 7, f, b"/x")[..60]), None);
    }

    /// This test's own executable, mapped by this process, through a fake procfs whose
    /// `PID/root` is a directory with another build at the same path: the mapping's file is
    /// found by its build-id under the process's root and copied into the cache under the
    /// path the process saw; the same mapping again is settled.
    #[test]
    fn a_file_of_another_root_is_copied_under_the_path_the_process_saw() {
        let exe = std::env::current_exe().unwrap();
        let id = read_id(&exe).expect("test binaries have a build-id");
        let tmp = tempfile::tempdir().unwrap();
        let procfs = tmp.path().join("proc");
        let root = procfs.join("77/root/opt/app");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::copy(&exe, root.join("busy")).unwrap();
        let cache = tmp.path().join("cache");
        let mut w = Worker::new(Some(Cache::new(&cache)), procfs.clone(), Arc::default());
        let m = Mapped {
            pid: 77,
            start: 0x1000,
            end: 0x2000,
            path: b"/opt/app/busy".to_vec(),
            id: MappedId::BuildId(id.clone()),
        };
        w.take(&m);
        w.take(&m);
        let cached = Cache::new(&cache).binary(&id).expect("copied");
        assert_eq!(read_id(&cached), Some(id.clone()));
        assert!(
            cache
                .join("opt/app/busy")
                .join(buildid_cache::hex(&id))
                .join("elf")
                .is_file()
        );
        // Another build at the path under the root: refused, said.
        let other = Mapped {
            id: MappedId::BuildId(vec![1, 2, 3, 4]),
            ..m.clone()
        };
        w.take(&other);
        let r = w.report();
        assert_eq!(r.copied.len(), 1);
        assert_eq!(
            r.missed,
            [(
                PathBuf::from("/opt/app/busy"),
                "its file there is another build".to_string()
            )]
        );
        assert_eq!(r.lines().len(), 2, "{:?}", r.lines());
    }

    /// A file in device-and-inode form is taken only when its device and inode are the
    /// record's; its build-id is then the one the path gets in the build-ids block.
    #[test]
    fn device_and_inode_pick_the_file_and_give_its_build_id() {
        let exe = std::env::current_exe().unwrap();
        let id = read_id(&exe).unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let procfs = tmp.path().join("proc");
        let root = procfs.join("78/root/srv");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::copy(&exe, root.join("app")).unwrap();
        let meta = std::fs::metadata(root.join("app")).unwrap();
        let found = Arc::new(Mutex::new(HashMap::new()));
        let mut w = Worker::new(None, procfs, Arc::clone(&found));
        let m = |ino| Mapped {
            pid: 78,
            start: 0,
            end: 0x1000,
            path: b"/srv/app".to_vec(),
            id: MappedId::Inode {
                dev: meta.dev(),
                ino,
            },
        };
        w.take(&m(meta.ino() + 1));
        assert!(found.lock().unwrap().is_empty());
        w.take(&m(meta.ino()));
        assert_eq!(
            found.lock().unwrap().get(&b"/srv/app"[..]),
            Some(&buildid_cache::hex(&id))
        );
        // No cache (-N): nothing copied; the other inode was never found.
        let r = w.report();
        assert!(r.copied.is_empty(), "{r:?}");
        assert_eq!(
            r.missed,
            [(
                PathBuf::from("/srv/app"),
                "its file there is another file".to_string()
            )]
        );
    }
}
