//! Right names for processes in containers and chroots (issue 32): a process in another
//! mount namespace, or chrooted, maps a file at a path where this machine has another build.
//! hrec records which file each mapping was (the build-id in MMAP2 records) and copies the
//! process's file into the build-id cache while it lives, so `report`, run after the process
//! exited, names the process's own functions, never the host file's; without the cache the
//! samples stay unresolved with the reason. Needs root (mount namespaces, chroot) and gcc;
//! otherwise each test says it was skipped.

mod support;

use std::path::Path;
use std::process::{Command, Stdio};

use support::privilege::is_root;
use support::{await_cond, hrec_in, text};

/// Two builds of one program: `host_spin` in the host's, `guest_spin` in the other's. Each
/// spins `argv[1]` iterations (CPU time, so about as many samples on a slow machine as on a
/// fast one), then on until the file `argv[2]` exists: the test ends the process once hrec
/// has what it needs, whatever the machine's speed.
const HOST: &str = r#"
#include <stdlib.h>
#include <unistd.h>
__attribute__((noinline)) long host_spin(long n, const char *stop) { volatile long s = 0; for (long i = 0; i < n || access(stop, F_OK) != 0; i++) { s += i; if (i >= n) usleep(1000); } return s; }
int main(int c, char **v) { return host_spin(atol(v[1]), v[2]) == 1; }
"#;
const GUEST: &str = r#"
#include <stdlib.h>
#include <unistd.h>
__attribute__((noinline)) long guest_pad(long n) { volatile long s = 1; for (long i = 0; i < n; i++) s ^= i; return s; }
__attribute__((noinline)) long guest_spin(long n, const char *stop) { volatile long s = 0; for (long i = 0; i < n || access(stop, F_OK) != 0; i++) { s += 3 * i; if (i >= n) usleep(1000); } return s; }
int main(int c, char **v) { return guest_spin(atol(v[1]), v[2]) == 1; }
"#;

/// Iterations of the spin loop: about a tenth of a second of CPU.
const SPIN: &str = "100000000";

