//! perf.data files as `perf record` (6.1) writes them on an Alder Lake hybrid (cpuid
//! `GenuineIntel,6,151,2`, `cpu_core` type 4, `cpu_atom` type 10) for two TopDown groups
//! recorded side by side:
//!
//! ```text
//! perf record -e '{cpu_core/slots/,cpu_core/cycles/,cpu_core/topdown-retiring/,
//!                  cpu_core/topdown-bad-spec/,cpu_core/topdown-fe-bound/,
//!                  cpu_core/topdown-be-bound/}:S,
//!                 {cpu_atom/cycles/,cpu_atom/TOPDOWN_FE_BOUND.ALL/,
//!                  cpu_atom/TOPDOWN_BE_BOUND.ALL/,cpu_atom/TOPDOWN_RETIRING.ALL/}:S' ./td-work
//! ```
//!
//! and the same with the kernel's alias names on `cpu_atom` (`cpu_atom/topdown-retiring/`,
//! `topdown-bad-spec`, `topdown-fe-bound`, `topdown-be-bound`: events 0xc2, 0x73, 0x71, 0x74
//! on Alder Lake), built byte for byte with `support::perfdata` (header, ids, attrs with the PMU
//! types, EVENT_DESC, GROUP_DESC, PMU_MAPPINGS, CPUID, HYBRID_TOPOLOGY, ...) and
//! `support::encode` (COMM, MMAP2, samples with `PERF_SAMPLE_READ` group reads of the leader
//! and members with their ids). The samples are in two functions of a small ELF on both CPU
//! sets, one fd per CPU (inherit 0, as perf 6.1 opens `:S` groups), so each CPU's reads are
//! their own running totals.
//!
//! The expected shares are the formulas applied by hand to the counts chosen below: perf's
//! for the P-core (each level-1 count over the sum of the four, not over slots) and Intel's
//! Gracemont TMA for the E-core (slots = 5 x cycles, each count over the slots, Bad
//! Speculation the remainder; the `topdown-bad-spec` alias, 0x73, is not Gracemont's formula
//! and is ignored). The counts are chosen so that normalising by the counted sum would give
//! other numbers. The installed perf (6.1, which knows no E-core TopDown) must read the
//! files too. A file without the CPUID header gets no E-core TopDown, with the reason.

mod support;

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

use hrec::event::Attr;
use hrec::event::attr::{flag, read, sample, types};
use serde_json::Value;
use support::encode::{
    Encoder, Mmap2Fields, Mmap2File, ReadFields, ReadValue, SampleFields, SampleId,
};
use support::perfdata::{FINISHED_ROUND, PerfData, feature, tiny_elf};
use support::{hrec_in, text};

const CPU_CORE: u32 = 4;
const CPU_ATOM: u32 = 10;
const PID: u32 = 4242;
/// Alder Lake i9-12900K: P-cores (with SMT) on CPUs 0-15, E-cores on 16-23.
const CORE_CPUS: std::ops::Range<u32> = 0..16;
const ATOM_CPUS: std::ops::Range<u32> = 16..24;

/// How the E-core group's members are named.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Names {
    /// Intel's event names (`cpu_atom/TOPDOWN_FE_BOUND.ALL/`).
    Intel,
    /// The kernel's sysfs aliases (`cpu_atom/topdown-fe-bound/`), bad-spec included.
    Alias,
}

/// What a group member counts, for the per-sample deltas.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Counts {
    Slots,
    Cycles,
    Retiring,
    BadSpec,
    FeBound,
    BeBound,
}

/// One sample's deltas since the previous sample on its CPU.
#[derive(Debug, Clone, Copy)]
struct Deltas {
    slots: u64,
    cycles: u64,
    retiring: u64,
    bad_spec: u64,
    fe_bound: u64,
    be_bound: u64,
}

