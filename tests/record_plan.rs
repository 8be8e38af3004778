//! Record plans against perf's own attr-test expectations (perf-abi.md 15.1) and the default
//! plans per CPU model.

mod support;

use hrec::event::attr::{flag, read, sample};
use hrec::event::plan::{self, CallGraph, Freq, IfRefused, Placement, RecordOptions, Role, Target};
use hrec::event::resolve::TopDownRole;
use support::{host, opts, plan, pmus};

const BASE: u64 = sample::IP | sample::TID | sample::TIME; // 7
const TRACKING: u64 =
    flag::MMAP | flag::MMAP2 | flag::COMM | flag::COMM_EXEC | flag::TASK | flag::KSYMBOL;

/// base-record: `perf record ./prog` on non-hybrid x86.
#[test]
fn base_record() {
    let p = plan("zen4", &opts(&["cycles"]));
    assert_eq!(p.events.len(), 1);
    let a = p.events[0].attr;
    assert_eq!((a.type_, a.config), (0, 0));
    assert_eq!(a.sample_type, 263, "IP|TID|TIME|PERIOD");
    assert_eq!(a.read_format, read::ID | read::LOST); // 20
    assert!(a.freq() && a.sample_period_or_freq == 4000);
    for f in [
        flag::DISABLED,
        flag::INHERIT,
        flag::ENABLE_ON_EXEC,
        flag::SAMPLE_ID_ALL,
        TRACKING,
    ] {
        assert!(a.has(f), "{f:#x}");
    }
    for f in [
        flag::PINNED,
        flag::EXCLUDE_USER,
        flag::EXCLUDE_KERNEL,
        flag::WATERMARK,
        flag::MMAP_DATA,
    ] {
        assert!(!a.has(f), "{f:#x}");
    }
    assert_eq!(
        (
            a.config1,
            a.config2,
            a.branch_sample_type,
            a.sample_regs_user
        ),
        (0, 0, 0, 0)
    );
    assert_eq!(a.size, 136, "PERF_ATTR_SIZE_VER8");
    assert!(p.events[0].tracking);
}

/// test-record-count: `-c 123`: fixed period, no PERIOD bit.
#[test]
fn record_count() {
    let p = plan(
        "zen4",
        &RecordOptions {
            count: Some(123),
            ..opts(&["cycles"])
        },
    );
    let a = p.events[0].attr;
    assert_eq!(
        (a.sample_period_or_freq, a.sample_type, a.freq()),
        (123, 7, false)
    );
}

/// test-record-freq: `-F 100`.
#[test]
fn record_freq() {
    let p = plan(
        "zen4",
        &RecordOptions {
            freq: Some(Freq::Hz(100)),
            ..opts(&["cycles"])
        },
    );
    let a = p.events[0].attr;
    assert_eq!((a.sample_period_or_freq, a.sample_type), (100, 263));
    assert!(a.freq());
}

/// `-F` above perf_event_max_sample_rate is lowered with perf's warning; `-F max` uses it.
#[test]
fn record_freq_limit() {
    let p = plan(
        "zen4",
        &RecordOptions {
            freq: Some(Freq::Hz(250_000)),
            ..opts(&["cycles"])
        },
    );
    assert_eq!(p.events[0].attr.sample_period_or_freq, 100_000);
    assert_eq!(
        p.notices,
        [
            "Maximum frequency rate (100,000 Hz) exceeded, throttling from 250,000 Hz to 100,000 Hz. The limit can be raised via /proc/sys/kernel/perf_event_max_sample_rate."
        ]
    );
    let p = plan(
        "zen4",
        &RecordOptions {
            freq: Some(Freq::Max),
            ..opts(&["cycles"])
        },
    );
    assert_eq!(p.events[0].attr.sample_period_or_freq, 100_000);
    let low = hrec::event::Host {
        max_sample_rate: Some(2500),
        ..host()
    };
    let p = plan::plan_record(&pmus("zen4"), &low, &opts(&["cycles"])).unwrap();
    assert_eq!(p.events[0].attr.sample_period_or_freq, 2500);
    assert_eq!(
        p.notices,
        ["Lowering default frequency rate from 4000 to 2500."]
    );
}

/// test-record-no-inherit: `-i`.
#[test]
fn record_no_inherit() {
    let p = plan(
        "zen4",
        &RecordOptions {
            no_inherit: true,
            ..opts(&["cycles"])
        },
    );
    let a = p.events[0].attr;
    assert_eq!(a.sample_type, 263);
    assert!(!a.has(flag::INHERIT));
}