/// Runs `hrec ARGS` in `dir`, waits until `ready` holds (at most 120 s), creates `stop` and
/// waits for hrec: its exit status and stderr.
fn record_until(
    dir: &Path,
    args: &[&str],
    ready: impl FnMut() -> bool,
    stop: &Path,
) -> (bool, String) {
    let child = Command::new(env!("CARGO_BIN_EXE_hrec"))
        .args(args)
        .current_dir(dir)
        .env_remove("HREC_SYSFS_ROOT")
        .env_remove("HREC_PROCFS_ROOT")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    await_cond("the process's file in the build-id cache", 120, ready);
    std::fs::write(stop, b"").unwrap();
    let o = child.wait_with_output().unwrap();
    (
        o.status.success(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// Whether the cache at `cache` has an entry.
fn cached(cache: &Path) -> impl FnMut() -> bool {
    let links = cache.join(".build-id");
    move || {
        std::fs::read_dir(&links).is_ok_and(|d| {
            d.flatten()
                .any(|x| std::fs::read_dir(x.path()).is_ok_and(|mut e| e.next().is_some()))
        })
    }
}

fn gcc(dir: &Path, name: &str, src: &str, extra: &[&str]) -> bool {
    let c = dir.join(format!("{name}.c"));
    std::fs::write(&c, src).unwrap();
    Command::new("gcc")
        .args(["-O1", "-g", "-o"])
        .arg(dir.join(name))
        .arg(&c)
        .args(extra)
        .status()
        .is_ok_and(|s| s.success())
}

/// Root, gcc and the two builds in `dir` (`host`, `guest`; static with `extra = -static`).
fn setup(dir: &Path, extra: &[&str]) -> bool {
    if !is_root() {
        eprintln!("skipped: mount namespaces and chroot need root");
        return false;
    }
    if !gcc(dir, "host", HOST, extra) || !gcc(dir, "guest", GUEST, extra) {
        eprintln!("skipped: gcc cannot build the test programs ({extra:?})");
        return false;
    }
    true
}

/// `hrec report --stdio --sort dso,sym` with the build-id cache `cache`: each row's (share,
/// samples, symbol) for the shared object `dso`, and the whole output.
fn rows_of(dir: &Path, file: &str, cache: &Path, dso: &str) -> (Vec<(f64, u64, String)>, String) {
    let o = hrec_in(
        dir,
        &[
            "report",
            "--stdio",
            "-i",
            file,
            "--sort",
            "dso,sym",
            "--buildid-dir",
            cache.to_str().unwrap(),
        ],
    );
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let rows = out
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            match w[..] {
                [share, n, d, "[.]", ref sym @ ..] if d == dso => Some((
                    share.trim_end_matches('%').parse().ok()?,
                    n.parse().ok()?,
                    sym.join(" "),
                )),
                _ => None,
            }
        })
        .collect();
    (rows, out)
}

/// Of the rows of the program's file: the samples named (a function, not an address), those
/// named `want`, those named `host_spin` (the host build's own function), and all of them.
fn split(rows: &[(f64, u64, String)], want: &str) -> (u64, u64, u64, u64) {
    let sum = |f: &dyn Fn(&str) -> bool| rows.iter().filter(|r| f(&r.2)).map(|r| r.1).sum();
    (
        sum(&|s| !s.starts_with("0x")),
        sum(&|s| s == want),
        sum(&|s| s == "host_spin"),
        sum(&|_| true),
    )
}

/// Checks the two reports of a recording of the guest build: with the cache hrec filled,
/// the guest's file's functions for >= 99% of the file's samples (its spin loop for most,
/// the rest in the libc a static build carries) and the host's `host_spin` for none; with an
/// empty cache, none named from the host file and the reason in the resolution line.
fn check_reports(dir: &Path, file: &str, cache: &Path, dso: &str) {
    let (rows, out) = rows_of(dir, file, cache, dso);
    let (named, guest, host, all) = split(&rows, "guest_spin");
    assert!(all >= 20, "too few samples of {dso}:\n{out}");
    assert_eq!(host, 0, "the host file's function named:\n{out}");
    assert!(
        named as f64 >= 0.99 * all as f64,
        "{named} of {all} samples named:\n{out}"
    );
    // The spin loop is most of its CPU time (the wait for the stop file after it sleeps).
    assert!(
        guest as f64 >= 0.5 * all as f64,
        "{guest} of {all} samples in guest_spin:\n{out}"
    );
    let empty = dir.join("empty-cache");
    let (rows, out) = rows_of(dir, file, &empty, dso);
    let (named, _, _, all) = split(&rows, "guest_spin");
    assert!(all >= 20, "{out}");
    assert_eq!(named, 0, "named without the file:\n{out}");
    assert!(
        out.contains(&format!("% build-id mismatch ({dso})")),
        "no reason in the resolution line:\n{out}"
    );
    assert!(
        out.contains("is not the file that was recorded (another build"),
        "{out}"
    );
}

/// A process in its own mount namespace with the guest build bind-mounted over the host's
/// path, exited long before the report.
#[test]
fn a_process_in_another_mount_namespace_is_named_from_its_own_file() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    if !setup(dir, &[]) {
        return;
    }
    let app = dir.join("app");
    std::fs::create_dir(&app).unwrap();
    std::fs::copy(dir.join("host"), app.join("busy")).unwrap();
    let busy = app.join("busy");
    let stop = dir.join("stop");
    let script = |stop: &Path| {
        format!(
            "mount --bind {} {} && exec {} {SPIN} {}",
            dir.join("guest").display(),
            busy.display(),
            busy.display(),
            stop.display()
        )
    };
    let ok = Command::new("unshare")
        .args(["--mount", "--propagation", "private", "true"])
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        eprintln!("skipped: unshare --mount fails here");
        return;
    }
    let cache = dir.join("cache");
    let (ok, err) = record_until(
        dir,
        &[
            "record",
            "-o",
            "ns.hrec",
            "--buildid-dir",
            cache.to_str().unwrap(),
            "--",
            "unshare",
            "--mount",
            "--propagation",
            "private",
            "sh",
            "-c",
            &script(&stop),
        ],
        cached(&cache),
        &stop,
    );
    assert!(ok, "{err}");
    assert!(
        err.contains("1 file mapped from another mount namespace or root"),
        "{err}"
    );
    // The host's file is still at the path, another build.
    check_reports(dir, "ns.hrec", &cache, "busy");

    // -N: nothing copied; the samples stay unresolved, never the host's. (The process stops
    // after its first iterations: the stop file is there.)
    let nocache = dir.join("cache-n");
    let o = hrec_in(
        dir,
        &[
            "record",
            "-N",
            "-o",
            "n.hrec",
            "--buildid-dir",
            nocache.to_str().unwrap(),
            "--",
            "unshare",
            "--mount",
            "--propagation",
            "private",
            "sh",
            "-c",
            &script(&stop),
        ],
    );
    let (_, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(!nocache.exists(), "-N wrote the cache");
    let (rows, out) = rows_of(dir, "n.hrec", &nocache, "busy");
    assert_eq!(split(&rows, "guest_spin").0, 0, "{out}");
    assert!(out.contains("% build-id mismatch (busy)"), "{out}");
}

