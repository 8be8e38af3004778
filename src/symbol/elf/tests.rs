//! Tests of `elf`.

use std::path::Path;
use std::process::Command;

use std::path::PathBuf;

use super::super::binary::Binary;
use super::super::debuginfo::SearchPaths;
use super::fixtures::{PROG, build_id, gcc, line_of, objcopy, symbol};
use super::*;

fn no_debug_dirs() -> SearchPaths {
    SearchPaths {
        debug_dirs: Vec::new(),
        build_id_cache: None,
        debuginfod_cache: None,
        inflated_cache: None,
    }
}

/// Symbolizes every byte of `outer_fn` in `binary`: the symbol is always `outer_fn`, the
/// last frame is `outer_fn`, and some address is inside the inlined `inner_mix`.
fn check_inline_chain(binary: &Binary, source: &str) {
    let (start, size) = binary
        .symbols
        .entries
        .iter()
        .find(|e| name_of(&binary.symbols.names, e.name) == "outer_fn")
        .map(|e| (e.start, e.size))
        .expect("outer_fn in the symbol table");
    assert!(size > 0);
    let inner_line = line_of(PROG, "INNER");
    let outer_line = line_of(PROG, "OUTER");
    let mut inlined = 0;
    for addr in start..start + size {
        let s = binary.symbolize(addr).unwrap();
        let sym = s.sym.as_ref().expect("symbol");
        assert_eq!(&*sym.name, "outer_fn");
        assert_eq!((sym.start, sym.size), (start, size));
        let last = s.frames.last().expect("DWARF frames for outer_fn");
        assert_eq!(last.function.as_deref(), Some("outer_fn"));
        if s.frames.len() == 2 && s.frames[0].function.as_deref() == Some("inner_mix") {
            let inner = &s.frames[0];
            assert!(
                inner.file.as_deref().unwrap().ends_with(source),
                "{inner:?}"
            );
            assert!(
                (line_of(PROG, "inner_mix")..=inner_line + 2).contains(&inner.line),
                "{inner:?}"
            );
            assert_eq!(s.frames[1].line, outer_line, "call site line: {s:?}");
            assert!(s.frames[1].file.as_deref().unwrap().ends_with(source));
            inlined += 1;
        }
    }
    assert!(
        inlined > 0,
        "no address of outer_fn resolved into inner_mix"
    );
}

#[test]
fn inline_chain_from_own_dwarf() {
    let dir = tempfile::tempdir().unwrap();
    let prog = gcc(dir.path(), "prog", PROG, &["-g", "-O2"]);
    let binary = Binary::load(&prog, None, &no_debug_dirs()).unwrap();
    assert_eq!(binary.debug_path(), Some(prog.as_path()));
    assert_eq!(binary.build_id(), Some(build_id(&prog).as_slice()));
    check_inline_chain(&binary, "/prog.c");
}

#[test]
fn symbols_without_dwarf_give_empty_frames() {
    let dir = tempfile::tempdir().unwrap();
    let prog = gcc(dir.path(), "prog", PROG, &["-O2"]);
    let binary = Binary::load(&prog, None, &no_debug_dirs()).unwrap();
    assert_eq!(binary.debug_path(), None);
    let (start, size) = symbol(&prog, "outer_fn");
    let s = binary.symbolize(start + size / 2).unwrap();
    assert_eq!(&*s.sym.unwrap().name, "outer_fn");
    assert!(s.frames.is_empty());
    // Below the first symbol there is nothing.
    assert_eq!(binary.symbolize(0), Err(Unresolved::NoSymbols));
}

#[test]
fn stripped_binary_uses_debuglink_file_for_symbols_and_dwarf() {
    let dir = tempfile::tempdir().unwrap();
    let full = gcc(dir.path(), "full", PROG, &["-g", "-O2"]);
    let debug = dir.path().join("prog.debug");
    objcopy(&["--only-keep-debug"], &full, &debug);
    let prog = dir.path().join("prog");
    let link = format!("--add-gnu-debuglink={}", debug.display());
    objcopy(&["--strip-all", &link], &full, &prog);

    let binary = Binary::load(&prog, None, &no_debug_dirs()).unwrap();
    assert_eq!(binary.debug_path(), Some(debug.as_path()));
    // .symtab came from the debug file: the stripped binary has none.
    check_inline_chain(&binary, "/full.c");
}