/// test-record-C0: `-C 0`: CPU bit, ID (the dummy shares the sample type), no enable_on_exec,
/// tracking moved to the system-wide dummy.
#[test]
fn record_cpu0() {
    let o = RecordOptions {
        target: Target::Cpus("0".parse().unwrap()),
        ..opts(&["cycles"])
    };
    let p = plan("zen4", &o);
    assert_eq!(p.events.len(), 2);
    let (cyc, dummy) = (&p.events[0], &p.events[1]);
    assert_eq!(cyc.attr.sample_type, 455, "IP|TID|TIME|ID|CPU|PERIOD");
    assert!(!cyc.attr.has(flag::ENABLE_ON_EXEC));
    assert!(!cyc.attr.has(flag::MMAP) && !cyc.attr.has(flag::COMM) && !cyc.attr.has(flag::TASK));
    assert_eq!(cyc.placement, Placement::Cpus("0".parse().unwrap()));
    // system-wide-dummy: type=1 config=9 sample_freq=4000 sample_type=455 read_format=ID|LOST,
    // disabled=0, tracking bits, enable_on_exec=0.
    assert_eq!((dummy.attr.type_, dummy.attr.config), (1, 9));
    assert_eq!((dummy.attr.sample_type, dummy.attr.read_format), (455, 20));
    assert_eq!(dummy.attr.sample_period_or_freq, 4000);
    assert!(
        dummy.attr.has(TRACKING)
            && !dummy.attr.has(flag::DISABLED)
            && !dummy.attr.has(flag::ENABLE_ON_EXEC)
    );
    assert_eq!(dummy.role, Role::Tracking);
    // hrec follows current perf here: no inherit for CPU targets (6.1 kept inherit=1).
    assert!(!cyc.attr.has(flag::INHERIT));
}

/// test-record-group / group1: `{cycles,instructions}`.
#[test]
fn record_group() {
    let p = plan("zen4", &opts(&["{cycles,instructions}"]));
    let (l, m) = (p.events[0].attr, p.events[1].attr);
    assert_eq!(l.sample_type, 327, "IP|TID|TIME|ID|PERIOD");
    assert_eq!(m.sample_type, 327);
    assert_eq!((l.read_format, m.read_format), (20, 20));
    assert_eq!((m.type_, m.config), (0, 1));
    assert_eq!(p.events[1].leader, 0);
    assert!(!m.has(flag::DISABLED) && !m.has(flag::ENABLE_ON_EXEC) && !m.has(flag::MMAP));
    assert!(l.has(flag::DISABLED) && l.has(flag::ENABLE_ON_EXEC) && l.has(flag::MMAP));
}

/// test-record-group2: `{cycles/period=1234000/,instructions/period=6789000/}:S`.
#[test]
fn record_group_sampling_with_periods() {
    let p = plan(
        "zen4",
        &opts(&["{cpu/cycles,period=1234000/,cpu/instructions,period=6789000/}:S"]),
    );
    let (l, m) = (p.events[0].attr, p.events[1].attr);
    assert_eq!(
        (l.sample_type, m.sample_type),
        (87, 87),
        "IP|TID|TIME|READ|ID"
    );
    assert_eq!((l.read_format, m.read_format), (28, 28), "ID|GROUP|LOST");
    assert_eq!(
        (l.sample_period_or_freq, m.sample_period_or_freq),
        (1_234_000, 6_789_000)
    );
    assert!(!l.freq() && !m.freq());
}

/// test-record-group-sampling(1): `{cycles,cache-misses}:S` with the kernel 6.12 rule: inherit
/// kept (TID is always there), member period 0.
#[test]
fn record_group_sampling() {
    let p = plan("zen4", &opts(&["{cycles,cache-misses}:S"]));
    let (l, m) = (p.events[0].attr, p.events[1].attr);
    assert_eq!(
        (l.sample_type, m.sample_type),
        (343, 343),
        "IP|TID|TIME|READ|ID|PERIOD"
    );
    assert_eq!((l.read_format, m.read_format), (28, 28));
    assert_eq!((m.type_, m.config), (0, 3));
    assert_eq!(m.sample_period_or_freq, 0);
    assert!(!m.freq() && !m.has(flag::DISABLED));
    assert!(l.has(flag::INHERIT) && m.has(flag::INHERIT));
    assert_eq!(
        (p.events[0].role, p.events[1].role),
        (Role::Sampler, Role::Counted)
    );
}

