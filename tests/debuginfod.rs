//! debuginfod (issue 32), against a real `debuginfod` (Debian's package, which `scripts/test`
//! installs) serving a directory of debug files and stripped binaries. The server listens on
//! every interface with no option to bind loopback only, so each test runs it, and hrec, in a
//! private network namespace (`unshare --net`) where only `lo` is up: nothing outside can reach
//! it and a fixed port never collides. Readiness is polled (the server scans its directory
//! about a second after it starts), never slept for.
//!
//! The fixture (`tests/fixtures/debuginfod/`) is a program and its shared library, both with
//! samples, both stripped of everything (`--strip-all`: no symbol table, no DWARF); their debug
//! files exist only on the server, and in a `--debug-dir` for the reference report.
//!
//! * With `DEBUGINFOD_URLS`, `report --sort sym,srcline` names the functions and lines it
//!   names with the debug files installed; with the binaries gone too (executables fetched);
//!   for perf's perf.data too, where perf is installed.
//!   The resolution line says what was fetched.
//! * Without it, nothing is contacted: the server logs no request from hrec.
//! * hrec and `debuginfod-find` share one cache, misses included, each way.
//! * An unreachable server (a closed port) costs one line and the run finishes; a server that
//!   accepts and never answers costs `DEBUGINFOD_TIMEOUT` once, not once per file, with a bar
//!   of files done on a terminal meanwhile (cleared after), none when stderr is not one.
//!
//! Each test says "skipped: ..." and passes where it cannot run: not root, no `unshare`, or
//! no `debuginfod`.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use support::stacks::{build, run};

const HREC: &str = env!("CARGO_BIN_EXE_hrec");

/// Why the tests cannot run here, if they cannot.
fn unable() -> Option<String> {
    if !support::privilege::is_root() {
        return Some("needs root (unshare --net)".into());
    }
    for tool in [
        "debuginfod",
        "debuginfod-find",
        "unshare",
        "ip",
        "bash",
        "objcopy",
    ] {
        let found = Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .output()
            .is_ok_and(|o| o.status.success());
        if !found {
            return Some(format!(
                "{tool} not installed (scripts/test installs debuginfod)"
            ));
        }
    }
    let netns = Command::new("unshare")
        .args(["--net", "ip", "link", "set", "lo", "up"])
        .output()
        .is_ok_and(|o| o.status.success());
    (!netns).then(|| "unshare --net does not work here".into())
}

/// The fixture, built and recorded in a temporary directory.
struct Fixture {
    dir: tempfile::TempDir,
    /// Build-ids (hex) of the program and the library.
    ids: [String; 2],
    /// perf recorded it too (`p.data`; perf's build-id cache in `perf-cache/`).
    perf: bool,
}

impl Fixture {
    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// `hrec report --sort sym,srcline` of the recording, run in the fixture's directory with
    /// no debuginfod and an empty perf build-id cache, plus `extra` arguments.
    fn report(&self, extra: &[&str]) -> String {
        self.report_of("r.hrec", extra)
    }

    /// [`Fixture::report`] of the recording `input`.
    fn report_of(&self, input: &str, extra: &[&str]) -> String {
        let o = Command::new(HREC)
            .args(["report", "-i", input, "--stdio", "--sort", "sym,srcline"])
            .args(extra)
            .current_dir(self.path())
            .env_remove("DEBUGINFOD_URLS")
            .env("PERF_BUILDID_DIR", self.path().join("perf-cache"))
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8(o.stdout).unwrap()
    }

