//! TopDown metric events in groups (perf's rule): a `topdown-*` metric of a perf-metrics PMU
//! counts only in a group led by that PMU's `slots`, so slots is moved to the front of a group
//! that has it, inserted into one that does not, and standalone metric events are gathered
//! into one slots-led group.

use super::super::attr::Attr;
use super::{Group, Resolution, Resolved, TopDownRole, names};
use crate::event::parse::Modifiers;
use crate::pmu::{Pmu, Pmus, SLOTS_CONFIG, TOPDOWN_METRICS, TopDown};

/// Makes every TopDown metric event sit in a group led by its PMU's slots.
pub(super) fn fix_topdown(pmus: &Pmus, res: &mut Resolution) {
    // 1. Groups that contain metrics: slots leads (inserted when missing).
    for g in &mut res.groups {
        let Some(pmu_name) = g
            .events
            .iter()
            .find(|r| r.topdown == TopDownRole::Metric)
            .and_then(|r| r.pmu.clone())
        else {
            continue;
        };
        let slots_pos = g
            .events
            .iter()
            .position(|r| r.topdown == TopDownRole::Slots && r.pmu.as_deref() == Some(&pmu_name));
        match slots_pos {
            Some(0) => {}
            Some(i) => {
                let s = g.events.remove(i);
                g.events.insert(0, s);
                if g.braced && g.events.len() > 1 {
                    res.warnings.push(format!(
                        "slots must lead a group with TopDown metric events: moved slots to the front of {{{}}}",
                        names(&g.events)
                    ));
                }
            }
            None => {
                if let Some(pmu) = pmus.get(&pmu_name) {
                    let template = g.events[0].clone();
                    g.events
                        .insert(0, slots_event(pmu, pmus.is_hybrid(), &template));
                }
            }
        }
    }
    // 2. Standalone metric events: gather per PMU into one slots-led group, placed where the
    //    first of them was.
    let mut i = 0;
    while i < res.groups.len() {
        let g = &res.groups[i];
        let standalone_td = !g.braced && g.events.iter().any(|r| r.topdown == TopDownRole::Metric);
        if !standalone_td {
            i += 1;
            continue;
        }
        let pmu_name = g
            .events
            .iter()
            .find_map(|r| r.pmu.clone())
            .unwrap_or_default();
        let mut gathered: Vec<Resolved> = Vec::new();
        let mut j = i;
        while j < res.groups.len() {
            let h = &res.groups[j];
            let same = !h.braced
                && h.events.iter().all(|r| r.pmu.as_deref() == Some(&pmu_name))
                && h.events.iter().all(|r| r.topdown != TopDownRole::None);
            if same {
                gathered.extend(res.groups.remove(j).events);
            } else {
                j += 1;
            }
        }
        // Keep exactly one slots, in front.
        let slots: Vec<Resolved> = gathered
            .iter()
            .filter(|r| r.topdown == TopDownRole::Slots)
            .cloned()
            .collect();
        gathered.retain(|r| r.topdown != TopDownRole::Slots);
        let leader = slots.into_iter().next().unwrap_or_else(|| {
            let pmu = pmus.get(&pmu_name);
            match pmu {
                Some(p) => slots_event(p, pmus.is_hybrid(), &gathered[0]),
                None => gathered[0].clone(),
            }
        });
        gathered.insert(0, leader);
        res.warnings.push(format!(
            "TopDown metric events must be in a group led by slots: regrouped as {{{}}}",
            names(&gathered)
        ));
        res.groups.insert(
            i,
            Group {
                events: gathered,
                sample_read: false,
                weak: false,
                braced: true,
            },
        );
        i += 1;
    }
}

/// A `slots` event for `pmu`, taking modifiers from `like` (perf copies the first metric).
fn slots_event(pmu: &Pmu, hybrid: bool, like: &Resolved) -> Resolved {
    let mut attr = Attr::new(pmu.type_, SLOTS_CONFIG);
    attr.flags = like.attr.flags;
    attr.set_precise_ip(0);
    Resolved {
        name: if hybrid {
            format!("{}/slots/", pmu.name)
        } else {
            "slots".to_string()
        },
        pmu: Some(pmu.name.clone()),
        attr,
        modifiers: Modifiers {
            precise: 0,
            precise_max: false,
            ..like.modifiers
        },
        period: None,
        freq: None,
        pmu_cpus: pmu.cpus.clone(),
        topdown: TopDownRole::Slots,
        span: like.span,
        tracepoint: None,
        filter: None,
    }
}

/// The TopDown metric event names a PMU has, in `PERF_METRICS` order.
pub fn topdown_metric_names(pmu: &Pmu) -> &'static [(&'static str, u64)] {
    match pmu.topdown {
        TopDown::None => &[],
        TopDown::L1 => &TOPDOWN_METRICS[..4],
        TopDown::L2 => &TOPDOWN_METRICS[..],
    }
}
