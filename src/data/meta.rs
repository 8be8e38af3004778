//! The JSON parts of the file: [`Meta`] in the header and [`Trailer`] at the end.
//!
//! Every struct is `#[serde(default)]`, so a reader accepts files from later versions that add
//! fields (they are ignored) and from earlier ones that lack some (they read as default).

use serde::{Deserialize, Serialize};

use super::BlockInfo;
use crate::event::attr::Attr;

/// What was recorded, where and how: written once, before any block.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct Meta {
    /// The hrec version that wrote the file.
    pub hrec_version: String,
    /// hrec's own command line.
    pub command_line: Vec<String>,
    /// `uname -n`.
    pub hostname: String,
    /// `uname -r`.
    pub kernel_release: String,
    /// `uname -m`.
    pub arch: String,
    /// The CPU's model name.
    pub cpu_model: String,
    /// perf's cpuid string (`GenuineIntel-6-AA-4`: family, model and stepping), empty when
    /// unknown: which E-core a PMU's TopDown group counts for.
    pub cpuid: String,
    /// Online CPUs as a cpulist ("0-7,16").
    pub cpus_online: String,
    /// Number of CPUs configured.
    pub nr_cpus: u32,
    /// Page size in bytes.
    pub page_size: u64,
    /// Wall-clock time the recording started, ns since the epoch.
    pub start_time_unix_ns: u64,
    /// The perf clock at the same moment, so sample times map to wall time.
    pub clock_start_ns: u64,
    /// `attr.clockid` when `use_clockid` was set.
    pub clockid: Option<i32>,
    /// "workload", "pid 123", "system-wide", ...
    pub target: String,
    /// The pid of the workload hrec started, if any.
    pub workload_pid: Option<u32>,
    /// hrec's own pid while recording (its samples in `-a` mode are its own overhead).
    pub recorder_pid: u32,
    /// The PMUs the events use.
    pub pmus: Vec<PmuMeta>,
    /// Every opened event, in plan order.
    pub events: Vec<EventMeta>,
    /// Planner notices shown to the user at record time.
    pub notices: Vec<String>,
    /// Ring-buffer data pages per buffer.
    pub mmap_pages: u64,
    /// The user stacks of `--call-graph dwarf` were unwound at record time: samples hold
    /// `[STACK_REF, id]` chains into the `stacks` side blocks (see [`super::stacks`]), and
    /// unless the raw stacks were kept, the events' attrs here lack `REGS_USER` and
    /// `STACK_USER` (the samples were stored without them).
    pub unwound_at_record: bool,
    /// `record --off-cpu=blocked`: the off-CPU intervals of preempted threads are left out.
    pub off_cpu_blocked_only: bool,
    /// The NUMA nodes and their CPU lists (`/sys/devices/system/node`; perf.data's
    /// NUMA_TOPOLOGY), for `c2c report`'s node columns; empty when unknown.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub numa_nodes: Vec<(u32, String)>,
    /// Hardware threads per core: the most CPUs of the recording machine's sysfs topology
    /// (`core_cpus_list`, else `thread_siblings_list`) or perf.data's CPU_TOPOLOGY that share
    /// a core (2 with SMT on; on a hybrid part the P-cores'). Intel's metric formulas take
    /// `smt_on` (more than 1) and `threads_per_core` from it. `None` when unknown (files
    /// written before hrec kept it, or no topology readable).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub threads_per_core: Option<u32>,
    /// `record --td-level N` / `-M LIST`: what the metric groups were planned for, so a
    /// report can say how to read them. `None` without them (and in earlier files).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metric_choice: Option<MetricChoiceMeta>,
    /// The machine's memory in kB (`/proc/meminfo`'s MemTotal; perf.data's TOTAL_MEM);
    /// `None` when unknown (and in files written before hrec kept it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_mem_kb: Option<u64>,
    /// The machine's CPU topology (sysfs, as perf reads it; perf.data's CPU_TOPOLOGY), which
    /// `convert` writes back. `None` when unknown (and in files written before hrec kept it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_topology: Option<crate::pmu::CpuTopology>,
    /// Each NUMA node's memory in kB when recorded, total and free (`node<N>/meminfo`;
    /// perf.data's NUMA_TOPOLOGY), by node number; empty when unknown.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub numa_memory_kb: Vec<(u32, u64, u64)>,
    /// With tracepoints: the kernel's printk formats (tracefs `printk_formats`, `0xADDR :
    /// "text"` lines), which a tracepoint's `%s` of a `const char *` field prints; perf.data
    /// keeps them in its tracing data.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub trace_printk: String,
}

