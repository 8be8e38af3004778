//! PMU discovery against the fixture sysfs trees, and malformed trees.

mod support;

use std::fs;

use hrec::pmu::{ConfigWord, PmuError, PmuKind, Pmus, TopDown};
use support::pmus;

#[test]
fn alderlake_is_hybrid_with_topdown_on_cpu_core_only() {
    let p = pmus("alderlake");
    assert!(p.is_hybrid());
    let core: Vec<(&str, u32, String, TopDown)> = p
        .core_pmus()
        .iter()
        .map(|c| {
            (
                c.name.as_str(),
                c.type_,
                c.cpus.as_ref().unwrap().to_string(),
                c.topdown,
            )
        })
        .collect();
    assert_eq!(
        core,
        [
            ("cpu_core", 4, "0-15".to_string(), TopDown::L2),
            ("cpu_atom", 8, "16-23".to_string(), TopDown::None),
        ]
    );
    // cpu_atom's topdown-* are counter events (event=0xc2 ...), not perf metrics.
    let atom = p.get("cpu_atom").unwrap();
    assert_eq!(atom.aliases["topdown-retiring"].term("event"), Some(0xc2));
    assert!(!atom.aliases.contains_key("slots"));
    assert_eq!(p.online.to_string(), "0-23");
    assert_eq!(
        p.get("cpu_core").unwrap().pmu_name(),
        Some("alderlake_hybrid")
    );
}

#[test]
fn server_and_client_topdown_levels() {
    for (model, level, pmu_name) in [
        ("sapphirerapids", TopDown::L2, "sapphire_rapids"),
        ("graniterapids", TopDown::L2, "granite_rapids"),
        ("icelake", TopDown::L1, "icelake"),
    ] {
        let p = pmus(model);
        assert!(!p.is_hybrid(), "{model}");
        let cpu = p.get("cpu").unwrap();
        assert_eq!(
            (cpu.type_, cpu.kind, cpu.topdown),
            (4, PmuKind::Core, level),
            "{model}"
        );
        assert_eq!(cpu.pmu_name(), Some(pmu_name));
        assert_eq!(cpu.max_precise(), Some(3));
        assert!(
            cpu.cpus.is_none(),
            "{model}: the non-hybrid cpu PMU has no cpus file"
        );
        assert_eq!(cpu.open_cpus(&p.online), p.online);
    }
}

#[test]
fn zen4_split_format_and_no_topdown() {
    let p = pmus("zen4");
    let cpu = p.get("cpu").unwrap();
    assert_eq!(cpu.topdown, TopDown::None);
    let ev = &cpu.formats["event"];
    assert_eq!(ev.word, ConfigWord::Config);
    assert_eq!(ev.ranges, [(0, 7), (32, 35)]);
    assert_eq!(ev.encode(0x1c0), Some(0x1_0000_00c0));
    assert_eq!(cpu.max_precise(), Some(0));
}

#[test]
fn vm_has_no_core_pmu() {
    let p = pmus("vm");
    assert!(p.core_pmus().is_empty());
    let names: Vec<&str> = p.pmus.iter().map(|p| p.name.as_str()).collect();
    for n in ["software", "tracepoint", "breakpoint", "msr"] {
        assert!(names.contains(&n), "{names:?}");
    }
    assert_eq!(p.get("software").unwrap().kind, PmuKind::Software);
}

#[test]
fn uncore_cpumask_scale_unit_and_required_terms() {
    let p = pmus("sapphirerapids");
    let imc = p.get("uncore_imc_0").unwrap();
    assert_eq!(imc.kind, PmuKind::Other);
    assert!(imc.cpumask.is_some());
    let power = p.get("power").unwrap();
    let pkg = &power.aliases["energy-pkg"];
    assert_eq!(pkg.unit.as_deref(), Some("Joules"));
    assert!((pkg.scale.unwrap() - 2.3283064365386963e-10).abs() < 1e-20);
    let cha = p.get("uncore_cha_0").unwrap();
    let a = &cha.aliases["hrec_fixture_tor_inserts_tid"];
    assert!(
        a.terms
            .iter()
            .any(|t| t.value == hrec::pmu::AliasValue::Required)
    );
}

