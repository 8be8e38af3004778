//! Data types of data addresses (`report --sort type,typeoff`) on a real recording:
//! `record -e page-faults -d` of a C program whose faults come from one member of a struct
//! array in `.data` and another in `.bss`, named from the program's DWARF
//! (`hrec::symbol::datatype`); and of one whose faults come from a struct member written
//! through a pointer held in a register, typed by the faulting instruction.

mod support;

use std::path::Path;

use support::typed::gcc;
use support::{hrec_in, text};

/// 1024 page-sized records in `.data` (initialised, so file-backed): the first write to each
/// page is a copy-on-write fault at the address of `recs[i].hot`. And 256 in `.bss`, past the
/// file's bytes, in the anonymous mapping that continues the file's data mapping: each first
/// write faults at `zero[i].cold`.
const TYPES_C: &str = r#"
#define PG 4096
struct page_rec { char head[64]; long hot; char rest[PG - 72]; };
struct zero_rec { char head[128]; int cold; char rest[PG - 132]; };
struct page_rec recs[1024] __attribute__((aligned(4096))) = { [0].hot = 1 };
struct zero_rec zero[256] __attribute__((aligned(4096)));
int main(void)
{
    long s = 0;
    for (int i = 0; i < 1024; i++)
        recs[i].hot = i;
    for (int i = 0; i < 256; i++)
        zero[i].cold = i;
    for (int i = 0; i < 1024; i++)
        s += recs[i].hot + zero[i % 256].cold;
    return s == 7;
}
"#;