#[test]
fn stripped_binary_uses_build_id_debug_dir() {
    let dir = tempfile::tempdir().unwrap();
    let full = gcc(dir.path(), "full", PROG, &["-g", "-O2", "-Wl,--build-id"]);
    let id = build_id(&full);
    let hex = hex(&id);
    let debug_dir = dir.path().join("debug");
    let debug = debug_dir
        .join(".build-id")
        .join(&hex[..2])
        .join(format!("{}.debug", &hex[2..]));
    std::fs::create_dir_all(debug.parent().unwrap()).unwrap();
    objcopy(&["--only-keep-debug"], &full, &debug);
    let prog = dir.path().join("prog");
    objcopy(&["--strip-all"], &full, &prog);

    let search = SearchPaths {
        debug_dirs: vec![dir.path().join("elsewhere"), debug_dir],
        build_id_cache: None,
        debuginfod_cache: None,
        inflated_cache: None,
    };
    let binary = Binary::load(&prog, Some(&id), &search).unwrap();
    assert_eq!(binary.debug_path(), Some(debug.as_path()));
    check_inline_chain(&binary, "/full.c");

    // Without the debug dir: no symbols at all (stripped, no .dynsym entry for outer_fn).
    let bare = Binary::load(&prog, Some(&id), &no_debug_dirs()).unwrap();
    assert_eq!(bare.debug_path(), None);
    let (start, _) = symbol(&debug, "outer_fn");
    assert_eq!(bare.symbolize(start), Err(Unresolved::NoSymbols));
}

#[test]
fn build_id_check() {
    let dir = tempfile::tempdir().unwrap();
    let prog = gcc(dir.path(), "prog", PROG, &["-O1", "-Wl,--build-id"]);
    let id = build_id(&prog);
    let search = no_debug_dirs();
    assert!(Binary::load(&prog, Some(&id), &search).is_ok());
    assert!(Binary::load(&prog, None, &search).is_ok());
    // perf pads shorter ids with zeros to 20 bytes.
    let mut padded = id.clone();
    padded.resize(id.len() + 4, 0);
    assert!(Binary::load(&prog, Some(&padded), &search).is_ok());
    // An all-zero id means "unknown".
    assert!(Binary::load(&prog, Some(&[0; 20]), &search).is_ok());

    let mut other = id.clone();
    other[0] ^= 0xff;
    assert_eq!(
        Binary::load(&prog, Some(&other), &search).unwrap_err(),
        Unresolved::BuildIdMismatch
    );
    assert_eq!(
        Binary::load(&prog, Some(&id[..id.len() - 1]), &search).unwrap_err(),
        Unresolved::BuildIdMismatch
    );

    let no_id = gcc(dir.path(), "noid", PROG, &["-O1", "-Wl,--build-id=none"]);
    assert_eq!(
        Binary::load(&no_id, None, &search).unwrap().build_id(),
        None
    );
    assert_eq!(
        Binary::load(&no_id, Some(&id), &search).unwrap_err(),
        Unresolved::BuildIdMismatch
    );
}

#[test]
fn missing_and_non_elf_files() {
    let dir = tempfile::tempdir().unwrap();
    let search = no_debug_dirs();
    let missing = dir.path().join("missing");
    assert_eq!(
        Binary::load(&missing, None, &search).unwrap_err(),
        Unresolved::BinaryMissing
    );
    assert_eq!(
        Binary::load(dir.path(), None, &search).unwrap_err(),
        Unresolved::NotElf
    );
    let text = dir.path().join("text");
    std::fs::write(&text, "#!/bin/sh\necho hello\n").unwrap();
    assert_eq!(
        Binary::load(&text, None, &search).unwrap_err(),
        Unresolved::NotElf
    );
    let empty = dir.path().join("empty");
    std::fs::write(&empty, "").unwrap();
    assert_eq!(
        Binary::load(&empty, None, &search).unwrap_err(),
        Unresolved::NotElf
    );
}

