//! The lines that say why a report's data is incomplete rather than leaving it to be guessed:
//! the share of samples resolved to symbols and why the rest were not (and what debuginfod
//! fetched, or why it did not), how the
//! `--call-graph dwarf` stacks unwound and where they stopped, and why an event has no
//! retire-latency statistics (no `WEIGHT_STRUCT`, not precise, or a CPU without Timed PEBS).

use std::fmt::Write as _;

use crate::analysis::profile::{EventInfo, Profile};
use crate::symbol::debuginfod::Summary;

use super::style::pct;

/// The lines about where samples resolved.
pub fn resolution_line(p: &Profile) -> String {
    let total = p.total_samples;
    let mut s = format!(
        "resolved {:.1}% of {total} samples to symbols",
        pct(p.resolution.resolved, total)
    );
    if !p.resolution.unresolved.is_empty() {
        let why: Vec<String> = p
            .resolution
            .unresolved
            .iter()
            .map(|(u, n, dso)| format!("{:.1}% {u} ({dso})", pct(*n, total)))
            .collect();
        let _ = write!(s, "; unresolved: {}", why.join(", "));
    }
    if let Some(note) = p.debuginfod.as_ref().and_then(debuginfod_note) {
        let _ = write!(s, "; {note}");
    }
    s
}

/// The report's words for a summary: what was fetched from where, what was not there, which
/// server could not be reached; `None` when debuginfod had nothing to do.
pub fn debuginfod_note(s: &Summary) -> Option<String> {
    if s.is_empty() {
        return None;
    }
    let count = |n: u64, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    let mut parts = Vec::new();
    for srv in &s.servers {
        let mut fetched = Vec::new();
        if srv.debuginfo > 0 {
            fetched.push(count(srv.debuginfo, "debug file", "debug files"));
        }
        if srv.executables > 0 {
            fetched.push(count(srv.executables, "executable", "executables"));
        }
        let mut p = String::new();
        if !fetched.is_empty() {
            let _ = write!(p, "{} fetched from {}", fetched.join(" and "), srv.url);
        }
        if srv.not_found > 0 {
            if p.is_empty() {
                let _ = write!(p, "{} not found at {}", srv.not_found, srv.url);
            } else {
                let _ = write!(p, ", {} not found there", srv.not_found);
            }
        }
        if srv.failed.0 > 0 {
            let why = srv.failed.1.as_deref().unwrap_or("?");
            if p.is_empty() {
                let _ = write!(p, "{} failed at {} ({why})", srv.failed.0, srv.url);
            } else {
                let _ = write!(p, ", {} failed ({why})", srv.failed.0);
            }
        }
        if let Some(why) = &srv.unreachable {
            if p.is_empty() {
                let _ = write!(p, "{} unreachable: {why}", srv.url);
            } else {
                let _ = write!(p, ", then unreachable: {why}");
            }
        }
        if !p.is_empty() {
            parts.push(p);
        }
    }
    if s.known_missing > 0 {
        parts.push(format!(
            "{} known missing (the cache's negative entries)",
            s.known_missing
        ));
    }
    if s.not_asked > 0 && s.servers.iter().all(|srv| srv.unreachable.is_some()) {
        parts.push(count(s.not_asked, "file not fetched", "files not fetched"));
    }
    Some(format!("debuginfod: {}", parts.join("; ")))
}

/// How the `--call-graph dwarf` stacks unwound, when there are any: the share that reached
/// the process root, and why the others stopped.
pub fn unwind_line(p: &Profile) -> Option<String> {
    let u = p.unwind.as_ref()?;
    let mut s = format!(
        "unwound {:.1}% of {} user stacks to the process root",
        pct(u.complete, u.samples),
        u.samples
    );
    let why: Vec<String> = [
        (
            u.stack_cut,
            "ran out of the copied stack (record with --call-graph dwarf,SIZE)",
        ),
        (u.stopped, "stopped where no unwind rule applied"),
        (u.no_regs, "had no user registers"),
    ]
    .iter()
    .filter(|(n, _)| *n > 0)
    .map(|(n, why)| format!("{n} ({:.1}%) {why}", pct(*n, u.samples)))
    .collect();
    if !why.is_empty() {
        let _ = write!(s, "; {}", why.join(", "));
    }
    let stops = u.top_stops(3);
    if !stops.is_empty() {
        let list: Vec<String> = stops.iter().map(|(n, k)| format!("{k} ({n})")).collect();
        let _ = write!(s, "; ended in {}", list.join(", "));
    }
    Some(s)
}

/// Why an event has no retire-latency statistics, if it has none.
pub fn no_latency_reason(e: &EventInfo) -> Option<String> {
    if e.has_latency {
        return None;
    }
    Some(if !e.weight_struct {
        "its samples carry no WEIGHT_STRUCT (record with -W)".to_string()
    } else if !e.precise {
        // Before the core's own rule: a software event (the cpu-clock fallback) or one
        // without :p is never filled, whatever the core.
        "it is not a precise event, so the retire latency field is always zero (software \
         fallback or no :p)"
            .to_string()
    } else if e.latency_filled == Some(false) {
        format!(
            "not filled on this core ({}): it has no Timed PEBS, which Granite Rapids, Sierra \
             Forest and the P-cores of Meteor Lake and later have",
            e.pmu.as_deref().unwrap_or("?")
        )
    } else {
        "every latency is zero: this CPU has no Timed PEBS (TPEBS), which Granite Rapids and \
         later provide"
            .to_string()
    })
}
