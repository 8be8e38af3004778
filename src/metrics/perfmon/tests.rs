//! Unit tests of the perfmon readers: event references and their modifiers, mapfile
//! patterns, cpuid strings and perf terms.

use super::mapfile::pattern_matches;
use super::*;

#[test]
fn event_ref_modifiers() {
    let r = EventRef::parse("UOPS_RETIRED.MS:c1:e1");
    assert_eq!(
        (r.name.as_str(), r.cmask, r.edge),
        ("UOPS_RETIRED.MS", Some(1), true)
    );
    assert_eq!(r.to_string(), "UOPS_RETIRED.MS:c1:e1");

    let r = EventRef::parse("IDQ.MITE_UOPS:c8:i1:eq1");
    assert_eq!((r.cmask, r.inv, r.eq, r.edge), (Some(8), true, true, false));
    assert_eq!(r.to_string(), "IDQ.MITE_UOPS:c8:i1:eq1");

    let r = EventRef::parse("MEM_INST_RETIRED.LOCK_LOADS:retire_latency");
    assert!(r.retire_latency && !r.is_counted());
    assert_eq!(r.to_string(), "MEM_INST_RETIRED.LOCK_LOADS:retire_latency");
    assert!(EventRef::parse("X:R").retire_latency);

    let r = EventRef::parse("OCR.DEMAND_RFO.L3_MISS:ocr_msr_val=0x103b800002");
    assert_eq!(r.ocr_msr_val, Some(0x103b800002));
    assert_eq!(
        r.to_string(),
        "OCR.DEMAND_RFO.L3_MISS:ocr_msr_val=0x103b800002"
    );

    let r = EventRef::parse("FP_ARITH_OPS_RETIRED.VECTOR:u0x30");
    assert_eq!(r.umask, Some(0x30));
    assert_eq!(r.to_string(), "FP_ARITH_OPS_RETIRED.VECTOR:u0x30");

    for (text, check) in [
        (
            "CPU_CLK_UNHALTED.THREAD_P:SUP",
            EventRef::parse("x:SUP").kernel_only,
        ),
        (
            "BR_INST_RETIRED.FAR_BRANCH:USER",
            EventRef::parse("x:USER").user_only,
        ),
        (
            "TOPDOWN.SLOTS:percore",
            EventRef::parse("x:percore").per_core,
        ),
        (
            "UNC_CHA_CLOCKTICKS:one_unit",
            EventRef::parse("x:one_unit").one_unit,
        ),
        (
            "TOPDOWN.SLOTS:perf_metrics",
            EventRef::parse("x:perf_metrics").perf_metrics,
        ),
    ] {
        assert!(check);
        assert_eq!(EventRef::parse(text).to_string(), text);
    }

    let r = EventRef::parse("X:c1:bogus:cx");
    assert_eq!(r.unknown, vec!["bogus".to_string(), "cx".to_string()]);
    let r = EventRef {
        instance: Some(0),
        ..EventRef::parse("UNC_P_CLOCKTICKS")
    };
    assert_eq!(r.to_string(), "UNC_P_CLOCKTICKS[0]");
}

#[test]
fn mapfile_patterns() {
    let m = |p: &str, s: &str| pattern_matches(p, s);
    assert!(m("GenuineIntel-6-AD", "GenuineIntel-6-AD"));
    assert!(m("GenuineIntel-6-AD", "GenuineIntel-6-AD-1"));
    assert!(m("GenuineIntel-6-AD", "genuineintel-6-ad-1"));
    assert!(!m("GenuineIntel-6-AD", "GenuineIntel-6-ADE"));
    assert!(!m("GenuineIntel-6-AD", "GenuineIntel-6-A"));
    assert!(!m("GenuineIntel-6-A", "GenuineIntel-6-AD-1"));
    assert!(m("GenuineIntel-6-55-[01234]", "GenuineIntel-6-55-4"));
    assert!(!m("GenuineIntel-6-55-[01234]", "GenuineIntel-6-55-7"));
    assert!(m("GenuineIntel-6-55-[56789ABCDEF]", "GenuineIntel-6-55-B"));
    assert!(m("GenuineIntel-6-55-[5-9A-F]", "GenuineIntel-6-55-c"));
    assert!(!m("GenuineIntel-6-55-[01234]", "GenuineIntel-6-55"));
    assert!(!m("GenuineIntel-6-55-[0", "GenuineIntel-6-55-0"));
}

#[test]
fn cpuid_strings() {
    assert_eq!(
        cpuid_string("GenuineIntel", 6, 0xAD, 1),
        "GenuineIntel-6-AD-1"
    );
    let cpuinfo = "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\n\
                   model\t\t: 151\nmodel name\t: 12th Gen Intel(R) Core(TM) i9-12900K\n\
                   stepping\t: 2\n\nprocessor\t: 1\nvendor_id\t: GenuineIntel\n";
    assert_eq!(
        cpuid_from_cpuinfo(cpuinfo).as_deref(),
        Some("GenuineIntel-6-97-2")
    );
    assert_eq!(cpuid_from_cpuinfo("processor : 0\n"), None);
}

#[test]
fn raw_event_terms() {
    let e = RawEvent {
        name: "X".into(),
        event_code: 0x2a,
        umask: 1,
        cmask: 1,
        edge: true,
        msr: Some((0x1a6, 0x3f3fc00002)),
        ..RawEvent::default()
    };
    assert_eq!(
        e.perf_terms().unwrap(),
        "event=0x2a,umask=0x1,cmask=1,edge=1,offcore_rsp=0x3f3fc00002"
    );
    let e = RawEvent {
        msr: Some((0x3f6, 0x80)),
        ..e
    };
    assert!(e.perf_terms().unwrap().ends_with(",ldlat=128"));
    let e = RawEvent {
        msr: Some((0x123, 1)),
        ..e
    };
    assert_eq!(
        e.perf_terms().unwrap_err().to_string(),
        "event X needs MSR 0x123, which has no perf term"
    );
}