/// Truncated and corrupted copies of a real ELF file: values, never panics.
#[test]
fn truncated_and_corrupted_files_do_not_panic() {
    let dir = tempfile::tempdir().unwrap();
    let prog = gcc(dir.path(), "prog", PROG, &["-g", "-O2"]);
    let bytes = std::fs::read(&prog).unwrap();
    let (start, size) = symbol(&prog, "outer_fn");
    let search = no_debug_dirs();
    let check = |name: &str, content: &[u8]| {
        let path = dir.path().join(name);
        std::fs::write(&path, content).unwrap();
        match Binary::load(&path, None, &search) {
            Ok(binary) => {
                for addr in [0, start, start + size / 2, u64::MAX] {
                    match binary.symbolize(addr) {
                        Ok(_) | Err(Unresolved::NoSymbols) => {}
                        Err(e) => panic!("{name}: symbolize gave {e:?}"),
                    }
                }
                let _ = binary.svma(start, 0, 0);
            }
            Err(Unresolved::NotElf) => {}
            Err(e) => panic!("{name}: load gave {e:?}"),
        }
    };
    for len in [
        1,
        4,
        16,
        52,
        63,
        64,
        100,
        1000,
        bytes.len() / 2,
        bytes.len() - 1,
    ] {
        check(&format!("trunc{len}"), &bytes[..len]);
    }
    // Deterministic pseudo-random byte corruption (xorshift).
    let mut next = crate::testutil::xorshift(0x9e37_79b9_7f4a_7c15_u64);
    for round in 0..24 {
        let mut corrupt = bytes.clone();
        for _ in 0..(1 << (round % 8)) {
            let at = (next() % corrupt.len() as u64) as usize;
            corrupt[at] = next() as u8;
        }
        check(&format!("corrupt{round}"), &corrupt);
    }
    // Garbage after a valid ELF identification.
    let mut garbage = bytes[..16].to_vec();
    garbage.extend((0..4096).map(|_| next() as u8));
    check("garbage", &garbage);
}

#[test]
fn stripped_shared_library_keeps_dynsym_names() {
    let dir = tempfile::tempdir().unwrap();
    let source = "int exported_work(int x) { int s = 0; for (int i = 0; i < x; i++) s += i * x; return s; }\n\
                  static int hidden(int x) { return x * 3; }\n\
                  int (*keep)(int) = hidden;\n";
    let lib = gcc(
        dir.path(),
        "libfix.so",
        source,
        &["-O2", "-g", "-shared", "-fPIC"],
    );
    let stripped = dir.path().join("libstripped.so");
    objcopy(&["--strip-all"], &lib, &stripped);
    let binary = Binary::load(&stripped, None, &no_debug_dirs()).unwrap();
    assert_eq!(binary.debug_path(), None);
    let (start, size) = symbol(&stripped, "exported_work");
    for addr in [start, start + size - 1] {
        let s = binary.symbolize(addr).unwrap();
        let sym = s.sym.unwrap();
        assert_eq!(
            (&*sym.name, sym.start, sym.size),
            ("exported_work", start, size)
        );
        assert!(s.frames.is_empty());
    }
}

/// `<name@plt>` labels and addresses as objdump disassembles them in `sections`.
fn objdump_plt_in(path: &Path, sections: &[&str]) -> Vec<(u64, String)> {
    let mut args = vec!["-d"];
    for s in sections {
        args.extend(["-j", s]);
    }
    let out = Command::new("objdump")
        .args(&args)
        .arg(path)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let (addr, rest) = l.split_once(" <")?;
            let name = rest.strip_suffix(">:")?;
            name.ends_with("@plt")
                .then(|| Some((u64::from_str_radix(addr.trim(), 16).ok()?, name.to_string())))?
        })
        .collect()
}

/// The same in `.plt`/`.plt.sec`.
fn objdump_plt(path: &Path) -> Vec<(u64, String)> {
    objdump_plt_in(path, &[".plt", ".plt.sec"])
}

/// `.plt.got` stubs (functions whose address is also taken, here `__cxa_finalize` and
/// `malloc`) are named after their GOT slot's relocation, as objdump labels them.
#[test]
fn plt_got_stubs_are_named_after_their_got_slot() {
    let dir = tempfile::tempdir().unwrap();
    let src = "#include <stdlib.h>\n#include <stdio.h>\nvoid *(*volatile alloc)(size_t) = malloc;\nint main(void) { void *a = alloc(16); void *b = malloc(32); printf(\"%p %p\\n\", a, b); free(a); free(b); return 0; }\n";
    let bin = gcc(dir.path(), "gotplt", src, &["-O2", "-Wl,-z,now"]);
    let want = objdump_plt_in(&bin, &[".plt.got"]);
    assert!(!want.is_empty(), "no .plt.got stubs to check");
    let binary = Binary::load(&bin, None, &no_debug_dirs()).unwrap();
    for (addr, n) in &want {
        let sym = binary.symbolize(addr + 2).unwrap().sym.unwrap();
        assert_eq!((&*sym.name, sym.start), (n.as_str(), *addr));
    }
}

