//! The fuzz targets: each takes arbitrary bytes and drives one of hrec's parsers the way a
//! command would. A target returns normally for any input; a panic, a hang or a large
//! allocation is a bug in hrec (the driver in `main.rs` watches for those).
//!
//! Shared with `tests/fuzz_regressions.rs` (included there by path), which replays every
//! file under `tests/fuzz-regressions/<target>/` through the same function.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use hrec::analysis::callgraph::CallGraphOptions;
use hrec::analysis::hist::{self, Filters, HistOptions};
use hrec::analysis::profile::ProfileOptions;
use hrec::analysis::replay;
use hrec::decode::{Decoder, FileId, Mmap2, Regs, SampleId, StackUser, U64s, records};
use hrec::disasm::{Syntax, disassemble};
use hrec::event::Attr;
use hrec::metrics::Expr;
use hrec::metrics::perfmon::{
    CoreEvents, Encoding, EventRef, Mapfile, MetricFile, Perfmon, RetireLatencies,
};
use hrec::output;
use hrec::output::flame::FlameOptions;
use hrec::output::report::ReportStyle;
use hrec::output::script::Field;
use hrec::pmu::Pmus;
use hrec::recording::Recording;
use hrec::symbol::binary::Binary;
use hrec::symbol::debuginfo::SearchPaths;
use hrec::unwind::{FrameAddress, Unwinder};

/// The names of the targets, in the order `all` runs them.
pub const TARGETS: &[&str] = &[
    "hrec",
    "perfdata",
    "sample",
    "unwind",
    "elf",
    "disasm",
    "event",
    "sysfs",
    "perfmon",
    "expr",
    "text",
    "debuginfod",
    "trace",
];

/// Where the unwinder fixture binary is mapped in the synthetic process.
pub const MAP_BASE: u64 = 0x5555_5555_4000;
/// The synthetic process.
const PID: u32 = 4242;
/// The fixture binary's path inside the recordings' symfs root.
pub const WORK_BINARY: &str = "/tmp/hrec-fixture/work";
/// The build-id of the fixture binary (`WORK_BINARY`), which the `debuginfod` target asks for.
pub const DEBUGINFOD_ID: [u8; 20] = [
    0xa7, 0x97, 0x67, 0x1d, 0x0d, 0x94, 0x25, 0x71, 0xe3, 0xe6, 0x51, 0x8a, 0xad, 0x52, 0xaf, 0xe2,
    0xbf, 0x95, 0x74, 0x59,
];
/// The sysfs fixture a `sysfs` input mutates one file of.
pub const SYSFS_MODEL: &str = "alderlake";

/// What the targets need besides the input: fixture paths and a scratch directory.
#[derive(Debug)]
pub struct Env {
    /// The repository root.
    pub root: PathBuf,
    /// Scratch files (deleted with the Env).
    pub tmp: tempfile::TempDir,
    /// `tests/fixtures/recordings/root`: the symfs the recordings' binaries are under.
    pub symfs: PathBuf,
    /// The sysfs fixture, copied, so that one file can be replaced per input.
    pub sysfs: PathBuf,
    /// The copy's files, relative to `sysfs`, sorted: a `sysfs` input's first two bytes pick one.
    pub sysfs_files: Vec<PathBuf>,
    /// The PMUs of the unmodified fixture, for resolving event strings.
    pub pmus: Option<Pmus>,
}

/// `/dev/shm` when it is a directory, else the system temp dir.
pub fn scratch_dir() -> PathBuf {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    }
}

fn copy_tree(from: &Path, to: &Path, rel: &Path, files: &mut Vec<PathBuf>) -> std::io::Result<()> {
    std::fs::create_dir_all(to.join(rel))?;
    let mut entries: Vec<_> = std::fs::read_dir(from.join(rel))?.collect::<Result<_, _>>()?;
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let r = rel.join(e.file_name());
        let ty = e.file_type()?;
        if ty.is_dir() {
            copy_tree(from, to, &r, files)?;
        } else if ty.is_file() {
            std::fs::copy(from.join(&r), to.join(&r))?;
            files.push(r);
        }
    }
    Ok(())
}