/// test-record-graph-default / -fp and -graph-dwarf.
#[test]
fn record_call_graphs() {
    let p = plan(
        "zen4",
        &RecordOptions {
            call_graph: Some(CallGraph::Fp),
            ..opts(&["cycles"])
        },
    );
    assert_eq!(p.events[0].attr.sample_type, 295, "+CALLCHAIN");
    let p = plan(
        "zen4",
        &RecordOptions {
            call_graph: Some(CallGraph::Dwarf {
                stack_size: 8192,
                raw: false,
            }),
            ..opts(&["cycles"])
        },
    );
    let a = p.events[0].attr;
    assert_eq!(a.sample_type, 45359);
    assert_eq!(a.sample_stack_user, 8192);
    assert!(a.has(flag::EXCLUDE_CALLCHAIN_USER) && a.has(flag::MMAP_DATA));
    assert_ne!(a.sample_regs_user, 0);
}

/// Done-means: Alder Lake default = TopDown group on cpu_core (slots leads, cycles samples with
/// config 0x400000000 on CPUs 0-15) + cpu_atom cycles (0x800000000 on 16-23) + dummy tracking.
#[test]
fn alderlake_default() {
    let p = plan("alderlake", &RecordOptions::default());
    let names: Vec<&str> = p.events.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "cpu_core/slots/",
            "cpu_core/cycles/P",
            "cpu_core/topdown-retiring/",
            "cpu_core/topdown-bad-spec/",
            "cpu_core/topdown-fe-bound/",
            "cpu_core/topdown-be-bound/",
            "cpu_core/topdown-heavy-ops/",
            "cpu_core/topdown-br-mispredict/",
            "cpu_core/topdown-fetch-lat/",
            "cpu_core/topdown-mem-bound/",
            "cpu_atom/cycles/P",
            "dummy:u",
        ]
    );
    let core: Placement = Placement::Cpus("0-15".parse().unwrap());
    let atom: Placement = Placement::Cpus("16-23".parse().unwrap());
    let slots = &p.events[0];
    assert_eq!(
        (
            slots.attr.type_,
            slots.attr.config,
            slots.attr.sample_period_or_freq
        ),
        (4, 0x400, 0)
    );
    assert_eq!(slots.role, Role::Counted);
    let cyc = &p.events[1];
    assert_eq!((cyc.attr.type_, cyc.attr.config), (0, 0x4_0000_0000));
    assert_eq!(
        (cyc.role, cyc.leader, cyc.attr.precise_ip()),
        (Role::Sampler, 0, 3)
    );
    assert!(cyc.attr.freq() && cyc.attr.sample_period_or_freq == 4000);
    for e in &p.events[..10] {
        assert_eq!(e.placement, core, "{}", e.name);
        assert_eq!(e.leader, 0);
        assert_eq!(e.attr.read_format, read::ID | read::GROUP | read::LOST);
        assert_eq!(
            e.attr.sample_type,
            BASE | sample::READ | sample::PERIOD | sample::IDENTIFIER,
            "{}",
            e.name
        );
        assert!(e.attr.has(flag::INHERIT));
    }
    for e in &p.events[2..10] {
        assert_eq!(
            (e.topdown, e.role, e.attr.sample_period_or_freq),
            (TopDownRole::Metric, Role::Counted, 0)
        );
    }
    let atom_cyc = &p.events[10];
    assert_eq!(
        (atom_cyc.attr.type_, atom_cyc.attr.config, atom_cyc.leader),
        (0, 0x8_0000_0000, 10)
    );
    assert_eq!(atom_cyc.placement, atom);
    assert_eq!(
        atom_cyc.attr.sample_type,
        BASE | sample::PERIOD | sample::IDENTIFIER
    );
    let dummy = &p.events[11];
    assert_eq!(dummy.placement, Placement::Cpus("0-23".parse().unwrap()));
    assert!(dummy.tracking && p.events.iter().filter(|e| e.tracking).count() == 1);
    // Planned without cpuinfo: the E-core keeps its plain sampler, and says why.
    assert_eq!(
        p.notices,
        ["cpu_atom: no cpuinfo to tell which E-core this is: sampling cycles without TopDown"]
    );
}