#[test]
fn plt_stubs_are_named_like_perf() {
    let dir = tempfile::tempdir().unwrap();
    // Lazy binding keeps a classic .plt; `-z ibtplt` (what IBT-enabled distributions get)
    // moves the stubs to .plt.sec: check both.
    for (name, extra) in [
        ("plain", &[][..]),
        ("ibt", &["-fcf-protection=full", "-Wl,-z,ibtplt"][..]),
    ] {
        let mut args = vec!["-O2", "-Wl,-z,lazy"];
        args.extend_from_slice(extra);
        let bin = gcc(dir.path(), name, PROG, &args);
        let want = objdump_plt(&bin);
        assert!(
            want.iter()
                .any(|(_, n)| n == "printf@plt" || n == "atoi@plt"),
            "{want:?}"
        );
        let has_sec = Command::new("readelf")
            .arg("-S")
            .arg(&bin)
            .output()
            .unwrap();
        let has_sec = String::from_utf8_lossy(&has_sec.stdout).contains(".plt.sec");
        assert_eq!(has_sec, name == "ibt");
        let binary = Binary::load(&bin, None, &no_debug_dirs()).unwrap();
        for (addr, n) in &want {
            let sym = binary.symbolize(addr + 4).unwrap().sym.unwrap();
            assert_eq!((&*sym.name, sym.start), (n.as_str(), *addr), "{name}");
        }
    }
}

#[inline(never)]
fn svma_probe_target(x: u64) -> u64 {
    std::hint::black_box(x).wrapping_mul(0x9e37_79b9) ^ 7
}

/// The test binary as the loader mapped it: runtime address -> SVMA -> this function.
#[test]
fn svma_of_the_running_test_binary() {
    assert_ne!(svma_probe_target(3), 0);
    let addr = svma_probe_target as fn(u64) -> u64 as usize as u64;
    let (start, pgoff, path) = own_mapping(addr);
    let binary = Binary::load(&path, None, &no_debug_dirs()).unwrap();
    let svma = binary.svma(addr, start, pgoff).expect("svma");
    let s = binary.symbolize(svma).unwrap();
    let sym = s.sym.expect("symbol");
    assert!(sym.name.contains("svma_probe_target"), "{sym:?}");
    assert!(!sym.name.contains("::h"), "hash not stripped: {sym:?}");
    assert_eq!(
        sym.start, svma,
        "the function pointer is the symbol's start"
    );
    let last = s.frames.last().expect("the dev profile has DWARF");
    assert!(
        last.function
            .as_deref()
            .unwrap()
            .contains("svma_probe_target"),
        "{last:?}"
    );
    assert!(
        last.file
            .as_deref()
            .unwrap()
            .ends_with("src/symbol/elf/tests.rs")
    );
    // Outside the mapping's segments.
    assert_eq!(binary.svma(start - 1, start, pgoff), None);
}

/// The mapping (start, pgoff, path) of this process that holds `addr`.
fn own_mapping(addr: u64) -> (u64, u64, PathBuf) {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    maps.lines()
        .find_map(|line| {
            let mut fields = line.split_whitespace();
            let (lo, hi) = fields.next()?.split_once('-')?;
            let lo = u64::from_str_radix(lo, 16).ok()?;
            let hi = u64::from_str_radix(hi, 16).ok()?;
            let _perms = fields.next()?;
            let pgoff = u64::from_str_radix(fields.next()?, 16).ok()?;
            let path = fields.nth(2)?;
            (lo <= addr && addr < hi).then(|| (lo, pgoff, PathBuf::from(path)))
        })
        .expect("a file mapping holds the address")
}

/// The C library this test runs on, through the distribution's debug file when installed
/// (`libc6-dbg` puts it under `/usr/lib/debug/.build-id/`).
#[test]
fn libc_of_the_running_process() {
    let addr = libc::getpid as *const () as usize as u64;
    let (start, pgoff, path) = own_mapping(addr);
    let binary = Binary::load(&path, None, &SearchPaths::default()).unwrap();
    let svma = binary.svma(addr, start, pgoff).unwrap();
    let s = binary.symbolize(svma).unwrap();
    assert!(s.sym.unwrap().name.contains("getpid"));
    match binary.debug_path() {
        Some(debug) => {
            assert!(
                s.frames
                    .last()
                    .unwrap()
                    .function
                    .as_deref()
                    .unwrap()
                    .contains("getpid")
            );
            eprintln!("{}: DWARF from {}", path.display(), debug.display());
        }
        None => eprintln!("{}: no debug file installed, symbols only", path.display()),
    }
}

