//! `scripts/install PREFIX` with the binary under test (`HREC_BIN`, so no release build):
//! the binary is installed stripped and runs, its debug info sits at
//! `PREFIX/lib/debug/.build-id/xx/rest.debug` with the binary's build-id, and the man pages
//! and the bash, zsh and fish completions are where those tools look.

mod support;

use std::path::Path;
use std::process::Command;

use object::{Object as _, ObjectSection as _};
use support::text;

fn has(program: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The build-id of an ELF file and whether it has DWARF (`.debug_info` with contents).
fn build_id_and_dwarf(path: &Path) -> (Vec<u8>, bool) {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let file = object::File::parse(&*bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let id = file
        .build_id()
        .expect("notes")
        .unwrap_or_else(|| panic!("{}: no build-id", path.display()))
        .to_vec();
    let dwarf = file
        .section_by_name(".debug_info")
        .is_some_and(|s| s.kind() != object::SectionKind::UninitializedData && s.size() > 0);
    (id, dwarf)
}

#[test]
fn install_strips_the_binary_and_files_its_debug_info_by_build_id() {
    if !has("objcopy") || !has("readelf") {
        eprintln!("skipped: objcopy not installed (binutils), the install would not strip");
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let prefix = dir.path().join("usr-local");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/install");
    let o = Command::new("bash")
        .arg(&script)
        .arg(&prefix)
        .env("HREC_BIN", env!("CARGO_BIN_EXE_hrec"))
        .env_remove("DESTDIR")
        .output()
        .expect("run scripts/install");
    let (out, err) = text(&o);
    assert!(o.status.success(), "scripts/install: {out}{err}");

    let bin = prefix.join("bin/hrec");
    let version = Command::new(&bin)
        .arg("--version")
        .output()
        .expect("run the installed hrec");
    assert!(version.status.success());
    assert!(
        text(&version)
            .0
            .starts_with(&format!("hrec {}", env!("CARGO_PKG_VERSION"))),
        "{}",
        text(&version).0
    );

    let (id, dwarf) = build_id_and_dwarf(&bin);
    assert!(!dwarf, "the installed binary still has .debug_info");
    let (built_id, _) = build_id_and_dwarf(Path::new(env!("CARGO_BIN_EXE_hrec")));
    assert_eq!(id, built_id, "stripping keeps the build-id");
    let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
    let debug = prefix
        .join("lib/debug/.build-id")
        .join(&hex[..2])
        .join(format!("{}.debug", &hex[2..]));
    assert!(debug.is_file(), "no {}:\n{out}", debug.display());
    let (debug_id, debug_dwarf) = build_id_and_dwarf(&debug);
    assert_eq!(debug_id, id);
    assert!(debug_dwarf, "{} has no DWARF", debug.display());
    assert!(
        out.contains(&debug.display().to_string()),
        "says where: {out}"
    );

    for page in [
        "hrec.1",
        "hrec-record.1",
        "hrec-report.1",
        "hrec-mem-record.1",
    ] {
        let path = prefix.join("share/man/man1").join(page);
        assert!(path.is_file(), "no {}", path.display());
    }
    for (path, marker) in [
        (
            "share/bash-completion/completions/hrec",
            "complete -F _hrec",
        ),
        ("share/zsh/site-functions/_hrec", "#compdef hrec"),
        (
            "share/fish/vendor_completions.d/hrec.fish",
            "complete -c hrec",
        ),
    ] {
        let script =
            std::fs::read_to_string(prefix.join(path)).unwrap_or_else(|e| panic!("{path}: {e}"));
        assert!(script.contains(marker), "{path}");
    }
}