/// 1024 page-sized nodes in anonymous memory (transparent huge pages off, so each page
/// faults alone), each first written at `n->hot` through the pointer `n`, which the loop keeps
/// in a register.
const HEAP_C: &str = r#"
#include <sys/mman.h>
#define PG 4096
struct node { char head[64]; long hot; int warm; char rest[PG - 76]; };
__attribute__((noinline)) void fill(struct node *n, long count)
{
    for (long i = 0; i < count; i++) {
        n->hot = i;
        n++;
    }
}
int main(void)
{
    long count = 1024;
    struct node *n = mmap(0, count * PG, PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (n == MAP_FAILED)
        return 1;
    madvise(n, count * PG, MADV_NOHUGEPAGE);
    fill(n, count);
    return 0;
}
"#;

/// 256 page-sized `big_t`s per function, each first written at one member through a
/// register-held pointer: a typedef'd struct member, an anonymous union, an anonymous struct,
/// an array and a pointer, half of them through `big_t *`, half through `struct big *`.
const NAMES_C: &str = r#"
#include <sys/mman.h>
#define PG 4096
typedef struct inner { short a; unsigned char b[6]; } inner_t;
struct big {
    char head[64];
    inner_t in;
    union { long l; double d; } u;
    struct { int x, y; } pt;
    const char *name;
    unsigned long long arr[4];
    char rest[PG - 0x80];
};
typedef struct big big_t;
__attribute__((noinline)) void touch_in(big_t *p, long n) { for (long i = 0; i < n; i++) { p->in.a = i; p++; } }
__attribute__((noinline)) void touch_u(big_t *p, long n) { for (long i = 0; i < n; i++) { p->u.l = i; p++; } }
__attribute__((noinline)) void touch_pt(struct big *p, long n) { for (long i = 0; i < n; i++) { p->pt.y = i; p++; } }
__attribute__((noinline)) void touch_arr(big_t *p, long n) { for (long i = 0; i < n; i++) { p->arr[2] = i; p++; } }
__attribute__((noinline)) void touch_name(struct big *p, long n) { for (long i = 0; i < n; i++) { p->name = "x"; p++; } }
int main(void)
{
    long count = 256;
    big_t *m = mmap(0, 5 * count * PG, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return 1;
    madvise(m, 5 * count * PG, MADV_NOHUGEPAGE);
    touch_in(m, count);
    touch_u(m + count, count);
    touch_pt(m + 2 * count, count);
    touch_arr(m + 3 * count, count);
    touch_name(m + 4 * count, count);
    return 0;
}
"#;

fn build(dir: &Path, name: &str, debug: &str) -> bool {
    gcc(dir, TYPES_C, name, &["-O1", debug, "-no-pie"])
}

/// `record -e page-faults -c 1 -d -o FILE -- PROG` in `dir`: every fault with its address.
fn record_faults(dir: &Path, file: &str, prog: &str) {
    record_faults_by(None, dir, file, prog);
}

/// [`record_faults`] by hrec, or by `perf` when given.
fn record_faults_by(perf: Option<&str>, dir: &Path, file: &str, prog: &str) {
    let o = support::record_page_faults(perf, dir, file, prog);
    assert!(o.status.success(), "{perf:?} record: {}", text(&o).1);
}

/// `(samples, dso, rest of the row)` of `report --stdio --sort dso_daddr,KEY`.
fn rows(dir: &Path, file: &str, key: &str) -> Vec<(u64, String, String)> {
    let keys = format!("dso_daddr,{key}");
    let o = hrec_in(dir, &["report", "--stdio", "--sort", &keys, "-i", file]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    out.lines()
        .filter(|l| !l.starts_with('#') && l.contains('%'))
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let samples = f[1].parse().unwrap_or_else(|_| panic!("{l}"));
            (samples, f[2].to_string(), f[3..].join(" "))
        })
        .collect()
}

#[test]
fn page_faults_on_struct_members_by_type_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    if !build(d, "types", "-g") || !build(d, "nodebug", "-g0") {
        return;
    }
    for (prog, file) in [("./types", "t.data"), ("./nodebug", "n.data")] {
        record_faults(d, file, prog);
    }
    // Of the faults in the program's own mappings, those on the array (all but a few made
    // by the loader and libc) are `hot` of `struct page_rec`.
    let own = |rows: &[(u64, String, String)], dso: &str| -> (u64, u64) {
        let mine: Vec<_> = rows.iter().filter(|r| r.1 == dso).collect();
        let hot = mine
            .iter()
            .filter(|r| r.2 == "struct page_rec +0x40 (hot)")
            .map(|r| r.0)
            .sum();
        (hot, mine.iter().map(|r| r.0).sum())
    };
    let typeoff = rows(d, "t.data", "typeoff");
    let (hot, all) = own(&typeoff, "types");
    assert!(
        hot >= 1024 && hot * 100 >= all * 95,
        "{hot} of {all}: {typeoff:?}"
    );
    // The `.bss` array: anonymous memory as perf names it, typed by the file it continues.
    let zero: u64 = typeoff
        .iter()
        .filter(|r| r.1 == "anon" && r.2 == "struct zero_rec +0x80 (cold)")
        .map(|r| r.0)
        .sum();
    // (256 faults, one per page; fewer where transparent huge pages map several at once.)
    assert!(zero >= 1, "{typeoff:?}");
    assert!(
        typeoff
            .iter()
            .filter(|r| r.2.starts_with("struct zero_rec"))
            .all(|r| r.1 == "anon" && r.2 == "struct zero_rec +0x80 (cold)"),
        "{typeoff:?}"
    );
    let types = rows(d, "t.data", "type");
    assert!(
        types
            .iter()
            .any(|r| r.1 == "types" && r.2 == "struct page_rec" && r.0 >= 1024),
        "{types:?}"
    );
    // Without the program's DWARF none of its own accesses is typed: `(unknown)`, as perf
    // names it. (The loader's accesses to the program's tables are, by the loader's DWARF.)
    let bare = rows(d, "n.data", "typeoff");
    let (hot, all) = own(&bare, "nodebug");
    assert_eq!(hot, 0, "{bare:?}");
    assert!(all >= 1024, "{bare:?}");
    let unknown: u64 = bare
        .iter()
        .filter(|r| r.1 == "nodebug" && r.2 == "(unknown)")
        .map(|r| r.0)
        .sum();
    assert!(unknown >= 1024, "{bare:?}");
    assert!(
        !bare
            .iter()
            .any(|r| r.2.contains("page_rec") || r.2.contains("zero_rec")),
        "{bare:?}"
    );
}