#[test]
fn every_fixture_reads() {
    for m in support::MODELS.into_iter().chain(support::ECORE_MODELS) {
        let p = pmus(m);
        assert!(!p.pmus.is_empty(), "{m}");
        assert!(!p.online.is_empty(), "{m}");
    }
}

/// `(name, type, cpus, TopDown)` of each core PMU, in perf's order (type 4 first).
fn core_table(p: &Pmus) -> Vec<(String, u32, String, TopDown)> {
    p.core_pmus()
        .iter()
        .map(|c| {
            let cpus = c.cpus.as_ref().map_or("-".to_string(), ToString::to_string);
            (c.name.clone(), c.type_, cpus, c.topdown)
        })
        .collect()
}

/// The four `topdown-*` alias texts of a PMU: retiring, bad-spec, fe-bound, be-bound.
fn topdown_aliases(p: &Pmus, pmu: &str) -> [String; 4] {
    let pmu = p.get(pmu).unwrap_or_else(|| panic!("no PMU {pmu}"));
    ["retiring", "bad-spec", "fe-bound", "be-bound"]
        .map(|n| pmu.aliases[&format!("topdown-{n}")].text.clone())
}

fn owned(rows: &[(&str, u32, &str, TopDown)]) -> Vec<(String, u32, String, TopDown)> {
    rows.iter()
        .map(|&(n, t, c, td)| (n.to_string(), t, c.to_string(), td))
        .collect()
}

/// Meteor Lake: Redwood Cove P-cores with perf metrics (L2), Crestmont `cpu_atom` whose
/// `topdown-*` are the Alder Lake strings (retiring 0xc2, where Crestmont's code is 0x72).
#[test]
fn meteorlake_p_cores_have_l2_and_cpu_atom_keeps_the_adl_aliases() {
    let p = pmus("meteorlake");
    assert!(p.is_hybrid());
    assert_eq!(p.online.to_string(), "0-21");
    assert_eq!(
        core_table(&p),
        owned(&[
            ("cpu_core", 4, "0-11", TopDown::L2),
            ("cpu_atom", 10, "12-21", TopDown::None),
        ])
    );
    assert_eq!(
        topdown_aliases(&p, "cpu_atom"),
        [
            "event=0xc2,umask=0x0",
            "event=0x73,umask=0x0",
            "event=0x71,umask=0x0",
            "event=0x74,umask=0x0",
        ]
    );
    let (core, atom) = (p.get("cpu_core").unwrap(), p.get("cpu_atom").unwrap());
    assert!(!atom.aliases.contains_key("slots"));
    assert!(!core.aliases.contains_key("mem-loads-aux"));
    assert!(atom.formats.contains_key("snoop_rsp") && !core.formats.contains_key("snoop_rsp"));
    for c in [core, atom] {
        assert_eq!(c.pmu_name(), Some("meteorlake_hybrid"));
        assert_eq!(c.max_precise(), Some(3));
    }
}

/// Lunar Lake and Arrow Lake-S share one kernel case: Lion Cove P-cores with L2 TopDown,
/// Skymont `cpu_atom` with the architectural TOPDOWN_* codes, pmu_name `lunarlake_hybrid`.
#[test]
fn lunarlake_and_arrowlake_s_share_the_lnl_setup() {
    for (model, online, p_cpus, e_cpus) in [
        ("lunarlake", "0-7", "0-3", "4-7"),
        ("arrowlake-s", "0-23", "0-7", "8-23"),
    ] {
        let p = pmus(model);
        assert_eq!(p.online.to_string(), online, "{model}");
        assert_eq!(
            core_table(&p),
            owned(&[
                ("cpu_core", 4, p_cpus, TopDown::L2),
                ("cpu_atom", 10, e_cpus, TopDown::None),
            ]),
            "{model}"
        );
        assert_eq!(
            topdown_aliases(&p, "cpu_atom"),
            [
                "event=0xc2,umask=0x02",
                "event=0x73,umask=0x0",
                "event=0x9c,umask=0x01",
                "event=0xa4,umask=0x02",
            ],
            "{model}"
        );
        for c in p.core_pmus() {
            assert_eq!(c.pmu_name(), Some("lunarlake_hybrid"), "{model}");
            // Perfmon v6: umask2 in config[47:40], split from umask's config[15:8].
            assert_eq!(c.formats["umask"].ranges, [(8, 15), (40, 47)], "{model}");
            assert_eq!(c.formats["umask"].encode(0x1_02), Some(0x100_0000_0200));
        }
    }
}

