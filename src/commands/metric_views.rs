//! Intel's metrics per row outside `report`: the flags `diff` shares with `report`
//! (`--td-level N`, `--metrics LIST`, `--perfmon DIR`, `--metric-min-reads N`) and the
//! loading of Intel's files for a recording's CPU, the one-line reasons when there are none.
//! The metrics themselves are [`hrec::analysis::metrics`]'s.

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

/// Intel's files for the CPU a recording was made on; `Err` is the one-line reason there are
/// no metrics per row (no metric groups, no cpuid, Intel's files missing).
pub fn perfmon_for(meta: &Meta, dir: Option<&Path>) -> Result<Perfmon, String> {
    if MemberMap::new(meta).groups().is_empty() {
        return Err(RowMetricsError::NoGroups.to_string());
    }
    if meta.cpuid.is_empty() {
        return Err("the recording does not say which CPU it was made on (no cpuid), so Intel's files cannot be chosen".into());
    }
    let dir = hrec::stat::tma::perfmon_dir(dir);
    let (perfmon, _) = hrec::stat::tma::load(&dir, &meta.cpuid).map_err(|e| e.to_string())?;
    Ok(perfmon)
}