#[test]
fn svma_uses_the_load_segment_of_the_offset() {
    let binary = Binary {
        path: PathBuf::new(),
        build_id: None,
        loads: vec![
            Load {
                offset: 0,
                filesz: 0x800,
                vaddr: 0,
                memsz: 0x800,
            },
            Load {
                offset: 0x1000,
                filesz: 0x2345,
                vaddr: 0x401000,
                memsz: 0x2345,
            },
            Load {
                offset: 0x4000,
                filesz: 0x100,
                vaddr: 0x605000,
                memsz: 0x300,
            },
        ],
        symbols: Symbols::default(),
        objects: Symbols::default(),
        debug_path: None,
        dwarf: None,
        data_types: std::cell::OnceCell::new(),
        cfi: std::cell::OnceCell::new(),
    };
    // Text mapped at 0x7f0000001000 from file offset 0x1000.
    assert_eq!(
        binary.svma(0x7f00_0000_1010, 0x7f00_0000_1000, 0x1000),
        Some(0x401010)
    );
    assert_eq!(
        binary.svma(0x7f00_0000_3344, 0x7f00_0000_1000, 0x1000),
        Some(0x403344)
    );
    assert_eq!(
        binary.svma(0x7f00_0000_3345, 0x7f00_0000_1000, 0x1000),
        None
    );
    assert_eq!(
        binary.svma(0x7f00_0000_4010, 0x7f00_0000_1000, 0x1000),
        Some(0x605010)
    );
    assert_eq!(binary.svma(0x10, 0x0, 0), Some(0x10));
    assert_eq!(binary.svma(0xfff, 0x1000, 0), None);
    assert_eq!(binary.svma(u64::MAX, 0, u64::MAX), None);
    // A symbol's SVMA span as file offsets, clipped to its segment's file bytes.
    assert_eq!(
        binary.offset_span(0x1010, (0x401000, 0x401040)),
        Some((0x1000, 0x1040))
    );
    assert_eq!(
        binary.offset_span(0x3300, (0x403300, 0x404000)),
        Some((0x3300, 0x3345))
    );
    assert_eq!(binary.offset_span(0x4010, (0x605000, 0x605010)), None);
    assert_eq!(binary.offset_span(0x9000, (0x0, 0x10000)), None);
    // Data addresses reach into the segment's .bss, past its file bytes.
    assert_eq!(binary.data_svma(0x4100), Some(0x605100));
    assert_eq!(binary.data_svma(0x42ff), Some(0x6052ff));
    assert_eq!(binary.data_svma(0x4300), None);
}

fn builder(symbols: &[(u64, u64, u64, u32, &str)]) -> Symbols {
    let mut b = SymbolsBuilder::default();
    for &(start, size, section_end, rank, name) in symbols {
        let at = b.names.len();
        b.names.push_str(name);
        b.candidates.push(Candidate {
            start,
            size,
            section_end,
            rank,
            order: b.candidates.len() as u32,
            name: (at, name.len()),
        });
    }
    b.build()
}

#[test]
fn symbol_lookup_rules() {
    let s = builder(&[
        (0x100, 0x10, 0x1000, 1, "sized"),
        (0x200, 0, 0x1000, 1, "unsized"),
        (0x300, 0x20, 0x1000, 1, "alias_low"),
        (0x300, 0x20, 0x1000, 9, "alias_high"),
        (0x400, 0x100, 0x1000, 1, "outer"),
        (0x420, 0x10, 0x1000, 1, "nested"),
        (0x800, 0, 0x900, 1, "last_unsized"),
    ]);
    let name = |addr| s.lookup(addr).map(|sym| sym.name.to_string());
    assert_eq!(name(0xff), None);
    assert_eq!(name(0x100).as_deref(), Some("sized"));
    assert_eq!(name(0x10f).as_deref(), Some("sized"));
    assert_eq!(name(0x110), None, "past a sized symbol's end");
    assert_eq!(name(0x200).as_deref(), Some("unsized"));
    assert_eq!(
        name(0x2ff).as_deref(),
        Some("unsized"),
        "size 0 runs to the next symbol"
    );
    assert_eq!(name(0x310).as_deref(), Some("alias_high"));
    assert_eq!(name(0x425).as_deref(), Some("nested"));
    assert_eq!(name(0x430).as_deref(), Some("outer"), "enclosing symbol");
    assert_eq!(name(0x4ff).as_deref(), Some("outer"));
    assert_eq!(name(0x500), None);
    assert_eq!(name(0x8ff).as_deref(), Some("last_unsized"));
    assert_eq!(name(0x900), None, "bounded by its section");
    let sym = s.lookup(0x210).unwrap();
    assert_eq!((sym.start, sym.size), (0x200, 0));
    assert!(Symbols::default().lookup(0).is_none());
}