impl Env {
    /// Sets up the scratch directory, in memory (`/dev/shm`) where there is one: every input
    /// is written to a file, and ext4 flushes a file rewritten from zero length to disk.
    pub fn new(root: &Path) -> std::io::Result<Env> {
        let tmp = tempfile::Builder::new()
            .prefix("hrec-fuzz-")
            .tempdir_in(scratch_dir())?;
        let sysfs = tmp.path().join("sysfs");
        let mut sysfs_files = Vec::new();
        copy_tree(
            &root.join("tests/fixtures/sysfs").join(SYSFS_MODEL),
            &sysfs,
            Path::new(""),
            &mut sysfs_files,
        )?;
        let pmus = Pmus::read(&sysfs).ok();
        std::fs::create_dir_all(tmp.path().join("maps"))?;
        Ok(Env {
            root: root.to_path_buf(),
            symfs: root.join("tests/fixtures/recordings/root"),
            tmp,
            sysfs,
            sysfs_files,
            pmus,
        })
    }

    /// Runs target `name` on `input`; `false` for an unknown name.
    pub fn run(&self, name: &str, input: &[u8]) -> bool {
        match name {
            "hrec" => self.recording(&hrec_prepare(input), "in.hrec"),
            "perfdata" => self.recording(input, "in.perf.data"),
            "sample" => sample(input),
            "unwind" => self.unwind(input),
            "elf" => self.elf(input),
            "disasm" => disasm(input),
            "event" => self.event(input),
            "sysfs" => self.sysfs(input),
            "perfmon" => perfmon(input),
            "expr" => expr(input),
            "text" => text(input),
            "debuginfod" => self.debuginfod(input),
            "trace" => trace(input),
            _ => return false,
        }
        true
    }

    /// debuginfod's reply handling, the first byte picking what the rest is: 0, a whole HTTP
    /// reply, served on loopback to the real client asking for the fixture binary's
    /// executable (redirects not followed, so nothing leaves the machine); 1, a reply's body
    /// (after an 8-byte declared length, `u64::MAX` for none) stored into the cache; 2, the
    /// cache's own files (`cache_miss_s`, a NUL, then an entry) looked up.
    fn debuginfod(&self, input: &[u8]) {
        use hrec::symbol::debuginfod::{Cache, Config, Debuginfod, Kind, store_reply};
        use std::io::{BufRead as _, Read as _};
        let [kind, rest @ ..] = input else {
            return;
        };
        let cache = self.tmp.path().join("debuginfod-cache");
        let _ = std::fs::remove_dir_all(&cache);
        let id = DEBUGINFOD_ID;
        const LIMIT: u64 = 4 << 20;
        match kind % 3 {
            0 => {
                let Ok(l) = std::net::TcpListener::bind("127.0.0.1:0") else {
                    return;
                };
                let Ok(addr) = l.local_addr() else { return };
                let reply = rest.to_vec();
                let server = std::thread::spawn(move || {
                    let Ok((mut conn, _)) = l.accept() else {
                        return;
                    };
                    let _ = conn.set_read_timeout(Some(std::time::Duration::from_secs(2)));
                    if let Ok(c) = conn.try_clone() {
                        let mut r = std::io::BufReader::new(c.take(1 << 16));
                        let mut line = String::new();
                        while r.read_line(&mut line).is_ok_and(|n| n > 2) {
                            line.clear();
                        }
                    }
                    let _ = conn.write_all(&reply);
                });
                let d = Debuginfod::new(Config {
                    urls: vec![format!("http://{addr}")],
                    timeout: Some(std::time::Duration::from_secs(2)),
                    cache: cache.clone(),
                    max_size: Some(LIMIT),
                    max_redirects: 0,
                });
                let _ = d.find(&id, Kind::Executable);
                let _ = d.summary();
                let _ = server.join();
            }
            1 => {
                let Some((len, body)) = rest.split_first_chunk::<8>() else {
                    return;
                };
                let declared = Some(u64::from_le_bytes(*len)).filter(|&n| n != u64::MAX);
                let mut body = body;
                let c = Cache::new(cache);
                let _ = store_reply(&c, &id, Kind::Debuginfo, declared, &mut body, LIMIT, None);
                let _ = c.lookup(&id, Kind::Debuginfo, c.cache_miss());
            }
            _ => {
                let (miss, entry) = match rest.iter().position(|&b| b == 0) {
                    Some(i) => (&rest[..i], &rest[i + 1..]),
                    None => (rest, &[][..]),
                };
                let c = Cache::new(cache.clone());
                let Some(path) = c.entry(&id, Kind::Debuginfo) else {
                    return;
                };
                if let Some(dir) = path.parent()
                    && std::fs::create_dir_all(dir).is_ok()
                    && std::fs::write(cache.join("cache_miss_s"), miss).is_ok()
                    && std::fs::write(&path, entry).is_ok()
                {
                    let _ = c.lookup(&id, Kind::Debuginfo, c.cache_miss());
                }
            }
        }
    }

