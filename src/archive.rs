//! `hrec archive`: the binaries a recording needs, packed by build-id into a tar file, so the
//! recording reports the same on another machine (or after the binaries were rebuilt or
//! deleted) as `perf archive` does for perf.data.
//!
//! **What a recording needs** ([`needed`]): every file it mapped (the MMAP and MMAP2
//! side-band records, hrec's and perf.data's alike) that has a build-id: the one the MMAP2
//! record carries in build-id form (`misc & MMAP_BUILD_ID`, `perf record --buildid-mmap`),
//! else each one the recording's build-id table lists for that path (hrec's `build-ids` side
//! block; perf.data's build-id feature, which [`Recording::side`] gives in the same
//! `hex path` form). A path may come with two build-ids: containers map different builds at
//! one path. The vdso, which the build-id table lists as `[vdso]`, is needed too unless the
//! recording carries its image: record saves it in the build-id cache (as perf record does),
//! and the archive packs that copy as `[vdso]/<hex>/vdso`, perf's layout. Files without a
//! build-id (`//anon`, `[heap]`, a JIT's memfd) cannot be told apart from another build and
//! are left out; so is the kernel, whose symbols an hrec
//! file carries itself. perf archive packs only the files with samples (`perf buildid-list
//! --with-hits`); hrec packs every mapped one, since a call chain, a `--call-graph dwarf`
//! unwind or `annotate` reads files no sample landed in.
//!
//! **Where each one is found** ([`locate`]): where the symbolizer looks ([`find_files`]), so
//! what is packed is what a report here reads: the file at its recorded path when its
//! build-id is the recorded one, else the copy in perf's build-id cache (or debuginfod's). A
//! file without DWARF brings its separate debug file (by build-id in the debug directories or
//! the cache, or by `.gnu_debuglink`) and a debug file its dwz supplementary file, so
//! `--sort srcline` and inline frames come out the same.
//!
//! **The archive** ([`write()`]) is perf's build-id cache layout ([`buildid_cache`]): the
//! binary as `<path>/<hex>/elf`, its debug file as `<path>/<hex>/debug` (where perf keeps a
//! debug file it fetched), and `.build-id/xx/rest` symlinks to `../../<path>/<hex>`; unpacked
//! into `~/.debug` it is found by perf and hrec as any cached binary, unpacked anywhere else
//! with `--buildid-dir DIR`. perf writes `perf.data.tar.bz2`; hrec has no bzip2 and writes
//! zstd (`.tar.zst`, which GNU tar unpacks with a plain `tar xf`), gzip (`.tar.gz`) or no
//! compression (`.tar`) by the output's name ([`Compression::of`]), into a temporary file
//! renamed into place when complete.
//!
//! This module sits above both [`crate::recording`] and [`crate::symbol`] (a recording uses
//! `symbol`'s kernel symbols), so neither has to know about archives.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::ffi::OsStr;
use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::decode::{FileId, Record};
use crate::recording::Recording;
use crate::symbol::buildid_cache::{self, hex};
use crate::symbol::debuginfo::{Found, SearchPaths, find_files};
use crate::symbol::symbolizer::parse_build_id_lines;

/// The files `rec` needs, as (path as mapped, build-id), sorted and each pair once; see the
/// module docs for the rule.
pub fn needed(rec: &Recording) -> Vec<(PathBuf, Vec<u8>)> {
    let mut table: HashMap<PathBuf, Vec<Vec<u8>>> = HashMap::new();
    for (path, id) in parse_build_id_lines(&rec.side("build-ids").unwrap_or_default()) {
        table.entry(path).or_default().push(id);
    }
    let mut seen: HashSet<(Vec<u8>, Option<Vec<u8>>)> = HashSet::new();
    let mut out = BTreeSet::new();
    rec.for_each(|r| {
        let (name, id) = match r {
            Ok(Record::Mmap(m)) => (m.filename, None),
            Ok(Record::Mmap2(m)) => match m.file {
                FileId::BuildId(id) if id.iter().any(|&b| b != 0) => (m.filename, Some(id)),
                _ => (m.filename, None),
            },
            _ => return,
        };
        if name.first() != Some(&b'/') || !seen.insert((name.to_vec(), id.map(<[u8]>::to_vec))) {
            return;
        }
        let path = Path::new(OsStr::from_bytes(name));
        match id {
            Some(id) => {
                out.insert((path.to_path_buf(), id.to_vec()));
            }
            None => {
                for id in table.get(path).into_iter().flatten() {
                    out.insert((path.to_path_buf(), id.clone()));
                }
            }
        }
    });
    if rec.side("vdso").is_none() {
        for id in table
            .get(Path::new(buildid_cache::VDSO))
            .into_iter()
            .flatten()
        {
            out.insert((PathBuf::from(buildid_cache::VDSO), id.clone()));
        }
    }
    out.into_iter().collect()
}