    /// Runs `script` with bash in a new network namespace (only `lo`, up), in the fixture's
    /// directory, after helpers to start servers and await them. Its stdout; panics unless it
    /// succeeds.
    fn in_netns(&self, script: &str) -> String {
        let prelude = format!(
            r#"set -euo pipefail
ip link set lo up
HREC={HREC}
PROG_ID={prog}
LIB_ID={lib}
export PERF_BUILDID_DIR="$PWD/perf-cache"
unset DEBUGINFOD_URLS DEBUGINFOD_TIMEOUT DEBUGINFOD_MAXSIZE DEBUGINFOD_CACHE_PATH
trap 'for p in server-*.pid; do [ -e "$p" ] && kill -KILL "$(cat "$p")" 2>/dev/null; done; true' EXIT
# start PORT DIR: a debuginfod serving DIR's ELF files, its log in server-PORT.log.
start() {{
    debuginfod -d :memory: -p "$1" -c 1 -t 0 -g 0 -F "$2" >"server-$1.log" 2>&1 &
    echo $! >"server-$1.pid"
}}
# status PORT PATH: the HTTP status of a GET.
status() {{
    ( exec 3<>"/dev/tcp/127.0.0.1/$1" && printf 'GET %s HTTP/1.0\r\n\r\n' "$2" >&3 \
        && read -r _ code _ <&3 && echo "$code" ) 2>/dev/null || true
}}
# await PORT PATH CODE: polls until the server answers CODE (30 s at most).
await() {{
    for _ in $(seq 600); do
        [ "$(status "$1" "$2")" = "$3" ] && return 0
        sleep 0.05
    done
    echo "the server on port $1 never answered $3 for $2" >&2
    cat "server-$1.log" >&2
    return 1
}}
# requests PORT UA ID: how many requests for ID the server logged from that user agent.
# (UA and ID are patterns: '' for any.)
requests() {{ grep "UA:$2" "server-$1.log" | grep -c "/buildid/$3" || true; }}
report() {{ "$HREC" report -i r.hrec --stdio --sort sym,srcline; }}
"#,
            prog = self.ids[0],
            lib = self.ids[1],
        );
        let o = Command::new("unshare")
            .args(["--net", "bash", "-c"])
            .arg(format!("{prelude}\n{script}"))
            .current_dir(self.path())
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "netns script failed:\n{}\n{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8(o.stdout).unwrap()
    }

    fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.path().join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
    }
}