impl Deltas {
    fn of(&self, c: Counts) -> u64 {
        match c {
            Counts::Slots => self.slots,
            Counts::Cycles => self.cycles,
            Counts::Retiring => self.retiring,
            Counts::BadSpec => self.bad_spec,
            Counts::FeBound => self.fe_bound,
            Counts::BeBound => self.be_bound,
        }
    }
}

/// The P-core sample deltas (perf-metrics slots group).
fn pcore(slots: u64, cycles: u64, ret: u64, bad: u64, fe: u64, be: u64) -> Deltas {
    Deltas {
        slots,
        cycles,
        retiring: ret,
        bad_spec: bad,
        fe_bound: fe,
        be_bound: be,
    }
}

/// The E-core sample deltas: cycles, the three counted categories, and what the 0x73 alias
/// (`topdown-bad-spec`) counted.
fn ecore(cycles: u64, fe: u64, be: u64, ret: u64, bad_alias: u64) -> Deltas {
    Deltas {
        slots: 0,
        cycles,
        retiring: ret,
        bad_spec: bad_alias,
        fe_bound: fe,
        be_bound: be,
    }
}

/// Ids perf would have got from the kernel: one per event and CPU.
fn id(event: usize, cpu: u32) -> u64 {
    (event as u64 + 1) * 100 + u64::from(cpu)
}

/// The attr perf 6.1 opens for a member of a `:S` group in a workload recording with a
/// tracking dummy: every event's sample_type alike but the dummy's, hence IDENTIFIER.
fn group_attr(type_: u32, config: u64) -> Attr {
    let mut a = Attr::new(type_, config);
    a.size = support::perfdata::ATTR_SIZE;
    a.sample_type = sample::IDENTIFIER
        | sample::IP
        | sample::TID
        | sample::TIME
        | sample::CPU
        | sample::PERIOD
        | sample::READ;
    a.read_format = read::ID | read::GROUP | read::LOST;
    a.flags = flag::SAMPLE_ID_ALL | flag::EXCLUDE_GUEST;
    a
}

fn leader(mut a: Attr) -> Attr {
    a.flags |= flag::DISABLED | flag::ENABLE_ON_EXEC;
    a
}

fn sampler(mut a: Attr) -> Attr {
    a.flags |= flag::FREQ;
    a.sample_period_or_freq = 4000;
    a
}

/// The recording being built: the file, its groups' members (event index, what it counts),
/// and each CPU's running totals.
struct Hybrid {
    pd: PerfData,
    /// The data address the next samples carry (with ADDR in their sample type).
    addr: u64,
    core: Vec<(usize, Counts)>,
    atom: Vec<(usize, Counts)>,
    dummy: usize,
    totals: HashMap<(usize, u32), Vec<u64>>,
    time: u64,
    first: u64,
}

