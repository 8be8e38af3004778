//! The writer thread: the one place that touches the output file while recording, so the
//! drain loop never waits on compression or the disk.
//!
//! It takes [`Msg`]s in the order the drain loop sent them: batches of records (their samples
//! unwound first when the recording has user stacks, [`super::unwind`]), copies of each drain
//! pass's side-band records for the unwinder, the side blocks that end a file (build-ids and
//! kernel symbols, worked out here because reading every binary and `/proc/kallsyms` would
//! stall the drain), and `--switch-output`'s switches (finish, rename, start the next file
//! with the modules and the vdso). After a write error it keeps receiving, so the drain never
//! blocks on a full channel, but drops the data: the file stays readable up to its last
//! complete block.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, mpsc};

use crate::data::{self, Meta, Trailer, Writer};

use super::account::Accounting;
use super::offcpu::{self, AGGREGATE_SOURCE, DIRECT_SOURCE, OffCpuRecorder, Pass};
use super::side;
use super::unwind::RecordUnwinder;

/// What the drain thread hands the writer thread, in the order it is to be written.
pub(super) enum Msg {
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
        /// The file's samples need the vdso image ([`Accounting::vdso_used`]).
        vdso: bool,
    },
    /// A side block for the current file (the perf maps of processes in containers).
    Side(String, Vec<u8>),
    /// `--off-cpu`: one drain pass's records of the off-CPU rings (after that pass's
    /// [`Msg::SideBand`]), for the pairing ([`super::offcpu`]).
    OffCpu(Box<Pass>),
    /// `--switch-output`: finish the file with this trailer, rename it `to`, and start the
    /// next one at the output path with this header.
    Switch {
        to: PathBuf,
        trailer: Box<Trailer>,
        meta: Box<Meta>,
    },
}

/// What the writer thread works with besides the first file and the channel.
pub(super) struct WriterCtx {
    /// The build-ids of files found while their process lived ([`super::identity`]), which
    /// the build-ids block gives for their paths.
    pub(super) identities_found: Option<super::identity::Found>,
    pub(super) procfs: PathBuf,
    pub(super) vdso: Option<Vec<u8>>,
    /// perf's build-id cache, where the vdso image is saved (`None` with `-N`/`-B`: the
    /// image then goes into the file).
    pub(super) buildid_cache: Option<PathBuf>,
    pub(super) unwinder: Option<RecordUnwinder>,
    /// `-o`: where each file is written while it is the current one.
    pub(super) output: PathBuf,
    /// `-z N`.
    pub(super) level: Option<i32>,
    /// The current file's size, for `--switch-output=SIZE`.
    pub(super) file_bytes: Arc<AtomicU64>,
    /// `-B`: no build-ids block.
    pub(super) no_buildid: bool,
    /// Where finished files are announced.
    pub(super) on_file: Option<mpsc::Sender<PathBuf>>,
    /// [`crate::record::Session::live`].
    pub(super) live: bool,
    /// `--off-cpu`: the pairing of switch records and stacks.
    pub(super) off_cpu: Option<OffCpuRecorder>,
    /// Bytes sent in [`Msg::OffCpu`] and not paired yet (the drain loop's bound).
    pub(super) off_cpu_in_hand: Arc<AtomicU64>,
    /// [`Msg::OffCpu`] passes sent and not paired yet.
    pub(super) off_cpu_in_flight: Arc<AtomicU64>,
    /// The first write that failed, as one line, for the drain loop to say at once.
    pub(super) failure: Arc<std::sync::OnceLock<String>>,
    /// Until when (monotonic ns) ring batches are written with zstd alone
    /// ([`data::Writer::set_columns`]): set by the drain loop when it finds a ring nearly
    /// full (`drain::PRESSED`), so that the writer's CPU goes to draining.
    pub(super) pressure: Arc<AtomicU64>,
}

/// The files `--switch-output` finished before the last one.
#[derive(Debug, Default)]
pub(super) struct Dumped {
    /// Their names, oldest first (those removed by `--switch-max-files` left out).
    pub(super) files: Vec<PathBuf>,
    /// How many there were.
    pub(super) count: usize,
    /// Their sizes added up.
    pub(super) bytes: u64,
}

