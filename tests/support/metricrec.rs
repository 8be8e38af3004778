//! Synthetic recordings of `hrec record --td-level N` / `-M`: the real planner's sampling-read
//! groups for a fixture machine (Intel's files from `../shared/perfmon`, read at test time),
//! and the expected metrics by Intel's formulas evaluated on a per-function truth of events
//! per cycle, with the metrics evaluator rather than the report's code.
//!
//! A truth is a function from an event's [`key`] (Intel's name and the modifiers that change
//! its encoding) to events per cycle; a recording made from it gives every group member the
//! delta `rate × cycles` of its group's sample, so each group's ratios are the truth's and the
//! report's metrics must be Intel's formulas on the truth ([`truth`]), its bottleneck toplev's
//! path on it ([`truth_path`]). [`Synth`] writes such a recording with the real file writer.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use hrec::data::{EventId, EventMeta, Meta, MetricChoiceMeta, PmuMeta, Trailer, Writer};

use hrec::event::plan::metric::{self, MetricChoice};
use hrec::event::plan::{self, Host, Plan, RecordOptions, Role};
use hrec::metrics::Constants;
use hrec::metrics::perfmon::{EventRef, Metric, Perfmon};
use hrec::pmu::uarch::CpuId;

use super::encode::{Encoder, ReadFields, ReadValue, SampleFields, SampleId};

/// `../shared/perfmon` next to the repository (Intel's files), or `None` with a line saying
/// the test is skipped.
pub fn perfmon_dir() -> Option<PathBuf> {
    let d = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/perfmon");
    if d.join("mapfile.csv").exists() {
        Some(d)
    } else {
        eprintln!("skipped: ../shared/perfmon not found");
        None
    }
}

/// Intel's files for fixture `model`.
pub fn perfmon(dir: &Path, model: &str) -> Perfmon {
    let id = hrec::stat::tma::cpuid(&super::procfs_of(model)).unwrap();
    hrec::stat::tma::load(dir, &id).unwrap().0
}

/// The host of fixture `model` as `hrec record` sees a server: its CPU, and the NMI watchdog
/// on (it holds a counter, as on a default kernel).
pub fn host(model: &str) -> Host {
    Host {
        max_sample_rate: Some(100_000),
        x86: true,
        cpu: CpuId::read(&super::procfs_of(model)),
        nmi_watchdog: Some(true),
    }
}

/// The record plan of `choice` with `opts` on fixture `model`, as `hrec record` makes it.
pub fn plan_of(dir: &Path, model: &str, choice: &MetricChoice, opts: &RecordOptions) -> Plan {
    let pmus = super::pmus(model);
    let host = host(model);
    let pm = perfmon(dir, model);
    let m = metric::plan_metrics(&pmus, &host, Ok(&pm), choice).unwrap();
    plan::plan_record_with(&pmus, &host, opts, Some(&m)).unwrap()
}

/// `--td-level level`.
pub fn td_level(level: u32) -> MetricChoice {
    MetricChoice {
        td_level: Some(level),
        metrics: Vec::new(),
    }
}

/// An event as a truth keys it: Intel's name (the cycles events as one) and the modifiers
/// that change the encoding, `NAME:cmask:edge:inv`.
pub fn key(e: &EventRef) -> String {
    let name = e.name.to_ascii_uppercase();
    let name = match name.as_str() {
        "CYCLES" | "CPU_CLK_UNHALTED.THREAD_P" => "CPU_CLK_UNHALTED.THREAD".to_string(),
        _ => name,
    };
    format!("{name}:{:?}:{}:{}", e.cmask, e.edge, e.inv)
}

/// A [`key`]'s parts: the name, the counter mask and the edge bit.
pub fn key_parts(k: &str) -> (&str, Option<u32>, bool) {
    let mut it = k.split(':');
    let name = it.next().unwrap_or(k);
    let cmask = it
        .next()
        .and_then(|c| c.strip_prefix("Some(")?.strip_suffix(')')?.parse().ok());
    let edge = it.next() == Some("true");
    (name, cmask, edge)
}

/// The plan's metric groups: per sampler (plan index), its members (plan indexes) and each
/// member's truth key.
pub fn groups(plan: &Plan) -> Vec<(usize, Vec<(usize, String)>)> {
    plan.events
        .iter()
        .filter(|e| e.role == Role::Sampler && e.metric.is_some())
        .map(|s| {
            let members = plan
                .events
                .iter()
                .filter(|e| e.leader == s.leader)
                .map(|e| {
                    let m = e.metric.as_ref().unwrap();
                    (e.index, key(&EventRef::parse(&m.event)))
                })
                .collect();
            (s.index, members)
        })
        .collect()
}