/// A needed file found on this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located {
    /// The path it was mapped from.
    pub path: PathBuf,
    /// Its build-id, as the recording has it.
    pub build_id: Vec<u8>,
    /// The files to pack: the binary, its debug file, its dwz supplementary file.
    pub files: Found,
}

/// The files to pack for the binary with `build_id` mapped at `path`: the symbolizer's
/// lookups ([`find_files`]); `None` when no file with that build-id is here.
pub fn locate(path: &Path, build_id: &[u8], search: &SearchPaths) -> Option<Located> {
    let files = if path == Path::new(buildid_cache::VDSO) {
        // The vdso's copy in the build-id cache.
        let cache = buildid_cache::Cache::new(search.build_id_cache.as_ref()?);
        Found {
            binary: cache.vdso(&hex(build_id))?,
            debug: None,
            alt: None,
        }
    } else {
        find_files(path, build_id, search)?
    };
    Some(Located {
        path: path.to_path_buf(),
        build_id: build_id.to_vec(),
        files,
    })
}

/// How the archive is compressed, by its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    /// `.tar`.
    None,
    /// `.tar.gz`, `.tgz`.
    Gzip,
    /// `.tar.zst`, `.tzst`, and any other name.
    Zstd,
}

impl Compression {
    /// The compression the name of `out` asks for; `None` for one hrec cannot write
    /// (`.bz2`, perf's, and `.xz`, `.lz`, `.lzma`, `.Z`).
    pub fn of(out: &Path) -> Option<Compression> {
        let name = out.file_name()?.to_string_lossy().to_ascii_lowercase();
        let ends = |exts: &[&str]| exts.iter().any(|e| name.ends_with(e));
        if ends(&[".bz2", ".tbz", ".tbz2", ".xz", ".txz", ".lz", ".lzma", ".z"]) {
            None
        } else if ends(&[".tar"]) {
            Some(Compression::None)
        } else if ends(&[".gz", ".tgz"]) {
            Some(Compression::Gzip)
        } else {
            Some(Compression::Zstd)
        }
    }
}

/// Why an archive could not be written; each displays as one line (with its cause).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ArchiveError {
    /// The archive could not be written.
    #[error("cannot write {}", path.display())]
    Write {
        /// The archive.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// A file to pack could not be read.
    #[error("cannot read {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
}

/// What [`write`] packed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Packed {
    /// Binaries (`elf` entries).
    pub binaries: usize,
    /// Debug files and dwz supplementary files (`debug` entries).
    pub debug_files: usize,
    /// Their bytes before compression.
    pub bytes: u64,
}

/// One file of the archive: its name in the cache layout and where it is read from.
struct Member<'a> {
    name: PathBuf,
    source: &'a Path,
}

/// The archive's files and `.build-id` links, each build-id linked once.
#[derive(Default)]
struct Layout<'a> {
    members: Vec<Member<'a>>,
    links: Vec<(PathBuf, PathBuf)>,
    linked: HashSet<String>,
}

impl<'a> Layout<'a> {
    /// `<path>/<hex>/<base>` read from `source`, with the link of `id`; false (nothing added)
    /// when `id` is linked already or too short to link.
    fn entry(&mut self, path: &Path, id: &[u8], base: &str, source: &'a Path) -> bool {
        let hex = hex(id);
        let Some(link) = buildid_cache::link_path(&hex) else {
            return false;
        };
        if !self.linked.insert(hex.clone()) {
            return false;
        }
        self.file(path, &hex, base, source);
        self.links
            .push((link, buildid_cache::link_target(path, &hex)));
        true
    }