/// What `record --td-level N` / `-M LIST` asked for, as kept in [`Meta::metric_choice`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct MetricChoiceMeta {
    /// `--td-level N`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub td_level: Option<u32>,
    /// `-M`: the names as given (each may be a comma-separated list).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub metrics: Vec<String>,
}

impl MetricChoiceMeta {
    /// The `report` options that read the groups: `--td-level 3`, `--metrics IPC,TopdownL3`,
    /// or both.
    pub fn report_args(&self) -> String {
        let mut v = Vec::new();
        if let Some(l) = self.td_level {
            v.push(format!("--td-level {l}"));
        }
        let names: Vec<&str> = self
            .metrics
            .iter()
            .flat_map(|m| m.split(','))
            .map(str::trim)
            .filter(|m| !m.is_empty())
            .collect();
        if !names.is_empty() {
            v.push(format!("--metrics {}", names.join(",")));
        }
        v.join(" ")
    }
}

/// A PMU by name and its `perf_event_attr.type`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct PmuMeta {
    /// sysfs name ("cpu_core").
    pub name: String,
    /// `perf_event_attr.type`.
    #[serde(rename = "type")]
    pub type_: u32,
    /// A core PMU's CPUs (its sysfs `cpus` file, as a cpulist): on a hybrid part, which CPUs
    /// are P-cores and which E-cores (perf.data's HYBRID_TOPOLOGY). `None` elsewhere, and in
    /// files written before hrec kept it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpus: Option<String>,
}

/// One event as opened.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct EventMeta {
    /// The name the user gave (or the planner chose).
    pub name: String,
    /// The PMU it runs on.
    pub pmu: Option<String>,
    /// The attr as passed to the kernel, stored as hex of its kernel byte layout.
    #[serde(with = "attr_hex")]
    pub attr: Attr,
    /// Index of the group leader in `Meta::events` (itself for a leader).
    pub leader: usize,
    /// What it does in the recording.
    pub role: Role,
    /// The kernel ids of its file descriptors.
    pub ids: Vec<EventId>,
    /// A tracepoint's tracefs `format` file as recorded (its fields and print format), so
    /// its samples read the same on another machine; perf.data keeps these in its
    /// tracing-data header.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace_format: Option<String>,
}

/// What an event does in the recording (stored as its snake_case name).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Produces samples.
    Sampler,
    /// Member of a sampling-read group: counted, read into the sampler's samples.
    Counted,
    /// `dummy` event carrying the side-band records only.
    Tracking,
    /// `record --off-cpu`'s `context-switches` sampler (period 1): the stack of each thread
    /// as it leaves the CPU, which the off-CPU intervals (switch records) are attributed to;
    /// not an event of its own in reports.
    SwitchStacks,
    /// `record --off-cpu`'s `dummy:u` with `context_switch`: the switch records of the
    /// followed threads, in the off-CPU ring buffers beside the stacks.
    Switches,
    /// `offcpu-time`: the off-CPU intervals, paired while recording and written by hrec as
    /// samples of this event (no kernel fd; see `docs/file-format.md`).
    OffCpuTime,
    /// A role this version does not know (a later version's file), or none given.
    #[default]
    #[serde(other)]
    Unknown,
}