/// A span holds exactly the addresses that find the same symbol: checked against `lookup`
/// at every address of the table above, nested symbols and gaps included.
#[test]
fn symbol_spans_are_where_the_lookup_agrees() {
    let s = builder(&[
        (0x100, 0x10, 0x1000, 1, "sized"),
        (0x200, 0, 0x1000, 1, "unsized"),
        (0x300, 0x20, 0x1000, 9, "alias"),
        (0x400, 0x100, 0x1000, 1, "outer"),
        (0x420, 0x10, 0x1000, 1, "nested"),
        (0x440, 0x8, 0x1000, 1, "nested2"),
        (0x800, 0, 0x900, 1, "last_unsized"),
    ]);
    let name = |addr| s.lookup(addr).map(|sym| sym.name.to_string());
    assert_eq!(s.lookup_span(0x430).map(|x| x.1), Some((0x430, 0x440)));
    assert_eq!(s.lookup_span(0x450).map(|x| x.1), Some((0x448, 0x500)));
    assert_eq!(s.lookup_span(0x210).map(|x| x.1), Some((0x200, 0x300)));
    for addr in 0..0xa00u64 {
        let Some((sym, (lo, hi))) = s.lookup_span(addr) else {
            assert_eq!(name(addr), None);
            continue;
        };
        assert!(lo <= addr && addr < hi, "{addr:#x}: [{lo:#x}, {hi:#x})");
        for a in lo..hi {
            assert_eq!(
                name(a).as_deref(),
                Some(&*sym.name),
                "{a:#x} in the span of {addr:#x}"
            );
        }
    }
}

/// Load time and per-address cost on a real file:
/// `HREC_BENCH_ELF=/path/to/lib.so cargo test --release --lib bench_symbolize -- --ignored --nocapture`
#[test]
#[ignore = "measurement; needs HREC_BENCH_ELF"]
fn bench_symbolize() {
    let Some(path) = std::env::var_os("HREC_BENCH_ELF") else {
        eprintln!("skipped: set HREC_BENCH_ELF");
        return;
    };
    let t = std::time::Instant::now();
    let binary = Binary::load(Path::new(&path), None, &SearchPaths::default()).unwrap();
    let load = t.elapsed();
    let sized: Vec<&Entry> = binary
        .symbols
        .entries
        .iter()
        .filter(|e| e.size > 0)
        .collect();
    let mut next = crate::testutil::xorshift(0x2545_f491_4f6c_dd1d_u64);
    let mut addrs: Vec<u64> = (0..20_000)
        .map(|_| {
            let e = sized[(next() % sized.len() as u64) as usize];
            e.start + next() % e.size
        })
        .collect();
    addrs.sort_unstable();
    addrs.dedup();
    let shuffle: Vec<u64> = addrs.iter().map(|_| next()).collect();
    let mut order: Vec<usize> = (0..addrs.len()).collect();
    order.sort_by_key(|&i| shuffle[i]);
    let addrs: Vec<u64> = order.into_iter().map(|i| addrs[i]).collect();
    let run = || {
        let t = std::time::Instant::now();
        let mut frames = 0;
        let mut with_frames = 0;
        for &a in &addrs {
            let s = binary.symbolize(a).unwrap();
            frames += s.frames.len();
            with_frames += usize::from(!s.frames.is_empty());
        }
        (t.elapsed(), frames, with_frames)
    };
    let (cold, frames, with_frames) = run();
    let (warm, _, _) = run();
    let per = |d: std::time::Duration| d.as_secs_f64() * 1e6 / addrs.len() as f64;
    eprintln!(
        "{}: {} symbols, debug {:?}; load {:.1} ms; {} addresses: cold {:.2} us/addr, \
         warm {:.2} us/addr; {} with frames, {:.2} frames/addr",
        binary.path.display(),
        binary.symbols.entries.len(),
        binary.debug_path(),
        load.as_secs_f64() * 1e3,
        addrs.len(),
        per(cold),
        per(warm),
        with_frames,
        frames as f64 / addrs.len() as f64,
    );
}
