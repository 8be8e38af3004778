#!/usr/bin/env bash
# System-wide recording start-up next to perf's, several runs each (medians):
#   - `record -a -- true`: the whole run of each recorder (open an event per CPU, read the
#     running tasks from /proc, record nothing much, finish the file), wall time and peak RSS;
#   - /proc synthesis alone: hrec's own figure from `record -v` ("synthesized ... in X ms"),
#     perf's from `perf bench internals synthesize -t -m 1 -M 1` (perf's system-wide
#     synthesis, one thread, the code `perf record -a` runs), with the tasks on this machine.
#
# Usage: scripts/bench-system-wide.sh [RUNS]   (default 10)
# Needs: perf, /usr/bin/time, python3. Run from the repository root. Prints markdown tables to
# paste into docs/benchmarks.md.
set -euo pipefail
RUNS=${1:-10}
cd "$(dirname "$0")/.."
for tool in perf /usr/bin/time python3; do
    command -v "$tool" >/dev/null || { echo "bench-system-wide: $tool is needed" >&2; exit 1; }
done
cargo build --release --quiet --bin hrec
exec python3 - "$RUNS" <<'PY'
import os, re, statistics, subprocess, sys, tempfile

runs = int(sys.argv[1])
hrec = os.path.join(os.getcwd(), "target/release/hrec")
tmp = tempfile.mkdtemp(prefix="hrec-bench-sw-")
procs = sum(1 for p in os.listdir("/proc") if p.isdigit())
threads = sum(len(os.listdir(f"/proc/{p}/task")) for p in os.listdir("/proc")
              if p.isdigit() and os.path.isdir(f"/proc/{p}/task"))

def timed(cmd):
    """(wall s, peak RSS MB, stderr) of cmd under /usr/bin/time."""
    tfile = os.path.join(tmp, "time.txt")
    r = subprocess.run(["/usr/bin/time", "-o", tfile, "-f", "%e %M"] + cmd,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        sys.exit(f"bench-system-wide: {' '.join(cmd)} failed:\n{r.stderr}")
    wall, rss = open(tfile).read().split()[-2:]
    return float(wall), int(rss) / 1024, r.stderr

rows = {"perf": [], "hrec": []}
synth_hrec = []
for _ in range(runs):
    rows["perf"].append(timed(["perf", "record", "-q", "-a", "-o", f"{tmp}/p.data", "--", "true"])[:2])
    wall, rss, err = timed([hrec, "record", "-v", "-a", "-o", f"{tmp}/h.hrec", "--", "true"])
    rows["hrec"].append((wall, rss))
    m = re.search(r"synthesized .*: (\d+) processes, (\d+) threads, \d+ bytes in ([0-9.]+) ms", err)
    if m:
        synth_hrec.append(float(m.group(3)))

out = subprocess.run(["perf", "bench", "internals", "synthesize", "-t", "-m", "1", "-M", "1",
                      "-I", str(max(runs, 10))], capture_output=True, text=True).stdout
m = re.search(r"Average synthesis took: ([0-9.]+) usec", out)
synth_perf = float(m.group(1)) / 1000 if m else float("nan")

print(f"{procs} processes, {threads} threads on this machine, {os.cpu_count()} CPUs, {runs} runs\n")
print("| recorder | `record -a -- true` wall (s) | peak RSS (MB) | /proc synthesis (ms) |")
print("|---|---|---|---|")
med = lambda v: statistics.median(v) if v else float("nan")
print(f"| perf | {med([r[0] for r in rows['perf']]):.3f} | {med([r[1] for r in rows['perf']]):.1f} | {synth_perf:.1f} |")
print(f"| hrec | {med([r[0] for r in rows['hrec']]):.3f} | {med([r[1] for r in rows['hrec']]):.1f} | {med(synth_hrec):.1f} |")
PY