fn topdown_default(model: &str, metrics: usize) {
    let p = plan(
        model,
        &RecordOptions {
            weight: true,
            ..RecordOptions::default()
        },
    );
    assert_eq!(p.events.len(), 2 + metrics, "{model}");
    assert_eq!(
        (p.events[0].attr.config, p.events[0].role),
        (0x400, Role::Counted)
    );
    assert_eq!(p.events[1].name, "cycles:P");
    assert_eq!((p.events[1].attr.type_, p.events[1].attr.config), (0, 0));
    assert!(
        p.events[0].tracking,
        "one group on every CPU: the leader tracks"
    );
    for e in &p.events {
        assert_eq!(
            e.attr.sample_type,
            BASE | sample::READ | sample::ID | sample::PERIOD | sample::WEIGHT_STRUCT
        );
        assert_eq!(e.leader, 0);
    }
    assert_eq!(
        p.events.iter().filter(|e| e.role == Role::Sampler).count(),
        1
    );
}

#[test]
fn sapphire_and_granite_rapids_default_group_with_eight_metrics() {
    topdown_default("sapphirerapids", 8);
    topdown_default("graniterapids", 8);
}

#[test]
fn icelake_default_group_with_four_metrics() {
    topdown_default("icelake", 4);
}

#[test]
fn zen4_default_is_plain_cycles_with_amd_precise() {
    let p = plan(
        "zen4",
        &RecordOptions {
            weight: true,
            ..RecordOptions::default()
        },
    );
    assert_eq!(p.events.len(), 1);
    let a = p.events[0].attr;
    assert_eq!(
        (a.type_, a.config, a.sample_type),
        (0, 0, 263 | sample::WEIGHT_STRUCT)
    );
    assert_eq!(
        a.precise_ip(),
        0,
        "caps/max_precise is 0 on AMD (precise goes through IBS)"
    );
}

#[test]
fn vm_default_is_cpu_clock_with_notice() {
    let p = plan(
        "vm",
        &RecordOptions {
            weight: true,
            ..RecordOptions::default()
        },
    );
    assert_eq!(p.events.len(), 1);
    let a = p.events[0].attr;
    assert_eq!((a.type_, a.config, a.precise_ip()), (1, 0, 0));
    assert_eq!(a.sample_type, 263 | sample::WEIGHT_STRUCT);
    assert_eq!(p.notices.len(), 1);
    assert!(p.notices[0].contains("no hardware PMU") && p.notices[0].contains("cpu-clock"));
    // An explicit cycles falls back the same way; other hardware events are an error.
    let p = plan("vm", &opts(&["cycles:u"]));
    assert_eq!((p.events[0].attr.type_, p.events[0].attr.config), (1, 0));
    assert!(p.events[0].attr.has(flag::EXCLUDE_KERNEL));
    let e = plan::plan_record(&pmus("vm"), &host(), &opts(&["instructions"])).unwrap_err();
    assert!(e.to_string().contains("needs a hardware PMU"), "{e}");
}

#[test]
fn metric_events_never_sample() {
    for (s, frag) in [
        (
            "topdown-retiring",
            "refuses to sample TopDown metric events",
        ),
        ("{slots,topdown-retiring}:S", "has no other event"),
        ("{slots,topdown-retiring}", "refuses to sample"),
    ] {
        let e = plan::plan_record(&pmus("sapphirerapids"), &host(), &opts(&[s])).unwrap_err();
        assert!(e.to_string().contains(frag), "{s}: {e}");
    }
    // perf's own test: {instructions,slots,topdown-retiring}:S works after reordering.
    let p = plan(
        "sapphirerapids",
        &opts(&["{instructions,slots,topdown-retiring}:S"]),
    );
    let names: Vec<(&str, Role)> = p.events.iter().map(|e| (e.name.as_str(), e.role)).collect();
    assert_eq!(
        names,
        [
            ("slots", Role::Counted),
            ("instructions", Role::Sampler),
            ("topdown-retiring", Role::Counted)
        ]
    );
}

