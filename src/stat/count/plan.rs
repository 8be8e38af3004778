//! Which counters `hrec stat` opens: the `-e` events or perf stat's defaults (software
//! events, then cycles, instructions, branches and branch-misses on every core PMU), the
//! TopDown groups of `--topdown` (led by `slots` on each PMU that has perf metrics, by
//! `cycles` with Intel's level-1 events on each E-core the cpuinfo names), perf's `-d`/`-dd`/
//! `-ddd` cache events after those, and each attr turned into a counting one: no sample
//! period or sample type, `TOTAL_TIME_ENABLED | TOTAL_TIME_RUNNING` read for scaling, the
//! leader disabled until the start (`enable_on_exec` on a command hrec starts), `inherit`
//! except per CPU.

use crate::analysis::topdown::{self, TdEvent, TdRole};
use crate::event::attr::{Attr, flag, read};
use crate::event::resolve;
use crate::pmu::Pmus;

use super::options::{StatError, StatOptions, StatTarget};

/// perf stat's default software events.
pub const DEFAULT_SOFTWARE: [&str; 4] = [
    "task-clock",
    "context-switches",
    "cpu-migrations",
    "page-faults",
];
/// perf stat's default hardware events (per core PMU).
pub const DEFAULT_HARDWARE: [&str; 4] = ["cycles", "instructions", "branches", "branch-misses"];

/// perf's `-d`, `-dd`, `-ddd` cache events, each level adding its set to the ones before
/// (`detailed_attrs`, `very_detailed_attrs`, `very_very_detailed_attrs` in perf 6.1): L1 data
/// and last-level cache loads; L1 instruction cache, data and instruction TLB; L1 data
/// prefetches.
pub const DETAILED: [&[&str]; 3] = [
    &[
        "L1-dcache-loads",
        "L1-dcache-load-misses",
        "LLC-loads",
        "LLC-load-misses",
    ],
    &[
        "L1-icache-loads",
        "L1-icache-load-misses",
        "dTLB-loads",
        "dTLB-load-misses",
        "iTLB-loads",
        "iTLB-load-misses",
    ],
    &["L1-dcache-prefetches", "L1-dcache-prefetch-misses"],
];

/// One counter to open.
#[derive(Debug, Clone, PartialEq)]
pub struct Counter {
    /// Display name.
    pub name: String,
    /// PMU.
    pub pmu: Option<String>,
    /// The attr (counting: no sample period).
    pub attr: Attr,
    /// Index of the group leader (itself when alone).
    pub leader: usize,
    /// Its TopDown role.
    pub td: Option<TdRole>,
}

/// The `-e` strings stat resolves: the given ones, or perf's defaults, plus the TopDown
/// groups with `--topdown`.
pub fn event_strings(pmus: &Pmus, o: &StatOptions) -> Result<Vec<String>, StatError> {
    let mut v: Vec<String> = if o.events.is_empty() && !o.topdown && !o.null_run {
        DEFAULT_SOFTWARE
            .iter()
            .chain(DEFAULT_HARDWARE.iter())
            .map(|s| s.to_string())
            .collect()
    } else {
        o.events.clone()
    };
    if o.topdown {
        let core = pmus.core_pmus();
        let hybrid = core.len() > 1;
        let mut any = false;
        for p in &core {
            let metrics = resolve::topdown_metric_names(p);
            if metrics.is_empty() {
                continue;
            }
            any = true;
            let q = |ev: &str| {
                if hybrid {
                    format!("{}/{ev}/", p.name)
                } else {
                    ev.to_string()
                }
            };
            let mut members = vec![q("slots")];
            members.extend(
                metrics
                    .iter()
                    .filter(|(n, _)| o.td_level >= 2 || !is_level2(n))
                    .map(|(n, _)| q(n)),
            );
            v.push(format!("{{{}}}", members.join(",")));
        }
        // E-cores: the cycles-led group of Intel's level-1 events (level 1 only: hrec has no
        // E-core level-2 set yet).
        for p in &core {
            if !resolve::topdown_metric_names(p).is_empty() {
                continue;
            }
            let Some(td) = crate::pmu::uarch::ecore_topdown(o.cpu.as_ref(), &p.name) else {
                continue;
            };
            any = true;
            let mut members = vec![if hybrid {
                format!("{}/cycles/", p.name)
            } else {
                "cycles".to_string()
            }];
            members.extend(td.events.iter().map(|e| e.spec(&p.name)));
            v.push(format!("{{{}}}", members.join(",")));
        }
        if !any {
            let have: Vec<&str> = core.iter().map(|p| p.name.as_str()).collect();
            return Err(StatError::NoTopDown {
                have: if have.is_empty() {
                    "no core PMU at all: a VM or a non-x86 machine".to_string()
                } else {
                    format!("core PMUs: {}", have.join(", "))
                },
            });
        }
    }
    if !o.null_run {
        for set in DETAILED.iter().take(usize::from(o.detailed)) {
            v.extend(set.iter().map(|s| s.to_string()));
        }
    }
    Ok(v)
}