/// Intel's value of `m` by its formula on a truth (`rate`: events per cycle by [`key`]),
/// `latency` giving `:R` terms; SMT off (a recording without its topology).
pub fn truth(
    m: &Metric,
    rate: &dyn Fn(&str) -> f64,
    latency: &dyn Fn(&str) -> Option<f64>,
) -> Option<f64> {
    truth_threads(m, rate, latency, 1)
}

/// [`truth`] on a machine of `threads` hardware threads per core (as the recording's
/// topology says; `smt_on` when more than 1).
pub fn truth_threads(
    m: &Metric,
    rate: &dyn Fn(&str) -> f64,
    latency: &dyn Fn(&str) -> Option<f64>,
    threads: u32,
) -> Option<f64> {
    let counts = |e: &EventRef| Some(rate(&key(e)) * 1e9);
    let c = Constants {
        smt_on: Some(threads > 1),
        threads_per_core: Some(f64::from(threads)),
        ..Constants::default()
    };
    m.evaluate(&counts, latency, &c)
        .ok()
        .filter(|v| v.is_finite())
}

/// toplev's bottleneck path on the truth: from level 1 the largest node past its threshold,
/// then the largest of its children past theirs, down to a node with none.
pub fn truth_path(
    pm: &Perfmon,
    chosen: &[&Metric],
    value: &dyn Fn(&Metric) -> Option<f64>,
) -> Vec<String> {
    let past = |m: &Metric| -> Option<f64> {
        let v = value(m)?;
        matches!(pm.threshold_holds(m, value), Ok(Some(true))).then_some(v)
    };
    let mut path = Vec::new();
    let mut parent: Option<String> = None;
    loop {
        let best = chosen
            .iter()
            .filter(|m| {
                m.is_tma_node()
                    && match &parent {
                        None => m.level == 1,
                        Some(p) => m.parent.as_deref() == Some(p.as_str()),
                    }
            })
            .filter_map(|m| Some((*m, past(m)?)))
            .max_by(|a, b| a.1.total_cmp(&b.1));
        let Some((m, _)) = best else { break };
        path.push(m.perf_name());
        parent = Some(m.name.clone());
    }
    path
}

/// Cycles per sample of every group's sampler in a [`Synth`] recording.
pub const PERIOD: u64 = 1_000_000;
/// A sample's `misc` in the kernel with an exact ip (`PERF_RECORD_MISC_KERNEL`,
/// `PERF_RECORD_MISC_EXACT_IP`).
pub const KERNEL_EXACT: u16 = 1 | (1 << 14);

/// The fixture model's cpuid as hrec stores it (`GenuineIntel-6-AD-1`).
pub fn cpuid(model: &str) -> String {
    CpuId::read(&super::procfs_of(model)).unwrap().to_string()
}

/// The sample id of plan event `i` (each event has one, on CPU 0 of thread 500).
pub fn id(i: usize) -> u64 {
    1000 + i as u64
}

/// The record plan of `--td-level 3` on fixture `model`, as `hrec record` makes it.
pub fn plan_td3(dir: &Path, model: &str) -> Plan {
    plan_of(dir, model, &td_level(3), &RecordOptions::default())
}

/// The recording's events of `plan`, each with its one [`id`].
fn event_metas(plan: &Plan) -> Vec<EventMeta> {
    plan.events
        .iter()
        .map(|e| EventMeta {
            name: e.name.clone(),
            pmu: e.pmu.clone(),
            attr: e.attr,
            leader: e.leader,
            role: e.role,
            ids: vec![EventId {
                id: id(e.index),
                cpu: 0,
                tid: 500,
            }],
            trace_format: None,
        })
        .collect()
}

/// Writes a recording of fixture `model`'s default plan (no metric groups) and no records as
/// `file`.
pub fn write_plain(file: &Path, model: &str) {
    let meta = Meta {
        hrec_version: "test".into(),
        target: "workload".into(),
        cpuid: cpuid(model),
        events: event_metas(&super::plan(model, &RecordOptions::default())),
        ..Meta::default()
    };
    let w = Writer::create(file, &meta).unwrap();
    w.finish(Trailer::default()).unwrap();
}

/// The ip of a function's sample in a round of a group ([`Synth::ip`]).
pub type IpOf<'a> = dyn Fn(&str, u64, usize) -> u64 + 'a;

