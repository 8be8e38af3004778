//! Build script: the version `hrec --version` prints, and a build-id in every binary.
//!
//! **Version.** In a git checkout, `HREC_VERSION` is `0.1.0 (c50e7ac 2026-11-28)`: the
//! package version, the short hash of the commit built and that commit's date, so a report
//! from a user names the exact source. Out of a checkout (`cargo install` from a tarball or
//! the registry), or without `git` on the PATH, it is the plain package version: git is never
//! a build requirement. The checkout is this package's own `.git` (a directory, or the file
//! a worktree has), never a repository somewhere above it that the sources were unpacked into.
//!
//! The script reruns only when the commit can have changed: when `.git/HEAD` changes (a
//! checkout, a commit on a detached HEAD) or the ref it points to does (a commit on the
//! branch), or `packed-refs` when the ref is packed. Only existing files are named, as cargo
//! reruns a script on every build when a named file is missing.
//!
//! **Build-id.** `scripts/install` splits the debug info off into `.build-id/xx/rest.debug`,
//! where debuggers and hrec itself (`symbol::debuginfo`) look it up by the binary's
//! `NT_GNU_BUILD_ID` note. Most toolchains' linkers write one by default; `--build-id` asks
//! for it on those that don't.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let pkg_version = std::env::var("CARGO_PKG_VERSION").unwrap_or_default();
    let manifest_dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let commit = git_dir(&manifest_dir).and_then(|git| {
        for path in watched(&git) {
            println!("cargo:rerun-if-changed={}", path.display());
        }
        commit(&manifest_dir)
    });
    let (version, date) = match commit {
        Some((hash, date)) => (format!("{pkg_version} ({hash} {date})"), date),
        None => (pkg_version, String::new()),
    };
    println!("cargo:rustc-env=HREC_VERSION={version}");
    // The man pages' date: the commit's, empty out of a checkout.
    println!("cargo:rustc-env=HREC_DATE={date}");
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-link-arg-bins=-Wl,--build-id");
    }
}

/// The git directory of a checkout at `dir`: `dir/.git` itself, or where a worktree's
/// `.git` file points (`gitdir: PATH`).
fn git_dir(dir: &Path) -> Option<PathBuf> {
    let dot_git = dir.join(".git");
    let meta = std::fs::metadata(&dot_git).ok()?;
    if meta.is_dir() {
        return Some(dot_git);
    }
    let text = std::fs::read_to_string(&dot_git).ok()?;
    let target = text.trim().strip_prefix("gitdir:")?.trim();
    Some(dir.join(target))
}

/// The files whose change means another commit: HEAD, the ref it names (in the common
/// directory of a worktree), else `packed-refs`.
fn watched(git: &Path) -> Vec<PathBuf> {
    let mut out = vec![git.join("HEAD")];
    let common = std::fs::read_to_string(git.join("commondir"))
        .map(|c| git.join(c.trim()))
        .unwrap_or_else(|_| git.to_path_buf());
    let head = std::fs::read_to_string(git.join("HEAD")).unwrap_or_default();
    if let Some(name) = head.trim().strip_prefix("ref:") {
        let name = name.trim();
        let loose = [git.join(name), common.join(name)];
        match loose.into_iter().find(|p| p.is_file()) {
            Some(p) => out.push(p),
            None => out.push(common.join("packed-refs")),
        }
    }
    out.retain(|p| p.is_file());
    out
}

/// The short hash and the date (YYYY-MM-DD) of HEAD, when git runs and answers.
fn commit(dir: &Path) -> Option<(String, String)> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["log", "-1", "--date=short", "--format=%h %cd"])
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8(out.stdout).ok()?;
    let (hash, date) = text.trim().split_once(' ')?;
    let plain =
        |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-');
    (plain(hash) && plain(date)).then(|| (hash.to_string(), date.to_string()))
}
