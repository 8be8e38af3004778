//! `hrec mem record` and `hrec c2c record`: which memory-sampling events to open on which
//! PMU, as perf 6.1's `perf mem record` / `perf c2c record` choose them, from the sysfs
//! snapshot alone.
//!
//! The rules (perf's `arch/x86/util/mem-events.c` and `util/mem-events.c`, read for facts):
//!
//! * **Which core PMUs.** Every core PMU that lists the event in `events/`: `cpu` on
//!   non-hybrid parts; `cpu_core`, `cpu_atom` (and Arrow Lake-H's `cpu_lowpower`) each get
//!   their own set on hybrid ones. A core PMU without the event is left out with a notice;
//!   when none has it the plan fails with one line saying what is missing (a VM without a
//!   vPMU; AMD, whose memory sampling goes through IBS, which hrec does not record).
//! * **Loads.** `PMU/mem-loads,ldlat=N/P`, the load-latency threshold `N` (default 30
//!   cycles) in the `ldlat` format field (`config1:0-15`). Where the PMU lists
//!   `mem-loads-aux` (Sapphire Rapids and later P-cores: the kernel requires it) the loads
//!   event is the member of a group the auxiliary event leads:
//!   `{PMU/mem-loads-aux/,PMU/mem-loads,ldlat=N/}:P`. Loads are sampled with weights
//!   (`-W`: WEIGHT_STRUCT on x86, the load latency in its low 32 bits).
//! * **Stores.** `PMU/mem-stores/P`, no latency threshold, no weight of their own.
//! * **Order.** perf's: the loads on every core PMU, then the stores on every core PMU.
//! * **Sample type.** `-d` for all (ADDR, DATA_SRC and the data mappings); `--phys-data` and
//!   `--data-page-size` only when asked, as perf adds them only then. `c2c record` asks for
//!   both loads and stores, the physical address (`--phys-data`) and the CPU
//!   (`--sample-cpu`), as perf c2c does.

use super::{Plan, PlanError, RecordOptions};
use crate::pmu::{Pmu, Pmus};

/// perf's default load-latency threshold (`perf_mem_events__loads_ldlat`), in cycles.
pub const DEFAULT_LDLAT: u32 = 30;

/// Which memory operations to sample (`-t load|store|load,store`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemOps {
    /// Loads (`mem-loads`).
    pub load: bool,
    /// Stores (`mem-stores`).
    pub store: bool,
}

impl Default for MemOps {
    /// perf mem's default: loads and stores.
    fn default() -> Self {
        MemOps {
            load: true,
            store: true,
        }
    }
}

impl std::str::FromStr for MemOps {
    type Err = String;

    /// `load`, `store`, `load,store` (perf also accepts `ldlat-loads`/`ldlat-stores`).
    fn from_str(s: &str) -> Result<Self, String> {
        let mut ops = MemOps {
            load: false,
            store: false,
        };
        for part in s.split(',').map(str::trim) {
            match part {
                "load" | "loads" | "ldlat-loads" => ops.load = true,
                "store" | "stores" | "ldlat-stores" => ops.store = true,
                _ => {
                    return Err(format!(
                        "unknown memory operation {part:?}: expected load, store or load,store"
                    ));
                }
            }
        }
        Ok(ops)
    }
}

impl std::fmt::Display for MemOps {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.load, self.store) {
            (true, true) => f.write_str("load,store"),
            (true, false) => f.write_str("load"),
            (false, true) => f.write_str("store"),
            (false, false) => f.write_str("none"),
        }
    }
}

/// What `mem record` samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemOptions {
    /// `-t`.
    pub ops: MemOps,
    /// `--ldlat`: the loads' latency threshold in cycles.
    pub ldlat: u32,
}

impl Default for MemOptions {
    fn default() -> Self {
        MemOptions {
            ops: MemOps::default(),
            ldlat: DEFAULT_LDLAT,
        }
    }
}

/// The chosen events (perf's event strings) and the notices about PMUs left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemEvents {
    /// `-e` strings in open order.
    pub events: Vec<String>,
    /// One line per core PMU that lacks an event the others have.
    pub notices: Vec<String>,
}