/// `record -e page-faults -d` of faults through a register-held pointer: at -O1 and -O2 the
/// faulting `mov %rax,0x40(%rdi)` is typed by the parameter `n` that DWARF's location list
/// puts in `%rdi` there; at -O0 the faulting `mov %rdx,0x40(%rax)` by the load of `n` from
/// its stack slot into `%rax` just before it (perf 6.9+'s instruction tracking). Either way
/// ≥ 95% of the anonymous memory's faults are `struct node +0x40 (hot)` (the rest are the
/// loader's and libc's own).
#[test]
fn page_faults_through_a_pointer_by_type_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for opt in ["-O0", "-O1", "-O2"] {
        let name = format!("heap{opt}");
        if !gcc(d, HEAP_C, &name, &[opt, "-g"]) {
            return;
        }
        let file = format!("{name}.data");
        record_faults(d, &file, &format!("./{name}"));
        let typeoff = rows(d, &file, "typeoff");
        let anon: Vec<_> = typeoff.iter().filter(|r| r.1 == "anon").collect();
        let hot: u64 = anon
            .iter()
            .filter(|r| r.2 == "struct node +0x40 (hot)")
            .map(|r| r.0)
            .sum();
        let all: u64 = anon.iter().map(|r| r.0).sum();
        assert!(
            hot >= 1024 && hot * 100 >= all * 95,
            "{opt}: {hot} of {all}: {typeoff:?}"
        );
        // The pprof export labels the same samples with the same type and field.
        let pb_path = d.join(format!("{name}.pb.gz"));
        let o = hrec_in(
            d,
            &[
                "export",
                "--format",
                "pprof",
                "-i",
                &file,
                "-o",
                pb_path.to_str().unwrap(),
            ],
        );
        assert!(o.status.success(), "{}", text(&o).1);
        let pb = support::read_pprof(&pb_path);
        let label = |s: &hrec::output::pprof::proto::Sample, key: &str| -> String {
            s.label
                .iter()
                .find(|l| pb.string_table[l.key as usize] == key)
                .map_or(String::new(), |l| pb.string_table[l.str as usize].clone())
        };
        let samples = pb
            .sample_type
            .iter()
            .position(|v| pb.string_table[v.r#type as usize] == "samples")
            .unwrap();
        let labelled: i64 = pb
            .sample
            .iter()
            .filter(|s| {
                label(s, "data_object") == "anon"
                    && label(s, "data_typeoff") == "struct node +0x40 (hot)"
            })
            .map(|s| s.value[samples])
            .sum();
        assert_eq!(labelled, hot as i64, "{opt}: pprof labels");
    }
}

/// A hand-built `perf mem record` recording (Granite Rapids, whose PEBS fills the retire
/// latency) of loads and stores with known addresses, load latencies and retire latencies in
/// a program with known structs: `--sort typeoff` and `type` give exactly the rows the
/// accesses make (typed through the pointer registers at the sampled instructions, and by
/// address for the global array), each with its retire-latency statistics; `--mem-mode`
/// weighs them by load latency; `annotate --data-type` lists each struct's members with their
/// share and mean load and retire latency; a flame graph weighs by load latency; and `diff`
/// compares two recordings per field.
#[test]
fn hand_built_accesses_by_type_field_and_latency() {
    use support::memdata::{ANON, Access, Events, GNR, Program, l1_load, write_recording};
    use support::typed::{insn_at, segments};
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let Some(hand) = support::typed::build(d) else {
        return;
    };
    let bytes = std::fs::read(&hand).unwrap();
    let (code, data) = segments(&bytes);
    let recs = insn_at(&bytes, "recs", None);
    let program = Program {
        path: d.join("hand"),
        text: code,
        data,
        ips: vec![
            insn_at(&bytes, "fill", Some(0x40)),
            insn_at(&bytes, "warm_sum", Some(0x48)),
            insn_at(&bytes, "rec_sum", None),
            insn_at(&bytes, "main", None),
        ],
    };
    let l1 = l1_load();
    // WEIGHT_STRUCT: the load latency in bits 31:0, the retire latency in bits 63:48.
    let access = |func: usize, addr: u64, lat: u64, retire: u64| Access {
        func,
        addr,
        src: l1,
        weight: lat | retire << 48,
        period: 1,
        event: 0,
        tid: 0,
        cpu: 1,
    };
    let pg = 4096;
    let mut acc = Vec::new();
    for (k, w) in [100, 200, 300].into_iter().enumerate() {
        acc.push(access(0, ANON + k as u64 * pg + 0x40, w, 20));
    }
    for (k, (w, r)) in [(40, 40), (60, 60)].into_iter().enumerate() {
        acc.push(access(1, ANON + k as u64 * pg + 0x48, w, r));
    }
    for k in 0..4 {
        acc.push(access(2, recs + k * pg + 0x40, 10, 10));
    }
    acc.push(access(3, ANON + 0x10, 7, 5));
    // Granite Rapids: its PEBS fills the retire latency.
    let mut events = Events::mem_loads();
    events.cpuid = GNR;
    write_recording(d, &events, &program, &acc);
    let table = |args: &[&str]| -> Vec<(u64, String)> {
        let mut all = vec!["report", "--stdio", "-i", "perf.data"];
        all.extend_from_slice(args);
        let o = hrec_in(d, &all);
        let (out, err) = text(&o);
        assert!(o.status.success(), "{err}");
        out.lines()
            .filter(|l| !l.starts_with('#') && l.contains('%'))
            .map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                (f[1].parse().unwrap(), f[2..].join(" "))
            })
            .collect()
    };
    // Each row with its retire-latency columns (samples with one, mean, median, p90, p99,
    // max, total): the retire latency per field and per type.
    let mut got = table(&["--sort", "typeoff"]);
    got.sort();
    let row = |n: u64, cells: &str| (n, cells.to_string());
    let mut want = vec![
        row(1, "1 5.0 5 5 5 5 5 (unknown)"),
        row(2, "2 50.0 40 60 60 60 100 struct node +0x48 (warm)"),
        row(3, "3 20.0 20 20 20 20 60 struct node +0x40 (hot)"),
        row(4, "4 10.0 10 10 10 10 40 struct page_rec +0x40 (hot)"),
    ];
    assert_eq!(got, want);
    got = table(&["--sort", "type"]);
    got.sort();
    want = vec![
        row(1, "1 5.0 5 5 5 5 5 (unknown)"),
        row(4, "4 10.0 10 10 10 10 40 struct page_rec"),
        row(5, "5 32.0 20 60 60 60 160 struct node"),
    ];
    assert_eq!(got, want);
    // perf's memory mode: each sample stands for its latency.
    let o = hrec_in(
        d,
        &[
            "report",
            "--stdio",
            "--mem-mode",
            "--sort",
            "typeoff",
            "-i",
            "perf.data",
        ],
    );
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let share = |row: &str| -> String {
        out.lines()
            .find(|l| l.ends_with(row))
            .and_then(|l| l.split_whitespace().next())
            .unwrap_or_else(|| panic!("{row}: {out}"))
            .to_string()
    };
    // 600, 100, 40 and 7 of 747.
    assert_eq!(share("struct node +0x40 (hot)"), "80.32%");
    assert_eq!(share("struct node +0x48 (warm)"), "13.39%");
    assert_eq!(share("struct page_rec +0x40 (hot)"), "5.35%");
    // annotate --data-type: perf's layout, with the mean load and retire latency of each
    // member.
    let o = hrec_in(d, &["annotate", "--data-type=node", "-i", "perf.data"]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let path = d.join("hand");
    let want = format!(
        "Annotate type: 'struct node' in {} (5 samples):\n{}\n \
         Percent  Latency   RetLat     offset       size  field\n  \
         100.00    140.0     32.0          0     0x1000  struct node\t {{\n    \
         0.00        -        -          0       0x40      char[]\thead;\n   \
         60.00    200.0     20.0       0x40        0x8      long int\thot;\n   \
         40.00     50.0     50.0       0x48        0x4      int\twarm;\n    \
         0.00        -        -       0x4c      0xfb4      char[]\trest;\n\
         {:50}}};\n\n",
        path.display(),
        "=".repeat(76),
        ""
    );
    assert_eq!(out, want);
    // A flame graph weighed by load latency: each function's latencies summed (under the
    // process's name and the object).
    let o = hrec_in(
        d,
        &[
            "flamegraph",
            "--folded",
            "--weight",
            "load-latency",
            "-o",
            "-",
            "-i",
            "perf.data",
        ],
    );
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let mut stacks: Vec<&str> = out.lines().collect();
    stacks.sort_unstable();
    assert_eq!(
        stacks,
        [
            "memwork;hand;fill 600",
            "memwork;hand;main 7",
            "memwork;hand;rec_sum 40",
            "memwork;hand;warm_sum 100"
        ]
    );
    // diff by data type and field: a second recording with one access to each field of
    // `struct node` against this one.
    std::fs::rename(d.join("perf.data"), d.join("old.data")).unwrap();
    let again = [
        access(0, ANON + 0x40, 100, 20),
        access(1, ANON + 0x48, 40, 40),
    ];
    write_recording(d, &events, &program, &again);
    let o = hrec_in(d, &["diff", "-s", "typeoff", "old.data", "perf.data"]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let row = |key: &str| -> Vec<String> {
        let l = out
            .lines()
            .find(|l| l.trim_end().ends_with(key))
            .unwrap_or_else(|| panic!("{key}: {out}"));
        l.split_whitespace().take(2).map(str::to_string).collect()
    };
    // Baseline share and the change: 3 of 10 to 1 of 2, 2 of 10 to 1 of 2; 4 of 10 to none,
    // which perf's diff shows without a delta.
    assert_eq!(row("struct node +0x40 (hot)"), ["30.00%", "+20.00%"]);
    assert_eq!(row("struct node +0x48 (warm)"), ["20.00%", "+30.00%"]);
    assert_eq!(row("struct page_rec +0x40 (hot)"), ["40.00%", "struct"]);
}

/// perf 6.8+ types data (`annotate --data-type`); Debian's perf here is 6.1. When
/// `scripts/fetch-perf-6.12.sh` has unpacked bookworm-backports' perf 6.12 into
/// `target/perf-6.12/` (scripts/test does, where apt can reach Debian), this is it.
fn perf_with_data_types() -> Option<std::path::PathBuf> {
    let perf = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/perf-6.12/perf");
    let version = std::process::Command::new(&perf)
        .arg("--version")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned());
    match version {
        Some(v) if v.starts_with("perf version 6.12.") => Some(perf),
        _ => {
            eprintln!(
                "skipped: no perf 6.12 in target/perf-6.12 (scripts/fetch-perf-6.12.sh unpacks it), so there is no perf with data types to compare with"
            );
            None
        }
    }
}

