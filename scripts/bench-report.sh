#!/usr/bin/env bash
# Report speed, side by side with perf on recordings of the same runs.
#   1. srcline: python3 (libpython with full DWARF) running scripts/workloads/pyhot.py, recorded
#      by `perf record` and by `hrec record` at the same frequency; then
#      `perf report --stdio --sort sym,srcline` vs `hrec report --sort sym,srcline`.
#   2. throughput: examples/threads at a high rate (every CPU busy), recorded by both; then
#      plain `perf report --stdio` vs plain `hrec report`, in samples per second.
#   3. flame graph of the python3 recording: `perf script | inferno-collapse-perf |
#      inferno-flamegraph` vs `hrec flamegraph` (inferno's tools are installed with
#      `cargo install inferno` when missing).
#   4. size: wall time and peak RSS of both reports on synthetic perf.data files of 0.5M, 4M
#      and 20M samples written in perf's layout (scripts/gen-perfdata.py), and of hrec report
#      on the same samples in hrec's own format: scripts/bench-memory.sh --hrec-format (its
#      environment applies: DATA_DIR, KEEP, ...; SIZES="..." changes the sizes; SIZES=none
#      skips this part).
# Times are medians of RUNS runs of each report (wall clock, output to /dev/null).
#
# Usage: scripts/bench-report.sh [RUNS] [SECONDS]   (defaults: 3 runs, 4 s workloads)
# Needs: perf, python3 (ideally with a libpython that has DWARF, as pyenv builds it).
# Prints markdown tables to paste into docs/benchmarks.md.
set -euo pipefail
RUNS=${1:-3}
SECS=${2:-4}
cd "$(dirname "$0")/.."
command -v inferno-flamegraph >/dev/null || cargo install inferno --locked --quiet
for tool in perf python3 inferno-collapse-perf inferno-flamegraph; do
    command -v "$tool" >/dev/null || { echo "bench-report: $tool is needed" >&2; exit 1; }
done
cargo build --release --quiet --bin hrec --example threads
python3 - "$RUNS" "$SECS" <<'PY'
import os, re, statistics, subprocess, sys, tempfile, time

runs, secs = int(sys.argv[1]), float(sys.argv[2])
root = os.getcwd()
hrec = os.path.join(root, "target/release/hrec")
python = os.path.realpath(sys.executable)
pyhot = [python, os.path.join(root, "scripts/workloads/pyhot.py"), str(secs)]
threads = [os.path.join(root, "target/release/examples/threads"), str(secs)]
tmp = tempfile.mkdtemp(prefix="hrec-bench-report-")

def sh(cmd, **kw):
    p = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True, **kw)
    if p.returncode != 0:
        sys.exit(f"bench-report: {' '.join(cmd)} failed:\n{p.stderr[-2000:]}")
    return p