/// The side block every file starts with: the kernel's modules. (The vdso image goes at the
/// end, only into a file whose samples need it.)
fn start_file(w: &mut Writer, ctx: &WriterCtx) -> Result<(), data::DataError> {
    if !ctx.live
        && let Ok(bytes) = std::fs::read(ctx.procfs.join("modules"))
    {
        w.write_side_packed("modules", &bytes)?;
    }
    Ok(())
}

/// Runs on the writer thread: side blocks first, then every batch, in arrival order, its
/// samples unwound first when the recording has user stacks ([`super::unwind`]). After a write
/// error it keeps receiving (so the drain never blocks on a full channel) but drops data.
pub(super) fn writer_loop(mut w: Writer, rx: mpsc::Receiver<Msg>, mut ctx: WriterCtx) -> WriterEnd {
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
            Msg::Records(source, bytes) => {
                if source != u32::MAX {
                    let until = ctx.pressure.load(Ordering::Relaxed);
                    w.set_columns(crate::kernel::process::monotonic_ns() >= until);
                }
                match &mut ctx.unwinder {
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
                }
            }
            Msg::FileSides {
                files,
                kernel_addrs,
                vdso,
            } => write_file_sides(&mut w, &ctx, &files, &kernel_addrs, vdso, &mut kallsyms),
            Msg::Side(name, bytes) => w.write_side(&name, &bytes).map(|_| ()),
            Msg::SideBand(bytes) => {
                if let Some(u) = &mut ctx.unwinder {
                    u.apply_side_band(&bytes);
                }
                Ok(())
            }
            Msg::OffCpu(p) => {
                let r = match &mut ctx.off_cpu {
                    Some(o) => {
                        let direct = o.pass(&p, ctx.unwinder.as_mut());
                        write_off_cpu(&mut w, ctx.unwinder.as_mut(), DIRECT_SOURCE, &direct)
                    }
                    None => Ok(()),
                };
                ctx.off_cpu_in_hand.fetch_sub(p.bytes, Ordering::Relaxed);
                ctx.off_cpu_in_flight.fetch_sub(1, Ordering::Relaxed);
                r
            }
            Msg::Switch { to, trailer, meta } => end_off_cpu(&mut w, &mut ctx, false)
                .and_then(|()| switch_file(&mut w, &ctx, &to, *trailer, &meta))
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
            // The error and its causes, as main prints an error's chain.
            let mut line = e.to_string();
            let mut cause = std::error::Error::source(&e);
            while let Some(c) = cause {
                line.push_str(&format!(": {c}"));
                cause = c.source();
            }
            let _ = ctx.failure.set(line);
            failed = Some(e);
        }
        ctx.file_bytes.store(w.bytes_written(), Ordering::Relaxed);
    }
    if failed.is_none()
        && let Err(e) = end_off_cpu(&mut w, &mut ctx, true)
    {
        failed = Some(e);
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
        off_cpu: ctx.off_cpu.as_ref().map(|o| *o.totals()),
    }
}

/// Writes off-CPU samples (`bytes`, whole records) under `source`, after the stack table's
/// new nodes they use.
fn write_off_cpu(
    w: &mut Writer,
    unwinder: Option<&mut RecordUnwinder>,
    source: u32,
    bytes: &[u8],
) -> Result<(), data::DataError> {
    if bytes.is_empty() {
        return Ok(());
    }
    if let Some(b) = unwinder.and_then(|u| u.take_stacks()) {
        w.write_side("stacks", &b)?;
    }
    w.write_records(bytes, source).map(|_| ())
}

