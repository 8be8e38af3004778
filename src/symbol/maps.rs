//! Address spaces over time, rebuilt from the side-band records.
//!
//! Rules, applied in timestamp order (see the module root for why):
//! - **MMAP/MMAP2** add a mapping to the process `pid`; like `mmap(MAP_FIXED)` it replaces
//!   whatever it overlaps (the parts outside it survive, split if needed). Records with
//!   `pid == -1` describe the kernel and are ignored here (kernel addresses resolve through
//!   kallsyms). Data mappings (`MMAP_DATA`) are ignored: they never hold code; the address
//!   spaces of data addresses ([`AddressSpaces::with_data`]) take them too.
//! - **COMM with `COMM_EXEC`**: exec replaces the address space: the new image's MMAPs start
//!   a new map, and the old one is kept behind it for addresses the new one does not map. A
//!   thread still inside `execve` after the COMM (`setup_arg_pages`, the interpreter's
//!   mapping) has its user frames in the old image, and perf, which lets the new MMAPs
//!   overwrite the old mappings they overlap, names them there too.
//! - **FORK** of a new process (`pid != ppid`) copies the parent's mappings: the child runs
//!   the parent's code until it execs, and the kernel sends no MMAPs for inherited mappings.
//!   A new thread (`pid == ppid`) shares its process's mappings, which are keyed by pid.
//! - **EXIT** leaves the mappings in place: samples taken just before exit may be ordered
//!   after it, and pids are not reused within one recording often enough to matter.
//!
//! **A file is its path and its build-id.** Where an MMAP2 record gives the build-id
//! (`attr.build_id`, Linux 5.12+), two builds mapped at one path (a container's and the
//! host's) are two files ([`MappedFile::build_id`]). Each is loaded against its own build-id
//! (the record's, else the one the recording's `build-ids` block gives for the path), from
//! perf's build-id cache first, then from its path (`Binary::load_recorded`).

use std::collections::{BTreeMap, HashMap};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::Arc;

use crate::decode::{FileId, Record};

/// Index of a file in [`AddressSpaces::files`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FileIdx(pub u32);

/// One mapping of a file (or anonymous memory) into a process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Mapping {
    /// First address.
    pub start: u64,
    /// One past the last address.
    pub end: u64,
    /// File offset of `start`.
    pub pgoff: u64,
    /// The file.
    pub file: FileIdx,
}

impl Mapping {
    /// The file offset of `addr` (which must lie inside the mapping).
    pub fn file_offset(&self, addr: u64) -> u64 {
        addr - self.start + self.pgoff
    }
}

/// A mapped file's name, and which build of it was mapped when the record says so.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MappedFile {
    /// The path (or pseudo name such as `//anon`, `[vdso]`) as the record gave it.
    pub path: Arc<Path>,
    /// What perf shows in the Shared Object column: the file name without directories.
    pub short: Arc<str>,
    /// The build-id of the file the process mapped, from its MMAP2 record (`attr.build_id`,
    /// Linux 5.12+): a process in another mount namespace or a chroot may map another build
    /// at the same path, so one path can be several files.
    pub build_id: Option<Arc<[u8]>>,
}

impl MappedFile {
    /// Anonymous memory (JIT code, heap): no file describes it.
    pub fn is_anonymous(&self) -> bool {
        let p = self.path.as_os_str().as_bytes();
        p.starts_with(b"//anon")
            || p.starts_with(b"[anon")
            || p.starts_with(b"/memfd:")
            || p == b"[heap]"
            || p.starts_with(b"[stack")
            || p.starts_with(b"/dev/zero")
            || p.is_empty()
    }

    /// A memfd (`/memfd:NAME`, ` (deleted)` once closed): anonymous to hrec's readers, a
    /// file to perf's, which key its addresses by file offset and name it by its path.
    pub fn is_memfd(&self) -> bool {
        self.path.as_os_str().as_bytes().starts_with(b"/memfd:")
    }

    /// A kernel-provided pseudo file (`[vdso]`, `[vsyscall]`) that is not on disk.
    pub fn is_pseudo(&self) -> bool {
        let p = self.path.as_os_str().as_bytes();
        p.starts_with(b"[") && !self.is_anonymous()
    }
}

/// The mappings of every process, as of the last record applied.
#[derive(Debug, Default)]
pub struct AddressSpaces {
    procs: HashMap<u32, BTreeMap<u64, Mapping>>,
    files: Vec<MappedFile>,
    /// Per name, its files (one per build-id the records gave, or none): looked up without
    /// allocating, as every MMAP record is.
    by_name: HashMap<Vec<u8>, Vec<FileIdx>>,
    /// Data mappings (`MMAP_DATA`) count too ([`AddressSpaces::with_data`]).
    data: bool,
    /// Per process that exec'd, the mappings of its image before (looked up where the new
    /// image maps nothing).
    before_exec: HashMap<u32, BTreeMap<u64, Mapping>>,
}

impl AddressSpaces {
    /// Empty.
    pub fn new() -> AddressSpaces {
        AddressSpaces::default()
    }

