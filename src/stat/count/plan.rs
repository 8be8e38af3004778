//! Which counters `hrec stat` opens: the `-e` events or perf stat's defaults (software
//! events, then cycles, instructions, branches and branch-misses on every core PMU), the
//! TopDown groups of `--topdown` (led by `slots` on each PMU that has perf metrics, by
//! `cycles` with Intel's level-1 events on each E-core the cpuinfo names), perf's `-d`/`-dd`/
//! `-ddd` cache events after those, and each attr turned into a counting one: no sample
//! period or sample type, `TOTAL_TIME_ENABLED | TOTAL_TIME_RUNNING` read for scaling, the
//! leader disabled until the start (`enable_on_exec` on a command hrec starts), `inherit`
//! except per CPU.
//!
//! **E-core level 2** (`--topdown --td-level 2`): the E-core group gets Intel's level-2 events
//! where the core's counters hold them beside level 1 and the cycles leader, by the same
//! budget rule as `record` ([`crate::pmu::uarch::EcoreTopDown::level2_events`]): Crestmont
//! and Skymont always; Gracemont (6 general counters, all taken by level 1 and level 2) only
//! when `kernel.nmi_watchdog` is known to be off, since the watchdog holds the fixed cycles
//! counter and a group that does not fit would never be scheduled at all. Otherwise the group
//! stays level 1 and one note says why. `-M`'s E-core group for the same PMU
//! ([`crate::stat::ecore_tma`]) is the same group: it is counted once, with level 2 when
//! either asks for it, so both read the same counts.
//!
//! **`--cputype`** (perf stat's "only enable events on applying cpu with this type for
//! hybrid platform") chooses one core PMU: the default hardware events, the `-e` events
//! written without a PMU (`cycles`, `r3c`, `topdown-retiring`) and the `--topdown` group are
//! planned on it alone, named as on the hybrid part (`cpu_atom/cycles/`); software and uncore
//! events are counted as without it, and an `-e` event written for another core PMU is an
//! error ([`resolve::resolve_on_core`]).

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
    /// A tracepoint that fires in the kernel ([`crate::trace::TraceEvent::user_regs`]
    /// false): counting user space only would count nothing.
    pub kernel_tracepoint: bool,
}

/// The `-e` strings stat resolves: the given ones, or perf's defaults, plus the TopDown
/// groups with `--topdown`.
pub fn event_strings(pmus: &Pmus, o: &StatOptions) -> Result<Vec<String>, StatError> {
    strings_and_notes(pmus, o).map(|(v, _)| v)
}

/// [`event_strings`], and one-line notes on what `--topdown` leaves out (an E-core's level 2
/// that its counters do not hold).
fn strings_and_notes(
    pmus: &Pmus,
    o: &StatOptions,
) -> Result<(Vec<String>, Vec<String>), StatError> {
    let mut notes = Vec::new();
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
        let hybrid = pmus.is_hybrid();
        let core = core_pmus(pmus, o)?;
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
        // E-cores: the cycles-led group of Intel's level-1 events, with level 2 where asked
        // and the counters hold it; -M's group for the PMU, if any, is this one.
        for p in &core {
            if !resolve::topdown_metric_names(p).is_empty() {
                continue;
            }
            let Some(td) = crate::pmu::uarch::ecore_topdown(o.cpu.as_ref(), &p.name) else {
                continue;
            };
            any = true;
            let level2 = o.td_level >= 2
                && match td.level2_events(o.nmi_watchdog) {
                    Ok(_) => true,
                    Err(why) => {
                        notes.push(format!(
                            "{}: {why}: counting level 1 (sysctl -w kernel.nmi_watchdog=0 for level 2)",
                            p.name
                        ));
                        false
                    }
                };
            let l1 = td.group_spec(&p.name, hybrid, false);
            let l2 = td.group_spec(&p.name, hybrid, true);
            match v.iter().position(|s| *s == l1 || *s == l2) {
                Some(i) if level2 => v[i] = l2,
                Some(_) => {}
                None => v.push(if level2 { l2 } else { l1 }),
            }
        }
        // AMD and Arm: the vendor's level-1 groups within the counters, as `record` plans
        // them ([`crate::pmu::vendor::VendorCore::groups`]).
        for p in &core {
            if !resolve::topdown_metric_names(p).is_empty()
                || crate::pmu::uarch::ecore_topdown(o.cpu.as_ref(), &p.name).is_some()
            {
                continue;
            }
            let crate::pmu::vendor::VendorOf::Core(vc) =
                crate::pmu::vendor::vendor_of_pmu(&pmus.root, p, o.cpu.as_ref(), None)
            else {
                continue;
            };
            let threads = crate::pmu::threads_per_core(&pmus.root, &pmus.online);
            let groups = vc.groups(o.nmi_watchdog, threads);
            notes.extend(groups.notices.iter().map(|n| format!("{}: {n}", p.name)));
            let cycles = if hybrid {
                format!("{}/cycles/", p.name)
            } else {
                "cycles".to_string()
            };
            for g in &groups.groups {
                any = true;
                let mut members = vec![cycles.clone()];
                members.extend(g.iter().map(|e| e.spec(&p.name, vc.is_amd())));
                v.push(format!("{{{}}}", members.join(",")));
            }
        }
        if !any {
            let have: Vec<&str> = core.iter().map(|p| p.name.as_str()).collect();
            return Err(StatError::NoTopDown {
                have: match (have.is_empty(), &o.cputype) {
                    (true, _) => "no core PMU at all: a VM or a non-x86 machine".to_string(),
                    (false, Some(t)) => format!(
                        "--cputype chose {t}, and hrec knows no TopDown for its core on this CPU"
                    ),
                    (false, None) => format!("core PMUs: {}", have.join(", ")),
                },
            });
        }
    }
    if !o.null_run {
        for set in DETAILED.iter().take(usize::from(o.detailed)) {
            v.extend(set.iter().map(|s| s.to_string()));
        }
    }
    Ok((v, notes))
}

