//! Intel's metrics per row outside `report`: the flags `diff` shares with `report`
//! (`--td-level N`, `--metrics LIST`, `--perfmon DIR`, `--metric-min-reads N`) and the
//! metric sources of a recording ([`metric_sources`]: Intel's files for its CPU, hrec's
//! E-core tree for E-core PMUs), the one-line reasons when there are none. The metrics
//! themselves are [`hrec::analysis::metrics`]'s.

use std::path::{Path, PathBuf};

use clap::Args;
use hrec::analysis::metrics::{DEFAULT_MIN_READS, MemberMap, MetricOptions, RowMetricsError};
use hrec::data::Meta;
use hrec::metrics::perfmon::Perfmon;

/// Intel's metrics per row, as `report` takes them.
#[derive(Debug, Args, Clone)]
pub struct MetricArgs {
    /// Intel's TMA nodes of levels 1 to N (3 to 6) per row, from the metric groups of
    /// `record --td-level N` (Intel's files from --perfmon).
    #[arg(long = "td-level", value_name = "N", value_parser = clap::value_parser!(u8).range(3..=6))]
    pub td_level: Option<u8>,
    /// Intel's metrics per row (stat -M's names: tma_l3_bound, TopdownL3, tma_<node>_group),
    /// from the metric groups of `record -M` / `record --td-level N`.
    #[arg(long = "metrics", value_name = "LIST")]
    pub metrics: Vec<String>,
    /// Directory with Intel's perfmon files (mapfile.csv and the model folders); default
    /// $HREC_PERFMON_DIR, else ~/.cache/hrec/perfmon.
    #[arg(long, value_name = "DIR")]
    pub perfmon: Option<PathBuf>,
    /// The fewest reads of a group in a row before a metric needing that group gets a
    /// number (`-`/`null` below).
    #[arg(long = "metric-min-reads", value_name = "N", default_value_t = DEFAULT_MIN_READS)]
    pub metric_min_reads: u64,
}

impl MetricArgs {
    /// What to compute, when any metric was asked for.
    pub fn options(&self) -> Option<MetricOptions> {
        (self.td_level.is_some() || !self.metrics.is_empty()).then(|| MetricOptions {
            td_level: self.td_level.map(u32::from),
            metrics: self.metrics.clone(),
            min_reads: self.metric_min_reads,
        })
    }
}

/// One source of metrics per row: the core PMU whose groups it reads (`None`: every group
/// not on a hybrid part's E-cores) and the metrics with their events.
pub struct MetricSource {
    /// The core PMU (`cpu_atom`), or `None` for the P-cores and a part with one core type.
    pub pmu: Option<String>,
    /// Intel's files, or hrec's E-core tree ([`hrec::metrics::ecore`]).
    pub perfmon: Perfmon,
}

/// The metric sources of a recording, one per core PMU with metric groups: Intel's files for
/// the recording's CPU (the P-cores', or those of a part with one core type), hrec's E-core
/// tree for each E-core PMU of a hybrid part and for a part made only of E-cores without
/// Intel's files. `Err` is the one-line reason there are none; the notes say what is missing
/// where some are (Intel's files for the P-cores of a hybrid recording).
pub fn metric_sources(
    meta: &Meta,
    dir: Option<&Path>,
) -> Result<(Vec<MetricSource>, Vec<String>), String> {
    use hrec::analysis::metrics::is_ecore_pmu;
    use hrec::pmu::uarch;
    let map = MemberMap::new(meta);
    if map.groups().is_empty() {
        return Err(RowMetricsError::NoGroups.to_string());
    }
    if meta.cpuid.is_empty() {
        return Err("the recording does not say which CPU it was made on (no cpuid), so Intel's files cannot be chosen".into());
    }
    let cpu = uarch::CpuId::parse(&meta.cpuid);
    let tree = |pmu: &str| -> Option<Perfmon> {
        let td = uarch::ecore_topdown(cpu.as_ref(), pmu)?;
        let c = uarch::core_counters(cpu.as_ref(), pmu)?;
        hrec::metrics::ecore::tree(td, c).ok()
    };
    let mut ecore: Vec<String> = Vec::new();
    let mut other = false;
    for g in map.groups() {
        let pmu = meta.events[g.sampler].pmu.clone();
        match pmu {
            Some(p) if is_ecore_pmu(Some(&p)) => {
                if !ecore.contains(&p) {
                    ecore.push(p);
                }
            }
            _ => other = true,
        }
    }
    let mut out = Vec::new();
    let mut notes = Vec::new();
    let dir = hrec::stat::tma::perfmon_dir(dir);
    if other {
        match hrec::stat::tma::load(&dir, &meta.cpuid) {
            Ok((perfmon, _)) => out.push(MetricSource { pmu: None, perfmon }),
            Err(e) => {
                let only_ecores = ["cpu", "cpu_core"]
                    .iter()
                    .find_map(|p| tree(p))
                    .filter(|_| ecore.is_empty());
                match only_ecores {
                    Some(perfmon) => out.push(MetricSource { pmu: None, perfmon }),
                    None if ecore.is_empty() => return Err(e.to_string()),
                    None => notes.push(format!("metrics: none for the P-cores: {e}")),
                }
            }
        }
    }
    for p in ecore {
        match tree(&p) {
            Some(perfmon) => out.push(MetricSource {
                pmu: Some(p),
                perfmon,
            }),
            None => notes.push(format!(
                "metrics: none for {p}: hrec has no E-core TopDown tree for this CPU ({})",
                meta.cpuid
            )),
        }
    }
    if out.is_empty() {
        return Err(notes.join("; "));
    }
    Ok((out, notes))
}

/// The metric source of the core PMU `pmu` (an event's): the E-core tree of an E-core PMU
/// of a hybrid part, else the P-cores' (or the only core type's) source.
pub fn source_for(
    meta: &Meta,
    dir: Option<&Path>,
    pmu: Option<&str>,
) -> Result<MetricSource, String> {
    let (sources, notes) = metric_sources(meta, dir)?;
    let want = pmu.filter(|p| hrec::analysis::metrics::is_ecore_pmu(Some(p)));
    sources
        .into_iter()
        .find(|s| s.pmu.as_deref() == want)
        .ok_or_else(|| match want {
            Some(p) => format!("{p} has no metric groups in this recording"),
            None => notes
                .first()
                .cloned()
                .unwrap_or_else(|| RowMetricsError::NoGroups.to_string()),
        })
}

/// Each source's metrics per row on a recording (`p` its profile), by the source's index in
/// `sources`, with the one-line reasons of the sources that have no groups there (`pmu: why`
/// for an E-core PMU's).
pub fn setups_of<'a>(
    sources: &'a [MetricSource],
    meta: &Meta,
    p: &hrec::analysis::profile::Profile,
    o: &MetricOptions,
) -> (
    Vec<(usize, hrec::analysis::metrics::RowMetricsSetup<'a>)>,
    Vec<String>,
) {
    let mut out = Vec::new();
    let mut errors = Vec::new();
    for (i, s) in sources.iter().enumerate() {
        match hrec::analysis::metrics::RowMetricsSetup::for_pmu(
            &s.perfmon,
            meta,
            p,
            o,
            s.pmu.as_deref(),
        ) {
            Ok(setup) => out.push((i, setup)),
            Err(e) => errors.push(match &s.pmu {
                Some(pmu) => format!("{pmu}: {e}"),
                None => e.to_string(),
            }),
        }
    }
    (out, errors)
}
