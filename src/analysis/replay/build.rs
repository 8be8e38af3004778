//! Building a profile: the converter ([`Replay`]) on this thread, the folder ([`Folder`]) on
//! another, and the symbolizer, at the end or (with rows, [`RowLocs`]) batch by batch.

use crate::decode::DecodeError;
use crate::event::attr::sample as st;
use crate::recording::Recording;
use crate::symbol::symbolizer::Symbolizer;
use crate::unwind::UnwindStats;

use super::offcpu::off_cpu_stats;
use super::{Item, Replay};
use crate::analysis::profile::{Folder, Profile, ProfileOptions, SampleView, Sites, resolution};
use crate::analysis::rows::RowLocs;

/// Samples handed from the converter's thread to the folder's: the views with their callers
/// copied into one buffer, then the row ids of the pending locations when a batch of them
/// was resolved after these views ([`Item::Rows`]).
#[derive(Debug, Default)]
struct Batch {
    views: Vec<SampleView<'static>>,
    /// `(start, len)` of each view's callers in `callers`.
    spans: Vec<(u32, u32)>,
    callers: Vec<u32>,
    /// `(start, len)` of each view's member deltas in `members`.
    member_spans: Vec<(u32, u32)>,
    members: Vec<u64>,
    rows: Option<Vec<u32>>,
}

impl Batch {
    /// Samples per batch.
    const SIZE: usize = 4096;

    fn push(&mut self, v: &SampleView<'_>) {
        self.spans
            .push((self.callers.len() as u32, v.callers.len() as u32));
        self.callers.extend_from_slice(v.callers);
        self.member_spans
            .push((self.members.len() as u32, v.members.len() as u32));
        self.members.extend_from_slice(v.members);
        self.views.push(SampleView {
            callers: &[],
            members: &[],
            ..*v
        });
    }

    fn fold_into(&self, folder: &mut Folder) {
        for ((v, &(a, n)), &(ma, mn)) in self.views.iter().zip(&self.spans).zip(&self.member_spans)
        {
            let callers = &self.callers[a as usize..(a + n) as usize];
            let members = &self.members[ma as usize..(ma + mn) as usize];
            folder.add(&SampleView {
                callers,
                members,
                ..*v
            });
        }
        if let Some(ids) = &self.rows {
            folder.remap(ids);
        }
    }
}

/// Builds the folded, symbolized profile of a recording. `progress` is called with the
/// number of samples seen every 65 536 samples.
pub fn build(rec: &Recording, opts: &ProfileOptions, progress: &mut dyn FnMut(u64)) -> Profile {
    build_with(rec, opts, progress, None)
}

/// Whether the samples of a recording may carry callers (call chains, user stacks to unwind,
/// off-CPU intervals under the stacks they left with): their locations are kept by address.
fn may_have_callers(rec: &Recording, r: &Replay) -> bool {
    let meta = rec.meta();
    meta.unwound_at_record
        || r.off_cpu.is_some()
        || r.off_cpu_event.is_some()
        || meta
            .events
            .iter()
            .any(|e| e.attr.sample_type & (st::CALLCHAIN | st::STACK_USER) != 0)
}