    fn no_search() -> SearchPaths {
        SearchPaths {
            debug_dirs: Vec::new(),
            build_id_cache: None,
            debuginfod_cache: None,
            inflated_cache: None,
        }
    }

    /// A whole read of a recording as `info`, `script` and `report` do it: open, header, every
    /// record in time order, then the symbolized profile and its text report.
    fn recording(&self, input: &[u8], name: &str) {
        let path = self.tmp.path().join(name);
        if std::fs::write(&path, input).is_err() {
            return;
        }
        let Ok(rec) = Recording::open_with_kernel(&path, 1, false) else {
            return;
        };
        let mut sink = std::io::sink();
        let _ = output::header_block(&rec, &mut sink);
        rec.check_blocks();
        rec.for_each(|r| {
            if let Ok(r) = r {
                let _ = write!(sink, "{r:?}");
            }
        });
        let _ = rec.errors();
        let opts = ProfileOptions {
            symfs: Some(self.symfs.clone()),
            search: Env::no_search(),
            perf_map_dir: self.tmp.path().join("maps"),
            threads: 1,
            ..ProfileOptions::default()
        };
        // One of three commands, by the input's length: report, script, or flamegraph and
        // export.
        match input.len() % 3 {
            0 => {
                let p = replay::build(&rec, &opts, &mut |_| {});
                let h = HistOptions {
                    children: p.callchains,
                    ..HistOptions::default()
                };
                let tables = hist::tables(&p, &h);
                let style = ReportStyle {
                    callgraph: p.callchains.then(CallGraphOptions::default),
                    ..ReportStyle::default()
                };
                let _ = output::report::text(&p, &tables, &h, &style, &mut sink);
                let _ = output::report::json(&p, &tables, &h, &style, &mut sink);
            }
            1 => {
                let mut fields = Field::DEFAULT.to_vec();
                fields.extend([Field::Sym, Field::Dso, Field::Period, Field::Srcline]);
                let layout = output::script::Layout {
                    inline: output::script::Inline::All,
                    show_mmap: true,
                    show_task: true,
                    ..Default::default()
                };
                let mut errors = Vec::new();
                let _ = output::script::script(
                    &rec,
                    &fields,
                    &opts,
                    &Filters::default(),
                    layout,
                    output::script::Sinks {
                        out: &mut sink,
                        errors: &mut errors,
                        progress: None,
                    },
                );
            }
            _ => {
                let p = replay::build(&rec, &opts, &mut |_| {});
                for ev in 0..p.events.len() {
                    if let Ok(f) = output::flame::fold(&p, ev, &FlameOptions::default()) {
                        let _ = output::flame::write_folded(&f, &mut sink);
                    }
                }
                let meta = output::pprof::PprofMeta::default();
                let _ = output::pprof::build(&p, &meta, &Filters::default());
            }
        }
    }

    /// Unwinds a synthetic sample: the fixture binary mapped at [`MAP_BASE`], BP, SP and IP
    /// from the first 24 bytes, the stack copy the rest.
    fn unwind(&self, input: &[u8]) {
        let mut u = Unwinder::new(Some(self.symfs.clone()));
        unwind_in(&mut u, WORK_BINARY.as_bytes(), input);
    }