/// A chrooted process (static builds: the chroot holds nothing else) whose path inside the
/// chroot is the host's path of the other build. Its binary is stripped, its symbols in a
/// debug file under the chroot's `/usr/lib/debug/.build-id/`: copied into the cache too.
#[test]
fn a_chrooted_process_is_named_from_its_own_file() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    if !setup(dir, &["-static"]) {
        return;
    }
    // The path the chrooted process runs, `/<dir>/busy`, is on the host too, with the host
    // build there.
    let inside = dir.join("busy");
    std::fs::copy(dir.join("host"), &inside).unwrap();
    let root = dir.join("root");
    let in_root = root.join(inside.strip_prefix("/").unwrap());
    std::fs::create_dir_all(in_root.parent().unwrap()).unwrap();
    std::fs::copy(dir.join("guest"), &in_root).unwrap();
    let id = hrec::symbol::buildid_cache::read_build_id(&in_root).unwrap();
    let hex = hrec::symbol::buildid_cache::hex(&id);
    let debug = root.join(format!(
        "usr/lib/debug/.build-id/{}/{}.debug",
        &hex[..2],
        &hex[2..]
    ));
    std::fs::create_dir_all(debug.parent().unwrap()).unwrap();
    let split = Command::new("objcopy")
        .arg("--only-keep-debug")
        .arg(&in_root)
        .arg(&debug)
        .status()
        .is_ok_and(|s| s.success())
        && Command::new("strip")
            .arg("-s")
            .arg(&in_root)
            .status()
            .is_ok_and(|s| s.success());
    if !split {
        eprintln!("skipped: objcopy/strip (binutils) cannot split the debug file");
        return;
    }
    let cache = dir.join("cache");
    // The stop file as the chrooted process sees it, and as the test writes it.
    let (stop_in, stop) = ("/stop", root.join("stop"));
    let (ok, err) = record_until(
        dir,
        &[
            "record",
            "-o",
            "ch.hrec",
            "--buildid-dir",
            cache.to_str().unwrap(),
            "--",
            "chroot",
            root.to_str().unwrap(),
            inside.to_str().unwrap(),
            SPIN,
            stop_in,
        ],
        // The binary's copy comes first and its debug file's after it: the workload runs
        // until both are in the cache (stopping it at the first left the second to chance).
        || {
            hrec::symbol::buildid_cache::Cache::new(&cache)
                .debug_file(&id)
                .is_some()
        },
        &stop,
    );
    assert!(ok, "{err}");
    assert!(
        err.contains("1 file mapped from another mount namespace or root"),
        "{err}"
    );
    assert!(
        hrec::symbol::buildid_cache::Cache::new(&cache)
            .debug_file(&id)
            .is_some(),
        "the chroot's debug file was not copied"
    );
    check_reports(dir, "ch.hrec", &cache, "busy");
}

