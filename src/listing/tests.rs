use super::*;

fn fixture(model: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/sysfs")
        .join(model)
}

#[test]
fn globs_match_as_perfs_strglobmatch() {
    assert!(glob_match("*cpu-*", "cpu-clock", false));
    assert!(glob_match("*faults*", "page-faults", false));
    assert!(!glob_match("*CPU-CLOCK*", "cpu-clock", false));
    assert!(glob_match("*MEM_LOAD*", "mem_load_retired.l3_miss", true));
    assert!(glob_match("l?d.*", "l1d.replacement", false));
    assert!(glob_match("l[0-9]d*", "l1d.replacement", false));
    assert!(!glob_match("l[!0-9]d*", "l1d.replacement", false));
    assert!(glob_match("a\\*b", "a*b", false));
    assert!(!glob_match("a\\*b", "axb", false));
    // Anchored at both ends.
    assert!(!glob_match("clock", "cpu-clock", false));
    assert!(!glob_match("cpu", "cpu-clock", false));
    assert!(glob_match("*", "", false));
    assert!(!glob_match("?", "", false));
}

#[test]
fn arguments_are_classes_tracepoint_globs_or_substring_globs() {
    assert_eq!(Filter::parse("sw"), Filter::Software);
    assert_eq!(Filter::parse("hardware"), Filter::Hardware);
    assert_eq!(Filter::parse("hwcache"), Filter::Cache);
    assert_eq!(Filter::parse("metricgroups"), Filter::MetricGroup);
    assert_eq!(
        Filter::parse("sched:*switch*"),
        Filter::TracepointGlob {
            subsystem: "sched".into(),
            event: "*switch*".into()
        }
    );
    assert_eq!(Filter::parse("cache-*"), Filter::Glob("*cache-**".into()));
}

#[test]
fn topics_follow_perfs_files() {
    for (name, topic) in [
        ("MEM_LOAD_RETIRED.L3_MISS", "cache"),
        ("L1D.REPLACEMENT", "cache"),
        ("LONGEST_LAT_CACHE.MISS", "cache"),
        ("MEM_TRANS_RETIRED.LOAD_LATENCY_GT_4", "memory"),
        ("OCR.DEMAND_DATA_RD.L3_MISS", "memory"),
        ("DTLB_LOAD_MISSES.WALK_COMPLETED", "virtual memory"),
        ("ITLB_MISSES.WALK_COMPLETED", "virtual memory"),
        ("ICACHE_DATA.STALLS", "frontend"),
        ("IDQ.DSB_UOPS", "frontend"),
        ("FP_ARITH_INST_RETIRED.SCALAR_DOUBLE", "floating point"),
        ("BR_INST_RETIRED.ALL_BRANCHES", "pipeline"),
        ("CPU_CLK_UNHALTED.THREAD", "pipeline"),
        ("TOPDOWN.SLOTS", "pipeline"),
        ("INST_RETIRED.ANY", "pipeline"),
        ("XQ.FULL_CYCLES", "other"),
    ] {
        assert_eq!(topic_of(name, None), topic, "{name}");
    }
    assert_eq!(
        topic_of("UNC_CHA_TOR_INSERTS.IA", Some("uncore_cha")),
        "uncore cache"
    );
    assert_eq!(
        topic_of("UNC_M_CAS_COUNT.RD", Some("uncore_imc")),
        "uncore memory"
    );
    assert_eq!(
        topic_of("UNC_U_EVENT_MSG", Some("uncore_ubox")),
        "uncore interconnect"
    );
}

#[test]
fn intel_tma_groups_take_perfs_names() {
    assert_eq!(perf_group_name("TmaL1"), "TopdownL1");
    assert_eq!(perf_group_name("TmaL3mem"), "TopdownL3mem");
    assert_eq!(perf_group_name("TmaLx"), "TmaLx");
    assert_eq!(perf_group_name("Backend"), "Backend");
}

#[test]
fn descriptions_wrap_as_perf_wraps_them() {
    let mut out = Vec::new();
    print::wordwrap("aaaa bbbb cccc dddd", 8, 20, &mut out).unwrap();
    // 8 + 4 = 12, + 1 + 4 = 17; the third word would reach 22 >= 20: new line.
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "aaaa bbbb\n        cccc dddd"
    );
}

#[test]
fn legacy_hardware_events_follow_the_core_pmus_aliases() {
    let spr = crate::pmu::Pmus::read(&fixture("sapphirerapids")).unwrap();
    let hw: Vec<String> = hardware_events(&spr)
        .into_iter()
        .map(|e| e.display)
        .collect();
    assert!(hw.contains(&"cpu-cycles OR cycles".to_string()), "{hw:?}");
    assert!(hw.contains(&"ref-cycles".to_string()), "{hw:?}");
    assert!(!hw.iter().any(|h| h.starts_with("stalled")), "{hw:?}");
    let zen = crate::pmu::Pmus::read(&fixture("zen4")).unwrap();
    let hw: Vec<String> = hardware_events(&zen)
        .into_iter()
        .map(|e| e.display)
        .collect();
    assert!(
        hw.contains(&"stalled-cycles-frontend OR idle-cycles-frontend".to_string()),
        "{hw:?}"
    );
    assert!(!hw.iter().any(|h| h.starts_with("bus-cycles")), "{hw:?}");
    let vm = crate::pmu::Pmus::read(&fixture("vm")).unwrap();
    assert!(hardware_events(&vm).is_empty());
    assert!(cache_events(&vm).is_empty());
}