    /// `<path>/<hex>/<base>` read from `source`.
    fn file(&mut self, path: &Path, hex: &str, base: &str, source: &'a Path) {
        self.members.push(Member {
            name: buildid_cache::entry_dir(path, hex).join(base),
            source,
        });
    }
}

/// Writes `located` into the archive `out` in perf's build-id cache layout, compressed as
/// `compression` says: to a temporary file beside it, renamed into place when complete, so a
/// failure leaves no partial archive. A build-id met twice (one file at two paths) is packed
/// once.
pub fn write(
    out: &Path,
    compression: Compression,
    located: &[Located],
) -> Result<Packed, ArchiveError> {
    let mut layout = Layout::default();
    let mut packed = Packed::default();
    for l in located {
        let base = if l.path == Path::new(buildid_cache::VDSO) {
            "vdso"
        } else {
            "elf"
        };
        if !layout.entry(&l.path, &l.build_id, base, &l.files.binary) {
            continue;
        }
        packed.binaries += 1;
        if let Some(debug) = &l.files.debug {
            layout.file(&l.path, &hex(&l.build_id), "debug", debug);
            packed.debug_files += 1;
        }
        if let Some((alt, id)) = &l.files.alt
            && layout.entry(alt, id, "debug", alt)
        {
            packed.debug_files += 1;
        }
    }
    let tmp = temporary(out);
    let result = write_tar(&tmp, compression, &layout).and_then(|bytes| {
        std::fs::rename(&tmp, out).map_err(|source| ArchiveError::Write {
            path: out.to_path_buf(),
            source,
        })?;
        Ok(bytes)
    });
    match result {
        Ok(bytes) => {
            packed.bytes = bytes;
            Ok(packed)
        }
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            Err(match e {
                ArchiveError::Write { source, .. } => ArchiveError::Write {
                    path: out.to_path_buf(),
                    source,
                },
                other => other,
            })
        }
    }
}

/// `.<name>.tmp<pid>` beside `out`.
fn temporary(out: &Path) -> PathBuf {
    let name = out.file_name().unwrap_or(OsStr::new("archive"));
    let mut tmp = std::ffi::OsString::from(".");
    tmp.push(name);
    tmp.push(format!(".tmp{}", std::process::id()));
    out.with_file_name(tmp)
}

/// The archive's byte stream, compressed or not.
enum Sink {
    Plain(BufWriter<File>),
    Gzip(flate2::write::GzEncoder<BufWriter<File>>),
    Zstd(zstd::Encoder<'static, BufWriter<File>>),
}

impl Sink {
    fn create(path: &Path, compression: Compression) -> io::Result<Sink> {
        let file = BufWriter::with_capacity(1 << 20, File::create(path)?);
        Ok(match compression {
            Compression::None => Sink::Plain(file),
            Compression::Gzip => Sink::Gzip(flate2::write::GzEncoder::new(
                file,
                flate2::Compression::default(),
            )),
            Compression::Zstd => Sink::Zstd(zstd::Encoder::new(file, 3)?),
        })
    }

    /// Ends the compressed stream and flushes the file.
    fn finish(self) -> io::Result<()> {
        let mut file = match self {
            Sink::Plain(f) => f,
            Sink::Gzip(g) => g.finish()?,
            Sink::Zstd(z) => z.finish()?,
        };
        file.flush()?;
        file.get_ref().sync_all()
    }
}

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Sink::Plain(w) => w.write(buf),
            Sink::Gzip(w) => w.write(buf),
            Sink::Zstd(w) => w.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Sink::Plain(w) => w.flush(),
            Sink::Gzip(w) => w.flush(),
            Sink::Zstd(w) => w.flush(),
        }
    }
}