/// A synthetic recording of a metric-group plan, byte for byte in the kernel's layout: thread
/// 500 (`app`) samples each function at its ip in the kernel, round-robin over the plan's
/// groups and the functions as multiplexing interleaves them; every sample of a group is a
/// group read whose members grew by `rate(func, key) × PERIOD` (events per cycle by truth
/// [`key`], [`PERIOD`] cycles a sample), so each group's ratios are the truth's.
pub struct Synth<'a> {
    /// The cpuid the recording stores.
    pub cpuid: String,
    /// The kernel's symbols (`/proc/kallsyms`), kept as the recording's side file.
    pub kallsyms: &'a str,
    /// The functions sampled, each with the ip of its samples.
    pub funcs: &'a [(&'a str, u64)],
    /// The ip of a function's sample in a round of a group (`None`: its ip in `funcs`), for
    /// samples spread over a function's instructions.
    pub ip: Option<&'a IpOf<'a>>,
    /// The samples' `misc` ([`KERNEL_EXACT`]; user-space samples of a mapped binary need the
    /// user mode).
    pub misc: u16,
    /// Records between the thread's COMM and the samples (the MMAP2 of a sampled binary).
    pub leading_records: Vec<u8>,
    /// The truth: events per cycle of a function by truth key.
    pub rate: &'a dyn Fn(&str, &str) -> f64,
    /// Reads of group `g` (in [`groups`] order) per function.
    pub reads: &'a dyn Fn(&str, usize) -> u64,
    /// More events after the plan's (a `-W` sampler).
    pub extra_events: Vec<EventMeta>,
    /// More records after the groups' samples (the extra events' samples).
    pub extra_records: Vec<u8>,
    /// The CPU's hardware threads per core the recording keeps (`None`: no topology).
    pub threads_per_core: Option<u32>,
    /// The `record --td-level` / `-M` choice the recording keeps.
    pub metric_choice: Option<MetricChoiceMeta>,
    /// The trailer written at the end (final counts).
    pub trailer: Trailer,
}

impl Synth<'_> {
    /// Writes the recording of `plan` as `file` with the real file writer.
    pub fn write(&self, file: &Path, plan: &Plan) {
        let mut events = event_metas(plan);
        events.extend(self.extra_events.iter().cloned());
        let meta = Meta {
            hrec_version: "test".into(),
            target: "workload".into(),
            cpuid: self.cpuid.clone(),
            pmus: vec![PmuMeta {
                name: "cpu".into(),
                type_: 4,
                cpus: None,
            }],
            events,
            threads_per_core: self.threads_per_core,
            metric_choice: self.metric_choice.clone(),
            ..Meta::default()
        };
        let gs = groups(plan);
        let first = gs[0].0;
        let mut records = Vec::new();
        let sid = SampleId {
            pid: 500,
            tid: 500,
            time: 1,
            id: id(first),
            ..SampleId::default()
        };
        records.extend(Encoder::new(meta.events[first].attr).comm(&sid, 500, 500, b"app", true));
        records.extend_from_slice(&self.leading_records);
        let mut totals: HashMap<usize, Vec<u64>> = HashMap::new();
        let mut time = 10;
        let most = self
            .funcs
            .iter()
            .flat_map(|(f, _)| (0..gs.len()).map(|g| (self.reads)(f, g)))
            .max()
            .unwrap();
        // Round-robin over groups and functions, as multiplexing interleaves them.
        for round in 0..most {
            for (gi, (sampler, members)) in gs.iter().enumerate() {
                for &(f, ip) in self.funcs {
                    if round >= (self.reads)(f, gi) {
                        continue;
                    }
                    let tot = totals
                        .entry(*sampler)
                        .or_insert_with(|| vec![0; members.len()]);
                    for (k, (_, key)) in members.iter().enumerate() {
                        tot[k] += ((self.rate)(f, key) * PERIOD as f64).round() as u64;
                    }
                    time += 1000;
                    let values = members
                        .iter()
                        .zip(tot.iter())
                        .map(|(&(m, _), &v)| ReadValue {
                            value: v,
                            id: id(m),
                            lost: 0,
                        })
                        .collect();
                    let enc = Encoder::new(meta.events[*sampler].attr);
                    records.extend(enc.sample(&SampleFields {
                        misc: self.misc,
                        id: id(*sampler),
                        ip: self.ip.map_or(ip, |at| at(f, round, gi)),
                        pid: 500,
                        tid: 500,
                        time,
                        cpu: 0,
                        period: PERIOD,
                        read: ReadFields {
                            values,
                            ..ReadFields::default()
                        },
                        ..SampleFields::default()
                    }));
                }
            }
        }
        records.extend_from_slice(&self.extra_records);
        let mut w = Writer::create(file, &meta).unwrap();
        w.write_side("kallsyms", self.kallsyms.as_bytes()).unwrap();
        w.write_records(&records, 0).unwrap();
        w.finish(self.trailer.clone()).unwrap();
    }
}