/// [`build`] with a symbolizer that outlives the recording (`hrec top`: one per run, so each
/// binary is loaded once); `None` makes one from the recording (its kernel symbols, build-ids
/// and vdso).
pub fn build_with(
    rec: &Recording,
    opts: &ProfileOptions,
    progress: &mut dyn FnMut(u64),
    symbolizer: Option<&Symbolizer>,
) -> Profile {
    let mut r = Replay::new(rec, opts);
    // Locations fold into rows only where no caller needs its address, and no run of the
    // timeline names a group.
    let row_batch = opts
        .fold
        .rows
        .filter(|_| !opts.timeline && !may_have_callers(rec, &r));
    let own;
    let symbolizer = match symbolizer {
        Some(s) => s,
        None => {
            own = Symbolizer::builder()
                .symfs(opts.symfs.clone())
                .search(opts.search.clone())
                .perf_map_dir(opts.perf_map_dir.clone())
                .dwarf(
                    !opts.symbols_only
                        || rec
                            .meta()
                            .events
                            .iter()
                            .any(|e| e.attr.sample_type & st::CALLCHAIN != 0),
                )
                .lines(!opts.names_only)
                .threads(opts.threads)
                .kernel(rec.kernel_symbols(), rec.kernel_unresolved())
                .recorded_build_ids(&rec.side("build-ids").unwrap_or_default())
                .recorded_perf_maps(&rec.sides(crate::symbol::perfmap::SIDE))
                .vdso(r.vdso.as_deref())
                .debuginfod(opts.debuginfod.clone())
                .keep_loaded(row_batch.is_some())
                .build();
            &own
        }
    };
    let mut rows = row_batch.map(|batch| RowLocs::new(symbolizer, batch));
    let mut folder = Folder::new(r.events().to_vec(), opts.timeline).with_keys(opts.fold);
    let mut decode_errors: (u64, Option<String>) = (0, None);
    let mut seen = 0u64;
    let mut on_error = |e: DecodeError| {
        decode_errors.0 += 1;
        decode_errors.1.get_or_insert_with(|| e.to_string());
    };
    let mut tick = || {
        seen += 1;
        if seen.is_multiple_of(65536) {
            progress(seen);
        }
    };
    if opts.threads == 1 {
        r.run_with(rec, rows.as_mut(), |item| match item {
            Item::Error(e) => on_error(e),
            Item::Sample(_, view) => {
                tick();
                folder.add(&view);
            }
            Item::Rows(ids) => folder.remap(ids),
            Item::SideBand(..) => {}
        });
    } else {
        // Two stages on two threads: this one reads, orders, decodes and resolves samples to
        // ids; the other folds them, in the same order, so the result is the same.
        folder = std::thread::scope(|sc| {
            let (tx, rx) = std::sync::mpsc::sync_channel::<Batch>(4);
            let worker = sc.spawn(move || {
                for b in rx {
                    b.fold_into(&mut folder);
                }
                folder
            });
            let mut batch = Batch::default();
            let mut open = true;
            r.run_with(rec, rows.as_mut(), |item| match item {
                Item::Error(e) => on_error(e),
                Item::Sample(_, view) => {
                    tick();
                    batch.push(&view);
                    if batch.views.len() >= Batch::SIZE && open {
                        open = tx.send(std::mem::take(&mut batch)).is_ok();
                    }
                }
                Item::Rows(ids) => {
                    batch.rows = Some(ids.to_vec());
                    if open {
                        open = tx.send(std::mem::take(&mut batch)).is_ok();
                    }
                }
                Item::SideBand(..) => {}
            });
            if open {
                let _ = tx.send(batch);
            }
            drop(tx);
            worker
                .join()
                .unwrap_or_else(|e| std::panic::resume_unwind(e))
        });
    }
    if let Some(rows) = rows.as_mut() {
        let ids = r.resolve_rows(rows);
        folder.remap(&ids);
    }
    let mut p = folder.finish();
    p.comms = r.comm_names.clone();
    p.cgroups = r.cgroup_names.clone();
    p.cgroup_ns = r.cgroup_ns.clone();
    p.traces = std::mem::take(&mut r.traces);
    p.decode_errors = decode_errors;
    p.filtered_by_time = r.filtered_by_time;
    p.multiplexed = r.tracker.multiplexed;
    p.warnings = r.warnings();
    p.off_cpu = off_cpu_stats(rec);
    if let Some(o) = &p.off_cpu {
        p.warnings.extend(o.warnings());
    }
    if let Some(maps) = &r.data_maps {
        p.data_locs = symbolizer.symbolize_data(maps, &r.data_keys, r.mem.types);
    }
    p.no_daddr = r.no_daddr;
    if r.no_daddr > 0 {
        p.warnings.push(format!(
            "{} samples have no data address (record with -d): symbol_daddr, dso_daddr and dcacheline show them as [unknown]",
            r.no_daddr
        ));
    }
    let (locs, keys, mismatches) = match rows {
        Some(rows) => rows.finish(),
        None => {
            let (locs, mismatches) = symbolizer.symbolize(&r.maps, &r.key_list);
            (locs, std::mem::take(&mut r.key_list), mismatches)
        }
    };
    p.locs = locs;
    p.sites = Sites {
        keys,
        mappings: std::mem::take(&mut r.used_maps),
        files: r.maps.files().to_vec(),
    };
    p.build_id_mismatches = mismatches;
    p.debuginfod = opts
        .debuginfod
        .as_ref()
        .map(|d| d.summary())
        .filter(|s| !s.is_empty());
    p.resolution = resolution(&p);
    p.dwarf_stacks = r.unwinder.is_some() || r.stacks.is_some();
    p.inline_entries = p.dwarf_stacks && !opts.no_inline;
    p.unwind = match &r.unwinder {
        Some(u) => Some(u.stats.clone()),
        // Unwound at record time: what the recorder's walks met.
        None => rec
            .side("unwind")
            .and_then(|b| serde_json::from_slice::<UnwindStats>(&b).ok()),
    }
    .filter(|u| u.samples > 0);
    p
}
