//! Data types of data addresses (`report --sort type,typeoff`) on a real recording:
//! `record -e page-faults -d` of a C program whose faults come from one member of a struct
//! array in `.data` and another in `.bss`, named from the program's DWARF
//! (`hrec::symbol::datatype`); and of one whose faults come from a struct member written
//! through a pointer held in a register, typed by the faulting instruction.

mod support;

use std::path::Path;
use std::process::Command;

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

fn build(dir: &Path, name: &str, debug: &str) -> bool {
    build_c(dir, TYPES_C, name, &["-O1", debug, "-no-pie"])
}

fn build_c(dir: &Path, source: &str, name: &str, args: &[&str]) -> bool {
    let src = format!("{name}.c");
    std::fs::write(dir.join(&src), source).unwrap();
    let ok = Command::new("gcc")
        .args(args)
        .args(["-o", name, &src])
        .current_dir(dir)
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        eprintln!("skipped: gcc could not build the workload");
    }
    ok
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
        let o = hrec_in(
            d,
            &[
                "record",
                "-q",
                "-e",
                "page-faults",
                "-c",
                "1",
                "-d",
                "-o",
                file,
                "--",
                prog,
            ],
        );
        assert!(o.status.success(), "{}", text(&o).1);
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
/// puts in `%rdi` there, so ≥ 95% of the anonymous memory's faults are `struct node +0x40
/// (hot)` (the rest are the loader's and libc's own).
#[test]
fn page_faults_through_a_pointer_by_type_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for opt in ["-O1", "-O2"] {
        let name = format!("heap{opt}");
        if !build_c(d, HEAP_C, &name, &[opt, "-g"]) {
            return;
        }
        let file = format!("{name}.data");
        let o = hrec_in(
            d,
            &[
                "record",
                "-q",
                "-e",
                "page-faults",
                "-c",
                "1",
                "-d",
                "-o",
                &file,
                "--",
                &format!("./{name}"),
            ],
        );
        assert!(o.status.success(), "{}", text(&o).1);
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
    }
}
