#!/usr/bin/env bash
# Tracepoints, side by side with perf on the same work.
#   1. recording: `perf record` and `hrec record` of the same tracepoints (system calls,
#      scheduling, the allocator) on the same workload (a shell loop of small writes and
#      sleeps, scripts/workloads/tracework.sh): wall time of the workload, the recorder's CPU
#      time, samples and bytes per sample.
#   2. reading perf's file: `perf script` vs `hrec script`, and `perf report --stdio --sort
#      trace` vs `hrec report --stdio --sort trace` (the default sort of such a file), wall
#      time and peak RSS (medians of RUNS runs).
# Usage (root: tracefs is root's by default): scripts/bench-trace.sh [RUNS] [ROUNDS]
#   (defaults: 3 runs, 20000 rounds of the workload's loop)
# Prints markdown tables to paste into docs/benchmarks.md.
set -euo pipefail
RUNS=${1:-3}
ROUNDS=${2:-20000}
cd "$(dirname "$0")/.."
for tool in perf python3; do
    command -v "$tool" >/dev/null || { echo "bench-trace: $tool is needed" >&2; exit 1; }
done
[ -r /sys/kernel/tracing/events/syscalls/sys_enter_write/id ] \
    || { echo "bench-trace: tracefs is not readable here (run as root)" >&2; exit 1; }
cargo build --release --quiet --bin hrec
python3 - "$RUNS" "$ROUNDS" <<'PY'
import os, resource, statistics, subprocess, sys, tempfile, time

runs, rounds = int(sys.argv[1]), int(sys.argv[2])
root = os.getcwd()
hrec = os.path.join(root, "target/release/hrec")
tmp = tempfile.mkdtemp(prefix="hrec-bench-trace-")
events = ("syscalls:sys_enter_write,syscalls:sys_exit_write,raw_syscalls:sys_enter,"
          "sched:sched_switch,sched:sched_wakeup,kmem:kmalloc,kmem:kfree")
work = ["sh", os.path.join(root, "scripts/workloads/tracework.sh"), str(rounds)]


def timed(cmd, out=subprocess.DEVNULL):
    """Wall seconds, the children's CPU seconds and peak RSS (KiB) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.monotonic()
    subprocess.run(cmd, cwd=tmp, stdout=out, stderr=subprocess.DEVNULL, check=True)
    wall = time.monotonic() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, after.ru_maxrss


def rss(cmd):
    """Peak RSS (KiB) of one run, through /usr/bin/time when it is there."""
    if not os.path.exists("/usr/bin/time"):
        return float("nan")
    r = subprocess.run(["/usr/bin/time", "-f", "%M"] + cmd, cwd=tmp,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    return int(r.stderr.strip().splitlines()[-1])


def samples(tool, f):
    out = subprocess.run([tool, "script", "-F", "event", "-i", f], cwd=tmp,
                         capture_output=True, text=True, check=True).stdout
    return len(out.splitlines())


rec = {"perf": [], "hrec": []}
for _ in range(runs):
    for tool, cmd in [
        ("perf", ["perf", "record", "-q", "-e", events, "-o", "t.perf.data", "--"] + work),
        ("hrec", [hrec, "record", "-q", "-e", events, "-o", "t.hrec", "--"] + work),
    ]:
        rec[tool].append(timed(cmd))
n_perf, n_hrec = samples("perf", "t.perf.data"), samples(hrec, "t.hrec")
size_perf = os.path.getsize(os.path.join(tmp, "t.perf.data"))
size_hrec = os.path.getsize(os.path.join(tmp, "t.hrec"))
med = lambda xs: statistics.median(xs)
print(f"Recording `{events}` of tracework.sh {rounds} (median of {runs}):\n")
print("| recorder | wall s | CPU s (recorder + workload) | samples | bytes/sample |")
print("| --- | --- | --- | --- | --- |")
for tool, n, size in [("perf record", n_perf, size_perf), ("hrec record", n_hrec, size_hrec)]:
    r = rec[tool.split()[0]]
    print(f"| {tool} | {med([x[0] for x in r]):.2f} | {med([x[1] for x in r]):.2f} "
          f"| {n} | {size / max(n, 1):.1f} |")

print(f"\nReading perf's file ({n_perf} samples, {size_perf / 1e6:.1f} MB), median of {runs}:\n")
print("| command | perf s | hrec s | ratio | perf RSS MB | hrec RSS MB |")
print("| --- | --- | --- | --- | --- | --- |")
for name, args in [
    ("script", ["script", "-i", "t.perf.data"]),
    ("report --sort trace", ["report", "--stdio", "--sort", "trace", "-i", "t.perf.data"]),
]:
    p = med([timed(["perf"] + args)[0] for _ in range(runs)])
    h = med([timed([hrec] + args)[0] for _ in range(runs)])
    print(f"| {name} | {p:.2f} | {h:.2f} | {h / p:.2f} | {rss(['perf'] + args) / 1024:.0f} "
          f"| {rss([hrec] + args) / 1024:.0f} |")
PY