/// A JIT: code copied into anonymous executable memory, named by `/tmp/perf-<pid>.map` as
/// JITs write it, then waiting for the end of its standard input.
const JIT: &str = r#"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
int main(int c, char **v) {
    long n = atol(v[1]);
    /* movabs $n, %rax; 1: dec %rax; jnz 1b; ret */
    unsigned char code[] = {0x48, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0x48, 0xff, 0xc8, 0x75, 0xfb, 0xc3};
    memcpy(code + 2, &n, 8);
    unsigned char *p = mmap(0, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return 2;
    memcpy(p, code, sizeof code);
    char name[64];
    snprintf(name, sizeof name, "/tmp/perf-%d.map", getpid());
    FILE *f = fopen(name, "w");
    if (!f) return 3;
    fprintf(f, "%lx %zx jit_loop\n", (unsigned long)p, sizeof code);
    fclose(f);
    ((void (*)(void))p)();
    char b;
    while (read(0, &b, 1) > 0) {}
    return 0;
}
"#;

/// Iterations of the JIT's loop: most of the recording's CPU time, beside the start-up of
/// `unshare`, `sh` and `mount`.
const JIT_SPIN: &str = "400000000";

/// A JIT in its own pid and mount namespaces with a private `/tmp` (a tmpfs gone with the
/// namespace): its perf map is `/tmp/perf-1.map` there, its pid here another. hrec holds that
/// `/tmp` open while the process lives and stores the map in the recording, so the report,
/// after the namespace is gone, names the JIT's code.
#[test]
fn a_jit_in_another_namespace_is_named_from_its_own_perf_map() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    if !is_root() {
        eprintln!("skipped: pid and mount namespaces need root");
        return;
    }
    if !gcc(dir, "jit", JIT, &[]) {
        eprintln!("skipped: gcc cannot build the JIT");
        return;
    }
    let ok = Command::new("unshare")
        .args(["--mount", "--pid", "--fork", "--mount-proc", "true"])
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        eprintln!("skipped: unshare --pid --mount fails here");
        return;
    }
    // The binary is opened before /tmp (where the test's directory is) is covered, and run
    // through that descriptor.
    let script = format!(
        "exec 3<{} && mount -t tmpfs none /tmp && exec /proc/self/fd/3 {JIT_SPIN}",
        dir.join("jit").display()
    );
    let mut child = Command::new(env!("CARGO_BIN_EXE_hrec"))
        .args([
            "record",
            "-o",
            "jit.hrec",
            "--",
            "unshare",
            "--mount",
            "--pid",
            "--fork",
            "--mount-proc",
            "sh",
            "-c",
            &script,
        ])
        .current_dir(dir)
        .env_remove("HREC_SYSFS_ROOT")
        .env_remove("HREC_PROCFS_ROOT")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // hrec holds the JIT's /tmp (an fd whose link reads `/tmp`: hrec opens nothing else
    // there) once it has seen the JIT's code mapped.
    let fds = format!("/proc/{}/fd", child.id());
    await_cond("hrec to hold the JIT's /tmp", 120, || {
        std::fs::read_dir(&fds).is_ok_and(|d| {
            d.flatten()
                .any(|e| std::fs::read_link(e.path()).is_ok_and(|l| l == Path::new("/tmp")))
        })
    });
    drop(child.stdin.take());
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    let r = hrec_in(
        dir,
        &["report", "--stdio", "-i", "jit.hrec", "--sort", "sym"],
    );
    let (out, err) = text(&r);
    assert!(r.status.success(), "{err}");
    let share = |name: &str| -> f64 {
        out.lines()
            .filter(|l| !l.starts_with('#') && l.ends_with(name))
            .filter_map(|l| {
                l.split_whitespace()
                    .next()?
                    .trim_end_matches('%')
                    .parse::<f64>()
                    .ok()
            })
            .sum()
    };
    assert!(share("jit_loop") > 50.0, "the JIT's code not named:\n{out}");
}