/// Arrow Lake-H: three core PMUs, Skymont `cpu_atom` with the LNL aliases and Crestmont
/// `cpu_lowpower` with the ADL ones, one pmu_name `arrowlake_h_hybrid` for all.
#[test]
fn arrowlake_h_has_three_core_pmus() {
    let p = pmus("arrowlake-h");
    assert!(p.is_hybrid());
    assert_eq!(p.online.to_string(), "0-15");
    assert_eq!(
        core_table(&p),
        owned(&[
            ("cpu_core", 4, "0-5", TopDown::L2),
            ("cpu_atom", 10, "6-13", TopDown::None),
            ("cpu_lowpower", 11, "14-15", TopDown::None),
        ])
    );
    assert_eq!(
        topdown_aliases(&p, "cpu_atom"),
        [
            "event=0xc2,umask=0x02",
            "event=0x73,umask=0x0",
            "event=0x9c,umask=0x01",
            "event=0xa4,umask=0x02",
        ]
    );
    assert_eq!(
        topdown_aliases(&p, "cpu_lowpower"),
        [
            "event=0xc2,umask=0x0",
            "event=0x73,umask=0x0",
            "event=0x71,umask=0x0",
            "event=0x74,umask=0x0",
        ]
    );
    let lp = p.get("cpu_lowpower").unwrap();
    assert_eq!(lp.kind, PmuKind::Core);
    assert!(!lp.aliases.contains_key("slots"));
    for c in p.core_pmus() {
        assert_eq!(c.pmu_name(), Some("arrowlake_h_hybrid"), "{}", c.name);
    }
    // The three CPU lists partition the online CPUs.
    let n: usize = p
        .core_pmus()
        .iter()
        .map(|c| c.open_cpus(&p.online).len())
        .sum();
    assert_eq!(n, p.online.len());
}

/// All-E-core parts: a single non-hybrid `cpu` PMU (type 4, no `cpus` file) whose `topdown-*`
/// aliases are counter events and which has no `slots`.
#[test]
fn sierraforest_and_alderlake_n_are_single_ecore_pmus() {
    for (model, online, pmu_name, aliases) in [
        (
            "sierraforest",
            "0-143",
            "crestmont",
            [
                "event=0x72,umask=0x0",
                "event=0x73,umask=0x0",
                "event=0x71,umask=0x0",
                "event=0x74,umask=0x0",
            ],
        ),
        (
            "alderlake-n",
            "0-3",
            "gracemont",
            [
                "event=0xc2,umask=0x0",
                "event=0x73,umask=0x6",
                "event=0x71,umask=0x0",
                "event=0x74,umask=0x0",
            ],
        ),
    ] {
        let p = pmus(model);
        assert!(!p.is_hybrid(), "{model}");
        assert_eq!(p.online.to_string(), online, "{model}");
        assert_eq!(
            core_table(&p),
            owned(&[("cpu", 4, "-", TopDown::None)]),
            "{model}"
        );
        let cpu = p.get("cpu").unwrap();
        assert!(!cpu.aliases.contains_key("slots"), "{model}");
        assert_eq!(topdown_aliases(&p, "cpu"), aliases, "{model}");
        assert_eq!(cpu.pmu_name(), Some(pmu_name));
        assert_eq!(cpu.max_precise(), Some(3));
        assert_eq!(cpu.open_cpus(&p.online), p.online);
    }
}

/// No E-core PMU has perf metrics: hrec must never read their `topdown-*` as metric events.
#[test]
fn ecore_topdown_aliases_are_counter_events() {
    for model in support::ECORE_MODELS {
        let p = pmus(model);
        for c in p
            .core_pmus()
            .into_iter()
            .filter(|c| c.topdown == TopDown::None)
        {
            for (name, alias) in &c.aliases {
                if name.starts_with("topdown-") {
                    let config = alias.term("event").unwrap() | alias.term("umask").unwrap() << 8;
                    assert_ne!(alias.term("event"), Some(0), "{model} {}/{name}", c.name);
                    assert!(
                        !c.is_topdown_metric_config(config),
                        "{model} {}/{name}",
                        c.name
                    );
                }
            }
        }
    }
}