/// The end of a file's off-CPU part: the direct samples still held, the aggregated samples
/// the `off-cpu` counts and each thread's time (`off-cpu-threads`)
/// ([`offcpu::OffCpuRecorder::finish_file`]).
fn end_off_cpu(w: &mut Writer, ctx: &mut WriterCtx, last: bool) -> Result<(), data::DataError> {
    let Some(o) = &mut ctx.off_cpu else {
        return Ok(());
    };
    let end = o.finish_file(ctx.unwinder.as_mut(), last);
    write_off_cpu(w, ctx.unwinder.as_mut(), DIRECT_SOURCE, &end.direct)?;
    write_off_cpu(w, ctx.unwinder.as_mut(), AGGREGATE_SOURCE, &end.aggregates)?;
    let json = serde_json::to_vec(&end.stats).unwrap_or_default();
    w.write_side(offcpu::STATS_SIDE, &json)?;
    let json = serde_json::to_vec(&end.threads).unwrap_or_default();
    w.write_side(crate::data::offcpu::THREADS_SIDE, &json)
        .map(|_| ())
}

/// What the writer thread hands back.
pub(super) struct WriterEnd {
    pub(super) writer: Writer,
    /// The write that failed, after which nothing more was written.
    pub(super) failed: Option<data::DataError>,
    pub(super) dumped: Dumped,
    /// Samples in the complete blocks of the last file.
    pub(super) kept: u64,
    /// `--off-cpu`: the intervals of every file.
    pub(super) off_cpu: Option<crate::data::offcpu::OffCpuStats>,
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
pub(super) fn keep_newest(files: &mut Vec<PathBuf>, max: Option<usize>) {
    let Some(max) = max else { return };
    let extra = files.len().saturating_sub(max);
    for old in files.drain(..extra) {
        let _ = std::fs::remove_file(old);
    }
}

/// The side blocks that end a file: the vdso image when its samples need it and the build-id
/// cache cannot keep it, the build-ids
/// of the files mapped (and of the vdso, so a file without its image can find it again, as
/// perf's build-id cache does), and the kernel symbols around the kernel addresses sampled.
fn write_file_sides(
    w: &mut Writer,
    ctx: &WriterCtx,
    files: &std::collections::BTreeSet<Vec<u8>>,
    kernel_addrs: &std::collections::BTreeSet<u64>,
    vdso: bool,
    kallsyms: &mut Option<String>,
) -> Result<(), data::DataError> {
    if ctx.live {
        return Ok(());
    }
    if vdso && let Some(image) = &ctx.vdso {
        // Saved in the build-id cache, as perf record saves it, where a report finds it by
        // the build-id the build-ids block lists (or takes this kernel's own): the file
        // carries the image only when it cannot be found that way.
        let cached = !ctx.no_buildid
            && ctx
                .buildid_cache
                .as_deref()
                .zip(crate::kernel::image_build_id(image))
                .is_some_and(|(dir, hex)| {
                    crate::symbol::buildid_cache::Cache::new(dir)
                        .add_vdso(&hex, image)
                        .is_ok()
                });
        if !cached {
            w.write_side_packed("vdso", image)?;
        }
    }
    if !ctx.no_buildid {
        let found = ctx
            .identities_found
            .as_ref()
            .and_then(|f| f.lock().ok().map(|m| m.clone()))
            .unwrap_or_default();
        let mut build_ids = side::build_ids(files.iter().map(Vec::as_slice), &found);
        if let Some(id) = ctx.vdso.as_deref().and_then(crate::kernel::image_build_id) {
            build_ids.push_str(&format!("{id} [vdso]\n"));
        }
        w.write_side_packed("build-ids", build_ids.as_bytes())?;
    }
    if !kernel_addrs.is_empty() {
        let all = kallsyms.get_or_insert_with(|| {
            std::fs::read_to_string(ctx.procfs.join("kallsyms")).unwrap_or_default()
        });
        let subset = side::kallsyms_subset(all, kernel_addrs);
        w.write_side_packed("kallsyms", subset.as_bytes())?;
    }
    Ok(())
}

/// Asks the writer for the side blocks that end the current file ([`Msg::FileSides`]).
pub(super) fn send_file_sides(tx: &mpsc::SyncSender<Msg>, acc: &Accounting) {
    let _ = tx.send(Msg::FileSides {
        files: acc.mapped_files.clone(),
        kernel_addrs: acc.kernel_addrs.clone(),
        vdso: acc.vdso_used,
    });
}
