//! `annotate --data-type`: the samples of each data type, per offset into it, as perf 6.8+'s
//! data-type annotation counts them.
//!
//! **The rule.** A sample whose access is typed ([`crate::symbol::datatype`]) adds its count
//! and period at its offset into the type; the types are kept apart per object of the
//! sampled instruction (perf keys them by the sample's code `dso` and the type's name), and
//! listed by period, highest first. A member's samples are those at the offsets its bytes
//! cover, its nested members' included. Beside perf's counts, each offset keeps the load
//! latency of its samples (the weight, `WEIGHT_STRUCT`'s `var1`) and their retire latency,
//! so that a field reads with what its accesses cost.

use std::collections::BTreeMap;
use std::collections::HashMap;
use std::sync::Arc;

use super::profile::{NONE, Profile};
use crate::symbol::datatype::Member;

/// What the samples at one offset (or over a member's bytes) add up to.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Cell {
    /// Samples.
    pub samples: u64,
    /// Their periods.
    pub period: u64,
    /// Samples with a load latency, and its sum (cycles).
    pub weighed: u64,
    /// The load latencies' sum.
    pub weight: u64,
    /// Samples with a retire latency, and its sum (cycles).
    pub retired: u64,
    /// The retire latencies' sum.
    pub retire_lat: u64,
}

impl Cell {
    fn add(&mut self, o: &Cell) {
        self.samples += o.samples;
        self.period += o.period;
        self.weighed += o.weighed;
        self.weight += o.weight;
        self.retired += o.retired;
        self.retire_lat += o.retire_lat;
    }

    /// The mean load latency, when some sample had one.
    pub fn mean_weight(&self) -> Option<f64> {
        (self.weighed > 0).then(|| self.weight as f64 / self.weighed as f64)
    }

    /// The mean retire latency, when some sample had one.
    pub fn mean_retire(&self) -> Option<f64> {
        (self.retired > 0).then(|| self.retire_lat as f64 / self.retired as f64)
    }
}

/// One data type's samples in one object.
#[derive(Debug, Clone)]
pub struct TypeEntry {
    /// The object of the sampled instructions (its path as recorded).
    pub dso: Arc<str>,
    /// The type and its members.
    pub layout: Arc<Member>,
    /// All its samples.
    pub total: Cell,
    /// Per offset into the type.
    pub offsets: BTreeMap<u64, Cell>,
}

impl TypeEntry {
    /// The samples over `[offset, offset + size)`.
    pub fn over(&self, offset: u64, size: u64) -> Cell {
        let mut c = Cell::default();
        for (_, v) in self
            .offsets
            .range(offset..offset.saturating_add(size.max(1)))
        {
            c.add(v);
        }
        c
    }
}

/// Whether the type named `name` is the one `want` names: as perf matches `--data-type=T`,
/// `struct ` and `union ` may be left out of `want`.
pub fn type_matches(name: &str, want: &str) -> bool {
    let strip = |n: &'static str| {
        if !want.starts_with(n) {
            name.strip_prefix(n)
        } else {
            None
        }
    };
    let name = strip("struct ").or_else(|| strip("union ")).unwrap_or(name);
    name == want
}

/// The typed samples of event `event` of `p`, per type and object, by period (highest
/// first); only the type `only` names when given ([`type_matches`]).
pub fn type_entries(p: &Profile, event: usize, only: Option<&str>) -> Vec<TypeEntry> {
    let mut entries: Vec<TypeEntry> = Vec::new();
    let mut index: HashMap<(Arc<str>, String), usize> = HashMap::new();
    for g in &p.groups {
        if usize::from(g.event) != event || g.mem == NONE {
            continue;
        }
        let Some(m) = p.mems.get(g.mem as usize) else {
            continue;
        };
        let Some(hit) = p
            .data_locs
            .get(m.daddr as usize)
            .and_then(|d| d.data_type.as_ref())
        else {
            continue;
        };
        if only.is_some_and(|want| !type_matches(&hit.type_name, want)) {
            continue;
        }
        let dso: Arc<str> = p
            .locs
            .get(g.leaf as usize)
            .map_or_else(|| Arc::from("[unknown]"), |l| l.dso_path.clone());
        let at = *index
            .entry((dso.clone(), hit.type_name.clone()))
            .or_insert_with(|| {
                entries.push(TypeEntry {
                    dso,
                    layout: hit.layout.clone(),
                    total: Cell::default(),
                    offsets: BTreeMap::new(),
                });
                entries.len() - 1
            });
        let lat = (g.lat != NONE)
            .then(|| p.latencies.get(g.lat as usize))
            .flatten();
        let cell = Cell {
            samples: g.samples,
            period: g.period,
            weighed: if m.weight > 0 { g.samples } else { 0 },
            weight: m.weight.saturating_mul(g.samples),
            retired: lat.map_or(0, |l| l.count()),
            retire_lat: lat.map_or(0, |l| l.sum()),
        };
        let e = &mut entries[at];
        e.total.add(&cell);
        e.offsets.entry(hit.offset).or_default().add(&cell);
    }
    entries.sort_by(|a, b| {
        b.total
            .period
            .cmp(&a.total.period)
            .then_with(|| a.layout.type_name.cmp(&b.layout.type_name))
            .then_with(|| a.dso.cmp(&b.dso))
    });
    entries
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_names_match_as_perf_matches_them() {
        assert!(type_matches("struct node", "node"));
        assert!(type_matches("struct node", "struct node"));
        assert!(type_matches("union u", "u"));
        assert!(type_matches("long int", "long int"));
        assert!(!type_matches("struct node", "union node"));
        assert!(!type_matches("struct node", "nod"));
    }

    #[test]
    fn a_member_adds_the_offsets_its_bytes_cover() {
        let mut e = TypeEntry {
            dso: "x".into(),
            layout: Arc::new(Member {
                offset: 0,
                size: 16,
                type_name: "struct s".into(),
                name: None,
                children: Vec::new(),
            }),
            total: Cell::default(),
            offsets: BTreeMap::new(),
        };
        for (off, n) in [(0u64, 1u64), (7, 2), (8, 4), (15, 8)] {
            e.offsets.insert(
                off,
                Cell {
                    samples: n,
                    period: 10 * n,
                    weighed: n,
                    weight: 100 * n,
                    ..Cell::default()
                },
            );
        }
        assert_eq!(e.over(0, 8).samples, 3);
        assert_eq!(e.over(8, 8).period, 120);
        assert_eq!(e.over(8, 8).mean_weight(), Some(100.0));
        assert_eq!(e.over(16, 4).samples, 0);
        assert_eq!(e.over(0, 16).mean_retire(), None);
    }
}