/// Every procfs fixture's `cpuinfo`: one block per online CPU of its sysfs tree, all with
/// the expected vendor, family and model (hrec's own parser comes later).
#[test]
fn procfs_fixtures_name_their_cpu() {
    for (model, vendor, family, cpu_model) in [
        ("alderlake", "GenuineIntel", 6, 0x97),
        ("sapphirerapids", "GenuineIntel", 6, 0x8f),
        ("graniterapids", "GenuineIntel", 6, 0xad),
        ("icelake", "GenuineIntel", 6, 0x7e),
        ("zen4", "AuthenticAMD", 25, 0x61),
        ("vm-emr", "GenuineIntel", 6, 0xcf),
        ("vm", "GenuineIntel", 6, 0xa7),
        ("meteorlake", "GenuineIntel", 6, 0xaa),
        ("lunarlake", "GenuineIntel", 6, 0xbd),
        ("arrowlake-s", "GenuineIntel", 6, 0xc6),
        ("arrowlake-h", "GenuineIntel", 6, 0xc5),
        ("sierraforest", "GenuineIntel", 6, 0xaf),
        ("alderlake-n", "GenuineIntel", 6, 0xbe),
    ] {
        let root = support::procfs_of(model);
        let text = fs::read_to_string(root.join("cpuinfo")).unwrap();
        let blocks: Vec<(String, u32, u32)> = text
            .split("\n\n")
            .filter(|b| !b.trim().is_empty())
            .map(|b| {
                let field = |key: &str| {
                    b.lines()
                        .find_map(|l| l.split_once(':').filter(|(k, _)| k.trim() == key))
                        .map_or(String::new(), |(_, v)| v.trim().to_string())
                };
                let num = |key: &str| field(key).parse::<u32>().unwrap_or(u32::MAX);
                (field("vendor_id"), num("cpu family"), num("model"))
            })
            .collect();
        assert_eq!(blocks.len(), pmus(model).online.len(), "{model}");
        let want = (vendor.to_string(), family, cpu_model);
        assert!(
            blocks.iter().all(|b| *b == want),
            "{model}: {:?}",
            blocks[0]
        );
        let rate = fs::read_to_string(root.join("sys/kernel/perf_event_max_sample_rate"));
        assert_eq!(rate.unwrap(), "100000\n", "{model}");
    }
}

#[test]
fn the_real_sys_reads() {
    // Whatever this machine is, discovery must work on it (the CI VM has software PMUs only).
    let p = Pmus::read(std::path::Path::new("/sys")).expect("read /sys");
    assert!(p.get("software").is_some());
}

fn tree_with(file: &str, content: &str) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    let pmu = d.path().join("bus/event_source/devices/cpu");
    fs::create_dir_all(pmu.join("format")).unwrap();
    fs::create_dir_all(pmu.join("events")).unwrap();
    fs::write(pmu.join("type"), "4\n").unwrap();
    fs::write(pmu.join("format/event"), "config:0-7\n").unwrap();
    fs::write(pmu.join(file), content).unwrap();
    d
}

fn malformed(file: &str, content: &str) -> String {
    let d = tree_with(file, content);
    let e = Pmus::read(d.path()).unwrap_err();
    assert!(matches!(e, PmuError::Malformed { .. }), "{file}: {e:?}");
    let msg = e.to_string();
    assert!(msg.contains(file), "error must name the file: {msg}");
    msg
}

#[test]
fn malformed_files_name_the_file() {
    assert!(malformed("type", "four\n").contains("decimal PMU type"));
    malformed("format/umask", "config:15-8\n");
    malformed("format/umask", "bogus\n");
    malformed("events/cycles", "event=zz\n");
    malformed("events/cycles", "\n");
    malformed("cpus", "0-\n");
    let d = tree_with("events/energy", "event=1\n");
    fs::write(
        d.path()
            .join("bus/event_source/devices/cpu/events/energy.scale"),
        "x\n",
    )
    .unwrap();
    let e = Pmus::read(d.path()).unwrap_err().to_string();
    assert!(e.contains("energy.scale"), "{e}");
}