impl Role {
    /// The name as stored and printed (`sampler`, `counted`, `tracking`).
    pub fn name(self) -> &'static str {
        match self {
            Role::Sampler => "sampler",
            Role::Counted => "counted",
            Role::Tracking => "tracking",
            Role::SwitchStacks => "switch_stacks",
            Role::Switches => "switches",
            Role::OffCpuTime => "off_cpu_time",
            Role::Unknown => "unknown",
        }
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The id of one file descriptor of an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct EventId {
    /// `PERF_EVENT_IOC_ID`.
    pub id: u64,
    /// The CPU (-1 for any).
    pub cpu: i32,
    /// The thread (-1 for any).
    pub tid: i32,
}

/// Statistics known only at the end, plus the block index: the last block of a finished file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct Trailer {
    /// Wall-clock time the recording ended, ns since the epoch.
    pub end_time_unix_ns: u64,
    /// Duration of the recording.
    pub duration_ns: u64,
    /// Times of the first and last sample (the span of `--time` percentages).
    pub sample_time: Option<(u64, u64)>,
    /// Kernel records written.
    pub records: u64,
    /// Raw bytes of those records.
    pub record_bytes: u64,
    /// SAMPLE records.
    pub samples: u64,
    /// Samples per event (index = event index).
    pub samples_per_event: Vec<u64>,
    /// Samples per thread, sorted by (pid, tid).
    pub threads: Vec<ThreadCount>,
    /// Samples of hrec's own process (`Meta::recorder_pid`).
    pub self_samples: u64,
    /// Kernel LOST records.
    pub lost_records: u64,
    /// Sum of the `lost` values of the LOST records.
    pub lost_samples: u64,
    /// Sum of the `read_format` LOST values read at the end.
    pub lost_samples_read: u64,
    /// Of `lost_records`, those of the off-CPU rings (`record --off-cpu`: switch records and
    /// the stacks threads leave with; on-CPU samples are in other rings).
    pub off_cpu_lost_records: u64,
    /// Of `lost_samples`, those of the off-CPU rings.
    pub off_cpu_lost_samples: u64,
    /// Of `lost_samples_read`, those of the off-CPU events.
    pub off_cpu_lost_samples_read: u64,
    /// Of those, the switch records' (each missing switch record loses an interval).
    pub off_cpu_switches_lost_read: u64,
    /// THROTTLE records.
    pub throttles: u64,
    /// UNTHROTTLE records.
    pub unthrottles: u64,
    /// Final counter values.
    pub counts: Vec<FinalCount>,
    /// The workload's exit status in the shell's convention (the code, or 128 + signal).
    pub workload_status: Option<i32>,
    /// Every block before the trailer, in file order (the writer fills this in).
    pub blocks: Vec<BlockInfo>,
}

/// Samples of one thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct ThreadCount {
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// Samples.
    pub samples: u64,
}

/// The final value of one event fd.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct FinalCount {
    /// Index into `Meta::events`.
    pub event: usize,
    /// The fd's kernel id.
    pub id: u64,
    /// The CPU (-1 for any).
    pub cpu: i32,
    /// The count.
    pub value: u64,
    /// `time_enabled`.
    pub time_enabled: u64,
    /// `time_running`.
    pub time_running: u64,
}

/// `Attr` as lowercase hex of [`Attr::to_bytes`], so the file keeps the exact kernel layout
/// (including fields a later hrec may name differently).
mod attr_hex {
    use serde::de::Error as _;
    use serde::{Deserialize, Deserializer, Serializer};

    use crate::event::Attr;