fn is_level2(name: &str) -> bool {
    matches!(
        name,
        "topdown-heavy-ops" | "topdown-br-mispredict" | "topdown-fetch-lat" | "topdown-mem-bound"
    )
}

/// Resolves the counters, leaders first, with the counting attr flags set.
pub fn plan(pmus: &Pmus, o: &StatOptions) -> Result<Vec<Counter>, StatError> {
    let strings = event_strings(pmus, o)?;
    let res = resolve::resolve(pmus, &strings)?;
    let mut out = Vec::new();
    for g in &res.groups {
        let leader = out.len();
        let roles = group_roles(pmus, o, g);
        for (i, r) in g.events.iter().enumerate() {
            let mut a = r.attr;
            a.sample_period_or_freq = 0;
            a.sample_type = 0;
            a.set(flag::FREQ, false);
            a.set_precise_ip(0);
            a.read_format = read::TOTAL_TIME_ENABLED | read::TOTAL_TIME_RUNNING;
            a.set(flag::DISABLED, i == 0);
            a.set(
                flag::ENABLE_ON_EXEC,
                i == 0 && o.target == StatTarget::Workload,
            );
            a.set(
                flag::INHERIT,
                !matches!(o.target, StatTarget::Cpus(_) | StatTarget::AllCpus),
            );
            out.push(Counter {
                name: r.name.clone(),
                pmu: r.pmu.clone(),
                attr: a,
                leader,
                td: roles.get(i).copied().flatten(),
            });
        }
    }
    Ok(out)
}

/// The TopDown role of each member of a group: by name in a perf-metrics group (one with
/// `slots`), by PMU and encoding in an E-core group led by cycles
/// ([`topdown::ecore_roles`]), none otherwise.
fn group_roles(pmus: &Pmus, o: &StatOptions, g: &resolve::Group) -> Vec<Option<TdRole>> {
    let names: Vec<Option<TdEvent>> = g
        .events
        .iter()
        .map(|r| TdEvent::from_name(&r.name))
        .collect();
    if names.contains(&Some(TdEvent::Slots)) {
        return names.into_iter().map(|k| k.map(TdRole::Event)).collect();
    }
    let mut roles = vec![None; g.events.len()];
    let lead = g.events.first();
    let pmu = lead
        .and_then(|r| r.pmu.as_deref())
        .and_then(|n| pmus.get(n));
    if let Some(pmu) = pmu {
        let attrs: Vec<(crate::event::Attr, bool)> = g
            .events
            .iter()
            .enumerate()
            .map(|(i, r)| (r.attr, i == 0))
            .collect();
        for (i, role) in
            topdown::ecore_roles(o.cpu.as_ref(), &pmu.name, pmu.type_, &attrs).unwrap_or_default()
        {
            roles[i] = Some(role);
        }
    }
    roles
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The events of `-d`/`-dd`/`-ddd` after the defaults or the `-e` ones, none with `-n`;
    /// the sets are those perf 6.1 prints for `perf stat -d/-dd/-ddd -- true`.
    #[test]
    fn detailed_sets_follow_the_other_events() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sysfs/vm");
        let pmus = Pmus::read(&root).unwrap();
        let strings = |o: &StatOptions| event_strings(&pmus, o).unwrap();
        let mut o = StatOptions {
            detailed: 1,
            ..Default::default()
        };
        let d = strings(&o);
        assert_eq!(d.len(), 8 + 4);
        assert_eq!(&d[..4], DEFAULT_SOFTWARE);
        assert_eq!(
            &d[8..],
            [
                "L1-dcache-loads",
                "L1-dcache-load-misses",
                "LLC-loads",
                "LLC-load-misses"
            ]
        );
        o.detailed = 2;
        let dd = strings(&o);
        assert_eq!(&dd[..12], &d[..]);
        assert_eq!(&dd[12..], DETAILED[1]);
        o.detailed = 3;
        let ddd = strings(&o);
        assert_eq!(
            &ddd[18..],
            ["L1-dcache-prefetches", "L1-dcache-prefetch-misses"]
        );
        // More d's than perf has sets add nothing more.
        o.detailed = 5;
        assert_eq!(strings(&o), ddd);
        // After the -e events.
        o.detailed = 1;
        o.events = vec!["task-clock".into()];
        assert_eq!(strings(&o)[..2], ["task-clock", "L1-dcache-loads"]);
        // -n: only the -e events.
        o.null_run = true;
        assert_eq!(strings(&o), ["task-clock"]);
        o.events.clear();
        assert!(strings(&o).is_empty());
        // Every detailed name resolves (a legacy cache event).
        let all: Vec<String> = DETAILED
            .iter()
            .flat_map(|s| s.iter())
            .map(|s| s.to_string())
            .collect();
        let res = resolve::resolve(&pmus, &all).unwrap();
        let names: Vec<&str> = res
            .groups
            .iter()
            .flat_map(|g| &g.events)
            .map(|e| e.name.as_str())
            .collect();
        assert_eq!(names, all);
    }
}