impl Hybrid {
    fn new(names: Names, cpuid: bool) -> Hybrid {
        let mut pd = PerfData::new();
        let core_ids = |ev: usize| CORE_CPUS.map(|c| id(ev, c)).collect::<Vec<u64>>();
        let atom_ids = |ev: usize| ATOM_CPUS.map(|c| id(ev, c)).collect::<Vec<u64>>();
        // {cpu_core/slots/,cpu_core/cycles/,cpu_core/topdown-*/}:S: slots leads and does not
        // sample (the kernel refuses a sampling slots leader of metrics); cycles, the first
        // member, is the read sampler (perf's evsel__read_sampler).
        let core_group: [(&str, u32, u64, Counts); 6] = [
            ("cpu_core/slots/", CPU_CORE, 0x400, Counts::Slots),
            (
                "cpu_core/cycles/",
                types::HARDWARE,
                u64::from(CPU_CORE) << 32,
                Counts::Cycles,
            ),
            (
                "cpu_core/topdown-retiring/",
                CPU_CORE,
                0x8000,
                Counts::Retiring,
            ),
            (
                "cpu_core/topdown-bad-spec/",
                CPU_CORE,
                0x8100,
                Counts::BadSpec,
            ),
            (
                "cpu_core/topdown-fe-bound/",
                CPU_CORE,
                0x8200,
                Counts::FeBound,
            ),
            (
                "cpu_core/topdown-be-bound/",
                CPU_CORE,
                0x8300,
                Counts::BeBound,
            ),
        ];
        let mut core = Vec::new();
        for (k, (name, t, config, c)) in core_group.into_iter().enumerate() {
            let mut a = group_attr(t, config);
            if k == 0 {
                a = leader(a);
            }
            if c == Counts::Cycles {
                a = sampler(a);
            }
            let i = pd.events.len();
            pd.event(a, name, core_ids(i));
            core.push((i, c));
        }
        pd.group(core[0].0, core.len() as u32);
        // {cpu_atom/cycles/,...}:S: cycles (legacy cycles with cpu_atom's type in
        // config[63:32]) leads and samples; the members count.
        let atom_group: Vec<(&str, u64, Counts)> = match names {
            Names::Intel => vec![
                ("cpu_atom/TOPDOWN_FE_BOUND.ALL/", 0x71, Counts::FeBound),
                ("cpu_atom/TOPDOWN_BE_BOUND.ALL/", 0x74, Counts::BeBound),
                ("cpu_atom/TOPDOWN_RETIRING.ALL/", 0xc2, Counts::Retiring),
            ],
            Names::Alias => vec![
                ("cpu_atom/topdown-retiring/", 0xc2, Counts::Retiring),
                ("cpu_atom/topdown-bad-spec/", 0x73, Counts::BadSpec),
                ("cpu_atom/topdown-fe-bound/", 0x71, Counts::FeBound),
                ("cpu_atom/topdown-be-bound/", 0x74, Counts::BeBound),
            ],
        };
        let lead = pd.events.len();
        let cycles = sampler(leader(group_attr(
            types::HARDWARE,
            u64::from(CPU_ATOM) << 32,
        )));
        pd.event(cycles, "cpu_atom/cycles/", atom_ids(lead));
        let mut atom = vec![(lead, Counts::Cycles)];
        for (name, config, c) in atom_group {
            let i = pd.events.len();
            pd.event(group_attr(CPU_ATOM, config), name, atom_ids(i));
            atom.push((i, c));
        }
        pd.group(lead, atom.len() as u32);
        // The tracking dummy perf adds on hybrid parts: it carries COMM, MMAP2, EXIT.
        let mut d = Attr::new(types::SOFTWARE, 9);
        d.size = support::perfdata::ATTR_SIZE;
        d.sample_type = sample::IDENTIFIER
            | sample::IP
            | sample::TID
            | sample::TIME
            | sample::CPU
            | sample::PERIOD;
        d.read_format = read::ID | read::LOST;
        d.sample_period_or_freq = 4000;
        d.flags = flag::DISABLED
            | flag::ENABLE_ON_EXEC
            | flag::FREQ
            | flag::MMAP
            | flag::COMM
            | flag::TASK
            | flag::MMAP2
            | flag::COMM_EXEC
            | flag::SAMPLE_ID_ALL
            | flag::EXCLUDE_KERNEL
            | flag::EXCLUDE_HV;
        let dummy = pd.events.len();
        pd.event(d, "dummy:u", (0..24).map(|c| id(dummy, c)).collect());

        pd.string_feature(feature::HOSTNAME, "adl");
        pd.string_feature(feature::OSRELEASE, "6.1.0-13-amd64");
        pd.string_feature(feature::VERSION, "6.1.55");
        pd.string_feature(feature::ARCH, "x86_64");
        pd.nrcpus(24, 24);
        pd.string_feature(feature::CPUDESC, "12th Gen Intel(R) Core(TM) i9-12900K");
        if cpuid {
            pd.string_feature(feature::CPUID, "GenuineIntel,6,151,2");
        }
        pd.total_mem(65_536_000);
        pd.cmdline(&["/usr/bin/perf", "record", "-e", "...", "./td-work"]);
        pd.pmu_mappings(&[
            (1, "software"),
            (2, "tracepoint"),
            (CPU_CORE, "cpu_core"),
            (5, "breakpoint"),
            (8, "kprobe"),
            (9, "uprobe"),
            (CPU_ATOM, "cpu_atom"),
            (11, "intel_pt"),
            (12, "cstate_core"),
            (13, "msr"),
            (14, "power"),
        ]);
        pd.hybrid_topology(&[("cpu_core", "0-15"), ("cpu_atom", "16-23")]);
        Hybrid {
            pd,
            addr: 0,
            core,
            atom,
            dummy,
            totals: HashMap::new(),
            time: 1_000_000,
            first: 0,
        }
    }

