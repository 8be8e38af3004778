#!/usr/bin/env bash
# The everyday small recording, read once: hrec beside perf, each tool on its own recording of
# the same workload (python3 running scripts/workloads/pyhot.py about 1 s at 999 Hz, some
# 1,000-3,000 samples), in one run so the ratios share the machine's state:
#   - report:     perf report --stdio            vs hrec report --stdio
#   - script:     perf script                    vs hrec script
#   - annotate:   perf annotate --stdio SYM      vs hrec annotate --stdio SYM (SYM: the hottest
#                 function of hrec's report)
#   - flamegraph: perf script | inferno-collapse-perf | inferno-flamegraph (of a -g recording)
#                 vs hrec flamegraph (of its own -g recording)
#   - report of perf.data: perf report --stdio   vs hrec report --stdio, both of perf's file
#   - start-up:   a 100-sample recording (-c with cpu-clock) reported by each tool
# Times are the best of RUNS runs (wall clock, output to /dev/null), as a cold start is what
# is measured: the first run of each warms the page cache for both tools alike.
#
# Usage: scripts/bench-coldstart.sh [RUNS] [SECONDS]   (defaults: 5 runs, 1 s workload)
# Needs: perf, python3, inferno (installed with `cargo install inferno` when missing).
# Prints a markdown table to paste into docs/benchmarks.md.
set -euo pipefail
RUNS=${1:-5}
SECS=${2:-1}
cd "$(dirname "$0")/.."
command -v inferno-flamegraph >/dev/null || cargo install inferno --locked --quiet
for tool in perf python3 inferno-collapse-perf inferno-flamegraph; do
    command -v "$tool" >/dev/null || { echo "bench-coldstart: $tool is needed" >&2; exit 1; }
done
cargo build --release --quiet --bin hrec
python3 - "$RUNS" "$SECS" <<'PY'
import os, re, subprocess, sys, tempfile, time

runs, secs = int(sys.argv[1]), float(sys.argv[2])
root = os.getcwd()
hrec = os.path.join(root, "target/release/hrec")
python = os.path.realpath(sys.executable)
work = [python, os.path.join(root, "scripts/workloads/pyhot.py"), str(secs)]
tmp = tempfile.mkdtemp(prefix="hrec-bench-coldstart-")

def sh(cmd):
    p = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"bench-coldstart: {' '.join(cmd)} failed:\n{p.stderr[-2000:]}")
    return p

def best(cmd):
    ts = []
    for _ in range(runs + 1):
        t = time.monotonic()
        subprocess.run(cmd, cwd=tmp, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       check=True)
        ts.append(time.monotonic() - t)
    return min(ts[1:])

def samples_hrec(path):
    out = sh([hrec, "info", "-i", path]).stdout
    m = re.search(r"# samples : (\d+)", out)
    return int(m.group(1)) if m else 0

def samples_perf(path):
    out = sh(["perf", "report", "-i", path, "--stats"]).stdout
    m = re.search(r"SAMPLE events:\s+(\d+)", out.split(" stats:")[-1])
    return int(m.group(1)) if m else 0

sh(["perf", "record", "-q", "-e", "cpu-clock", "-F", "999", "-o", "p.data", "--"] + work)
sh([hrec, "record", "-q", "-e", "cpu-clock", "-F", "999", "-o", "h.hrec", "--"] + work)
sh(["perf", "record", "-q", "-e", "cpu-clock", "-F", "999", "-g", "-o", "pg.data", "--"] + work)
sh([hrec, "record", "-q", "-e", "cpu-clock", "-F", "999", "-g", "-o", "hg.hrec", "--"] + work)
tiny = [python, "-c", "x = 0\nfor i in range(3_000_000): x += i"]
sh(["perf", "record", "-q", "-e", "cpu-clock", "-c", "3000000", "-o", "pt.data", "--"] + tiny)
sh([hrec, "record", "-q", "-e", "cpu-clock", "-c", "3000000", "-o", "ht.hrec", "--"] + tiny)

top = sh([hrec, "report", "--stdio", "-i", "h.hrec", "--sort", "sym"]).stdout
sym = next(l.split("] ", 1)[1].strip() for l in top.splitlines()
           if l.strip() and not l.startswith("#") and "[.]" in l)

rows = [
    ("report", samples_perf("p.data"), samples_hrec("h.hrec"),
     ["perf", "report", "--stdio", "-i", "p.data"],
     [hrec, "report", "--stdio", "-i", "h.hrec"]),
    ("script", samples_perf("p.data"), samples_hrec("h.hrec"),
     ["perf", "script", "-i", "p.data"],
     [hrec, "script", "-i", "h.hrec"]),
    (f"annotate `{sym}`", samples_perf("p.data"), samples_hrec("h.hrec"),
     ["perf", "annotate", "--stdio", "-i", "p.data", sym],
     [hrec, "annotate", "--stdio", "-i", "h.hrec", sym]),
    ("flamegraph of -g", samples_perf("pg.data"), samples_hrec("hg.hrec"),
     ["sh", "-c", "perf script -i pg.data | inferno-collapse-perf | inferno-flamegraph > p.svg"],
     [hrec, "flamegraph", "-i", "hg.hrec", "-o", "h.svg"]),
    ("report of perf's perf.data", samples_perf("p.data"), samples_perf("p.data"),
     ["perf", "report", "--stdio", "-i", "p.data"],
     [hrec, "report", "--stdio", "-i", "p.data"]),
    ("start-up: report of ~100 samples", samples_perf("pt.data"), samples_hrec("ht.hrec"),
     ["perf", "report", "--stdio", "-i", "pt.data"],
     [hrec, "report", "--stdio", "-i", "ht.hrec"]),
]
print(f"python: {python}; workload {secs} s at 999 Hz; best of {runs} runs (after one warm-up); "
      f"{os.cpu_count()} CPUs")
print()
print("| case | perf samples | hrec samples | perf (ms) | hrec (ms) | perf / hrec |")
print("|---|---|---|---|---|---|")
for name, pn, hn, pcmd, hcmd in rows:
    tp, th = best(pcmd), best(hcmd)
    print(f"| {name} | {pn} | {hn} | {tp * 1e3:.1f} | {th * 1e3:.1f} | {tp / th:.2f}x |")
PY