    /// Empty, for data addresses: the data mappings (`MMAP_DATA`, which `mmap_data` asks the
    /// kernel for: a program's `.data`, `[heap]`, `[stack]`, anonymous memory) count as well as
    /// the executable ones, as perf keeps both in one map of each process.
    pub fn with_data() -> AddressSpaces {
        AddressSpaces {
            data: true,
            ..AddressSpaces::default()
        }
    }

    /// The files seen so far, indexed by [`FileIdx`].
    pub fn files(&self) -> &[MappedFile] {
        &self.files
    }

    /// One file.
    pub fn file(&self, f: FileIdx) -> &MappedFile {
        &self.files[f.0 as usize]
    }

    /// Interns a file name.
    pub fn intern(&mut self, name: &[u8]) -> FileIdx {
        self.intern_build(name, None)
    }

    /// Interns a file name with the build-id its record gave (an empty one is none).
    pub fn intern_build(&mut self, name: &[u8], build_id: Option<&[u8]>) -> FileIdx {
        let build_id = build_id.filter(|b| !b.is_empty());
        if let Some(f) = self.by_name.get(name).and_then(|fs| {
            fs.iter()
                .copied()
                .find(|f| self.files[f.0 as usize].build_id.as_deref() == build_id)
        }) {
            return f;
        }
        let path: Arc<Path> = Path::new(OsStr::from_bytes(name)).into();
        let short = match name.rsplit(|&b| b == b'/').next() {
            Some(s) if !s.is_empty() && name.starts_with(b"/") && !name.starts_with(b"//") => s,
            _ => name,
        };
        let f = FileIdx(self.files.len() as u32);
        self.files.push(MappedFile {
            path,
            short: String::from_utf8_lossy(short).into(),
            build_id: build_id.map(Arc::from),
        });
        self.by_name.entry(name.to_vec()).or_default().push(f);
        f
    }

    /// Applies a side-band record; other records are ignored.
    pub fn apply(&mut self, r: &Record<'_>) {
        match r {
            Record::Mmap(m) if !m.data || self.data => {
                self.map(m.pid, m.addr, m.len, m.pgoff, m.filename)
            }
            Record::Mmap2(m) if !m.data || self.data => {
                let build_id = match m.file {
                    FileId::BuildId(b) => Some(b),
                    FileId::Inode { .. } => None,
                };
                let file = self.intern_build(m.filename, build_id);
                self.map_file(m.pid, m.addr, m.len, m.pgoff, file);
            }
            Record::Comm(c) if c.exec && c.pid == c.tid => {
                if let Some(old) = self.procs.remove(&c.pid) {
                    self.before_exec.insert(c.pid, old);
                }
            }
            Record::Fork(t) if t.pid != t.ppid => {
                if let Some(parent) = self.procs.get(&t.ppid).cloned() {
                    self.procs.insert(t.pid, parent);
                }
            }
            _ => {}
        }
    }

    /// Adds a mapping, replacing what it overlaps.
    pub fn map(&mut self, pid: u32, start: u64, len: u64, pgoff: u64, name: &[u8]) {
        if pid == u32::MAX || len == 0 {
            return;
        }
        let file = self.intern(name);
        self.map_file(pid, start, len, pgoff, file);
    }

    /// Adds a mapping of an interned file, replacing what it overlaps.
    pub fn map_file(&mut self, pid: u32, start: u64, len: u64, pgoff: u64, file: FileIdx) {
        if pid == u32::MAX || len == 0 {
            return;
        }
        let end = start.saturating_add(len);
        let maps = self.procs.entry(pid).or_default();
        // Mappings that overlap [start, end): those starting before `end` whose end is after
        // `start`. Only one mapping starting before `start` can overlap it.
        let overlapping: Vec<Mapping> = maps
            .range(..end)
            .rev()
            .take_while(|(_, m)| m.end > start)
            .map(|(_, m)| *m)
            .collect();
        for m in overlapping {
            maps.remove(&m.start);
            if m.start < start {
                maps.insert(m.start, Mapping { end: start, ..m });
            }
            if m.end > end {
                maps.insert(
                    end,
                    Mapping {
                        start: end,
                        pgoff: m.pgoff + (end - m.start),
                        ..m
                    },
                );
            }
        }
        maps.insert(
            start,
            Mapping {
                start,
                end,
                pgoff,
                file,
            },
        );
    }

    /// The mapping of process `pid` that contains `addr`.
    pub fn find(&self, pid: u32, addr: u64) -> Option<&Mapping> {
        find_in(self.procs.get(&pid), addr).or_else(|| find_in(self.before_exec.get(&pid), addr))
    }

    /// Whether process `pid` has mappings.
    pub fn knows(&self, pid: u32) -> bool {
        self.procs.contains_key(&pid)
    }

    /// Number of processes with mappings.
    pub fn processes(&self) -> usize {
        self.procs.len()
    }
}