#[test]
fn missing_tree_is_a_clear_error() {
    let d = tempfile::tempdir().unwrap();
    let e = Pmus::read(d.path()).unwrap_err().to_string();
    assert!(e.contains("bus/event_source/devices"), "{e}");
}

/// `vm-emr`: the PMU part of `/sys` copied verbatim from a KVM guest on an Emerald Rapids
/// host (`GenuineIntel-6-CF-2`, 16 vCPUs) that exposes no vPMU: no core PMU, so record plans
/// cpu-clock and says why; the host's `power` (energy-psys) and `msr` PMUs are there.
#[test]
fn emerald_rapids_guest_without_a_vpmu() {
    let p = pmus("vm-emr");
    assert!(p.core_pmus().is_empty());
    assert_eq!(p.online.len(), 16);
    let power = p.get("power").unwrap();
    assert!(power.cpumask.is_some());
    let psys = &power.aliases["energy-psys"];
    assert_eq!(psys.unit.as_deref(), Some("Joules"));
    assert!((psys.scale.unwrap() - 2.3283064365386963e-10).abs() < 1e-20);
    let msr = p.get("msr").unwrap();
    for a in ["tsc", "smi"] {
        assert!(msr.aliases.contains_key(a), "{a}");
    }
    let out = support::hrec(Some("vm-emr"), &["record", "--dry-run", "--", "true"]);
    let (stdout, stderr) = support::text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("no hardware PMU") && stderr.contains("sampling cpu-clock instead"),
        "{stderr}"
    );
    assert!(
        stdout.contains("type                             1"),
        "{stdout}"
    );
}

/// Issue 45: the AMD and Arm fixtures name their cores (AMD by family and model, Arm by the
/// core PMU's first CPU's `midr_el1`, which `/proc/cpuinfo` agrees with), their slots per
/// cycle (Arm: the PMU's `caps/slots`), and on Arm the kernel lists every level-1 event hrec
/// counts with the number hrec uses.
#[test]
fn vendor_fixtures_name_their_cores() {
    use hrec::pmu::uarch::CpuId;
    use hrec::pmu::vendor::{Midr, VendorCore, VendorOf, vendor_of};
    let arm = "armv8_pmuv3_0";
    for (model, pmu, core, width) in [
        ("zen4", "cpu", VendorCore::Zen4, 6),
        ("zen5", "cpu", VendorCore::Zen5, 8),
        (
            "neoverse-n2",
            arm,
            VendorCore::NeoverseN2 { r0p3: false },
            5,
        ),
        ("neoverse-v1", arm, VendorCore::NeoverseV1, 8),
        ("neoverse-v2", arm, VendorCore::NeoverseV2, 8),
    ] {
        let p = pmus(model);
        let core_pmu = p.get(pmu).unwrap_or_else(|| panic!("{model}: no {pmu}"));
        assert_eq!(core_pmu.kind, PmuKind::Core, "{model}");
        let cpuinfo = fs::read_to_string(support::procfs_of(model).join("cpuinfo")).unwrap();
        let cpu = CpuId::from_cpuinfo(&cpuinfo);
        let first = core_pmu
            .cpus
            .as_ref()
            .and_then(|c| c.cpus().first().copied());
        let midr = first.and_then(|c| Midr::read(&support::sysfs(model), c));
        assert_eq!(midr, Midr::from_cpuinfo(&cpuinfo), "{model}");
        assert_eq!(midr.is_some(), !core.is_amd(), "{model}");
        assert_eq!(
            vendor_of(cpu.as_ref(), midr),
            VendorOf::Core(core),
            "{model}"
        );
        assert_eq!(core.width(Some(core_pmu)), Some(width), "{model}");
        if !core.is_amd() {
            for e in core.level1_events() {
                let alias = &core_pmu.aliases[&e.name.to_lowercase()];
                assert_eq!(alias.text, format!("event={:#06x}", e.config), "{model}");
            }
        }
    }
}