/// The memory-sampling events for `mem`, per core PMU. Pure: reads only the snapshot.
pub fn mem_events(pmus: &Pmus, mem: &MemOptions) -> Result<MemEvents, PlanError> {
    if !mem.ops.load && !mem.ops.store {
        return Err(PlanError::Options(
            "-t: give load, store or load,store".into(),
        ));
    }
    let root = pmus.root.display().to_string();
    let cores = pmus.core_pmus();
    if cores.is_empty() {
        return Err(PlanError::MemUnsupported(format!(
            "memory sampling needs a hardware PMU with mem-loads/mem-stores events, and this machine has none (no cpu PMU in {root}/bus/event_source/devices: a VM without a virtual PMU?)"
        )));
    }
    let mut events = Vec::new();
    let mut notices = Vec::new();
    let wanted = [
        (mem.ops.load, "mem-loads", "loads"),
        (mem.ops.store, "mem-stores", "stores"),
    ];
    for (asked, alias, what) in wanted {
        if !asked {
            continue;
        }
        let (with, without): (Vec<&&Pmu>, Vec<&&Pmu>) =
            cores.iter().partition(|p| p.aliases.contains_key(alias));
        if with.is_empty() {
            let names: Vec<&str> = cores.iter().map(|p| p.name.as_str()).collect();
            let ibs = if pmus.get("ibs_op").is_some() {
                " (this is an AMD CPU: perf samples memory accesses with IBS, ibs_op, which hrec does not record)"
            } else {
                ""
            };
            return Err(PlanError::MemUnsupported(format!(
                "cannot sample memory {what}: no core PMU lists {alias} ({} in {root}/bus/event_source/devices has no events/{alias}){ibs}",
                names.join(", ")
            )));
        }
        for p in &without {
            notices.push(format!(
                "{}: no events/{alias}: its CPUs' memory {what} are not sampled",
                p.name
            ));
        }
        for p in with {
            let name = &p.name;
            if alias == "mem-stores" {
                events.push(format!("{name}/mem-stores/P"));
                continue;
            }
            let loads = match p.formats.get("ldlat") {
                Some(f) => {
                    if u64::from(mem.ldlat) > f.max_value() || mem.ldlat == 0 {
                        return Err(PlanError::Options(format!(
                            "--ldlat {}: {name}'s load-latency threshold is 1 to {} cycles",
                            mem.ldlat,
                            f.max_value()
                        )));
                    }
                    format!("{name}/mem-loads,ldlat={}/", mem.ldlat)
                }
                None => {
                    notices.push(format!(
                        "{name}: no format/ldlat: its loads are sampled without a latency threshold"
                    ));
                    format!("{name}/mem-loads/")
                }
            };
            if p.aliases.contains_key("mem-loads-aux") {
                events.push(format!("{{{name}/mem-loads-aux/,{loads}}}:P"));
            } else {
                events.push(format!("{loads}P"));
            }
        }
    }
    Ok(MemEvents { events, notices })
}

/// The record plan of `mem record`: `opts` (record's flags, without events) with the memory
/// events, `-d`, and `-W` when loads are sampled. Its notices come first.
pub fn plan_mem_record(
    pmus: &Pmus,
    host: &super::Host,
    opts: &RecordOptions,
    mem: &MemOptions,
) -> Result<Plan, PlanError> {
    if !opts.events.is_empty() {
        return Err(PlanError::Options(
            "mem record and c2c record choose their events themselves: no -e (mem record's -t load|store|load,store and --ldlat, c2c record's -l/--ldlat choose among them)".into(),
        ));
    }
    let chosen = mem_events(pmus, mem)?;
    let o = RecordOptions {
        events: chosen.events,
        data: true,
        weight: opts.weight || mem.ops.load,
        ..opts.clone()
    };
    let mut plan = super::plan_record(pmus, host, &o)?;
    let mut notices = chosen.notices;
    notices.append(&mut plan.notices);
    plan.notices = notices;
    Ok(plan)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ops_parse_as_perf_writes_them() {
        let p = |s: &str| s.parse::<MemOps>();
        assert_eq!(
            p("load").unwrap(),
            MemOps {
                load: true,
                store: false
            }
        );
        assert_eq!(
            p("store").unwrap(),
            MemOps {
                load: false,
                store: true
            }
        );
        assert_eq!(p("load,store").unwrap(), MemOps::default());
        assert_eq!(p("ldlat-stores,ldlat-loads").unwrap(), MemOps::default());
        assert!(p("loads,foo").unwrap_err().contains("\"foo\""));
        assert_eq!(MemOps::default().to_string(), "load,store");
    }
}