#[test]
fn hybrid_cpu_lists() {
    let o = RecordOptions {
        target: Target::Cpus("0-3,16".parse().unwrap()),
        ..opts(&["cycles"])
    };
    let p = plan("alderlake", &o);
    assert_eq!(
        p.events[0].placement,
        Placement::Cpus("0-3".parse().unwrap())
    );
    assert_eq!(
        p.events[1].placement,
        Placement::Cpus("16".parse().unwrap())
    );
    assert!(
        p.notices
            .iter()
            .any(|n| n == "WARNING: use 0-3 in '0-3,16' for 'cpu_core', skip other cpus in list."),
        "{:?}",
        p.notices
    );
    let o = RecordOptions {
        target: Target::Cpus("16-17".parse().unwrap()),
        ..opts(&["cycles"])
    };
    let p = plan("alderlake", &o);
    assert_eq!(
        p.events.iter().filter(|e| e.role == Role::Sampler).count(),
        1
    );
    assert!(
        p.notices.iter().any(|n| n.contains("isn't a 'cpu_core'")),
        "{:?}",
        p.notices
    );
    let o = RecordOptions {
        target: Target::Cpus("99".parse().unwrap()),
        ..opts(&["cycles"])
    };
    let e = plan::plan_record(&pmus("alderlake"), &host(), &o).unwrap_err();
    assert!(e.to_string().contains("CPU 99"), "{e}");
}

#[test]
fn per_thread_opens_on_any_cpu_without_inherit() {
    let o = RecordOptions {
        per_thread: true,
        ..opts(&["cycles"])
    };
    let p = plan("sapphirerapids", &o);
    assert_eq!(p.events[0].placement, Placement::AnyCpu);
    assert!(!p.events[0].attr.has(flag::INHERIT));
}