    /// Symbolizes addresses of a mutated ELF file, reads code for disassembly and unwinds a
    /// stack through its (mutated) `.eh_frame`.
    fn elf(&self, input: &[u8]) {
        let dir = self.tmp.path().join("elfroot");
        let path = dir.join("bin");
        if std::fs::create_dir_all(&dir).is_err() || std::fs::write(&path, input).is_err() {
            return;
        }
        if let Ok(b) = Binary::load(&path, None, &Env::no_search()) {
            let _ = b.build_id();
            for off in [
                0u64, 0x1000, 0x1070, 0x1100, 0x11e8, 0x1234, 0x1278, 0x1298, 0x12b4, 0x2000,
                0x4000,
            ] {
                if let Some(svma) = b.svma(MAP_BASE + off, MAP_BASE, 0) {
                    let _ = b.symbolize(svma);
                    if let Some(code) = b.code(svma, 64) {
                        let _ = disassemble(&code, svma, Syntax::Att, &|_| None);
                    }
                }
                let _ = b.symbolize(off);
                // The variables and types of the DWARF (read whole on the first call).
                let _ = b.data_type(off);
                // The instruction's operand, the variables in registers at its PC (location
                // lists) and the CFA there (`.eh_frame`).
                let _ = b.access_type(off);
            }
            let _ = b.symbolize(u64::MAX);
        }
        let mut u = Unwinder::new(Some(dir));
        let mut stack = Vec::new();
        for off in [0x1238u64, 0x1274, 0x12b8, 0x1078] {
            stack.extend((MAP_BASE + off).to_le_bytes());
        }
        let mut regs = 0x7ffd_0000_0010u64.to_le_bytes().to_vec();
        regs.extend(0x7ffd_0000_0000u64.to_le_bytes());
        regs.extend((MAP_BASE + 0x11e4).to_le_bytes());
        regs.extend(stack);
        unwind_in(&mut u, b"/bin", &regs);
    }

    /// Parses an event string and resolves it against the sysfs fixture's PMUs.
    fn event(&self, input: &[u8]) {
        let s = String::from_utf8_lossy(input);
        let _ = hrec::event::parse::parse(&s);
        if let Some(pmus) = &self.pmus {
            let _ = hrec::event::resolve::resolve(pmus, &[s.into_owned()]);
        }
    }

    /// Replaces one file of the sysfs copy (picked by the first two bytes) with the rest of
    /// the input, reads the PMUs and resolves a few events, then puts the file back; the same
    /// bytes go through the cpuid parsers.
    fn sysfs(&self, input: &[u8]) {
        let [lo, hi, content @ ..] = input else {
            return;
        };
        // /proc/cpuinfo and perf.data's CPUID header are outside text too: the same bytes
        // through hrec's cpuid parsers.
        let text = String::from_utf8_lossy(content);
        for cpu in [
            hrec::pmu::uarch::CpuId::from_cpuinfo(&text),
            hrec::pmu::uarch::CpuId::parse(&text),
        ]
        .into_iter()
        .flatten()
        {
            let _ = hrec::pmu::uarch::ecore_topdown(Some(&cpu), "cpu_atom");
            let _ = hrec::pmu::uarch::retire_latency(Some(&cpu), "cpu");
        }
        if self.sysfs_files.is_empty() {
            return;
        }
        let pick = usize::from(u16::from_le_bytes([*lo, *hi])) % self.sysfs_files.len();
        let Some(rel) = self.sysfs_files.get(pick) else {
            return;
        };
        let path = self.sysfs.join(rel);
        let Ok(original) = std::fs::read(&path) else {
            return;
        };
        if std::fs::write(&path, content).is_ok()
            && let Ok(pmus) = Pmus::read(&self.sysfs)
        {
            for p in pmus.core_pmus() {
                let _ = (p.max_precise(), p.pmu_name(), p.open_cpus(&pmus.online));
            }
            // Alder Lake's cpuid, watchdog off: the E-core PMU's TopDown group (level 2 too) is
            // planned as well.
            let host = hrec::event::Host {
                cpu: hrec::pmu::uarch::CpuId::parse("GenuineIntel-6-97-2"),
                nmi_watchdog: Some(false),
                ..hrec::event::Host::default()
            };
            let (events, _) = hrec::event::plan::default_events(&pmus, &host);
            let _ = hrec::event::resolve::resolve(&pmus, &events);
            for e in [
                "cycles:P",
                "{slots,topdown-retiring,topdown-bad-spec}",
                "cpu_core/event=0x3c,umask=0x1/",
                "cpu_atom/branch-misses/u",
                "instructions:ppp",
            ] {
                let _ = hrec::event::resolve::resolve(&pmus, &[e.to_string()]);
            }
        }
        let _ = std::fs::write(&path, original);
    }
}

const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];
const BLOCK_HEADER: usize = 48;