/// The core PMUs stat counts on: every one, or the one `--cputype` chose (which must exist).
fn core_pmus<'a>(pmus: &'a Pmus, o: &StatOptions) -> Result<Vec<&'a crate::pmu::Pmu>, StatError> {
    let core = pmus.core_pmus();
    let Some(name) = &o.cputype else {
        return Ok(core);
    };
    if core.iter().any(|p| p.name == *name) {
        return Ok(core.into_iter().filter(|p| p.name == *name).collect());
    }
    let have: Vec<&str> = core.iter().map(|p| p.name.as_str()).collect();
    Err(StatError::NoCoreType {
        name: name.clone(),
        have: if have.is_empty() {
            "none".to_string()
        } else {
            have.join(", ")
        },
    })
}

fn is_level2(name: &str) -> bool {
    matches!(
        name,
        "topdown-heavy-ops" | "topdown-br-mispredict" | "topdown-fetch-lat" | "topdown-mem-bound"
    )
}

/// Resolves the counters, leaders first, with the counting attr flags set.
pub fn plan(pmus: &Pmus, o: &StatOptions) -> Result<Vec<Counter>, StatError> {
    plan_with_notes(pmus, o).map(|(c, _)| c)
}

/// [`plan`], and the notes on what `--topdown` leaves out (see [`event_strings`]).
pub fn plan_with_notes(
    pmus: &Pmus,
    o: &StatOptions,
) -> Result<(Vec<Counter>, Vec<String>), StatError> {
    core_pmus(pmus, o)?;
    let (strings, notes) = strings_and_notes(pmus, o)?;
    let res = match &o.cputype {
        Some(core) => resolve::resolve_on_core(pmus, &strings, core)?,
        None => resolve::resolve(pmus, &strings)?,
    };
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
                kernel_tracepoint: r.tracepoint.as_ref().is_some_and(|t| !t.user_regs),
            });
        }
    }
    Ok((out, notes))
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
        let vendor = match crate::pmu::vendor::vendor_of_pmu(&pmus.root, pmu, o.cpu.as_ref(), None)
        {
            crate::pmu::vendor::VendorOf::Core(vc) => topdown::vendor_roles(vc, &attrs),
            _ => None,
        };
        let found =
            vendor.or_else(|| topdown::ecore_roles(o.cpu.as_ref(), &pmu.name, pmu.type_, &attrs));
        for (i, role) in found.unwrap_or_default() {
            roles[i] = Some(role);
        }
    }
    roles
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::topdown::TdRole;

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

    fn fixture(model: &str) -> (Pmus, Option<crate::pmu::uarch::CpuId>) {
        let base = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
        let pmus = Pmus::read(&base.join("sysfs").join(model)).unwrap();
        let cpu = crate::pmu::uarch::CpuId::read(&base.join("procfs").join(model));
        (pmus, cpu)
    }

    /// (name, PMU) of each planned counter.
    fn planned(pmus: &Pmus, o: &StatOptions) -> Vec<(String, Option<String>)> {
        plan(pmus, o)
            .unwrap()
            .into_iter()
            .map(|c| (c.name, c.pmu))
            .collect()
    }

    /// `--cputype`: perf's default hardware events, `-d`'s cache events and `-e` events
    /// written without a PMU land on the chosen core PMU alone, named and encoded as on the
    /// hybrid part; software events stay.
    #[test]
    fn cputype_puts_core_events_on_one_pmu() {
        for (model, pmu) in [
            ("alderlake", "cpu_atom"),
            ("alderlake", "cpu_core"),
            ("meteorlake", "cpu_atom"),
            ("arrowlake-h", "cpu_lowpower"),
        ] {
            let (pmus, cpu) = fixture(model);
            let type_ = pmus.get(pmu).unwrap().type_;
            let o = StatOptions {
                cputype: Some(pmu.into()),
                detailed: 1,
                cpu,
                ..Default::default()
            };
            let c = plan(&pmus, &o).unwrap();
            let names: Vec<&str> = c.iter().map(|c| c.name.as_str()).collect();
            assert_eq!(&names[..4], DEFAULT_SOFTWARE, "{model}");
            let hw: Vec<String> = DEFAULT_HARDWARE
                .iter()
                .chain(DETAILED[0])
                .map(|e| format!("{pmu}/{e}/"))
                .collect();
            assert_eq!(&names[4..], hw, "{model} {pmu}");
            // Legacy events carry the PMU's type in config[63:32] as on the hybrid part.
            assert!(
                c[4..]
                    .iter()
                    .all(|c| c.pmu.as_deref() == Some(pmu)
                        && c.attr.config >> 32 == u64::from(type_)),
                "{model} {pmu}"
            );

            // -e: legacy, raw and alias names without a PMU go there; software stays.
            let o = StatOptions {
                events: vec!["cycles,r3c,topdown-retiring,task-clock".into()],
                ..o.clone()
            };
            let e = planned(&pmus, &StatOptions { detailed: 0, ..o });
            let want: Vec<(String, Option<String>)> = vec![
                (format!("{pmu}/cycles/"), Some(pmu.into())),
                (format!("{pmu}/r3c/"), Some(pmu.into())),
                (format!("{pmu}/topdown-retiring/"), Some(pmu.into())),
                ("task-clock".into(), Some("software".into())),
            ];
            // cpu_core's topdown-retiring is a perf-metrics event: slots is put in front.
            let e: Vec<_> = e
                .into_iter()
                .filter(|(n, _)| !n.ends_with("/slots/"))
                .collect();
            assert_eq!(e, want, "{model} {pmu}");
        }
    }

    /// `--cputype` with `--topdown`: the chosen PMU's group alone (slots-led on the P-core,
    /// cycles-led with the core's level-1 events on an E-core).
    #[test]
    fn cputype_topdown_is_the_chosen_pmus_group() {
        let td = |model: &str, pmu: &str| {
            let (pmus, cpu) = fixture(model);
            plan(
                &pmus,
                &StatOptions {
                    topdown: true,
                    td_level: 1,
                    cputype: Some(pmu.into()),
                    events: vec![],
                    cpu,
                    ..Default::default()
                },
            )
            .unwrap()
        };
        let c = td("alderlake", "cpu_core");
        assert_eq!(c[0].name, "cpu_core/slots/");
        assert!(c.iter().all(|c| c.pmu.as_deref() == Some("cpu_core")));
        for (model, pmu, first, width) in [
            ("alderlake", "cpu_atom", 0x71, 5),
            ("meteorlake", "cpu_atom", 0x71, 6),
            ("arrowlake-h", "cpu_atom", 0x019c, 8),
            ("arrowlake-h", "cpu_lowpower", 0x71, 6),
        ] {
            let c = td(model, pmu);
            assert!(c.iter().all(|c| c.pmu.as_deref() == Some(pmu)), "{c:?}");
            assert_eq!(c[0].name, format!("{pmu}/cycles/"));
            assert!(matches!(
                c[0].td,
                Some(TdRole::EcoreCycles { width: w, .. }) if w == width
            ));
            assert_eq!(c[1].attr.config, first, "{model} {pmu}");
            assert!(c.iter().all(|m| m.leader == 0 && m.td.is_some()));
        }
        // An all-E-core part has no --cputype (into_config refuses it), but its one PMU may be
        // named: the same group as without it.
        let (pmus, cpu) = fixture("sierraforest");
        let o = StatOptions {
            topdown: true,
            td_level: 1,
            cpu,
            ..Default::default()
        };
        assert_eq!(
            planned(
                &pmus,
                &StatOptions {
                    cputype: Some("cpu".into()),
                    ..o.clone()
                }
            ),
            planned(&pmus, &o)
        );
    }

    /// An `-e` event written for another core PMU, an alias only another core PMU has, and a
    /// PMU that is not a core PMU of this machine: errors, not silently dropped events.
    #[test]
    fn cputype_refuses_other_core_pmus() {
        let (pmus, cpu) = fixture("alderlake");
        let o = |events: &str, pmu: &str| StatOptions {
            events: vec![events.into()],
            cputype: Some(pmu.into()),
            cpu,
            ..Default::default()
        };
        let err = |o: StatOptions| plan(&pmus, &o).unwrap_err().to_string();
        let e = err(o("cpu_core/cycles/", "cpu_atom"));
        assert!(
            e.contains("cpu_core is not cpu_atom, the core PMU chosen with --cputype"),
            "{e}"
        );
        let e = err(o("slots", "cpu_atom"));
        assert!(
            e.contains("\"slots\" is an event of cpu_core, not of cpu_atom"),
            "{e}"
        );
        let e = err(o("cycles", "cpu_lowpower"));
        assert_eq!(
            e,
            "--cputype cpu_lowpower: this machine has no cpu_lowpower core PMU (its core PMUs: cpu_core, cpu_atom)"
        );
        // A machine without that PMU: refused even when only software events are asked for.
        let (vm, _) = fixture("vm");
        assert!(matches!(
            plan(&vm, &o("task-clock", "cpu_atom")),
            Err(StatError::NoCoreType { .. })
        ));
        // Software events, and events written for the chosen PMU, are kept.
        assert_eq!(
            planned(&pmus, &o("task-clock,cpu_atom/cycles/", "cpu_atom")),
            [
                ("task-clock".to_string(), Some("software".to_string())),
                ("cpu_atom/cycles/".to_string(), Some("cpu_atom".to_string()))
            ]
        );
    }

    /// `--topdown --td-level 2` on E-cores: the level-2 events join each E-core group by
    /// record's budget rule. Gracemont (Alder Lake) only with the NMI watchdog known off, else
    /// level 1 and one note; Crestmont (Meteor Lake, Arrow Lake-H's cpu_lowpower) the three
    /// whatever the watchdog; Skymont (Lunar Lake, Arrow Lake-H's cpu_atom) all five. Each
    /// member has its level-2 role, so the output's level-2 block reads them.
    #[test]
    fn ecore_level2_by_the_counter_budget() {
        use crate::analysis::topdown::TdEvent::*;
        let three = [FetchLat, BrMispredict, AllocRestrictions];
        let five = [
            FetchLat,
            BrMispredict,
            AllocRestrictions,
            IfetchBandwidth,
            MachineClears,
        ];
        let grt_note = "cpu_atom: gracemont E-cores have too few counters for TopDown level 2 while the NMI watchdog holds one: counting level 1 (sysctl -w kernel.nmi_watchdog=0 for level 2)";
        // (model, E-core PMU, kernel.nmi_watchdog, its level-2 members, the note).
        type Case<'a> = (
            &'a str,
            &'a str,
            Option<bool>,
            &'a [TdEvent],
            Option<&'a str>,
        );
        let cases: [Case; 8] = [
            ("alderlake", "cpu_atom", Some(false), &three, None),
            ("alderlake", "cpu_atom", Some(true), &[], Some(grt_note)),
            (
                "alderlake",
                "cpu_atom",
                None,
                &[],
                Some(
                    "cpu_atom: gracemont E-cores have too few counters for TopDown level 2 if the NMI watchdog holds one, and kernel.nmi_watchdog cannot be read: counting level 1 (sysctl -w kernel.nmi_watchdog=0 for level 2)",
                ),
            ),
            ("meteorlake", "cpu_atom", Some(true), &three, None),
            ("lunarlake", "cpu_atom", Some(true), &five, None),
            ("arrowlake-h", "cpu_atom", Some(true), &five, None),
            ("arrowlake-h", "cpu_lowpower", None, &three, None),
            ("alderlake-n", "cpu", Some(false), &three, None),
        ];
        for (model, pmu, watchdog, level2, note) in cases {
            let (pmus, cpu) = fixture(model);
            let o = StatOptions {
                topdown: true,
                td_level: 2,
                cpu,
                nmi_watchdog: watchdog,
                ..Default::default()
            };
            let (c, notes) = plan_with_notes(&pmus, &o).unwrap();
            let group: Vec<&Counter> = c.iter().filter(|c| c.pmu.as_deref() == Some(pmu)).collect();
            let td = crate::pmu::uarch::ecore_topdown(cpu.as_ref(), pmu).unwrap();
            assert!(
                matches!(group[0].td, Some(TdRole::EcoreCycles { .. })),
                "{model} {pmu}"
            );
            // One group, led by the cycles counter.
            assert_eq!(c[group[0].leader], *group[0], "{model} {pmu}");
            assert!(group.iter().all(|m| m.leader == group[0].leader));
            let l1 = td.events.len();
            assert_eq!(
                group.len(),
                1 + l1 + level2.len(),
                "{model} {pmu} {watchdog:?}"
            );
            let roles: Vec<Option<TdRole>> = group[1 + l1..].iter().map(|m| m.td).collect();
            let want: Vec<Option<TdRole>> =
                level2.iter().map(|&k| Some(TdRole::Event(k))).collect();
            assert_eq!(roles, want, "{model} {pmu} {watchdog:?}");
            // Intel's encodings: IFetch Latency 0x71/0x72, Branch Mispredicts 0x73/0x04,
            // Core Bound 0x74/0x01, IFetch Bandwidth 0x71/0x8d, Machine Clears 0x73/0x03.
            let configs: Vec<u64> = group[1 + l1..].iter().map(|m| m.attr.config).collect();
            assert_eq!(
                configs,
                [0x7271, 0x0473, 0x0174, 0x8d71, 0x0373][..level2.len()],
                "{model} {pmu}"
            );
            // One note where level 2 does not fit, none elsewhere.
            assert_eq!(notes, Vec::from_iter(note), "{model} {pmu} {watchdog:?}");
            // Level 1 asked: no level-2 events and no note, watchdog or not.
            let (c1, notes1) = plan_with_notes(&pmus, &StatOptions { td_level: 1, ..o }).unwrap();
            assert_eq!(
                c1.iter().filter(|c| c.pmu.as_deref() == Some(pmu)).count(),
                1 + l1,
                "{model} {pmu}"
            );
            assert!(notes1.is_empty(), "{notes1:?}");
        }
    }

    /// `-M`'s E-core group and `--topdown`'s for the same PMU are one group, counted once
    /// (two would double the cycles beside one set of level-2 counts): with level 2 when
    /// either asks for it.
    #[test]
    fn ecore_group_of_metrics_and_topdown_is_counted_once() {
        let (pmus, cpu) = fixture("meteorlake");
        let td = crate::pmu::uarch::ecore_topdown(cpu.as_ref(), "cpu_atom").unwrap();
        let l1 = td.group_spec("cpu_atom", true, false);
        let l2 = td.group_spec("cpu_atom", true, true);
        for (metrics, td_level, want) in
            [(&l1, 2, &l2), (&l2, 1, &l2), (&l1, 1, &l1), (&l2, 2, &l2)]
        {
            let o = StatOptions {
                topdown: true,
                td_level,
                cpu,
                events: vec![metrics.clone()],
                ..Default::default()
            };
            let v = event_strings(&pmus, &o).unwrap();
            let atom: Vec<&String> = v.iter().filter(|s| s.starts_with("{cpu_atom/")).collect();
            assert_eq!(atom, [want], "{metrics} --td-level {td_level}");
        }
    }
}
