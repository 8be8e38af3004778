//! `hrec mem record`'s events per CPU model, as perf 6.1's `perf mem record` chooses them
//! (`event::plan::mem`), checked on the sysfs fixture trees: the library's plan and the
//! command's `--dry-run --json`.

mod support;

use hrec::event::attr::{flag, sample};
use hrec::event::plan::mem::{MemOps, MemOptions, mem_events, plan_mem_record};
use hrec::event::plan::{Plan, RecordOptions};
use support::{host, hrec, pmus, text};

const MEM: u64 = sample::ADDR | sample::DATA_SRC;

fn mem_plan(model: &str, mem: MemOptions) -> Plan {
    plan_mem_record(&pmus(model), &host(), &RecordOptions::default(), &mem)
        .unwrap_or_else(|e| panic!("{model}: {e}"))
}

fn names(p: &Plan) -> Vec<(String, usize)> {
    p.events
        .iter()
        .map(|e| (e.name.clone(), e.leader))
        .collect()
}

fn events(model: &str, ops: &str) -> Vec<String> {
    let mem = MemOptions {
        ops: ops.parse().unwrap(),
        ..MemOptions::default()
    };
    mem_events(&pmus(model), &mem).unwrap().events
}

#[test]
fn events_per_model_as_perf_chooses_them() {
    // Sapphire Rapids: mem-loads-aux leads mem-loads.
    assert_eq!(
        events("sapphirerapids", "load,store"),
        [
            "{cpu/mem-loads-aux/,cpu/mem-loads,ldlat=30/}:P",
            "cpu/mem-stores/P"
        ]
    );
    // Granite Rapids, Ice Lake, the E-core Xeon and Alder Lake-N list no mem-loads-aux.
    for m in ["graniterapids", "icelake", "sierraforest", "alderlake-n"] {
        assert_eq!(
            events(m, "load,store"),
            ["cpu/mem-loads,ldlat=30/P", "cpu/mem-stores/P"],
            "{m}"
        );
    }
    // Hybrid: a set per core PMU, loads first; the aux leader only on the P-core that has it.
    assert_eq!(
        events("alderlake", "load,store"),
        [
            "{cpu_core/mem-loads-aux/,cpu_core/mem-loads,ldlat=30/}:P",
            "cpu_atom/mem-loads,ldlat=30/P",
            "cpu_core/mem-stores/P",
            "cpu_atom/mem-stores/P"
        ]
    );
    assert_eq!(
        events("meteorlake", "load"),
        [
            "cpu_core/mem-loads,ldlat=30/P",
            "cpu_atom/mem-loads,ldlat=30/P"
        ]
    );
    assert_eq!(
        events("arrowlake-h", "store"),
        [
            "cpu_core/mem-stores/P",
            "cpu_atom/mem-stores/P",
            "cpu_lowpower/mem-stores/P"
        ]
    );
}

#[test]
fn sapphire_rapids_loads_are_an_aux_led_group_with_ldlat_in_config1() {
    let p = mem_plan(
        "sapphirerapids",
        MemOptions {
            ldlat: 64,
            ..MemOptions::default()
        },
    );
    assert_eq!(
        names(&p),
        [
            ("cpu/mem-loads-aux/".to_string(), 0),
            ("cpu/mem-loads,ldlat=64/".to_string(), 0),
            ("cpu/mem-stores/P".to_string(), 2),
        ]
    );
    let (aux, loads, stores) = (p.events[0].attr, p.events[1].attr, p.events[2].attr);
    assert_eq!((aux.config, aux.config1), (0x8203, 0));
    assert_eq!((loads.config, loads.config1), (0x1cd, 64));
    assert_eq!((stores.config, stores.config1), (0x2cd, 0));
    for a in [aux, loads, stores] {
        assert_eq!(a.sample_type & MEM, MEM, "{:#x}", a.sample_type);
        assert!(a.sample_type & sample::WEIGHT_STRUCT != 0);
        assert_eq!(
            a.sample_type & sample::PHYS_ADDR,
            0,
            "only with --phys-data"
        );
        assert_eq!(a.precise_ip(), 3);
    }
    // The tracking event (the group's leader) asks for the data mappings.
    assert!(p.events[0].tracking && aux.has(flag::MMAP_DATA));
    // A member is enabled with its leader.
    assert!(aux.has(flag::DISABLED) && !loads.has(flag::DISABLED));
}