fn fnv1a(parts: &[&[u8]]) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for &b in parts.iter().flat_map(|p| p.iter()) {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

fn u32_at(b: &[u8], at: usize) -> usize {
    b.get(at..at + 4)
        .and_then(|s| s.try_into().ok())
        .map_or(0, |w| u32::from_le_bytes(w) as usize)
}

/// Undoes what would make nearly every mutant of an hrec file fail at the first check, so
/// the fuzzer reaches the code behind it: walking the blocks from the end of the header, a
/// payload that is not a zstd frame is compressed (the seeds hold decompressed payloads, see
/// [`hrec_expand`]), and, for three inputs in four (by length), each header's check value
/// is recomputed.
pub fn hrec_prepare(input: &[u8]) -> Vec<u8> {
    let meta_len = u32_at(input, 12);
    let mut pos = (16 + meta_len).next_multiple_of(8);
    let Some(head) = input.get(..pos) else {
        return input.to_vec();
    };
    let fix = !input.len().is_multiple_of(4);
    let mut out = head.to_vec();
    while let Some(h) = input.get(pos..pos + BLOCK_HEADER)
        && h.starts_with(b"HBLK")
    {
        let name_len = usize::from(u16::from_le_bytes([h[6], h[7]]));
        let comp_len = u32_at(h, 12);
        let name_end = (pos + BLOCK_HEADER + name_len).min(input.len());
        let name = input.get(pos + BLOCK_HEADER..name_end).unwrap_or(&[]);
        let end = name_end.saturating_add(comp_len).min(input.len());
        let payload = input.get(name_end..end).unwrap_or(&[]);
        let mut h = h.to_vec();
        let payload = if payload.starts_with(&ZSTD_MAGIC) {
            payload.to_vec()
        } else {
            let z = zstd::bulk::compress(payload, 1).unwrap_or_default();
            h[12..16].copy_from_slice(&(z.len() as u32).to_le_bytes());
            z
        };
        if fix {
            let check = fnv1a(&[&h[..40], name]);
            h[40..44].copy_from_slice(&check.to_le_bytes());
        }
        out.extend(h);
        out.extend(name);
        out.extend(payload);
        pos = end;
    }
    out.extend(input.get(pos..).unwrap_or(&[]));
    out
}

/// An hrec file with every block payload decompressed and the footer dropped: the form the
/// `hrec` target's seeds take besides the files themselves ([`hrec_prepare`] undoes it).
pub fn hrec_expand(file: &[u8]) -> Vec<u8> {
    let meta_len = u32_at(file, 12);
    let mut pos = (16 + meta_len).next_multiple_of(8);
    let Some(head) = file.get(..pos) else {
        return file.to_vec();
    };
    let mut out = head.to_vec();
    while let Some(h) = file.get(pos..pos + BLOCK_HEADER)
        && h.starts_with(b"HBLK")
    {
        let name_len = usize::from(u16::from_le_bytes([h[6], h[7]]));
        let name_end = pos + BLOCK_HEADER + name_len;
        let end = name_end + u32_at(h, 12);
        let (Some(name), Some(payload)) = (
            file.get(pos + BLOCK_HEADER..name_end),
            file.get(name_end..end),
        ) else {
            break;
        };
        let Ok(raw) = zstd::stream::decode_all(payload) else {
            break;
        };
        let mut h = h.to_vec();
        h[12..16].copy_from_slice(&(raw.len() as u32).to_le_bytes());
        out.extend(h);
        out.extend(name);
        out.extend(raw);
        pos = end;
    }
    out
}

/// Maps `file` into the synthetic process and unwinds a sample whose first 24 bytes are BP,
/// SP and IP (perf's register numbers 6, 7, 8, in mask order) and the rest the stack copy;
/// the last word of the copy, modulo its length, is `dyn_size`.
fn unwind_in(u: &mut Unwinder, file: &[u8], input: &[u8]) {
    let m = Mmap2 {
        pid: PID,
        tid: PID,
        addr: MAP_BASE,
        len: 0x10_0000,
        pgoff: 0,
        file: FileId::Inode {
            maj: 0,
            min: 0,
            ino: 1,
            ino_generation: 0,
        },
        prot: 5,
        flags: 2,
        data: false,
        filename: file,
        sample_id: SampleId::default(),
    };
    u.apply(&hrec::decode::Record::Mmap2(m));
    let regs_end = input.len().min(24);
    let (regs_bytes, stack) = input.split_at(regs_end);
    let mut regs = regs_bytes.to_vec();
    regs.truncate(regs.len() / 8 * 8);
    let regs = Regs {
        abi: 2,
        regs: U64s::new(&regs),
    };
    let mask = (1 << 6) | (1 << 7) | (1 << 8);
    let dyn_size = stack
        .len()
        .checked_sub(8)
        .and_then(|n| stack.get(n..))
        .map(|t| u64::from_le_bytes(t.try_into().unwrap_or([0; 8])));
    let stack = StackUser {
        data: stack,
        dyn_size: dyn_size.map(|d| d % (stack.len() as u64 + 16)),
    };
    let mut out: Vec<FrameAddress> = Vec::new();
    let _ = u.unwind(PID, mask, &regs, &stack, &mut out);
}

/// Decodes every record of the input after its first 136 bytes, which are the attr (kernel
/// layout), with that attr alone and next to a second attr that differs in its id bits.
pub fn sample(input: &[u8]) {
    let (head, body) = input.split_at(input.len().min(136));
    let attr = Attr::from_bytes(head);
    let mut other = attr;
    other.sample_type ^= hrec::event::attr::sample::IDENTIFIER;
    let one = Decoder::new([(1, attr)]);
    let two = Decoder::new([(1, attr), (2, other)]);
    let mut sink = std::io::sink();
    for raw in records(body) {
        let Ok(raw) = raw else {
            break;
        };
        for d in [&one, &two] {
            let _ = d.time(&raw);
            if let Ok(r) = d.decode(&raw) {
                let _ = write!(sink, "{r:?}");
            }
        }
    }
}

/// Disassembles the input in both syntaxes, naming every target.
pub fn disasm(input: &[u8]) {
    let base = 0x40_1000;
    for syntax in [Syntax::Att, Syntax::Intel] {
        let _ = disassemble(input, base, syntax, &|a| {
            Some(("f".into(), a.wrapping_sub(base)))
        });
    }
    // The replay of the instructions before an access, at each byte as the access's PC
    // (most are no instruction's start).
    for pc in (0..input.len().min(64) as u64).map(|i| base + i) {
        let _ = hrec::symbol::datatype::track::steps(input, base, pc);
    }
}

/// The first byte picks the perfmon file kind, the rest is its text; what parses is used as
/// `stat` and `list` use it (formulas evaluated, events turned into perf terms).
pub fn perfmon(input: &[u8]) {
    let [kind, text @ ..] = input else {
        return;
    };
    let text = String::from_utf8_lossy(text);
    let path = Path::new("fuzz.json");
    match kind % 4 {
        0 => {
            if let Ok(m) = MetricFile::parse(&text, path) {
                let _ = m.formula_errors();
                for metric in &m.metrics {
                    let _ = (metric.perf_name(), metric.is_tma_node());
                    let _ = metric.used_events().count();
                    if let Ok(f) = metric.formula() {
                        let _ = f.eval(&|n| Some(n.len() as f64));
                    }
                }
            }
        }
        1 => {
            if let Ok(e) = CoreEvents::parse(&text, path)
                && let Ok(metrics) = MetricFile::parse(r#"{"Metrics": []}"#, path)
            {
                let names: Vec<String> = e.events().iter().map(|e| e.name.clone()).collect();
                let pm = Perfmon {
                    metrics,
                    events: Some(e),
                    retire_latencies: None,
                };
                for name in names {
                    for r in [name.clone(), format!("{name}:c1:e1"), format!("{name}:R")] {
                        if let Ok(Encoding::Counter(raw)) = pm.resolve(&EventRef::parse(&r)) {
                            let _ = raw.perf_terms();
                        }
                    }
                    let _ = pm.default_retire_latency(&name);
                }
            }
        }
        2 => {
            let _ = RetireLatencies::parse(&text, path);
        }
        _ => {
            if let Ok(m) = Mapfile::parse(&text, path) {
                let _ = m.select("GenuineIntel-6-97");
                let _ = m.select("GenuineIntel-6-AD-0");
            }
        }
    }
}

/// A tracepoint's format file (before the first NUL) and a raw record (after it): the format
/// parsed, every field read from the record, and the record printed by its print format.
pub fn trace(input: &[u8]) {
    let (format, raw) = match input.iter().position(|&b| b == 0) {
        Some(i) => (&input[..i], &input[i + 1..]),
        None => (input, &[][..]),
    };
    let Ok(f) = hrec::trace::EventFormat::parse(&String::from_utf8_lossy(format)) else {
        return;
    };
    for field in &f.fields {
        let _ = (field.bytes(raw), field.value(raw), field.is_string());
    }
    let p = hrec::trace::print::Printer::new("fuzz", &f);
    let mut out = String::new();
    p.print(raw, &hrec::trace::print::NoSymbols, &mut out);
}

/// Parses a metric expression and evaluates it with every name bound, then with none.
pub fn expr(input: &[u8]) {
    let text = String::from_utf8_lossy(input);
    if let Ok(e) = Expr::parse(&text) {
        let _ = e.names();
        let _ = e.eval(&|n| Some(n.len() as f64 - 3.0));
        let _ = e.eval(&|_| Some(0.0));
        let _ = e.eval(&|_| None);
    }
}

/// The small text parsers, the first byte picking one: kallsyms, perf maps, sysfs format
/// fields, alias terms, numbers, CPU lists, `--time`, `--sort`, `-g`, `script -F`, `locale
/// -k` output, `list` globs and `/proc/cpuinfo`.
pub fn text(input: &[u8]) {
    use std::str::FromStr as _;
    let [kind, rest @ ..] = input else {
        return;
    };
    let t = String::from_utf8_lossy(rest);
    match kind % 15 {
        0 => {
            let k = hrec::symbol::kallsyms::KernelSymbols::parse(&t);
            for a in [0, 0xffff_ffff_8100_0000, 0xffff_ffff_8100_1234, u64::MAX] {
                if let Some((sym, _)) = k.lookup(a) {
                    let _ = k.end_of(sym.start);
                }
            }
            let _ = (k.len(), k.is_empty());
        }
        1 => {
            let m = hrec::symbol::perfmap::PerfMap::parse(&t);
            for a in [0, 0x7f00_0000_1000, u64::MAX] {
                let _ = m.lookup(a);
            }
        }
        2 => {
            if let Ok(f) = hrec::pmu::FormatField::parse(&t) {
                let _ = (f.width(), f.max_value(), f.mask(), f.decode(u64::MAX));
                let _ = f.encode(u64::MAX);
                let _ = f.encode(1);
            }
        }
        3 => {
            let _ = hrec::pmu::parse_alias_terms(&t);
        }
        4 => {
            let _ = hrec::pmu::parse_number(&t);
        }
        5 => {
            if let Ok(c) = hrec::pmu::CpuList::from_str(&t) {
                let _ = c.to_string();
                let _ = c.intersect(&c);
            }
        }
        6 => {
            if let Ok(spec) = hrec::analysis::timefilter::TimeSpec::parse(&t) {
                let r = spec.resolve(|| Some((1_000, 5_000_000_000)));
                let _ = (r.keeps(0), r.keeps(2_000_000_000), r.keeps(u64::MAX));
            }
        }
        7 => {
            let _ = hist::parse_sort(&t);
        }
        8 => {
            let _ = CallGraphOptions::from_str(&t);
        }
        9 => {
            if let Ok(f) = output::script::parse_fields(&t) {
                let _ = f.len();
            }
        }
        10 => {
            let n = hrec::stat::numeric::Numeric::parse(&t);
            let _ = n.group("1234567890.125");
        }
        11 => {
            let (pattern, text) = t.split_once('\n').unwrap_or((&t, "cpu_core/cycles/"));
            let _ = hrec::names::glob_match(pattern, text, true);
            let _ = hrec::names::glob_match(pattern, text, false);
        }
        13 => {
            // A raw MMAP2 record as the recorder's identity thread reads it, and the
            // recording's per-thread times block.
            let _ = hrec::record::identity::parse_mmap2(rest);
            let _ = serde_json::from_slice::<Vec<hrec::offcpu::ThreadTime>>(rest);
        }
        14 => {
            let _ = hrec::symbol::symbolizer::parse_build_id_lines(rest);
            let mut block = b"12\n".to_vec();
            block.extend_from_slice(rest);
            let _ = hrec::symbol::symbolizer::Symbolizer::builder()
                .recorded_perf_maps(&[block, rest.to_vec()])
                .build();
        }
        _ => {
            let _ = hrec::metrics::perfmon::cpuid_from_cpuinfo(&t);
        }
    }
}