/// Issue 30: on every fixture, each E-core PMU gets a sampling-read group led by its cycles
/// sampler whose counting members are exactly Intel's level-1 TopDown encodings of that core
/// type (E-core TMA: Gracemont counts FE, BE and RET and leaves Bad Speculation to the
/// remainder; Crestmont's retiring is 0x72; Skymont has the architectural codes), on the
/// PMU's type and CPUs; the P-core groups are the plan made without knowing the CPU.
#[test]
fn ecore_pmus_get_cycles_led_topdown_groups_with_intels_encodings() {
    // (model, E-core PMU, expected member configs in order). Written out from Intel's event
    // files, not from hrec's table.
    let gracemont = [0x71, 0x74, 0xc2];
    let crestmont = [0x71, 0x73, 0x74, 0x72];
    let skymont = [0x019c, 0x73, 0x02a4, 0x02c2];
    // Level 2, where the counters hold it: IFetch Latency, Branch Mispredicts and Core Bound
    // (FRONTEND_LATENCY 0x71/0x72, MISPREDICT 0x73/0x04, ALLOC_RESTRICTIONS 0x74/0x01), then
    // on Skymont FRONTEND_BANDWIDTH 0x71/0x8d and MACHINE_CLEARS 0x73/0x03 as well.
    const THREE: [u64; 3] = [0x7271, 0x0473, 0x0174];
    const FIVE: [u64; 5] = [0x7271, 0x0473, 0x0174, 0x8d71, 0x0373];
    let level2 = |model: &str, pmu: &str, watchdog: bool| -> &'static [u64] {
        match (model, pmu) {
            ("alderlake" | "alderlake-n", _) if watchdog => &[],
            ("lunarlake" | "arrowlake-s", _) | ("arrowlake-h", "cpu_atom") => &FIVE,
            _ => &THREE,
        }
    };
    let expected: [(&str, &str, &[u64]); 8] = [
        ("alderlake", "cpu_atom", &gracemont),
        ("alderlake-n", "cpu", &gracemont),
        ("meteorlake", "cpu_atom", &crestmont),
        ("sierraforest", "cpu", &crestmont),
        ("lunarlake", "cpu_atom", &skymont),
        ("arrowlake-s", "cpu_atom", &skymont),
        ("arrowlake-h", "cpu_atom", &skymont),
        ("arrowlake-h", "cpu_lowpower", &crestmont),
    ];
    for (weight, watchdog) in [(false, true), (true, true), (false, false)] {
        for (model, pmu_name, configs) in expected {
            let pmus = pmus(model);
            let cpu = hrec::pmu::uarch::CpuId::read(&support::procfs_of(model));
            assert!(cpu.is_some(), "{model}: no cpuinfo");
            let host = hrec::event::Host {
                cpu,
                nmi_watchdog: Some(watchdog),
                ..host()
            };
            let o = RecordOptions {
                weight,
                ..opts(&[])
            };
            let p = plan::plan_record(&pmus, &host, &o).unwrap();
            let pmu = pmus.get(pmu_name).unwrap();
            let group: Vec<_> = p
                .events
                .iter()
                .filter(|e| e.pmu.as_deref() == Some(pmu_name))
                .collect();
            let leader = group[0];
            assert_eq!(leader.leader, leader.index, "{model} {pmu_name}: leads");
            assert!(leader.name.contains("cycles"), "{model}: {}", leader.name);
            assert_eq!(leader.role, Role::Sampler, "{model} {pmu_name}");
            assert_eq!(leader.attr.type_, 0, "{model}: legacy cycles");
            assert_eq!(
                leader.attr.config >> 32,
                u64::from(pmu.type_) * u64::from(pmus.is_hybrid())
            );
            let members: Vec<u64> = group[1..].iter().map(|e| e.attr.config).collect();
            let l2 = level2(model, pmu_name, watchdog);
            assert_eq!(
                members,
                [configs, l2].concat(),
                "{model} {pmu_name} watchdog {watchdog}"
            );
            // Level 1 refused: no TopDown; level 2 refused: level 1 alone.
            let marks: Vec<_> = group[1..].iter().map(|e| e.if_refused).collect();
            let want: Vec<_> = (configs.iter().map(|_| Some(IfRefused::DropTopdown)))
                .chain(l2.iter().map(|_| Some(IfRefused::DropLevel2)))
                .collect();
            assert_eq!(marks, want, "{model} {pmu_name}");
            let gracemont_note = p.notices.iter().any(|n| {
                n.starts_with(&format!(
                    "{pmu_name}: gracemont E-cores have too few counters"
                ))
            });
            assert_eq!(
                gracemont_note,
                l2.is_empty(),
                "{model} {pmu_name}: {:?}",
                p.notices
            );
            let cpus = pmu.open_cpus(&pmus.online);
            for e in &group {
                assert_eq!(
                    e.placement,
                    Placement::Cpus(cpus.clone()),
                    "{model} {}",
                    e.name
                );
                assert!(e.attr.sample_type & sample::READ != 0, "{model} {}", e.name);
                assert_eq!(
                    e.attr.sample_type & sample::WEIGHT_STRUCT != 0,
                    weight,
                    "{model} {}",
                    e.name
                );
            }
            for m in &group[1..] {
                assert_eq!(m.leader, leader.index, "{model} {}", m.name);
                assert_eq!(m.role, Role::Counted, "{model} {}", m.name);
                assert_eq!(m.attr.type_, pmu.type_, "{model} {}", m.name);
                assert_eq!(m.attr.sample_period_or_freq, 0, "{model} {}", m.name);
            }
            // P-core groups: as without cpuinfo (the plan of the releases before).
            let before = plan::plan_record(&pmus, &host_without_cpu(), &o).unwrap();
            let p_core = |p: &plan::Plan| -> Vec<String> {
                p.events
                    .iter()
                    .filter(|e| e.pmu.as_deref() == Some("cpu_core"))
                    .map(|e| format!("{e:?}"))
                    .collect()
            };
            assert_eq!(p_core(&p), p_core(&before), "{model}");
        }
    }
}

fn host_without_cpu() -> hrec::event::Host {
    hrec::event::Host {
        cpu: None,
        ..host()
    }
}

/// An E-core PMU of a model hrec has no rules for gets today's plain cycles sampler and one
/// notice; so does one whose core Intel publishes no TopDown for (Darkmont).
#[test]
fn unknown_ecores_sample_cycles_with_one_notice() {
    use hrec::pmu::uarch::{CpuId, Vendor};
    let pmus = pmus("alderlake");
    for (model, says) in [
        (0xEE, "not known for GenuineIntel-6-EE-0"),
        (0xCC, "darkmont"),
    ] {
        let host = hrec::event::Host {
            cpu: Some(CpuId {
                vendor: Vendor::Intel,
                family: 6,
                model,
                stepping: 0,
            }),
            ..host()
        };
        let p = plan::plan_record(&pmus, &host, &opts(&[])).unwrap();
        let atom: Vec<_> = p
            .events
            .iter()
            .filter(|e| e.pmu.as_deref() == Some("cpu_atom"))
            .collect();
        assert_eq!(atom.len(), 1, "{model:#x}");
        assert_eq!(atom[0].role, Role::Sampler);
        let notes: Vec<_> = p
            .notices
            .iter()
            .filter(|n| n.contains("cpu_atom"))
            .collect();
        assert_eq!(notes.len(), 1, "{:?}", p.notices);
        assert!(notes[0].contains(says), "{}", notes[0]);
    }
}

