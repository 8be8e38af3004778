//! A C program with known structs for the data-type tests (`tests/data_types.rs`,
//! `tests/perfdata_topdown.rs`): built with gcc, the addresses of its accessing instructions
//! and its `PT_LOAD` mappings found in the binary, for hand-built recordings of it.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A program with a struct reached through pointers (`fill` stores `n->hot`, `warm_sum` loads
/// `n->warm`) and a global struct array read by address (`rec_sum`), and `main`, which
/// accesses no memory.
pub const HAND_C: &str = r#"
#define PG 4096
struct node { char head[64]; long hot; int warm; char rest[PG - 76]; };
struct page_rec { char head[64]; long hot; char rest[PG - 72]; };
struct page_rec recs[4] = { [0].hot = 1 };
__attribute__((noinline)) void fill(struct node *n, long count)
{
    for (long i = 0; i < count; i++) {
        n->hot = i;
        n++;
    }
}
__attribute__((noinline)) long warm_sum(struct node *n, long count)
{
    long s = 0;
    for (long i = 0; i < count; i++) {
        s += n->warm;
        n++;
    }
    return s;
}
__attribute__((noinline)) long rec_sum(void)
{
    long s = 0;
    for (int i = 0; i < 4; i++)
        s += recs[i].hot;
    return s;
}
int main(void) { return 0; }
"#;

/// The address of the first instruction of function `name` in `bin` whose memory operand has
/// displacement `disp` (the function's start for `None`).
pub fn insn_at(bin: &[u8], name: &str, disp: Option<u64>) -> u64 {
    use iced_x86::{Decoder, DecoderOptions, OpKind};
    use object::{Object as _, ObjectSection as _, ObjectSymbol as _};
    let obj = object::File::parse(bin).unwrap();
    let sym = obj.symbols().find(|s| s.name() == Ok(name)).unwrap();
    let Some(disp) = disp else {
        return sym.address();
    };
    let text = obj.section_by_name(".text").unwrap();
    let at = (sym.address() - text.address()) as usize;
    let code = &text.data().unwrap()[at..at + sym.size() as usize];
    Decoder::with_ip(64, code, sym.address(), DecoderOptions::NONE)
        .iter()
        .find(|i| {
            (0..i.op_count()).any(|k| i.op_kind(k) == OpKind::Memory)
                && i.memory_displacement64() == disp
        })
        .unwrap_or_else(|| panic!("no access at {disp:#x} in {name}"))
        .ip()
}

/// `(start, length, page offset)` of the program's executable and writable `PT_LOAD`s, as
/// the kernel maps them (page-aligned).
pub fn segments(bin: &[u8]) -> ((u64, u64, u64), (u64, u64, u64)) {
    use object::{Object as _, ObjectSegment as _, SegmentFlags};
    let obj = object::File::parse(bin).unwrap();
    let mut text = None;
    let mut data = None;
    for seg in obj.segments() {
        let SegmentFlags::Elf { p_flags, .. } = seg.flags() else {
            continue;
        };
        let (va, off, mem) = (seg.address(), seg.file_range().0, seg.size());
        let start = va & !0xfff;
        let map = (
            start,
            (va + mem - start).next_multiple_of(0x1000),
            off & !0xfff,
        );
        if p_flags.0 & object::elf::PF_X.0 != 0 {
            text = Some(map);
        } else if p_flags.0 & object::elf::PF_W.0 != 0 {
            data = Some(map);
        }
    }
    (text.unwrap(), data.unwrap())
}

/// `gcc ARGS -o NAME NAME.c` in `dir` with `source` as `NAME.c`; false, with a line saying
/// the test is skipped, when gcc cannot build it.
pub fn gcc(dir: &Path, source: &str, name: &str, args: &[&str]) -> bool {
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

/// Builds [`HAND_C`] as `dir/hand` (`-O1 -g -no-pie`); `None` when gcc cannot.
pub fn build(dir: &Path) -> Option<PathBuf> {
    gcc(dir, HAND_C, "hand", &["-O1", "-g", "-no-pie"]).then(|| dir.join("hand"))
}