def timed(cmd):
    ts = []
    for _ in range(runs):
        t = time.monotonic()
        subprocess.run(cmd, cwd=tmp, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        ts.append(time.monotonic() - t)
    return statistics.median(ts)

def perf_samples(path):
    out = sh(["perf", "report", "-i", path, "--stats"]).stdout
    agg = out.split(" stats:")[1] if " stats:" in out else out
    m = re.search(r"SAMPLE events:\s+(\d+)", agg)
    return int(m.group(1)) if m else 0

def hrec_samples(err):
    m = re.search(r"\((\d+) samples", err)
    return int(m.group(1)) if m else 0

def record_both(name, work, freq):
    perf_data = os.path.join(tmp, f"{name}.perf.data")
    hrec_data = os.path.join(tmp, f"{name}.hrec")
    sh(["perf", "record", "-F", str(freq), "-e", "cpu-clock", "-o", perf_data, "--"] + work)
    err = sh([hrec, "record", "-F", str(freq), "-o", hrec_data, "--"] + work).stderr
    return perf_data, perf_samples(perf_data), hrec_data, hrec_samples(err)

has_dwarf = b".debug_info" in open(python, "rb").read() or any(
    b".debug_info" in open(os.path.join(d, f), "rb").read()
    for d in [os.path.join(os.path.dirname(os.path.dirname(python)), "lib")]
    if os.path.isdir(d)
    for f in os.listdir(d) if f.startswith("libpython") and ".so" in f)
print(f"python: {python} ({'with' if has_dwarf else 'WITHOUT'} DWARF); {runs} runs per report; "
      f"workloads {secs} s; {os.cpu_count()} CPUs")
print()

pd, pn, hd, hn = record_both("python", pyhot, 4000)
py_perf, py_perf_n, py_hrec, py_hrec_n = pd, pn, hd, hn
tp = timed(["perf", "report", "--stdio", "--sort", "sym,srcline", "-i", pd])
th = timed([hrec, "report", "--sort", "sym,srcline", "-i", hd])
print("| report --sort sym,srcline of python3 | samples | wall (s) | samples/s |")
print("|---|---|---|---|")
print(f"| perf report --stdio | {pn} | {tp:.3f} | {pn / tp:,.0f} |")
print(f"| hrec report | {hn} | {th:.3f} | {hn / th:,.0f} |")
print(f"\n* per sample, hrec is **{(tp / pn) / (th / hn):.1f}x** faster (wall {tp / th:.1f}x)")
print()

pd, pn, hd, hn = record_both("threads", threads, 50000)
th_perf, th_perf_n = pd, pn  # kept for the perf.data section at the end
tp = timed(["perf", "report", "--stdio", "-i", pd])
th = timed([hrec, "report", "-i", hd])
print("| plain report of threads at 50 kHz | samples | wall (s) | samples/s |")
print("|---|---|---|---|")
print(f"| perf report --stdio | {pn} | {tp:.3f} | {pn / tp:,.0f} |")
print(f"| hrec report | {hn} | {th:.3f} | {hn / th:,.0f} |")
print(f"\n* hrec report: **{hn / th / 1e6:.2f}M samples/s**; per sample {(tp / pn) / (th / hn):.1f}x perf")

# 3. flame graphs of the python3 recordings.
tp = timed(["sh", "-c", f"perf script -i {py_perf} | inferno-collapse-perf | inferno-flamegraph > perf.svg"])
th = timed([hrec, "flamegraph", "-i", py_hrec, "-o", "hrec.svg"])
print()
print("| flame graph of python3 | samples | wall (s) |")
print("|---|---|---|")
print(f"| perf script + inferno-collapse-perf + inferno-flamegraph | {py_perf_n} | {tp:.3f} |")
print(f"| hrec flamegraph | {py_hrec_n} | {th:.3f} |")
print(f"\n* hrec flamegraph: {th:.3f} s, {tp / th:.1f}x faster than the pipeline")

# 4. report of a perf.data file: the threads perf.data of section 2, read by both tools (hrec
#    reads perf.data itself: src/perfdata.rs), so both see exactly the same samples.
tp = timed(["perf", "report", "--stdio", "-i", th_perf])
th = timed([hrec, "report", "-i", th_perf])
print()
print("| report of a perf.data file (threads at 50 kHz) | samples | wall (s) | samples/s |")
print("|---|---|---|---|")
print(f"| perf report --stdio -i perf.data | {th_perf_n} | {tp:.3f} | {th_perf_n / tp:,.0f} |")
print(f"| hrec report -i perf.data | {th_perf_n} | {th:.3f} | {th_perf_n / th:,.0f} |")
print(f"\n* the same file: hrec takes {th / tp:.2f}x perf's time ({tp / th:.2f}x its speed)")
PY
if [ "${SIZES:-}" != none ]; then
    echo
    # shellcheck disable=SC2086  # SIZES is a list of numbers
    RUNS=$RUNS HREC=target/release/hrec scripts/bench-memory.sh --hrec-format ${SIZES:-500000 4000000 20000000}
fi