    /// The groups' samples carry a data address (`record -d`: ADDR in every member's
    /// sample type but the tracking dummy's).
    fn with_addresses(&mut self) {
        let dummy = self.dummy;
        for (i, e) in self.pd.events.iter_mut().enumerate() {
            if i != dummy {
                e.attr.sample_type |= sample::ADDR;
            }
        }
    }

    fn enc(&self, i: usize) -> Encoder {
        Encoder::new(self.pd.events[i].attr)
    }

    fn sid(&self, cpu: u32) -> SampleId {
        SampleId {
            pid: PID,
            tid: PID,
            time: self.time,
            id: id(self.dummy, cpu),
            cpu,
            ..SampleId::default()
        }
    }

    /// The exec of the workload: its COMM and the MMAP2 of `program`, on CPU 2.
    fn exec(&mut self, program: &Path, len: u64) {
        let enc = self.enc(self.dummy);
        let sid = self.sid(2);
        self.pd
            .records
            .extend(enc.comm(&sid, PID, PID, b"td-work", true));
        self.pd.records.extend(enc.mmap2(
            &sid,
            &Mmap2Fields {
                misc: 2,
                pid: PID,
                tid: PID,
                addr: 0x40_0000,
                len: len.next_multiple_of(0x1000),
                pgoff: 0,
                file: Mmap2File::Inode {
                    maj: 259,
                    min: 2,
                    ino: 1234,
                    ino_generation: 0,
                },
                prot: 5,
                flags: 2,
                filename: program.to_str().unwrap().as_bytes().to_vec(),
            },
        ));
        self.round();
    }

    fn round(&mut self) {
        self.pd
            .records
            .extend(support::encode::record(FINISHED_ROUND, 0, &[]));
    }

    /// A sample of the group `members` on `cpu` at `ip`, its read the CPU's running totals
    /// after adding `d`.
    fn sample(&mut self, members: &[(usize, Counts)], cpu: u32, ip: u64, d: Deltas) {
        self.time += 10_000;
        if self.first == 0 {
            self.first = self.time;
        }
        let (sampler, _) = *members.iter().find(|(_, c)| *c == Counts::Cycles).unwrap();
        let tot = self
            .totals
            .entry((sampler, cpu))
            .or_insert_with(|| vec![0; members.len()]);
        for (t, (_, c)) in tot.iter_mut().zip(members) {
            *t += d.of(*c);
        }
        let values = members
            .iter()
            .zip(tot.iter())
            .map(|(&(i, _), &value)| ReadValue {
                value,
                id: id(i, cpu),
                lost: 0,
            })
            .collect();
        let s = SampleFields {
            misc: 2, // PERF_RECORD_MISC_USER
            id: id(sampler, cpu),
            ip,
            pid: PID,
            tid: PID,
            time: self.time,
            cpu,
            addr: self.addr,
            period: d.cycles,
            read: ReadFields {
                values,
                ..ReadFields::default()
            },
            ..SampleFields::default()
        };
        let bytes = self.enc(sampler).sample(&s);
        self.pd.records.extend(bytes);
    }

    fn core_sample(&mut self, cpu: u32, ip: u64, d: Deltas) {
        let m = self.core.clone();
        self.sample(&m, cpu, ip, d);
    }

    fn atom_sample(&mut self, cpu: u32, ip: u64, d: Deltas) {
        let m = self.atom.clone();
        self.sample(&m, cpu, ip, d);
    }

