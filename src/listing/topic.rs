//! The topic `perf list` shows an Intel event under (`cache:`, `pipeline:`).
//!
//! Intel's event files carry no topic. perf's converted files get one from the event name
//! (Intel's `create_perf_json.py` matches name patterns with priorities) and perf prints the
//! file name it was stored in, lower case with spaces (`floating point`, `virtual memory`).
//! This is a shorter rule set in the same spirit, strongest rule first: it puts the events of
//! current Intel cores where perf does, and the odd event may land in a neighbouring topic.
//! Uncore events go by their PMU (`uncore_cha` -> `uncore cache`).

/// The topic of event `name` (Intel's upper-case spelling); `uncore_pmu` is the PMU of an
/// uncore event (`uncore_imc`), `None` for core events.
pub fn topic_of(name: &str, uncore_pmu: Option<&str>) -> &'static str {
    if let Some(pmu) = uncore_pmu {
        return uncore_topic(pmu.strip_prefix("uncore_").unwrap_or(pmu));
    }
    let n = name.to_ascii_uppercase();
    let starts = |prefixes: &[&str]| prefixes.iter().any(|p| n.starts_with(p));
    let has = |parts: &[&str]| parts.iter().any(|p| n.contains(p));
    // Strongest: the instruction cache belongs to the front end.
    if starts(&["ICACHE"]) {
        return "frontend";
    }
    // Strong, by subject.
    if has(&["DTLB"]) || starts(&["ITLB"]) {
        return "virtual memory";
    }
    if starts(&["MEM_TRANS_RETIRED", "RTM", "HLE"]) || has(&["MEMORY_ORDERING"]) {
        return "memory";
    }
    if starts(&["FRONTEND", "IDQ", "BACLEARS", "CYCLES_ICACHE_MEM_STALLED"]) {
        return "frontend";
    }
    if starts(&["FP_", "ASSISTS.FP"]) || has(&["AVX", "SIMD", "FPDIV", "FP_ASSIST"]) {
        return "floating point";
    }
    if has(&["CACHE"]) || (n.starts_with("MEM_") && n.len() > 4) {
        return "cache";
    }
    // Misses beyond the last-level cache are memory events.
    if has(&["L3_MISS", "LLC_MISS"]) {
        return "memory";
    }
    if n.starts_with("OCR.") && has(&["DRAM", "MEMORY"]) {
        return "memory";
    }
    // By unit.
    if starts(&[
        "L1D",
        "L1I",
        "L2",
        "LLC",
        "OFFCORE_REQUESTS",
        "OFFCORE_RESPONSE",
        "OCR.",
        "SQ_MISC",
        "SW_PREFETCH",
        "CORE_SNOOP",
        "CORE_REJECT",
        "IDI_MISC",
        "STORE",
        "DL1",
    ]) {
        return "cache";
    }
    if starts(&["PAGE_WALK", "TLB_FLUSH", "EPT", "DATA_TLB", "LARGE_ITLB"])
        || n.get(1..5) == Some("TLB_")
    {
        return "virtual memory";
    }
    if starts(&[
        "DECODE",
        "DSB",
        "MS_DECODED",
        "MACRO_INSTS",
        "INSTS_WRITTEN",
    ]) {
        return "frontend";
    }
    if starts(&["X87", "ARITH.FP"]) {
        return "floating point";
    }
    if starts(&[
        "MEMORY_ACTIVITY",
        "PREFETCH",
        "TX_",
        "LD_HEAD",
        "MISALIGN_MEM",
    ]) {
        return "memory";
    }
    if has(&["_RETIRED", "_ISSUED", "_DISPATCHED"])
        || starts(&[
            "ARITH",
            "ASSISTS",
            "BR_",
            "BACLEAR",
            "BTCLEAR",
            "CPU_CLK",
            "CYCLE_ACTIVITY",
            "EXE",
            "INST_",
            "INT_",
            "LD_BLOCKS",
            "LOAD_HIT_PRE",
            "LSD",
            "MACHINE_CLEARS",
            "MEMORY_STALLS",
            "MISC",
            "MOVE_ELIMINATION",
            "RESOURCE_STALLS",
            "RS",
            "SERIALIZATION",
            "STORE_FORWARD",
            "TOPDOWN",
            "UOPS",
            "UOP_",
            "DEPENDENT_LOADS",
            "DIV",
            "ROB_",
            "BE_STALLS",
        ])
    {
        return "pipeline";
    }
    "other"
}

fn uncore_topic(unit: &str) -> &'static str {
    let u = unit.to_ascii_lowercase();
    let base = u.trim_end_matches(|c: char| c.is_ascii_digit() || c == '_');
    match base {
        "cha" | "chacms" | "cbox" | "ha" | "hac_cbo" => "uncore cache",
        "b2cxl" | "cxlcm" | "cxldp" => "uncore cxl",
        "iio" | "iio_free_running" | "m2pcie" | "r2pcie" => "uncore io",
        "pcu" => "uncore power",
        b if b.starts_with("imc") || b.starts_with("edc") || b.contains("hbm") => "uncore memory",
        "arb" | "b2cmi" | "b2hot" | "b2upi" | "hac_arb" | "irp" | "m2m" | "mdf" | "r3qpi"
        | "qpi" | "santa" | "sbox" | "ubox" | "upi" | "m3upi" => "uncore interconnect",
        _ => "uncore other",
    }
}
