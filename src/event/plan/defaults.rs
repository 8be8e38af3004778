//! The default events of `record` (perf's `cycles:P` per core PMU, in a sampling-read group
//! that carries TopDown wherever the core has it) and the marks on the E-core TopDown members
//! hrec adds on its own, so the recorder can leave them out when the kernel refuses them.

use super::{Host, IfRefused, PlannedEvent, Role};
use crate::event::resolve;
use crate::pmu::uarch;
use crate::pmu::vendor::{self, VendorOf};
use crate::pmu::{Pmu, Pmus};

/// The default `-e` strings: `cycles:P` per core PMU, as perf uses it, in a sampling-read
/// group that carries TopDown wherever the core has it: slots-led with the `topdown-*` metrics
/// on a perf-metrics PMU (perf's own default), cycles-led with Intel's level-1 E-core events
/// on an E-core PMU whose microarchitecture `host.cpu` tells ([`uarch::ecore_of`]), with
/// Intel's level-2 E-core events where the counters hold them ([`uarch::EcoreTopDown::level2`]:
/// on Gracemont only when the NMI watchdog is known to be off). Empty when there is no core
/// PMU; the second list has a notice per E-core PMU left without TopDown or level 2.
pub fn default_events(pmus: &Pmus, host: &Host) -> (Vec<String>, Vec<String>) {
    let cpu = host.cpu.as_ref();
    let core = pmus.core_pmus();
    let hybrid = core.len() > 1;
    let mut notices = Vec::new();
    let mut vendor_groups = Vec::new();
    let intel: Vec<&Pmu> = core
        .iter()
        .copied()
        .filter(
            |p| match vendor_default(pmus, host, p, hybrid, &mut notices) {
                Some(groups) => {
                    vendor_groups.push(groups);
                    false
                }
                None => true,
            },
        )
        .collect();
    let events = intel
        .into_iter()
        .map(|p| {
            let q = |ev: &str, mods: &str| {
                if hybrid {
                    format!("{}/{ev}/{mods}", p.name)
                } else if mods.is_empty() {
                    ev.to_string()
                } else {
                    format!("{ev}:{mods}")
                }
            };
            let metrics = resolve::topdown_metric_names(p);
            if !metrics.is_empty() {
                let mut members = vec![q("slots", ""), q("cycles", "P")];
                members.extend(metrics.iter().map(|(n, _)| q(n, "")));
                return format!("{{{}}}:S", members.join(","));
            }
            let td = match uarch::ecore_of(cpu, &p.name) {
                uarch::Ecore::No => None,
                uarch::Ecore::Arch(arch) => {
                    if arch.topdown().is_none() {
                        notices.push(format!(
                            "{}: Intel has published no TopDown for {} E-cores: sampling cycles without it",
                            p.name,
                            arch.name()
                        ));
                    }
                    arch.topdown()
                }
                uarch::Ecore::Unknown => {
                    notices.push(match cpu {
                        Some(c) => format!(
                            "{}: E-core TopDown is not known for {c}: sampling cycles without it",
                            p.name
                        ),
                        None => format!(
                            "{}: no cpuinfo to tell which E-core this is: sampling cycles without TopDown",
                            p.name
                        ),
                    });
                    None
                }
            };
            match td {
                None => q("cycles", "P"),
                Some(td) => {
                    let mut members = vec![q("cycles", "P")];
                    members.extend(td.events.iter().map(|e| e.spec(&p.name)));
                    match td.level2_events(host.nmi_watchdog) {
                        Ok(l2) => members.extend(l2.iter().map(|e| e.spec(&p.name))),
                        Err(why) => notices.push(format!(
                            "{}: {why}: recording level 1 (sysctl -w kernel.nmi_watchdog=0 for level 2)",
                            p.name
                        )),
                    }
                    format!("{{{}}}:S", members.join(","))
                }
            }
        })
        .chain(vendor_groups.into_iter().flatten())
        .collect();
    (events, notices)
}