    fn finish(&mut self, path: &Path) {
        self.round();
        self.time += 10_000;
        let enc = self.enc(self.dummy);
        let sid = self.sid(17);
        self.pd
            .records
            .extend(enc.exit(&sid, [PID, 1, PID, 1], self.time));
        self.round();
        self.pd.sample_time(self.first, self.time - 10_000);
        self.pd.write(path);
    }
}

/// The workload: `td_alpha` and `td_beta`, a few instructions each.
fn program(dir: &Path) -> (std::path::PathBuf, u64, u64, u64) {
    // push %rbp; mov %rsp,%rbp; xor %eax,%eax; 1: add $1,%eax; cmp $100,%eax; jne 1b; pop %rbp; ret
    let body: &[u8] = &[
        0x55, 0x48, 0x89, 0xe5, 0x31, 0xc0, 0x83, 0xc0, 0x01, 0x83, 0xf8, 0x64, 0x75, 0xf8, 0x5d,
        0xc3,
    ];
    let (elf, addrs) = tiny_elf(&[("td_alpha", body), ("td_beta", body)]);
    let path = dir.join("td-work");
    std::fs::write(&path, &elf).unwrap();
    (path, elf.len() as u64, addrs[0], addrs[1])
}

/// Writes `perf.data` in `dir`: the samples of the module docs.
fn record(dir: &Path, names: Names, cpuid: bool) {
    let (prog, len, alpha, beta) = program(dir);
    let mut r = Hybrid::new(names, cpuid);
    r.exec(&prog, len);
    // At the loop (offset 6), and at the entry.
    let (a, b) = (alpha + 6, beta);
    // P-core (cpu, ip, slots, cycles, retiring, bad-spec, fe-bound, be-bound), in slots. The
    // four add up to 100 slots less than the slots each time: perf divides by their sum.
    // E-core (cpu, ip, cycles, FE, BE, RET, what the 0x73 alias counted).
    r.core_sample(2, a, pcore(6100, 3000, 3000, 600, 1200, 1200));
    r.atom_sample(16, a, ecore(1000, 1000, 500, 2500, 300));
    r.atom_sample(17, a, ecore(600, 900, 300, 1200, 100));
    r.core_sample(3, a, pcore(4100, 2000, 1000, 400, 800, 1800));
    r.round();
    r.atom_sample(16, a, ecore(400, 100, 200, 1300, 100));
    r.atom_sample(17, b, ecore(800, 400, 2400, 800, 50));
    r.core_sample(2, b, pcore(5100, 2500, 500, 500, 1000, 3000));
    r.atom_sample(17, b, ecore(200, 100, 600, 200, 50));
    r.finish(&dir.join("perf.data"));
}

fn report(dir: &Path, extra: &[&str]) -> Value {
    let mut args = vec!["report", "-i", "perf.data", "--json", "--sort", "sym"];
    args.extend_from_slice(extra);
    let o = hrec_in(dir, &args);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

fn table<'a>(j: &'a Value, event: &str) -> &'a Value {
    j["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["event"] == event)
        .unwrap_or_else(|| panic!("no table {event}: {j:#}"))
}

fn row<'a>(t: &'a Value, sym: &str) -> &'a Value {
    t["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["key"]["sym"] == format!("[.] {sym}"))
        .unwrap_or_else(|| panic!("no row {sym}: {t:#}"))
}

/// Level 1 in perf's order: Retiring, Bad Speculation, Frontend Bound, Backend Bound.
fn level1(v: &Value) -> [f64; 4] {
    let m = &v["topdown"]["level1"];
    [
        "Retiring",
        "Bad Speculation",
        "Frontend Bound",
        "Backend Bound",
    ]
    .map(|k| m[k].as_f64().unwrap_or_else(|| panic!("no {k} in {v:#}")))
}

fn assert_l1(v: &Value, want: [f64; 4], what: &str) {
    let got = level1(v);
    assert!(
        got.iter().zip(want).all(|(g, w)| (g - w).abs() < 0.1),
        "{what}: {got:?}, want {want:?}"
    );
}