#[test]
fn stores_alone_carry_no_weight_and_phys_data_is_asked() {
    let p = plan_mem_record(
        &pmus("icelake"),
        &host(),
        &RecordOptions {
            phys_data: true,
            ..RecordOptions::default()
        },
        &MemOptions {
            ops: MemOps {
                load: false,
                store: true,
            },
            ..MemOptions::default()
        },
    )
    .unwrap();
    assert_eq!(names(&p), [("cpu/mem-stores/P".to_string(), 0)]);
    let a = p.events[0].attr;
    assert_eq!(a.sample_type & sample::WEIGHT_STRUCT, 0);
    assert_eq!(
        a.sample_type & (MEM | sample::PHYS_ADDR),
        MEM | sample::PHYS_ADDR
    );
}

#[test]
fn unsupported_pmus_and_bad_options_are_one_line() {
    let err = |model: &str, mem: MemOptions, o: RecordOptions| {
        plan_mem_record(&pmus(model), &host(), &o, &mem)
            .unwrap_err()
            .to_string()
    };
    let d = MemOptions::default;
    let e = err("vm", d(), RecordOptions::default());
    assert!(e.contains("no cpu PMU") && e.contains("mem-loads"), "{e}");
    let e = err("vm-emr", d(), RecordOptions::default());
    assert!(e.contains("no cpu PMU"), "{e}");
    let e = err("zen4", d(), RecordOptions::default());
    assert!(
        e.contains("no events/mem-loads") && e.contains("ibs_op"),
        "{e}"
    );
    let e = err(
        "icelake",
        MemOptions {
            ldlat: 70000,
            ..d()
        },
        RecordOptions::default(),
    );
    assert!(e.contains("1 to 65535"), "{e}");
    let e = err(
        "icelake",
        d(),
        RecordOptions {
            events: vec!["cycles".into()],
            ..RecordOptions::default()
        },
    );
    assert!(e.contains("choose their events themselves: no -e"), "{e}");
    assert!(!e.contains('\n'));
}

#[test]
fn dry_run_json_shows_the_leader_and_its_member() {
    let o = hrec(
        Some("alderlake"),
        &[
            "mem",
            "record",
            "--dry-run",
            "--json",
            "-t",
            "load",
            "--ldlat",
            "40",
            "--",
            "true",
        ],
    );
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let ev: Vec<(String, u64, u64)> = v["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["name"].as_str().unwrap().to_string(),
                e["leader"].as_u64().unwrap(),
                e["attr"]["config1"].as_u64().unwrap_or(0),
            )
        })
        .collect();
    assert_eq!(
        ev,
        [
            ("cpu_core/mem-loads-aux/".to_string(), 0, 0),
            ("cpu_core/mem-loads,ldlat=40/".to_string(), 0, 40),
            ("cpu_atom/mem-loads,ldlat=40/P".to_string(), 2, 40),
            ("dummy:u".to_string(), 3, 0),
        ]
    );
    // The text dump names the leader too, and the VM gets one line.
    let o = hrec(
        Some("sapphirerapids"),
        &["mem", "record", "--dry-run", "--", "true"],
    );
    let (out, _) = text(&o);
    assert!(
        out.contains("event #1 cpu/mem-loads,ldlat=30/: pmu cpu, pid workload, cpus 0-223, group leader #0 cpu/mem-loads-aux/"),
        "{out}"
    );
    let o = hrec(Some("vm"), &["mem", "record", "--", "true"]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.starts_with("hrec: error: memory sampling needs a hardware PMU"),
        "{err}"
    );
    // -t is the operation here; -e is refused with the way out.
    let o = hrec(
        Some("icelake"),
        &["mem", "record", "-e", "cycles", "--", "true"],
    );
    assert_eq!(o.status.code(), Some(2), "{:?}", text(&o));
}

#[test]
fn c2c_record_samples_loads_and_stores_with_cpu_and_physical_address() {
    let o = hrec(
        Some("sapphirerapids"),
        &[
            "c2c",
            "record",
            "--dry-run",
            "--json",
            "-l",
            "50",
            "--",
            "true",
        ],
    );
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let ev = v["events"].as_array().unwrap();
    let names: Vec<&str> = ev.iter().map(|e| e["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "cpu/mem-loads-aux/",
            "cpu/mem-loads,ldlat=50/",
            "cpu/mem-stores/P"
        ]
    );
    let want = MEM | sample::PHYS_ADDR | sample::CPU | sample::WEIGHT_STRUCT;
    for e in ev {
        let st = e["attr"]["sample_type"].as_u64().unwrap();
        assert_eq!(st & want, want, "{}", e["attr"]["sample_type_names"]);
    }
    // -t stays perf record's thread target here (perf c2c has no -t).
    let o = hrec(
        Some("icelake"),
        &["c2c", "record", "--dry-run", "-t", "1", "--", "true"],
    );
    assert!(o.status.success(), "{:?}", text(&o));
}