/// Lunar Lake and Arrow Lake before Linux 6.13 have no PEBS (`caps/max_precise` 0): one line
/// that names the kernel version, and the plan still made with what works.
#[test]
fn lunar_lake_without_pebs_format_6_is_one_notice() {
    let dir = tempfile::tempdir().unwrap();
    let status = std::process::Command::new("cp")
        .args(["-r"])
        .arg(support::sysfs("lunarlake"))
        .arg(dir.path().join("sys"))
        .status()
        .unwrap();
    assert!(status.success());
    for pmu in ["cpu_core", "cpu_atom"] {
        let caps = dir
            .path()
            .join("sys/bus/event_source/devices")
            .join(pmu)
            .join("caps");
        std::fs::write(caps.join("max_precise"), "0\n").unwrap();
    }
    let pmus = hrec::pmu::Pmus::read(&dir.path().join("sys")).unwrap();
    let cpu = hrec::pmu::uarch::CpuId::read(&support::procfs_of("lunarlake"));
    let host = hrec::event::Host { cpu, ..host() };
    let p = plan::plan_record(&pmus, &host, &opts(&[])).unwrap();
    let lines: Vec<_> = p
        .notices
        .iter()
        .filter(|n| n.contains("max_precise"))
        .collect();
    assert_eq!(lines.len(), 1, "{:?}", p.notices);
    assert!(lines[0].starts_with("cpu_core, cpu_atom: "), "{}", lines[0]);
    assert!(lines[0].contains("Linux 6.13"), "{}", lines[0]);
    assert!(p.events.iter().all(|e| e.attr.precise_ip() == 0));
    assert!(p.events.iter().any(|e| e.role == Role::Sampler));
    // With PEBS (the fixture as it is): no such line.
    let p = plan::plan_record(&support::pmus("lunarlake"), &host, &opts(&[])).unwrap();
    assert!(!p.notices.iter().any(|n| n.contains("max_precise")));
}