/// Writes the tar stream to `path`: every directory first, then the files, then the links.
/// Returns the files' bytes.
fn write_tar(
    path: &Path,
    compression: Compression,
    layout: &Layout<'_>,
) -> Result<u64, ArchiveError> {
    let (members, links) = (&layout.members, &layout.links);
    let write_err = |source| ArchiveError::Write {
        path: path.to_path_buf(),
        source,
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let header = |kind: tar::EntryType, mode: u32, mtime: u64| {
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(kind);
        h.set_mode(mode);
        h.set_mtime(mtime);
        h.set_uid(0);
        h.set_gid(0);
        h.set_size(0);
        h
    };
    let mut dirs = BTreeSet::new();
    for name in members
        .iter()
        .map(|m| &m.name)
        .chain(links.iter().map(|l| &l.0))
    {
        dirs.extend(
            name.ancestors()
                .skip(1)
                .filter(|d| !d.as_os_str().is_empty()),
        );
    }
    let mut tar = tar::Builder::new(Sink::create(path, compression).map_err(write_err)?);
    for dir in dirs {
        let mut h = header(tar::EntryType::Directory, 0o755, now);
        tar.append_data(&mut h, dir, io::empty())
            .map_err(write_err)?;
    }
    let mut bytes = 0;
    for m in members {
        let read_err = |source| ArchiveError::Read {
            path: m.source.to_path_buf(),
            source,
        };
        let file = File::open(m.source).map_err(read_err)?;
        let meta = file.metadata().map_err(read_err)?;
        let mut h = header(
            tar::EntryType::Regular,
            meta.mode() & 0o777,
            u64::try_from(meta.mtime()).unwrap_or(0),
        );
        h.set_size(meta.len());
        let mut exact = Exact {
            inner: file.take(meta.len()),
            left: meta.len(),
            failed: false,
        };
        match tar.append_data(&mut h, &m.name, &mut exact) {
            Ok(()) => {}
            // The file changed while it was packed: its error, not the archive's.
            Err(e) if exact.failed => return Err(read_err(e)),
            Err(e) => return Err(write_err(e)),
        }
        bytes += meta.len();
    }
    for (link, target) in links {
        let mut h = header(tar::EntryType::Symlink, 0o777, now);
        tar.append_link(&mut h, link, target).map_err(write_err)?;
    }
    tar.into_inner().and_then(Sink::finish).map_err(write_err)?;
    Ok(bytes)
}

/// Reads exactly `left` bytes of `inner`: a file that shrank while it was packed is an error
/// (the tar header already says its size), not a short entry.
struct Exact {
    inner: io::Take<File>,
    left: u64,
    failed: bool,
}

impl Read for Exact {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf).inspect_err(|_| self.failed = true)?;
        if n == 0 && self.left > 0 && !buf.is_empty() {
            self.failed = true;
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the file got shorter while it was packed",
            ));
        }
        self.left -= n as u64;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{EventId, EventMeta, Meta, Trailer, Writer};
    use crate::decode::{kind, misc};
    use crate::event::attr::{Attr, types};

    /// A side-band record: header, `body`, the file name NUL-padded to 8 bytes.
    fn record(ty: u32, misc: u16, body: &[u8], name: &str) -> Vec<u8> {
        let mut name = name.as_bytes().to_vec();
        name.resize((name.len() / 8 + 1) * 8, 0);
        let size = 8 + body.len() + name.len();
        let mut r = ty.to_le_bytes().to_vec();
        r.extend_from_slice(&misc.to_le_bytes());
        r.extend_from_slice(&(size as u16).to_le_bytes());
        r.extend_from_slice(body);
        r.extend_from_slice(&name);
        r
    }

    /// pid, tid, addr, len, pgoff.
    fn mapping() -> Vec<u8> {
        let mut b = [1u32, 1].map(u32::to_le_bytes).concat();
        b.extend([0x40_0000u64, 0x1000, 0].map(u64::to_le_bytes).concat());
        b
    }

    fn mmap(name: &str) -> Vec<u8> {
        record(kind::MMAP, 0, &mapping(), name)
    }

    fn mmap2_inode(name: &str) -> Vec<u8> {
        let mut b = mapping();
        b.extend([8u32, 1].map(u32::to_le_bytes).concat()); // maj, min
        b.extend([1234u64, 0].map(u64::to_le_bytes).concat()); // ino, generation
        b.extend([5u32, 2].map(u32::to_le_bytes).concat()); // prot, flags
        record(kind::MMAP2, 0, &b, name)
    }

    fn mmap2_build_id(name: &str, id: &[u8]) -> Vec<u8> {
        let mut b = mapping();
        b.extend([id.len() as u8, 0, 0, 0]);
        let mut padded = id.to_vec();
        padded.resize(20, 0);
        b.extend(padded);
        b.extend([5u32, 2].map(u32::to_le_bytes).concat());
        record(kind::MMAP2, misc::MMAP_BUILD_ID, &b, name)
    }

    /// Every mapped file with a build-id, once per (path, build-id): the MMAP2 record's own
    /// build-id first, else the table's for the path (two builds at one path from either),
    /// nothing for names that are no path or have no build-id, nothing the table lists
    /// without a mapping; and the vdso the table lists, as the file carries no image of it.
    #[test]
    fn needed_files_are_the_mapped_ones_with_a_build_id() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("n.hrec");
        // One event (the decoder takes the records' layout from it), no sample_id_all.
        let meta = Meta {
            events: vec![EventMeta {
                name: "cpu-clock".into(),
                attr: Attr::new(types::SOFTWARE, 0),
                ids: vec![EventId {
                    id: 1,
                    cpu: -1,
                    tid: -1,
                }],
                ..EventMeta::default()
            }],
            ..Meta::default()
        };
        let mut w = Writer::create(&path, &meta).unwrap();
        let records = [
            mmap2_inode("/usr/bin/a"),
            mmap2_inode("/usr/bin/a"),
            mmap("/lib/b.so"),
            mmap2_build_id("/opt/c/prog", &[0xc1; 20]),
            mmap2_build_id("/opt/c/prog", &[0xc2; 20]),
            mmap2_build_id("/zero", &[0; 20]),
            mmap2_inode("/no/build-id"),
            mmap2_inode("[vdso]"),
            mmap2_inode("//anon"),
        ]
        .concat();
        w.write_records(&records, 0).unwrap();
        let table = format!(
            "{} /usr/bin/a\n{} /lib/b.so\n{} /lib/b.so\n{} /opt/c/prog\n{} /zero\n{} [vdso]\n{} /never/mapped\n",
            "aa".repeat(20),
            "b1".repeat(20),
            "b2".repeat(20),
            "cc".repeat(20),
            "dd".repeat(20),
            "ee".repeat(20),
            "ff".repeat(20),
        );
        w.write_side("build-ids", table.as_bytes()).unwrap();
        w.finish(Trailer::default()).unwrap();
        let rec = Recording::open(&path).unwrap();
        let got = needed(&rec);
        let want: Vec<(PathBuf, Vec<u8>)> = [
            ("/lib/b.so", [0xb1; 20]),
            ("/lib/b.so", [0xb2; 20]),
            ("/opt/c/prog", [0xc1; 20]),
            ("/opt/c/prog", [0xc2; 20]),
            ("/usr/bin/a", [0xaa; 20]),
            ("/zero", [0xdd; 20]),
            // The vdso, whose image the file does not carry: its build-id cache copy.
            ("[vdso]", [0xee; 20]),
        ]
        .into_iter()
        .map(|(p, id)| (PathBuf::from(p), id.to_vec()))
        .collect();
        assert_eq!(got, want);
    }

    /// The archive in perf's layout, read back: directories, `elf` and `debug` with their
    /// bytes and modes, `.build-id` links to their entries; names and link targets past tar's
    /// 100 bytes; a build-id met at a second path packed once; zstd and gzip streams.
    #[test]
    fn write_packs_perfs_layout_with_long_names() {
        let dir = tempfile::tempdir().unwrap();
        let elf = dir.path().join("prog");
        let debug = dir.path().join("prog.debug");
        std::fs::write(&elf, b"ELF bytes").unwrap();
        std::fs::write(&debug, b"DWARF bytes").unwrap();
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&elf, std::fs::Permissions::from_mode(0o751)).unwrap();
        std::fs::set_permissions(&debug, std::fs::Permissions::from_mode(0o640)).unwrap();
        let deep = format!("/opt/{}/prog", "a-long-directory-name".repeat(8));
        let id: Vec<u8> = (1..=20).collect();
        let hex = hex(&id);
        let located = |path: &str| Located {
            path: PathBuf::from(path),
            build_id: id.clone(),
            files: Found {
                binary: elf.clone(),
                debug: Some(debug.clone()),
                alt: None,
            },
        };
        let entry = buildid_cache::entry_dir(Path::new(&deep), &hex);
        for (name, compression) in [
            ("a.tar", Compression::None),
            ("a.tar.zst", Compression::Zstd),
            ("a.tar.gz", Compression::Gzip),
        ] {
            let out = dir.path().join(name);
            let packed = write(
                &out,
                compression,
                &[located(&deep), located("/usr/bin/prog")],
            )
            .unwrap();
            assert_eq!(
                packed,
                Packed {
                    binaries: 1,
                    debug_files: 1,
                    bytes: 20
                }
            );
            let file = File::open(&out).unwrap();
            let reader: Box<dyn Read> = match compression {
                Compression::None => Box::new(file),
                Compression::Zstd => Box::new(zstd::Decoder::new(file).unwrap()),
                Compression::Gzip => Box::new(flate2::read::GzDecoder::new(file)),
            };
            let mut files = Vec::new();
            let mut links = Vec::new();
            let mut dirs = Vec::new();
            for e in tar::Archive::new(reader).entries().unwrap() {
                let mut e = e.unwrap();
                let path = e.path().unwrap().into_owned();
                match e.header().entry_type() {
                    tar::EntryType::Directory => dirs.push(path),
                    tar::EntryType::Symlink => {
                        links.push((path, e.link_name().unwrap().unwrap().into_owned()))
                    }
                    _ => {
                        let mode = e.header().mode().unwrap();
                        let mut bytes = Vec::new();
                        e.read_to_end(&mut bytes).unwrap();
                        files.push((path, mode, bytes));
                    }
                }
            }
            assert!(entry.as_os_str().len() > 100);
            assert_eq!(
                files,
                vec![
                    (entry.join("elf"), 0o751, b"ELF bytes".to_vec()),
                    (entry.join("debug"), 0o640, b"DWARF bytes".to_vec()),
                ]
            );
            assert_eq!(
                links,
                vec![(
                    buildid_cache::link_path(&hex).unwrap(),
                    buildid_cache::link_target(Path::new(&deep), &hex)
                )]
            );
            assert!(dirs.contains(&entry) && dirs.contains(&PathBuf::from(".build-id/01")));
            assert!(!dirs.iter().any(|d| d.starts_with("usr")), "{dirs:?}");
        }
        // A file that cannot be read: the file's error, and no archive left behind.
        let gone = Located {
            files: Found {
                binary: dir.path().join("gone"),
                debug: None,
                alt: None,
            },
            ..located("/x")
        };
        let out = dir.path().join("b.tar");
        let e = write(&out, Compression::None, &[gone]).unwrap_err();
        assert!(matches!(e, ArchiveError::Read { .. }), "{e}");
        assert!(
            std::fs::read_dir(dir.path()).unwrap().all(|f| !f
                .unwrap()
                .file_name()
                .to_string_lossy()
                .contains("b.tar"))
        );
    }

    #[test]
    fn archive_names_pick_the_compression() {
        let of = |n: &str| Compression::of(Path::new(n));
        assert_eq!(of("perf.data.tar.zst"), Some(Compression::Zstd));
        assert_eq!(of("x.tar.gz"), Some(Compression::Gzip));
        assert_eq!(of("x.TGZ"), Some(Compression::Gzip));
        assert_eq!(of("dir/x.tar"), Some(Compression::None));
        assert_eq!(of("x.archive"), Some(Compression::Zstd));
        assert_eq!(of("perf.data.tar.bz2"), None);
        assert_eq!(of("x.tar.xz"), None);
    }
}