/// The default groups of an AMD Zen 4/5 or Arm Neoverse core PMU ([`crate::pmu::vendor`]):
/// cycles-led sampling-read groups of the vendor's level-1 events within the counters, the
/// leader plain `cycles` (an AMD precise cycles event goes to IBS, which carries no core
/// members; Arm core samples skid too); `None` for any other PMU. A part hrec does not know,
/// or the N1, samples cycles alone, with a notice.
fn vendor_default(
    pmus: &Pmus,
    host: &Host,
    p: &Pmu,
    hybrid: bool,
    notices: &mut Vec<String>,
) -> Option<Vec<String>> {
    let core = match vendor::vendor_of_pmu(&pmus.root, p, host.cpu.as_ref(), None) {
        VendorOf::No => return None,
        VendorOf::Unknown(what) => {
            notices.push(format!(
                "{}: hrec has no TopDown for {what}: sampling cycles without it",
                p.name
            ));
            return None;
        }
        VendorOf::Core(c) => c,
    };
    // KVM hides STALL_SLOT* and OP_* from a guest's Arm PMU (and reads its slots as 0): where
    // the kernel lists the PMU's events and lacks one of level 1's, no TopDown.
    let hidden: Vec<&str> = if core.is_amd() || p.aliases.is_empty() {
        Vec::new()
    } else {
        core.level1_events()
            .iter()
            .filter(|e| e.config < 0x4000 && e.event != vendor::VEvent::StallSlot)
            .filter(|e| !p.aliases.contains_key(&e.name.to_ascii_lowercase()))
            .map(|e| e.name)
            .collect()
    };
    if !hidden.is_empty() {
        notices.push(format!(
            "{}: {} without {} (a hypervisor hides them): sampling cycles without TopDown",
            p.name,
            core.name(),
            hidden.join(", ")
        ));
        return None;
    }
    let threads = crate::pmu::threads_per_core(&pmus.root, &pmus.online);
    let plan = core.groups(host.nmi_watchdog, threads);
    notices.extend(plan.notices.iter().map(|n| format!("{}: {n}", p.name)));
    if plan.groups.is_empty() {
        return None;
    }
    notices.push(format!(
        "{}: {} TopDown level 1 per function; its samples skid (no precise cycles with group \
         members), so shares per instruction are smeared over the next few",
        p.name,
        core.name()
    ));
    let cycles = if hybrid {
        format!("{}/cycles/", p.name)
    } else {
        "cycles".to_string()
    };
    Some(
        plan.groups
            .iter()
            .map(|g| {
                let mut members = vec![cycles.clone()];
                members.extend(g.iter().map(|e| e.spec(&p.name, core.is_amd())));
                format!("{{{}}}:S", members.join(","))
            })
            .collect(),
    )
}

/// Marks the E-core TopDown members of the default groups as left out when refused: a
/// level-2 event drops level 2 (the group did not fit the counters, e.g. a kernel without
/// Skymont's fixed counters 4-6), a level-1 event all TopDown of its group.
/// AMD's and Arm's level-1 members ([`vendor_default`]) drop their group's TopDown alike.
pub(super) fn mark_ecore_members(events: &mut [PlannedEvent], pmus: &Pmus, host: &Host) {
    for e in events.iter_mut().filter(|e| e.role == Role::Counted) {
        let vendor = e
            .pmu
            .as_deref()
            .and_then(|name| pmus.get(name))
            .map(|p| vendor::vendor_of_pmu(&pmus.root, p, host.cpu.as_ref(), None));
        if let Some(VendorOf::Core(core)) = vendor {
            if core.event_of(e.attr.config).is_some() {
                e.if_refused = Some(IfRefused::DropTopdown);
            }
            continue;
        }
        let Some(td) = e
            .pmu
            .as_deref()
            .and_then(|p| uarch::ecore_topdown(host.cpu.as_ref(), p))
        else {
            continue;
        };
        let config = e.attr.config;
        e.if_refused = if td.category_of(config).is_some() {
            Some(IfRefused::DropTopdown)
        } else if td.part_of(config).is_some() {
            Some(IfRefused::DropLevel2)
        } else {
            None
        };
    }
}