/// Issue 45: the default plan on AMD Zen 4/5 and Arm Neoverse fixtures: cycles-led groups
/// of the vendor's level-1 events within the counters (the NMI watchdog's share), the leader
/// plain cycles (AMD's precise cycles go to IBS), the members the vendor's encodings on the
/// core PMU, never chained (`config1` 0), dropped as TopDown when refused.
#[test]
fn vendor_default_groups_fit_the_counters() {
    use hrec::event::plan::IfRefused;
    let amd = [0x7aa, 0xc1, 0x1_0000_01a0, 0x1_0000_1ea0];
    let smt = 0x1_0000_60a0;
    let arm = [0x3e, 0x3d, 0x3a, 0x3b, 0x10];
    let cases: [(&str, &str, bool, Vec<Vec<u64>>); 8] = [
        ("zen4", "cpu", true, vec![amd.to_vec(), vec![smt]]),
        ("zen4", "cpu", false, vec![[&amd[..], &[smt]].concat()]),
        ("zen5", "cpu", true, vec![amd.to_vec(), vec![smt]]),
        ("zen5", "cpu", false, vec![[&amd[..], &[smt]].concat()]),
        ("neoverse-v2", "armv8_pmuv3_0", true, vec![arm.to_vec()]),
        (
            "neoverse-v2",
            "armv8_pmuv3_0",
            false,
            vec![vec![0x3e, 0x3d, 0x3f, 0x3a, 0x3b, 0x10]],
        ),
        ("neoverse-v1", "armv8_pmuv3_0", true, vec![arm.to_vec()]),
        ("neoverse-n2", "armv8_pmuv3_0", true, vec![arm.to_vec()]),
    ];
    for (model, pmu_name, watchdog, want) in cases {
        let pmus = pmus(model);
        let host = hrec::event::Host {
            cpu: hrec::pmu::uarch::CpuId::read(&support::procfs_of(model)),
            nmi_watchdog: Some(watchdog),
            ..host()
        };
        let p = plan::plan_record(&pmus, &host, &opts(&[])).unwrap();
        let pmu = pmus.get(pmu_name).unwrap();
        let leaders: Vec<_> = p.events.iter().filter(|e| e.leader == e.index).collect();
        assert_eq!(leaders.len(), want.len(), "{model} watchdog {watchdog}");
        for (lead, configs) in leaders.iter().zip(&want) {
            assert_eq!(lead.role, Role::Sampler, "{model}");
            assert_eq!(
                (lead.attr.type_, lead.attr.config),
                (0, 0),
                "{model}: cycles"
            );
            assert_eq!(lead.attr.precise_ip(), 0, "{model}: not precise");
            let members: Vec<_> = p
                .events
                .iter()
                .filter(|e| e.leader == lead.index && e.index != lead.index)
                .collect();
            let got: Vec<u64> = members.iter().map(|e| e.attr.config).collect();
            assert_eq!(&got, configs, "{model} watchdog {watchdog}");
            for m in members {
                assert_eq!(m.attr.type_, pmu.type_, "{model}");
                assert_eq!(m.attr.config1, 0, "{model}: no chained counter");
                assert_eq!(m.if_refused, Some(IfRefused::DropTopdown), "{model}");
            }
            // The 6 general counters: AMD's leader takes one and the watchdog another; Arm's
            // leader takes the cycle counter unless the watchdog holds it.
            let general = match (pmu_name == "cpu", watchdog) {
                (true, w) => configs.len() + 1 + usize::from(w),
                (false, true) => configs.len() + 1,
                (false, false) => configs.len(),
            };
            assert!(
                general <= 6,
                "{model} watchdog {watchdog}: {general} counters"
            );
        }
    }
    // One thread per core (SMT off): no SMT group with the watchdog on.
    let mut host = hrec::event::Host {
        cpu: hrec::pmu::uarch::CpuId::read(&support::procfs_of("zen4")),
        nmi_watchdog: Some(true),
        ..host()
    };
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("sys");
    copy_tree(&support::sysfs("zen4"), &root);
    for cpu in [0, 1, 16] {
        let t = root.join(format!("devices/system/cpu/cpu{cpu}/topology"));
        std::fs::write(t.join("core_cpus_list"), format!("{cpu}\n")).unwrap();
    }
    let pmus = hrec::pmu::Pmus::read(&root).unwrap();
    let p = plan::plan_record(&pmus, &host, &opts(&[])).unwrap();
    assert_eq!(p.events.iter().filter(|e| e.leader == e.index).count(), 1);
    assert!(
        p.notices.iter().any(|n| n.contains("one thread per core")),
        "{:?}",
        p.notices
    );
    // An Arm guest whose hypervisor hides level 1's events (KVM hides STALL_SLOT* and OP_*):
    // cycles alone, with one line naming them.
    let arm = dir.path().join("arm");
    copy_tree(&support::sysfs("neoverse-v2"), &arm);
    let events = arm.join("bus/event_source/devices/armv8_pmuv3_0/events");
    for e in ["stall_slot_frontend", "stall_slot_backend", "stall_slot"] {
        std::fs::remove_file(events.join(e)).unwrap();
    }
    let arm_host = hrec::event::Host {
        cpu: None,
        nmi_watchdog: Some(true),
        ..host
    };
    let p =
        plan::plan_record(&hrec::pmu::Pmus::read(&arm).unwrap(), &arm_host, &opts(&[])).unwrap();
    assert_eq!(p.events.len(), 1, "{:?}", p.events);
    assert!(
        p.notices.iter().any(|n| n.contains(
            "Arm Neoverse V2 without STALL_SLOT_FRONTEND, STALL_SLOT_BACKEND (a hypervisor hides them)"
        )),
        "{:?}",
        p.notices
    );
    // An AMD model hrec does not know: cycles alone, with one line.
    host.cpu = hrec::pmu::uarch::CpuId::parse("AuthenticAMD-26-50-0");
    let p = plan::plan_record(&pmus, &host, &opts(&[])).unwrap();
    assert_eq!(p.events.len(), 1, "{:?}", p.events);
    assert!(
        p.notices
            .iter()
            .any(|n| n.contains("hrec has no TopDown for AMD family 0x1a model 0x50")),
        "{:?}",
        p.notices
    );
}

/// Copies a fixture tree.
fn copy_tree(from: &std::path::Path, to: &std::path::Path) {
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&dest).unwrap();
            copy_tree(&e.path(), &dest);
        } else {
            std::fs::create_dir_all(to).unwrap();
            std::fs::copy(e.path(), &dest).unwrap();
        }
    }
}
