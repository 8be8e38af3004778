#!/usr/bin/env bash
# `hrec convert`, side by side with perf on the same files:
#   1. perf's JSON: `perf data convert --to-json` vs `hrec convert --to json` of one perf.data;
#   2. perf.data written again: `perf inject -i IN -o OUT` (perf's own rewrite of a file) vs
#      `hrec convert -i IN -o OUT`, of the same perf.data;
#   3. hrec's own recording of the same work as perf.data: `hrec convert` of it (no perf
#      counterpart: the row says what a user converting hrec's file pays).
# The recordings: `perf record` and `hrec record -e cpu-clock -F FREQ -g` of the hotspots
# example, SECS scaled; then the same on scripts/gen-perfdata.py's 1M samples with deep
# chains. Wall time and peak RSS, medians of RUNS runs.
# Usage: scripts/bench-convert.sh [RUNS] [SECS] [FREQ]   (defaults: 3 runs, 20, 20000 Hz)
# Prints markdown tables to paste into docs/benchmarks.md.
set -euo pipefail
RUNS=${1:-3}
SECS=${2:-20}
FREQ=${3:-20000}
cd "$(dirname "$0")/.."
for tool in perf python3; do
    command -v "$tool" >/dev/null || { echo "bench-convert: $tool is needed" >&2; exit 1; }
done
cargo build --release --quiet --bin hrec --example hotspots
python3 - "$RUNS" "$SECS" "$FREQ" <<'PY'
import os, shutil, statistics, subprocess, sys, tempfile, time

runs, secs, freq = int(sys.argv[1]), sys.argv[2], sys.argv[3]
root = os.getcwd()
hrec = os.path.join(root, "target/release/hrec")
work = [os.path.join(root, "target/release/examples/hotspots"), secs]
tmp = tempfile.mkdtemp(prefix="hrec-bench-convert-")


def run(cmd):
    subprocess.run(cmd, cwd=tmp, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   check=True)


def wall(cmd):
    t = time.monotonic()
    run(cmd)
    return time.monotonic() - t


def rss(cmd):
    """Peak RSS (KiB) of one run, through /usr/bin/time when it is there."""
    if not os.path.exists("/usr/bin/time"):
        return float("nan")
    r = subprocess.run(["/usr/bin/time", "-f", "%M"] + cmd, cwd=tmp,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    return int(r.stderr.strip().splitlines()[-1])


ev = ["-e", "cpu-clock", "-F", freq, "-g"]
run(["perf", "record", "-q"] + ev + ["-o", "p.data", "--"] + work)
run([hrec, "record", "-q"] + ev + ["-o", "h.data", "--"] + work)
med = statistics.median
size = lambda f: os.path.getsize(os.path.join(tmp, f)) / 1e6
n = len(subprocess.run(["perf", "script", "-F", "time", "-i", "p.data"], cwd=tmp,
                       capture_output=True, text=True).stdout.splitlines())
print(f"hotspots {secs}, `-e cpu-clock -F {freq} -g`: perf.data {size('p.data'):.1f} MB "
      f"({n} samples), hrec.data {size('h.data'):.1f} MB; median of {runs}:\n")
print("| work | perf | perf s | hrec s | ratio | perf RSS MB | hrec RSS MB |")
print("| --- | --- | --- | --- | --- | --- | --- |")
rows = [
    ("perf.data to JSON", ["perf", "data", "convert", "-f", "--to-json", "p.json", "-i", "p.data"],
     [hrec, "convert", "-f", "--to", "json", "-i", "p.data", "-o", "h.json"]),
    ("perf.data to perf.data", ["perf", "inject", "-i", "p.data", "-o", "p2.data"],
     [hrec, "convert", "-f", "-i", "p.data", "-o", "h2.data"]),
]
for name, p, h in rows:
    tp = med([wall(p) for _ in range(runs)])
    th = med([wall(h) for _ in range(runs)])
    print(f"| {name} | `{p[1]}{' ' + p[2] if p[1] == 'data' else ''}` | {tp:.2f} | {th:.2f} "
          f"| {th / tp:.2f} | {rss(p) / 1024:.0f} | {rss(h) / 1024:.0f} |")
h = [hrec, "convert", "-f", "-i", "h.data", "-o", "h3.data"]
th = med([wall(h) for _ in range(runs)])
print(f"| hrec.data to perf.data | (none) | | {th:.2f} | | | {rss(h) / 1024:.0f} |")

# Deep chains: scripts/gen-perfdata.py's 1M samples with 4..24-frame user chains in
# libpython, every frame named.
run([sys.executable, os.path.join(root, "scripts/gen-perfdata.py"), "1000000", "g.data",
     "--callchain"])
print(f"\nscripts/gen-perfdata.py 1000000 --callchain ({size('g.data'):.0f} MB), "
      f"median of {runs}:\n")
print("| work | perf | perf s | hrec s | ratio | perf RSS MB | hrec RSS MB |")
print("| --- | --- | --- | --- | --- | --- | --- |")
for name, p, h in [
    ("perf.data to JSON", ["perf", "data", "convert", "-f", "--to-json", "p.json", "-i", "g.data"],
     [hrec, "convert", "-f", "--to", "json", "-i", "g.data", "-o", "h.json"]),
    ("perf.data to perf.data", ["perf", "inject", "-i", "g.data", "-o", "p2.data"],
     [hrec, "convert", "-f", "-i", "g.data", "-o", "h2.data"]),
]:
    tp = med([wall(p) for _ in range(runs)])
    th = med([wall(h) for _ in range(runs)])
    print(f"| {name} | `{p[1]}{' ' + p[2] if p[1] == 'data' else ''}` | {tp:.2f} | {th:.2f} "
          f"| {th / tp:.2f} | {rss(p) / 1024:.0f} | {rss(h) / 1024:.0f} |")
same = subprocess.run(["cmp", "-s", "p.json", "h.json"], cwd=tmp).returncode == 0
print(f"\nThe two JSON files are {'identical' if same else 'NOT identical'}.")
shutil.rmtree(tmp)
PY