/// Builds the program and its library, records the program (hrec, cpu-clock), then strips
/// both and keeps their debug files in `srv/` (with the stripped binaries, for `/executable`)
/// and in `dbg/.build-id/`; `None` after saying why where it cannot run.
fn fixture() -> Option<Fixture> {
    if let Some(why) = unable() {
        eprintln!("skipped: {why}");
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    build(d, "debuginfod/spin.c", &["-shared", "-fPIC"])?;
    let rpath = format!("-Wl,-rpath,{}", d.display());
    let libdir = format!("-L{}", d.display());
    build(d, "debuginfod/prog.c", &[&libdir, "-lspin", &rpath])?;
    for sub in ["srv", "dbg", "gone", "empty", "perf-cache"] {
        std::fs::create_dir(d.join(sub)).unwrap();
    }
    let mut ids = Vec::new();
    for f in ["prog", "libspin.so"] {
        let out = run(d, "readelf", &["-n", f]);
        let id = out
            .lines()
            .find_map(|l| l.trim().strip_prefix("Build ID: "))
            .unwrap_or_else(|| panic!("{f} has no build-id: {out}"))
            .to_string();
        let debug = format!("srv/{f}.debug");
        run(d, "objcopy", &["--only-keep-debug", f, &debug]);
        let by_id: PathBuf = ["dbg", ".build-id", &id[..2], &format!("{}.debug", &id[2..])]
            .iter()
            .collect();
        std::fs::create_dir_all(d.join(by_id.parent().unwrap())).unwrap();
        std::fs::copy(d.join(&debug), d.join(&by_id)).unwrap();
        let stripped = format!("{f}.stripped");
        run(d, "objcopy", &["--strip-all", f, &stripped]);
        std::fs::rename(d.join(&stripped), d.join(f)).unwrap();
        std::fs::copy(d.join(f), d.join("srv").join(f)).unwrap();
        ids.push(id);
    }
    run(
        d,
        HREC,
        &[
            "record",
            "-F",
            "2000",
            "-e",
            "cpu-clock",
            "-o",
            "r.hrec",
            "--",
            "./prog",
            "600",
        ],
    );
    // perf's perf.data too, where perf is installed: its build-ids come from the file's
    // build-id feature.
    let perf = support::perf().is_some();
    if perf {
        let cache = d.join("perf-cache");
        run(
            d,
            "perf",
            &[
                "--buildid-dir",
                cache.to_str().unwrap(),
                "record",
                "-q",
                "-F",
                "2000",
                "-e",
                "cpu-clock",
                "-o",
                "p.data",
                "--",
                "./prog",
                "400",
            ],
        );
    }
    Some(Fixture {
        dir,
        ids: [ids[0].clone(), ids[1].clone()],
        perf,
    })
}

/// The report's rows (every line that is not a `#` comment), and its resolution line.
fn rows(report: &str) -> (Vec<&str>, &str) {
    let resolution = report
        .lines()
        .find(|l| l.starts_with("# resolved "))
        .unwrap_or_else(|| panic!("no resolution line:\n{report}"));
    let rows = report
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .collect();
    (rows, resolution)
}

#[test]
fn fetched_debug_files_name_functions_and_lines_as_installed_ones() {
    let Some(fx) = fixture() else { return };
    let installed = fx.report(&["--debug-dir", "dbg"]);
    let stripped = fx.report(&[]);
    let (want, res) = rows(&installed);
    assert!(
        res.starts_with("# resolved 100.0% "),
        "with the debug files installed: {res}"
    );
    assert!(
        want.iter()
            .any(|r| r.contains("spin_own") && r.contains("prog.c:"))
            && want
                .iter()
                .any(|r| r.contains("spin_lib") && r.contains("spin.c:")),
        "{installed}"
    );
    assert_ne!(rows(&stripped).0, want, "stripping changed nothing");

    fx.in_netns(
        r#"
start 8002 srv
start 8003 empty
for id in "$PROG_ID" "$LIB_ID"; do
    await 8002 "/buildid/$id/debuginfo" 200
    await 8002 "/buildid/$id/executable" 200
done
await 8003 /metrics 200

# Without DEBUGINFOD_URLS nothing is contacted.
report >none.txt
requests 8002 hrec "" >none.requests

# With it, the debug files are fetched.
DEBUGINFOD_URLS=http://127.0.0.1:8002 DEBUGINFOD_CACHE_PATH="$PWD/cache" report \
    >fetched.txt 2>fetched.err
# And from the cache on the next run: no request.
DEBUGINFOD_URLS=http://127.0.0.1:8002 DEBUGINFOD_CACHE_PATH="$PWD/cache" report >again.txt
requests 8002 hrec "" >fetched.requests

# perf's recording: the build-ids of its build-id feature.
if [ -e p.data ]; then
    DEBUGINFOD_URLS=http://127.0.0.1:8002 DEBUGINFOD_CACHE_PATH="$PWD/cache-perf" \
        "$HREC" report -i p.data --stdio --sort sym,srcline >perf-fetched.txt
fi

# With the binaries gone as well (perf's build-id cache holds none), the executables are
# fetched too.
mv prog libspin.so gone/
PERF_BUILDID_DIR="$PWD/empty" DEBUGINFOD_URLS=http://127.0.0.1:8002 \
    DEBUGINFOD_CACHE_PATH="$PWD/cache2" report >gone.txt
mv gone/prog gone/libspin.so .

# debuginfod-find finds what hrec fetched, without a request.
DEBUGINFOD_URLS=http://127.0.0.1:8002 DEBUGINFOD_CACHE_PATH="$PWD/cache" \
    debuginfod-find debuginfo "$PROG_ID" >find.txt
requests 8002 elfutils "$PROG_ID" >find.requests

# Misses are shared both ways (8003 serves nothing): debuginfod-find's miss of the library is
# not asked again by hrec, and hrec's miss of the program not again by debuginfod-find.
export DEBUGINFOD_URLS=http://127.0.0.1:8003 DEBUGINFOD_CACHE_PATH="$PWD/neg"
debuginfod-find debuginfo "$LIB_ID" >/dev/null 2>&1 || true
report >neg.txt
debuginfod-find debuginfo "$PROG_ID" >/dev/null 2>&1 || true
echo "$(requests 8003 "" "$LIB_ID") $(requests 8003 "" "$PROG_ID")" >neg.requests
"#,
    );

    // Nothing contacted without DEBUGINFOD_URLS; the same report as without any server.
    assert_eq!(fx.read("none.requests").trim(), "0");
    assert_eq!(fx.read("none.txt"), stripped);

    // Fetched: the names and lines of the installed debug files, and the line says so.
    let fetched = fx.read("fetched.txt");
    let (got, res) = rows(&fetched);
    assert_eq!(got, want, "{fetched}\n--- installed\n{installed}");
    assert!(
        res.starts_with("# resolved 100.0% ")
            && res.ends_with("; debuginfod: 2 debug files fetched from http://127.0.0.1:8002"),
        "{res}"
    );
    assert_eq!(
        fx.read("fetched.err"),
        "",
        "quiet when stderr is no terminal"
    );
    let again = fx.read("again.txt");
    assert_eq!(rows(&again).0, want);
    assert!(!again.contains("debuginfod:"), "{}", rows(&again).1);
    assert_eq!(fx.read("fetched.requests").trim(), "2", "each file once");
    for id in &fx.ids {
        let entry = fx.path().join("cache").join(id).join("debuginfo");
        let mode = std::os::unix::fs::PermissionsExt::mode(
            &std::fs::metadata(&entry).unwrap().permissions(),
        );
        assert_eq!(mode & 0o777, 0o400, "{}", entry.display());
    }

    if fx.perf {
        let installed = fx.report_of("p.data", &["--debug-dir", "dbg"]);
        let fetched = fx.read("perf-fetched.txt");
        let (got, res) = rows(&fetched);
        assert_eq!(
            got,
            rows(&installed).0,
            "perf.data:\n{fetched}\n{installed}"
        );
        assert!(
            res.ends_with("; debuginfod: 2 debug files fetched from http://127.0.0.1:8002"),
            "perf.data: {res}"
        );
    }

    // Binaries gone: executables fetched as well.
    let gone = fx.read("gone.txt");
    let (got, res) = rows(&gone);
    assert_eq!(got, want, "{gone}");
    assert!(
        res.ends_with(
            "; debuginfod: 2 debug files and 2 executables fetched from http://127.0.0.1:8002"
        ),
        "{res}"
    );

    // One cache with debuginfod-find.
    assert_eq!(
        fx.read("find.txt").trim(),
        fx.path()
            .join("cache")
            .join(&fx.ids[0])
            .join("debuginfo")
            .to_str()
            .unwrap()
    );
    assert_eq!(fx.read("find.requests").trim(), "0");
    assert_eq!(
        fx.read("neg.requests").trim(),
        "1 1",
        "each miss asked once"
    );
    let neg = fx.read("neg.txt");
    let (got, res) = rows(&neg);
    assert_eq!(got, rows(&stripped).0);
    assert!(
        res.ends_with(
            "; debuginfod: 1 not found at http://127.0.0.1:8003; 1 known missing (the cache's \
             negative entries)"
        ),
        "{res}"
    );
}

#[test]
fn an_unreachable_server_costs_one_line_and_the_timeout_once() {
    let Some(fx) = fixture() else { return };
    let stripped = fx.report(&[]);
    fx.in_netns(
        r#"
# Nothing listens on port 1: refused at once.
DEBUGINFOD_URLS=http://127.0.0.1:1 DEBUGINFOD_CACHE_PATH="$PWD/cache" report \
    >refused.txt 2>refused.err

# A server that accepts connections and never answers (stopped): DEBUGINFOD_TIMEOUT once,
# though two files are missing. On a terminal (script(1)'s), with the progress bar meanwhile.
start 8004 srv
await 8004 /metrics 200
kill -STOP "$(cat server-8004.pid)"
t0=$(date +%s%N)
DEBUGINFOD_TIMEOUT=2 DEBUGINFOD_URLS=http://127.0.0.1:8004 DEBUGINFOD_CACHE_PATH="$PWD/cache" \
    script -qfec "$HREC report -i r.hrec --stdio --sort sym,srcline >silent.txt" silent.tty \
    >/dev/null
echo $((($(date +%s%N) - t0) / 1000000)) >silent.ms
"#,
    );
    let (want, _) = rows(&stripped);
    let refused = fx.read("refused.txt");
    let (got, res) = rows(&refused);
    assert_eq!(got, want);
    assert!(
        res.ends_with(
            "; debuginfod: http://127.0.0.1:1 unreachable: connection refused; 2 files not \
             fetched"
        ),
        "{res}"
    );
    assert_eq!(fx.read("refused.err"), "");
    let others = |r: &str| {
        r.lines()
            .filter(|l| l.contains("debuginfod:") && !l.starts_with("# resolved "))
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    assert!(
        others(&refused).is_empty(),
        "one line: {:?}",
        others(&refused)
    );
    // Failures are not misses: no negative entries.
    assert!(!fx.path().join("cache").join(&fx.ids[0]).exists());

    let silent = fx.read("silent.txt");
    let (got, res) = rows(&silent);
    assert_eq!(got, want);
    assert!(
        res.ends_with(
            "; debuginfod: http://127.0.0.1:8004 unreachable: no answer within 2 s \
             (DEBUGINFOD_TIMEOUT); 2 files not fetched"
        ),
        "{res}"
    );
    assert!(
        others(&silent).is_empty(),
        "one line: {:?}",
        others(&silent)
    );
    // The bar of files done, drawn on the terminal while waiting, then cleared.
    let tty = fx.read("silent.tty");
    assert!(
        tty.contains("debuginfod: [") && tty.contains(" 0/2 files"),
        "{tty:?}"
    );
    let last = tty.rfind("debuginfod: [").unwrap();
    assert!(tty[last..].contains("\r\x1b[2K"), "not cleared: {tty:?}");
    let ms: u64 = fx.read("silent.ms").trim().parse().unwrap();
    assert!(
        (2000..3900).contains(&ms),
        "the report took {ms} ms with a 2 s timeout and two missing files"
    );
}