/// `annotate --stdio --data-type[=TYPE]` of perf 6.12 and of hrec on the same perf.data (perf
/// 6.1's `record -e page-faults -c 1 -d` of programs whose faults come from struct members
/// written through pointers, at -O1 and -O2), the accesses of the program's own code
/// (`--dsos`): byte for byte the same types, member lists (typedef'd, anonymous, array and
/// pointer members), sizes and percentages. (perf 6.12 types nothing at -O0 here, nor the
/// `-no-pie` globals of `TYPES_C`, which hrec types by their address; its `report --sort
/// type` crashes on these files, so only `annotate` is compared.)
#[test]
fn annotate_data_type_equals_perf_6_12() {
    let Some(perf612) = perf_with_data_types() else {
        return;
    };
    let Some(perf) = support::perf() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let cases: [(&str, &str, &[&str]); 4] = [
        (HEAP_C, "-O1", &["", "node"]),
        (HEAP_C, "-O2", &[""]),
        (NAMES_C, "-O1", &["", "big_t"]),
        (NAMES_C, "-O2", &["", "struct big"]),
    ];
    for (k, (source, opt, types)) in cases.into_iter().enumerate() {
        let name = format!("prog{k}{opt}");
        if !gcc(d, source, &name, &[opt, "-g"]) {
            return;
        }
        let file = format!("{name}.data");
        record_faults_by(Some(perf), d, &file, &format!("./{name}"));
        let path = d.join(&name);
        for ty in types {
            let flag = if ty.is_empty() {
                "--data-type".to_string()
            } else {
                format!("--data-type={ty}")
            };
            let p = std::process::Command::new(&perf612)
                .args(["annotate", "--stdio", &flag, "-i", &file, "--dsos"])
                .arg(&path)
                .current_dir(d)
                .output()
                .unwrap();
            let (want, err) = text(&p);
            assert!(p.status.success(), "perf 6.12 annotate {flag}: {err}");
            assert!(
                want.contains("Annotate type:"),
                "{opt} {flag}: perf 6.12 typed nothing: {want}{err}"
            );
            let h = hrec_in(
                d,
                &["annotate", "--stdio", &flag, "-i", &file, "--dsos", &name],
            );
            let (got, err) = text(&h);
            assert!(h.status.success(), "{err}");
            assert_eq!(got, want, "{name} {flag}");
        }
    }
}
