//! Hardware-only values through the real file writer and reader: the plan hrec makes on a
//! Sapphire Rapids fixture (`{slots, cycles:P, topdown-*}:S` with `-W`), with samples built
//! byte for byte in the kernel's layout carrying a slots-led group read and a WEIGHT_STRUCT
//! retire latency, written by `data::Writer` and read back by `hrec info` and `hrec script`.

mod support;

use hrec::data::{EventId, EventMeta, Meta, PmuMeta, ThreadCount, Trailer, Writer};
use hrec::event::plan::RecordOptions;
use hrec::event::plan::Role;
use support::encode::{Encoder, ReadFields, ReadValue, SampleFields, SampleId};
use support::{hrec_in, text};

#[test]
fn topdown_group_reads_and_retire_latency_survive_the_file() {
    let opts = RecordOptions {
        weight: true,
        ..RecordOptions::default()
    };
    let plan = support::plan("sapphirerapids", &opts);
    let names: Vec<&str> = plan.events.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(&names[..3], ["slots", "cycles:P", "topdown-retiring"]);
    let sampler = plan
        .events
        .iter()
        .position(|e| e.role == Role::Sampler)
        .unwrap();
    // One fd per event on CPU 0; ids 1000 + index.
    let id = |i: usize| 1000 + i as u64;
    let meta = Meta {
        hrec_version: "test".into(),
        target: "workload".into(),
        pmus: vec![PmuMeta {
            name: "cpu".into(),
            type_: 4,
            cpus: None,
        }],
        events: plan
            .events
            .iter()
            .map(|e| EventMeta {
                name: e.name.clone(),
                pmu: e.pmu.clone(),
                attr: e.attr,
                leader: e.leader,
                role: e.role,
                ids: vec![EventId {
                    id: id(e.index),
                    cpu: 0,
                    tid: 500,
                }],
                trace_format: None,
            })
            .collect(),
        ..Meta::default()
    };

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("spr.hrec");
    let mut w = Writer::create(&path, &meta).unwrap();
    let attr = plan.events[sampler].attr;
    let enc = Encoder::new(attr);
    let mut records = enc.comm(
        &SampleId {
            pid: 500,
            tid: 500,
            time: 1,
            id: id(0),
            ..SampleId::default()
        },
        500,
        500,
        b"spr-app",
        true,
    );
    // Three samples with growing cumulative group counts and retire latencies 10, 20, 300.
    let lats = [10u64, 20, 300];
    for (k, lat) in lats.iter().enumerate() {
        let k = k as u64 + 1;
        let values = plan
            .events
            .iter()
            .map(|e| ReadValue {
                value: k * 1000 * (e.index as u64 + 1),
                id: id(e.index),
                lost: 0,
            })
            .collect();
        records.extend(enc.sample(&SampleFields {
            misc: 2 | (1 << 14), // user, exact ip
            id: id(sampler),
            ip: 0x40_1000 + k,
            pid: 500,
            tid: 500,
            time: 1_000_000_000 * k,
            period: 100_003,
            read: ReadFields {
                values,
                ..ReadFields::default()
            },
            weight: (lat << 48) | (3 << 32) | 7,
            ..SampleFields::default()
        }));
    }
    w.write_records(&records, 0).unwrap();
    w.finish(Trailer {
        samples: 3,
        samples_per_event: plan
            .events
            .iter()
            .map(|e| if e.index == sampler { 3 } else { 0 })
            .collect(),
        threads: vec![ThreadCount {
            pid: 500,
            tid: 500,
            samples: 3,
        }],
        ..Trailer::default()
    })
    .unwrap();

    let o = hrec_in(
        dir.path(),
        &[
            "script",
            "-i",
            "spr.hrec",
            "-F",
            "+pid,+weight,+ins_lat,+retire_lat,+read",
        ],
    );
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    // A sample that reads its group is a line per member, as perf script prints it (each
    // with what its counter added as the period): the sampler's lines are the samples'.
    assert_eq!(out.lines().count(), 3 * plan.events.len(), "{out}");
    let lines: Vec<&str> = out.lines().filter(|l| l.contains(" cycles:P: ")).collect();
    assert_eq!(lines.len(), 3, "{out}");
    for (k, (line, lat)) in lines.iter().zip(lats).enumerate() {
        let k = k as u64 + 1;
        assert!(line.trim_start().starts_with("spr-app"), "{line}");
        assert!(line.contains("500/500"), "{line}");
        assert!(line.contains(&format!("{k}.000000:")), "{line}");
        assert!(line.contains("cycles:P:"), "{line}");
        assert!(
            line.contains(&format!("{:>16}{:>16}{lat:>16}", 7, 3)),
            "{line}"
        );
        // The group read, leader first, every member named by its id.
        let group: Vec<String> = plan
            .events
            .iter()
            .map(|e| format!("{} {}", e.name, k * 1000 * (e.index as u64 + 1)))
            .collect();
        assert!(
            line.contains(&format!("{{{}}}", group.join(" "))),
            "{line}\nwant {{{}}}",
            group.join(" ")
        );
    }

    let o = hrec_in(dir.path(), &["info", "-i", "spr.hrec"]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(out.contains("# samples : 3 (cycles:P 3)"), "{out}");
    assert!(
        out.contains("# event 0 : name = slots, pmu = cpu, role = counted"),
        "{out}"
    );
    let sampler_line = out
        .lines()
        .find(|l| l.starts_with(&format!("# event {sampler} : name = cycles:P")))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(sampler_line.contains("WEIGHT_STRUCT"), "{sampler_line}");
    assert!(
        sampler_line.contains("read_format = ID|GROUP|LOST"),
        "{sampler_line}"
    );
}
