//! Event references inside metrics: a metric names an event as Intel's event name plus `:`
//! modifiers (`UOPS_RETIRED.MS:c1:e1`, `X:retire_latency`, perf's `X:R`). Two references are
//! the same event to count exactly when they are equal. A modifier that is not understood is
//! kept, never dropped, so that resolution can refuse it by name.

use std::fmt;

use super::file::parse_u64;

/// An event as a metric names it: Intel's event name plus the modifiers written after `:`
/// (`UOPS_RETIRED.MS:c1:e1`, `MEM_INST_RETIRED.LOCK_LOADS:retire_latency`,
/// `TOPDOWN.SLOTS:perf_metrics`). Two references are the same event to count exactly when they
/// are equal, so it serves as the key of a caller's count table.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EventRef {
    /// The event name without modifiers (`UOPS_RETIRED.MS`).
    pub name: String,
    /// `:cN`: counter mask (count cycles with at least N occurrences).
    pub cmask: Option<u32>,
    /// `:e1`: edge detect.
    pub edge: bool,
    /// `:i1`: invert the counter-mask comparison.
    pub inv: bool,
    /// `:eq1`: counter mask compares for equality (Lion Cove's `Equal` bit).
    pub eq: bool,
    /// `:u0x30`: unit mask replacing the event list's.
    pub umask: Option<u32>,
    /// `:SUP`: count in the kernel (supervisor) only.
    pub kernel_only: bool,
    /// `:USER`: count in user space only.
    pub user_only: bool,
    /// `:ocr_msr_val=0x...`: offcore-response MSR value replacing the event list's.
    pub ocr_msr_val: Option<u64>,
    /// `:percore`: the value summed over the SMT siblings of a core.
    pub per_core: bool,
    /// `:one_unit`: an uncore event read from one unit only.
    pub one_unit: bool,
    /// `:perf_metrics`: `TOPDOWN.SLOTS` read as the leader of the TopDown metrics group.
    pub perf_metrics: bool,
    /// `:retire_latency` (perf writes `:R`): not a count but the event's average retire
    /// latency in cycles, from Timed PEBS samples or the retire-latency defaults.
    pub retire_latency: bool,
    /// `a[N]` in a formula: the value of instance N (socket N's uncore unit) instead of the
    /// sum. Never set by [`EventRef::parse`]; [`super::Metric::evaluate`] sets it on the
    /// reference it hands to the count lookup.
    pub instance: Option<u32>,
    /// Modifiers hrec does not know, kept so that resolution can refuse them by name.
    pub unknown: Vec<String>,
}

impl EventRef {
    /// Splits `NAME:mod:mod...`. Never fails: a modifier that is not understood lands in
    /// [`EventRef::unknown`].
    pub fn parse(text: &str) -> EventRef {
        let mut parts = text.trim().split(':');
        let mut r = EventRef {
            name: parts.next().unwrap_or("").to_string(),
            ..EventRef::default()
        };
        for m in parts {
            let num = |s: &str| parse_u64(s).and_then(|v| u32::try_from(v).ok());
            let lower = m.to_ascii_lowercase();
            match lower.as_str() {
                "retire_latency" | "r" => r.retire_latency = true,
                "perf_metrics" => r.perf_metrics = true,
                "sup" => r.kernel_only = true,
                "user" => r.user_only = true,
                "percore" => r.per_core = true,
                "one_unit" => r.one_unit = true,
                _ => {
                    let ok = if let Some(v) = lower.strip_prefix("ocr_msr_val=") {
                        parse_u64(v).map(|v| r.ocr_msr_val = Some(v)).is_some()
                    } else if let Some(v) = lower.strip_prefix("eq") {
                        num(v).map(|v| r.eq = v != 0).is_some()
                    } else if let Some(v) = lower.strip_prefix('c') {
                        num(v).map(|v| r.cmask = Some(v)).is_some()
                    } else if let Some(v) = lower.strip_prefix('e') {
                        num(v).map(|v| r.edge = v != 0).is_some()
                    } else if let Some(v) = lower.strip_prefix('i') {
                        num(v).map(|v| r.inv = v != 0).is_some()
                    } else if let Some(v) = lower.strip_prefix('u') {
                        num(v).map(|v| r.umask = Some(v)).is_some()
                    } else {
                        false
                    };
                    if !ok {
                        r.unknown.push(m.to_string());
                    }
                }
            }
        }
        r
    }

    /// Whether the value is a count (read from a counter), as opposed to a retire latency.
    pub fn is_counted(&self) -> bool {
        !self.retire_latency
    }
}

/// Intel's spelling, modifiers in a fixed order, then `[N]` for an instance.
impl fmt::Display for EventRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)?;
        if let Some(c) = self.cmask {
            write!(f, ":c{c}")?;
        }
        if self.edge {
            f.write_str(":e1")?;
        }
        if self.inv {
            f.write_str(":i1")?;
        }
        if self.eq {
            f.write_str(":eq1")?;
        }
        if let Some(u) = self.umask {
            write!(f, ":u{u:#x}")?;
        }
        if self.kernel_only {
            f.write_str(":SUP")?;
        }
        if self.user_only {
            f.write_str(":USER")?;
        }
        if let Some(v) = self.ocr_msr_val {
            write!(f, ":ocr_msr_val={v:#x}")?;
        }
        if self.per_core {
            f.write_str(":percore")?;
        }
        if self.one_unit {
            f.write_str(":one_unit")?;
        }
        if self.perf_metrics {
            f.write_str(":perf_metrics")?;
        }
        if self.retire_latency {
            f.write_str(":retire_latency")?;
        }
        for u in &self.unknown {
            write!(f, ":{u}")?;
        }
        if let Some(i) = self.instance {
            write!(f, "[{i}]")?;
        }
        Ok(())
    }
}