/// The installed perf reads the file: its header (cpuid, the groups, the PMU types) and every
/// sample of both groups.
fn perf_reads(dir: &Path) {
    let Some(perf) = support::perf() else {
        return;
    };
    let run = |args: &[&str]| {
        let o = Command::new(perf)
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap();
        let (out, err) = text(&o);
        assert!(o.status.success(), "perf {args:?}: {err}");
        out
    };
    let h = run(&["report", "-i", "perf.data", "--header-only"]);
    for want in [
        "# cpuid : GenuineIntel,6,151,2",
        "# hostname : adl",
        "cpu_atom = 10",
        "cpu_core = 4",
        "# group: {cpu_core/slots/,cpu_core/cycles/,cpu_core/topdown-retiring/,",
        "# group: {cpu_atom/cycles/,cpu_atom/",
    ] {
        assert!(h.contains(want), "perf's header lacks {want}:\n{h}");
    }
    // perf script: one line per sample of each sampler (and, as perf splits group reads,
    // one per member whose value changed); td_alpha and td_beta by name.
    let s = run(&["script", "-i", "perf.data", "-F", "event,cpu,ip,sym"]);
    let lines = |event: &str, sym: &str| {
        s.lines()
            .filter(|l| l.contains(event) && l.contains(sym))
            .count()
    };
    assert_eq!(lines("cpu_core/cycles/", "td_alpha"), 2, "{s}");
    assert_eq!(lines("cpu_core/cycles/", "td_beta"), 1, "{s}");
    assert_eq!(lines("cpu_atom/cycles/", "td_alpha"), 3, "{s}");
    assert_eq!(lines("cpu_atom/cycles/", "td_beta"), 2, "{s}");
}

#[test]
fn perf_written_hybrid_topdown_follows_each_cores_formula() {
    for names in [Names::Intel, Names::Alias] {
        let dir = tempfile::tempdir().unwrap();
        record(dir.path(), names, true);
        perf_reads(dir.path());
        let j = report(dir.path(), &["--td-level", "1"]);
        let core = table(&j, "cpu_core/cycles/");
        assert_eq!(core["pmu"], "cpu_core");
        assert_eq!(core["samples"], 3);
        // P-core, perf's rule. td_alpha: retiring 3000+1000, bad 600+400, fe 1200+800,
        // be 1200+1800, of their sum 10000 (not of the 10200 slots): 40, 10, 20, 30.
        assert_l1(
            row(core, "td_alpha"),
            [40.0, 10.0, 20.0, 30.0],
            "P td_alpha",
        );
        // td_beta: 500, 500, 1000, 3000 of 5000.
        assert_l1(row(core, "td_beta"), [10.0, 10.0, 20.0, 60.0], "P td_beta");
        assert_eq!(row(core, "td_alpha")["topdown"]["slots"], 10000);

        let atom = table(&j, "cpu_atom/cycles/");
        assert_eq!(atom["pmu"], "cpu_atom");
        assert_eq!(atom["samples"], 5);
        // Gracemont (width 5). td_alpha: cycles 1000+600+400 = 2000, slots 10000;
        // RET 2500+1200+1300 = 5000, FE 1000+900+100 = 2000, BE 500+300+200 = 1000,
        // Bad Speculation = 10000 - 8000 = 2000: 50, 20, 20, 10. (Normalised by the sum of
        // the three counted: 62.5, -, 25, 12.5; of the four with the 0x73 alias' 500:
        // 58.8, 5.9, 23.5, 11.8.)
        assert_l1(
            row(atom, "td_alpha"),
            [50.0, 20.0, 20.0, 10.0],
            "E td_alpha",
        );
        assert_eq!(row(atom, "td_alpha")["topdown"]["slots"], 10000);
        // td_beta: cycles 1000, slots 5000; RET 1000, FE 500, BE 3000, Bad 500: 20, 10, 10,
        // 60.
        assert_l1(row(atom, "td_beta"), [20.0, 10.0, 10.0, 60.0], "E td_beta");
        // The whole table: slots 15000; RET 6000, Bad 2500, FE 2500, BE 4000.
        assert_l1(
            atom,
            [40.0, 100.0 / 6.0, 100.0 / 6.0, 80.0 / 3.0],
            "E total",
        );
        assert!(atom.get("no_topdown").is_none(), "{atom:#}");
    }
}