    pub fn serialize<S: Serializer>(attr: &Attr, s: S) -> Result<S::Ok, S::Error> {
        let mut hex = String::with_capacity(272);
        for b in attr.to_bytes() {
            hex.push(char::from_digit(u32::from(b >> 4), 16).unwrap_or('0'));
            hex.push(char::from_digit(u32::from(b & 15), 16).unwrap_or('0'));
        }
        s.serialize_str(&hex)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Attr, D::Error> {
        let hex = String::deserialize(d)?;
        if hex.len() % 2 != 0 || hex.len() > 2 * 4096 {
            return Err(D::Error::custom(format!(
                "attr hex of {} characters",
                hex.len()
            )));
        }
        let digit = |c: u8| match c {
            b'0'..=b'9' => Ok(c - b'0'),
            b'a'..=b'f' => Ok(c - b'a' + 10),
            b'A'..=b'F' => Ok(c - b'A' + 10),
            _ => Err(D::Error::custom(format!(
                "attr hex has {:?}",
                char::from(c)
            ))),
        };
        let bytes = hex
            .as_bytes()
            .chunks(2)
            .map(|p| match p {
                [hi, lo] => Ok(digit(*hi)? << 4 | digit(*lo)?),
                _ => Err(D::Error::custom("attr hex of an odd length")),
            })
            .collect::<Result<Vec<u8>, D::Error>>()?;
        Ok(Attr::from_bytes(&bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::attr::{flag, sample, types};

    #[test]
    fn attr_survives_json_as_hex() {
        let mut attr = Attr::new(types::SOFTWARE, 0);
        attr.sample_type = sample::IP | sample::TID;
        attr.set(flag::FREQ | flag::SAMPLE_ID_ALL, true);
        attr.sample_period_or_freq = 4000;
        let e = EventMeta {
            name: "cpu-clock".into(),
            attr,
            role: Role::Sampler,
            ..EventMeta::default()
        };
        let json = serde_json::to_string(&e).unwrap();
        assert!(json.contains("\"attr\":\"01000000880000000000"), "{json}");
        let back: EventMeta = serde_json::from_str(&json).unwrap();
        assert_eq!(back, e);
        // Unknown fields are ignored, missing ones default.
        let m: Meta = serde_json::from_str(r#"{"hostname":"h","future":[1,2]}"#).unwrap();
        assert_eq!(m.hostname, "h");
        assert_eq!(m.nr_cpus, 0);
        assert!(serde_json::from_str::<EventMeta>(r#"{"attr":"0g"}"#).is_err());
        assert!(serde_json::from_str::<EventMeta>(r#"{"attr":"012"}"#).is_err());
    }

    #[test]
    fn topology_and_metric_choice_are_optional() {
        // An earlier file has neither: unknown, and nothing written for them when unknown.
        let m: Meta = serde_json::from_str(r#"{"hostname":"h"}"#).unwrap();
        assert_eq!(m.threads_per_core, None);
        assert_eq!(m.metric_choice, None);
        let json = serde_json::to_string(&Meta::default()).unwrap();
        assert!(!json.contains("threads_per_core") && !json.contains("metric_choice"));
        let m = Meta {
            threads_per_core: Some(2),
            metric_choice: Some(MetricChoiceMeta {
                td_level: Some(3),
                metrics: vec!["IPC, tma_info_core_coreipc".into(), String::new()],
            }),
            ..Meta::default()
        };
        let json = serde_json::to_string(&m).unwrap();
        assert!(json.contains(r#""threads_per_core":2"#), "{json}");
        assert_eq!(serde_json::from_str::<Meta>(&json).unwrap(), m);
        assert_eq!(
            m.metric_choice.unwrap().report_args(),
            "--td-level 3 --metrics IPC,tma_info_core_coreipc"
        );
        let only_m = MetricChoiceMeta {
            metrics: vec!["TopdownL3".into()],
            ..MetricChoiceMeta::default()
        };
        assert_eq!(only_m.report_args(), "--metrics TopdownL3");
    }

    #[test]
    fn roles_are_stored_by_name_and_unknown_ones_read() {
        for r in [
            Role::Sampler,
            Role::Counted,
            Role::Tracking,
            Role::SwitchStacks,
            Role::Switches,
            Role::OffCpuTime,
        ] {
            let json = serde_json::to_string(&r).unwrap();
            assert_eq!(json, format!("\"{}\"", r.name()));
            assert_eq!(serde_json::from_str::<Role>(&json).unwrap(), r);
        }
        // A later version's role, or none, reads as Unknown (never a sampler).
        let e: EventMeta = serde_json::from_str(r#"{"role":"aux_sampler"}"#).unwrap();
        assert_eq!(e.role, Role::Unknown);
        assert_eq!(EventMeta::default().role, Role::Unknown);
    }
}
