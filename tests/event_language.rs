//! The event language: good strings resolve to perf's encodings on fixture PMUs, bad strings
//! give one line that points at the offending position.

mod support;

use hrec::event::resolve::{Resolution, TopDownRole, resolve};
use support::pmus;

fn res(model: &str, s: &str) -> Resolution {
    resolve(&pmus(model), &[s.to_string()]).unwrap_or_else(|e| panic!("{s:?} on {model}: {e}"))
}

/// (type, config) of every resolved event, in order.
fn enc(model: &str, s: &str) -> Vec<(u32, u64)> {
    res(model, s)
        .groups
        .iter()
        .flat_map(|g| g.events.iter().map(|r| (r.attr.type_, r.attr.config)))
        .collect()
}

#[test]
fn good_strings_resolve_like_perf() {
    type Case = (&'static str, &'static str, &'static [(u32, u64)]);
    let cases: &[Case] = &[
        ("sapphirerapids", "cycles", &[(0, 0)]),
        ("sapphirerapids", "cpu-cycles", &[(0, 0)]),
        ("sapphirerapids", "instructions", &[(0, 1)]),
        ("sapphirerapids", "cache-references", &[(0, 2)]),
        ("sapphirerapids", "cache-misses", &[(0, 3)]),
        ("sapphirerapids", "branches", &[(0, 4)]),
        ("sapphirerapids", "branch-instructions", &[(0, 4)]),
        ("sapphirerapids", "branch-misses", &[(0, 5)]),
        ("sapphirerapids", "bus-cycles", &[(0, 6)]),
        ("sapphirerapids", "ref-cycles", &[(0, 9)]),
        ("sapphirerapids", "L1-dcache-load-misses", &[(3, 0x10000)]),
        ("sapphirerapids", "L1-dcache-loads", &[(3, 0)]),
        ("sapphirerapids", "LLC-loads", &[(3, 2)]),
        ("sapphirerapids", "LLC-store-misses", &[(3, 0x10102)]),
        ("sapphirerapids", "dTLB-load-misses", &[(3, 0x10003)]),
        ("sapphirerapids", "iTLB-load-misses", &[(3, 0x10004)]),
        ("sapphirerapids", "branch-load-misses", &[(3, 0x10005)]),
        ("sapphirerapids", "L1-icache-prefetches", &[(3, 0x201)]),
        ("vm", "cpu-clock", &[(1, 0)]),
        ("vm", "task-clock", &[(1, 1)]),
        ("vm", "page-faults", &[(1, 2)]),
        ("vm", "faults", &[(1, 2)]),
        ("vm", "context-switches", &[(1, 3)]),
        ("vm", "cs", &[(1, 3)]),
        ("vm", "cpu-migrations", &[(1, 4)]),
        ("vm", "minor-faults,major-faults", &[(1, 5), (1, 6)]),
        ("vm", "dummy", &[(1, 9)]),
        ("sapphirerapids", "r1a8", &[(4, 0x1a8)]),
        ("sapphirerapids", "r003c:u", &[(4, 0x3c)]),
        ("sapphirerapids", "cpu/event=0x3c,umask=0x0/", &[(4, 0x3c)]),
        (
            "sapphirerapids",
            "cpu/event=0xd1,umask=0x1,cmask=2,inv,edge/",
            &[(4, 0x0284_01d1)],
        ),
        ("sapphirerapids", "cpu/config=0x1234/", &[(4, 0x1234)]),
        ("sapphirerapids", "slots", &[(4, 0x400)]),
        ("sapphirerapids", "cpu/slots/", &[(4, 0x400)]),
        ("sapphirerapids", "cpu/cycles/", &[(0, 0)]),
        ("sapphirerapids", "{cycles,instructions}", &[(0, 0), (0, 1)]),
        (
            "sapphirerapids",
            "{cycles,cache-misses}:S",
            &[(0, 0), (0, 3)],
        ),
        (
            "sapphirerapids",
            "cycles:ppp,instructions:u",
            &[(0, 0), (0, 1)],
        ),
        // Hybrid: one event per core PMU, PMU type in config[63:32].
        (
            "alderlake",
            "cycles",
            &[(0, 0x4_0000_0000), (0, 0x8_0000_0000)],
        ),
        ("alderlake", "cpu_core/cycles/", &[(0, 0x4_0000_0000)]),
        ("alderlake", "cpu_atom/cycles/", &[(0, 0x8_0000_0000)]),
        (
            "alderlake",
            "cpu_atom/instructions/u",
            &[(0, 0x8_0000_0001)],
        ),
        (
            "alderlake",
            "LLC-loads",
            &[(3, 0x4_0000_0002), (3, 0x8_0000_0002)],
        ),
        ("alderlake", "r3c", &[(4, 0x3c), (8, 0x3c)]),
        ("alderlake", "cpu_atom/event=0xc0/", &[(8, 0xc0)]),
        // cpu_atom's topdown-retiring is a counter event (0xc2), cpu_core's a metric (0x8000).
        ("alderlake", "cpu_atom/topdown-retiring/", &[(8, 0xc2)]),
        ("zen4", "cpu/event=0x1c0/", &[(4, 0x1_0000_00c0)]),
        ("zen4", "cycles", &[(0, 0)]),
    ];
    assert!(cases.len() >= 40);
    for (model, s, want) in cases {
        assert_eq!(enc(model, s), *want, "{s:?} on {model}");
    }
    let msr = pmus("sapphirerapids").get("msr").unwrap().type_;
    assert_eq!(enc("sapphirerapids", "msr/tsc/"), [(msr, 0)]);
}

#[test]
fn modifiers_set_exclude_bits_and_precise() {
    use hrec::event::attr::flag;
    let r = res("sapphirerapids", "cycles:uP");
    let a = r.groups[0].events[0].attr;
    assert!(a.has(flag::EXCLUDE_KERNEL | flag::EXCLUDE_HV) && !a.has(flag::EXCLUDE_USER));
    assert!(r.groups[0].events[0].modifiers.precise_max);
    let a = res("sapphirerapids", "cycles:kpp").groups[0].events[0].attr;
    assert!(a.has(flag::EXCLUDE_USER) && !a.has(flag::EXCLUDE_KERNEL));
    assert_eq!(a.precise_ip(), 2);
    let a = res("sapphirerapids", "cycles:H").groups[0].events[0].attr;
    assert!(a.has(flag::EXCLUDE_GUEST) && !a.has(flag::EXCLUDE_HOST));
    let a = res("sapphirerapids", "{cycles,instructions}:u").groups[0].events[1].attr;
    assert!(
        a.has(flag::EXCLUDE_KERNEL),
        "group modifiers apply to members"
    );
    let r = res("sapphirerapids", "cpu/event=0x3c,name=mycyc,period=2000/");
    assert_eq!(r.groups[0].events[0].name, "mycyc");
    assert_eq!(r.groups[0].events[0].period, Some(2000));
}

#[test]
fn hybrid_groups_are_split_per_pmu_with_perf_warning() {
    let r = res("alderlake", "{cpu_core/cycles/,cpu_atom/instructions/}");
    assert_eq!(r.groups.len(), 2);
    assert!(
        r.warnings[0].starts_with("WARNING: events were regrouped to match PMUs"),
        "{:?}",
        r.warnings
    );
    // A group of PMU-less legacy events is the same group on each core PMU: no warning.
    let r = res("alderlake", "{cycles,instructions}");
    assert_eq!(r.groups.len(), 2);
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    let names: Vec<Vec<&str>> = r
        .groups
        .iter()
        .map(|g| g.events.iter().map(|e| e.name.as_str()).collect())
        .collect();
    assert_eq!(
        names,
        [
            ["cpu_core/cycles/", "cpu_core/instructions/"],
            ["cpu_atom/cycles/", "cpu_atom/instructions/"]
        ]
    );
}

#[test]
fn topdown_events_are_regrouped_behind_slots() {
    // Standalone metrics get a slots leader.
    let r = res("sapphirerapids", "topdown-retiring,topdown-be-bound");
    assert_eq!(r.groups.len(), 1);
    let roles: Vec<TopDownRole> = r.groups[0].events.iter().map(|e| e.topdown).collect();
    assert_eq!(
        roles,
        [TopDownRole::Slots, TopDownRole::Metric, TopDownRole::Metric]
    );
    assert!(r.warnings[0].contains("regrouped as {slots,topdown-retiring,topdown-be-bound}"));
    // slots moves to the front of a group that has it.
    let r = res("sapphirerapids", "{topdown-retiring,slots,instructions}:S");
    assert_eq!(r.groups[0].events[0].name, "slots");
    // A group with metrics and no slots gets one.
    let r = res("icelake", "{instructions,topdown-retiring}");
    assert_eq!(
        enc("icelake", "{instructions,topdown-retiring}"),
        [(4, 0x400), (0, 1), (4, 0x8000)]
    );
    assert_eq!(r.groups[0].events[0].topdown, TopDownRole::Slots);
    // On hybrid the metric is on cpu_core; slots comes from cpu_core too.
    assert_eq!(
        enc("alderlake", "cpu_core/topdown-retiring/"),
        [(4, 0x400), (4, 0x8000)]
    );
    // slots alone is an ordinary event.
    assert_eq!(res("sapphirerapids", "slots").groups[0].events.len(), 1);
}

/// Bad strings: (model, input, expected column (1-based), fragment of the message).
#[test]
fn bad_strings_point_at_the_problem() {
    let cases: &[(&str, &str, usize, &str)] = &[
        ("sapphirerapids", "", 1, "empty event list"),
        ("sapphirerapids", "cycles,", 7, "trailing"),
        ("sapphirerapids", "cycles:x", 8, "unknown modifier 'x'"),
        ("sapphirerapids", "cycles:pppp", 11, "at most three"),
        ("sapphirerapids", "cycles:", 7, "missing modifier"),
        ("sapphirerapids", "nosuch", 1, "unknown event \"nosuch\""),
        ("sapphirerapids", "cycles;instructions", 7, "unexpected ';'"),
        ("sapphirerapids", "{cycles", 1, "unclosed '{'"),
        ("sapphirerapids", "{}", 1, "empty group"),
        ("sapphirerapids", "{cycles,{instructions}}", 9, "nested"),
        ("sapphirerapids", "{cycles}:q", 10, "unknown modifier 'q'"),
        ("sapphirerapids", "cpu/event=0x3c", 1, "unclosed '/'"),
        ("sapphirerapids", "cpu/event=/", 5, "missing value"),
        (
            "sapphirerapids",
            "cpu/event=0x1ff/",
            5,
            "does not fit event",
        ),
        ("sapphirerapids", "cpu/umask=zz/", 5, "needs a number"),
        (
            "sapphirerapids",
            "cpu/bogus=1/",
            5,
            "unknown term \"bogus\"",
        ),
        (
            "sapphirerapids",
            "nopmu/event=1/",
            1,
            "unknown PMU \"nopmu\"",
        ),
        (
            "sapphirerapids",
            "cpu/event=1/x",
            13,
            "unknown modifier 'x'",
        ),
        (
            "sapphirerapids",
            "cpu/cycles,event=1/",
            1,
            "cannot be combined",
        ),
        (
            "sapphirerapids",
            "cpu/cycles,instructions/",
            12,
            "only one event name",
        ),
        (
            "sapphirerapids",
            "sched:sched_switch",
            1,
            "tracefs is not mounted",
        ),
        ("sapphirerapids", "cycles:u_x", 9, "unknown modifier '_'"),
        (
            "sapphirerapids",
            "uncore_cha_0/hrec_fixture_tor_inserts_tid/",
            1,
            "needs filter_tid=N",
        ),
        ("sapphirerapids", "cpu/event=1,/", 13, "expected a term"),
        ("sapphirerapids", "cpu/event=1;/", 12, "unexpected ';'"),
        ("sapphirerapids", "cpu/name='x/", 10, "unclosed quote"),
        ("vm", "r1a8", 1, "raw events need a core PMU"),
        ("zen4", "topdown-retiring", 1, "unknown event"),
        ("sapphirerapids", ",cycles", 1, "expected an event name"),
        (
            "sapphirerapids",
            "{cycles instructions}",
            9,
            "expected ',' or '}'",
        ),
        (
            "sapphirerapids",
            "cycles instructions",
            8,
            "expected ',' between events",
        ),
    ];
    for (model, s, col, frag) in cases {
        let e = resolve(&pmus(model), &[s.to_string()]).expect_err(s);
        let line = e.to_string();
        assert!(!line.contains('\n'), "one line: {line}");
        assert!(line.contains(frag), "{s:?}: {line}");
        assert_eq!(e.span.start + 1, *col, "{s:?}: {line}");
        assert!(
            line.starts_with(&format!("bad event {s:?} at column {col}")),
            "{line}"
        );
    }
}

/// Resolution of every prefix and suffix of long strings on every model: errors, never panics.
#[test]
fn resolution_never_panics() {
    let strings = [
        "{cpu_core/topdown-retiring/,slots,cycles:P,topdown-be-bound}:S,cpu_atom/event=0xc0,period=10/u",
        "uncore_cha_0/hrec_fixture_tor_inserts_tid,filter_tid=3/,L1-dcache-load-misses:é,msr/tsc/",
    ];
    for model in support::MODELS {
        let p = pmus(model);
        for s in strings {
            for (i, _) in s.char_indices() {
                for piece in [&s[..i], &s[i..]] {
                    if let Err(e) = resolve(&p, &[piece.to_string()]) {
                        assert!(!e.to_string().contains('\n'));
                    }
                }
            }
        }
    }
}