#[test]
fn without_cpuid_no_ecore_topdown_and_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    record(dir.path(), Names::Alias, false);
    let j = report(dir.path(), &["--td-level", "1"]);
    // The P-core group is known by its perf-metrics names: its numbers stand.
    let core = table(&j, "cpu_core/cycles/");
    assert_l1(
        row(core, "td_alpha"),
        [40.0, 10.0, 20.0, 30.0],
        "P td_alpha",
    );
    // Which E-core cpu_atom is, and so its events and formula, only the cpuid tells: no
    // numbers (not perf's P-core rule applied to the aliases' names), and why.
    let atom = table(&j, "cpu_atom/cycles/");
    assert_eq!(atom["samples"], 5);
    assert!(atom["topdown"].is_null(), "{atom:#}");
    assert!(row(atom, "td_alpha").get("topdown").is_none(), "{atom:#}");
    let why = atom["no_topdown"].as_str().unwrap_or_default();
    assert!(why.contains("no cpuid"), "{atom:#}");
    assert!(core.get("no_topdown").is_none(), "{core:#}");
    // The text report says it under the table's header.
    let o = hrec_in(dir.path(), &["report", "-i", "perf.data", "--sort", "sym"]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(out.contains(&format!("# TopDown: none, {why}")), "{out}");
}

/// TopDown per data type and field: a `record -d` of the P-core TopDown group on a program
/// with known structs, its samples at the instructions that store `n->hot` and load
/// `n->warm` (typed by the pointer register at each): each `--sort typeoff` row has the level
/// 1 of its own samples' group deltas.
#[test]
fn topdown_per_data_type_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let Some(prog) = support::typed::build(d) else {
        return;
    };
    let bytes = std::fs::read(&prog).unwrap();
    let hot = support::typed::insn_at(&bytes, "fill", Some(0x40));
    let warm = support::typed::insn_at(&bytes, "warm_sum", Some(0x48));
    let mut r = Hybrid::new(Names::Intel, true);
    r.with_addresses();
    r.exec(&prog, bytes.len() as u64);
    let heap = 0x7f00_0000_0000u64;
    r.addr = heap + 0x40;
    r.core_sample(2, hot, pcore(6100, 3000, 3000, 600, 1200, 1200));
    r.addr = heap + 0x1040;
    r.core_sample(3, hot, pcore(4100, 2000, 1000, 400, 800, 1800));
    r.addr = heap + 0x48;
    r.core_sample(2, warm, pcore(5100, 2500, 500, 500, 1000, 3000));
    r.finish(&d.join("perf.data"));
    let o = hrec_in(
        d,
        &[
            "report",
            "-i",
            "perf.data",
            "--json",
            "--sort",
            "typeoff",
            "--td-level",
            "1",
        ],
    );
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let j: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    let core = table(&j, "cpu_core/cycles/");
    let field = |key: &str| -> &Value {
        core["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["key"]["typeoff"] == key)
            .unwrap_or_else(|| panic!("no row {key}: {core:#}"))
    };
    // `hot`: retiring 3000+1000, bad 600+400, fe 1200+800, be 1200+1800 of 10000.
    assert_l1(
        field("struct node +0x40 (hot)"),
        [40.0, 10.0, 20.0, 30.0],
        "hot",
    );
    assert_eq!(field("struct node +0x40 (hot)")["samples"], 2);
    // `warm`: 500, 500, 1000, 3000 of 5000.
    assert_l1(
        field("struct node +0x48 (warm)"),
        [10.0, 10.0, 20.0, 60.0],
        "warm",
    );
}
