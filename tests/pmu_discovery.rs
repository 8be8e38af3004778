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
    for m in support::MODELS {
        let p = pmus(m);
        assert!(!p.pmus.is_empty(), "{m}");
        assert!(!p.online.is_empty(), "{m}");
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