/// The mapping of `maps` holding `addr`.
fn find_in(maps: Option<&BTreeMap<u64, Mapping>>, addr: u64) -> Option<&Mapping> {
    let (_, m) = maps?.range(..=addr).next_back()?;
    (addr < m.end).then_some(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(a: &AddressSpaces, pid: u32) -> Vec<(u64, u64, u64, String)> {
        a.procs[&pid]
            .values()
            .map(|m| (m.start, m.end, m.pgoff, a.file(m.file).short.to_string()))
            .collect()
    }

    #[test]
    fn a_new_mapping_splits_and_replaces_what_it_overlaps() {
        let mut a = AddressSpaces::new();
        a.map(1, 0x1000, 0x4000, 0, b"/usr/lib/liba.so");
        a.map(1, 0x2000, 0x1000, 0x9000, b"/usr/lib/libb.so");
        assert_eq!(
            names(&a, 1),
            [
                (0x1000, 0x2000, 0, "liba.so".into()),
                (0x2000, 0x3000, 0x9000, "libb.so".into()),
                (0x3000, 0x5000, 0x2000, "liba.so".into()),
            ]
        );
        assert_eq!(a.find(1, 0x3fff).unwrap().file_offset(0x3fff), 0x2fff);
        assert!(a.find(1, 0x5000).is_none());
        assert!(a.find(1, 0xfff).is_none());
        assert!(a.find(2, 0x1000).is_none());
        // Covering several mappings at once removes them all.
        a.map(1, 0x800, 0x10000, 0, b"//anon");
        assert_eq!(names(&a, 1), [(0x800, 0x10800, 0, "//anon".into())]);
        assert!(a.file(a.find(1, 0x900).unwrap().file).is_anonymous());
    }

    /// After exec the new image's mappings come first, the old image's behind them: a sample
    /// still inside execve names its user frames in the old image, as perf does.
    #[test]
    fn exec_keeps_the_old_image_behind_the_new_one() {
        let mut a = AddressSpaces::new();
        a.map(7, 0x7000_0000, 0x1000, 0, b"/usr/lib/libc.so.6");
        a.apply(&Record::Comm(crate::decode::Comm {
            pid: 7,
            tid: 7,
            comm: b"new",
            exec: true,
            sample_id: Default::default(),
        }));
        assert!(a.find(7, 0x7000_0010).is_some());
        a.map(7, 0x5555_0000, 0x1000, 0, b"/usr/bin/new");
        let name =
            |a: &AddressSpaces, at: u64| a.file(a.find(7, at).unwrap().file).short.to_string();
        assert_eq!(name(&a, 0x7000_0010), "libc.so.6");
        assert_eq!(name(&a, 0x5555_0010), "new");
        // The new image's mapping over the old one wins.
        a.map(7, 0x7000_0000, 0x1000, 0, b"/usr/lib/ld.so");
        assert_eq!(name(&a, 0x7000_0010), "ld.so");
        assert_eq!(names(&a, 7).len(), 2);
        // A thread's name change is no exec.
        a.apply(&Record::Comm(crate::decode::Comm {
            pid: 7,
            tid: 8,
            comm: b"worker",
            exec: true,
            sample_id: Default::default(),
        }));
        a.map(7, 0x6000_0000, 0x1000, 0, b"/usr/lib/libm.so.6");
        assert!(a.find(7, 0x5555_0010).is_some());
    }

    #[test]
    fn kernel_and_empty_mappings_are_ignored() {
        let mut a = AddressSpaces::new();
        a.map(
            u32::MAX,
            0xffffffff81000000,
            0x1000,
            0,
            b"[kernel.kallsyms]_text",
        );
        a.map(3, 0x1000, 0, 0, b"/x");
        assert_eq!(a.processes(), 0);
    }

    #[test]
    fn pseudo_files_are_recognised() {
        let mut a = AddressSpaces::new();
        let v = a.intern(b"[vdso]");
        let h = a.intern(b"[heap]");
        assert!(a.file(v).is_pseudo() && !a.file(v).is_anonymous());
        assert!(a.file(h).is_anonymous());
        assert_eq!(&*a.file(v).short, "[vdso]");
        assert_eq!(a.intern(b"[vdso]"), v);
    }

    /// One path mapped as two builds (a container's and the host's) is two files; the same
    /// build again, or the path without a build-id, is found again.
    #[test]
    fn a_path_is_one_file_per_build_id() {
        let mut a = AddressSpaces::new();
        let host = a.intern_build(b"/opt/app/busy", Some(&[1, 2, 3]));
        let guest = a.intern_build(b"/opt/app/busy", Some(&[4, 5, 6]));
        let plain = a.intern(b"/opt/app/busy");
        assert_ne!(host, guest);
        assert_ne!(plain, host);
        assert_eq!(a.intern_build(b"/opt/app/busy", Some(&[4, 5, 6])), guest);
        assert_eq!(a.intern_build(b"/opt/app/busy", Some(&[])), plain);
        assert_eq!(a.file(guest).build_id.as_deref(), Some(&[4u8, 5, 6][..]));
        assert_eq!(a.files().len(), 3);
    }
}
