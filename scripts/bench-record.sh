#!/usr/bin/env bash
# Records the same workload with `perf record`, `perf record -z` and `hrec record` at the same
# event and frequency, several times each, and prints (medians). The first table uses
# `examples/hotspots` (a fixed amount of work, so its wall time shows the slowdown); the
# high-rate table uses `examples/threads` (every CPU busy for a fixed time); a third table
# records python3 running scripts/workloads/pyhot.py (bytes per sample of an interpreter).
#   - workload slowdown: the workload's wall time under the recorder / alone;
#   - recorder CPU time: CPU of recorder + workload (wait4 rusage) minus the workload's own CPU
#     (measured by /usr/bin/time around the workload inside the recording), so both recorders
#     are charged the same way;
#   - bytes per sample: output file size / samples in it;
#   - lost samples.
# A second table pushes 100k samples/s across all CPUs (cpu-clock at max_sample_rate / CPUs
# per CPU, one busy thread per CPU) and reports losses.
#
# Usage: scripts/bench-record.sh [RUNS] [SECONDS]   (defaults: 5 runs, workloads of about 2 s)
# Needs: perf, /usr/bin/time, python3. Run from the repository root. Results are printed as a
# markdown table to paste into docs/benchmarks.md.
set -euo pipefail
RUNS=${1:-5}
SECS=${2:-2}
cd "$(dirname "$0")/.."
for tool in perf /usr/bin/time python3; do
    command -v "$tool" >/dev/null || { echo "bench-record: $tool is needed" >&2; exit 1; }
done
cargo build --release --quiet --bin hrec --example threads --example hotspots
exec python3 - "$RUNS" "$SECS" <<'PY'
import os, re, statistics, subprocess, sys, tempfile

runs, secs = int(sys.argv[1]), float(sys.argv[2])
root = os.getcwd()
hrec = os.path.join(root, "target/release/hrec")
# hotspots: scale 1 is about 0.4 s of fixed work on a 2-core VM.
fixed = [os.path.join(root, "target/release/examples/hotspots"), str(max(1, round(secs / 0.4)))]
timed = [os.path.join(root, "target/release/examples/threads"), str(secs)]
ncpu = os.cpu_count()
tmp = tempfile.mkdtemp(prefix="hrec-bench-")

def run(cmd, work):
    """Runs cmd; returns (wall of the workload, workload cpu, total cpu of cmd tree, stderr)."""
    tfile = os.path.join(tmp, "time.txt")
    full = cmd + ["/usr/bin/time", "-f", "%e %U %S", "-o", tfile] + work
    p = subprocess.Popen(full, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=tmp)
    err = p.stderr.read().decode(errors="replace")
    _, status, ru = os.wait4(p.pid, 0)
    if status != 0:
        sys.exit(f"bench-record: {' '.join(full)} failed ({status}):\n{err}")
    e, u, s = map(float, open(tfile).read().split()[-3:])
    return e, u + s, ru.ru_utime + ru.ru_stime, err

def perf_samples(path):
    out = subprocess.run(["perf", "report", "-i", path, "--stats"], capture_output=True,
                         text=True, cwd=tmp).stdout
    # Only the "Aggregated stats" section: the per-event sections repeat the same counts.
    agg = out.split(" stats:")[1] if " stats:" in out else out
    m = re.search(r"SAMPLE events:\s+(\d+)", agg)
    samples = int(m.group(1)) if m else 0
    lost = sum(int(x) for x in re.findall(r"LOST(?:_SAMPLES)? events:\s+(\d+)", agg))
    return samples, lost

def hrec_samples(err):
    m = re.search(r"\((\d+) samples:.*?; (\d+) lost", err)
    if not m:
        sys.exit(f"bench-record: no hrec summary line in:\n{err}")
    return int(m.group(1)), int(m.group(2))

def measure(name, freq, extra, work):
    rows = []
    for i in range(runs):
        out = os.path.join(tmp, f"out.{name}")
        for f in (out, out + ".old"):
            if os.path.exists(f):
                os.remove(f)
        if name.startswith("perf"):
            cmd = ["perf", "record", "-q", "-e", "cpu-clock", "-F", str(freq), "-o", out] + extra + ["--"]
        else:
            cmd = [hrec, "record", "-e", "cpu-clock", "-F", str(freq), "-o", out] + extra + ["--"]
        wall, wcpu, total, err = run(cmd, work)
        if name.startswith("perf"):
            samples, lost = perf_samples(out)
        else:
            samples, lost = hrec_samples(err)
        size = os.path.getsize(out)
        rows.append((wall, total - wcpu, size / max(samples, 1), samples, lost))
    med = lambda k: statistics.median(r[k] for r in rows)
    return {"wall": med(0), "rcpu": med(1), "bps": med(2), "samples": med(3), "lost": max(r[4] for r in rows)}

base = statistics.median(run([], fixed)[0] for _ in range(runs))
print(f"workload: {' '.join(os.path.basename(w) for w in fixed)} (fixed work, one thread), {ncpu} CPUs, {runs} runs each, medians\n")
print("| recorder | -F | workload wall (s) | slowdown | recorder CPU (s) | samples | bytes/sample | lost |")
print("|---|---|---|---|---|---|---|---|")
print(f"| none | - | {base:.3f} | 1.000 | - | - | - | - |")
res = {}
for name, extra in [("perf", []), ("perf -z", ["-z"]), ("hrec", [])]:
    r = measure(name.replace(" ", ""), 4000, extra, fixed)
    res[name] = r
    print(f"| {name} | 4000 | {r['wall']:.3f} | {r['wall']/base:.3f} | {r['rcpu']:.3f} | {r['samples']:.0f} | {r['bps']:.2f} | {r['lost']} |")
print()
print(f"hrec/perf recorder CPU: {res['hrec']['rcpu']/max(res['perf']['rcpu'],1e-9):.2f}; "
      f"hrec/perf -z bytes per sample: {res['hrec']['bps']/res['perf -z']['bps']:.2f}; "
      f"slowdown hrec {res['hrec']['wall']/base:.3f} vs perf {res['perf']['wall']/base:.3f}")
print()
# The interpreter: python3 (whatever `python3` is on PATH) spreads its samples over far more
# distinct ips than a busy loop; issue 33's bytes-per-sample figure is this one.
py = ["python3", os.path.join(root, "scripts/workloads/pyhot.py"), str(secs)]
print(f"workload: python3 pyhot.py {secs} (timed), cpu-clock at 4000 Hz\n")
print("| recorder | -F | recorder CPU (s) | samples | bytes/sample | lost |")
print("|---|---|---|---|---|---|")
pyres = {}
for name, extra in [("perf", []), ("perf -z", ["-z"]), ("hrec", [])]:
    r = measure(name.replace(" ", "") + "-py", 4000, extra, py)
    pyres[name] = r
    print(f"| {name} | 4000 | {r['rcpu']:.3f} | {r['samples']:.0f} | {r['bps']:.2f} | {r['lost']} |")
print()
print(f"python3: hrec/perf recorder CPU: {pyres['hrec']['rcpu']/max(pyres['perf']['rcpu'],1e-9):.2f}; "
      f"hrec/perf -z bytes per sample: {pyres['hrec']['bps']/pyres['perf -z']['bps']:.2f}")
print()
rate = int(open("/proc/sys/kernel/perf_event_max_sample_rate").read())
per_cpu = rate // ncpu
print(f"high rate: threads {secs} (4 threads + 1 child process, every CPU busy), cpu-clock -F {per_cpu} per CPU ({per_cpu * ncpu} samples/s across {ncpu} CPUs)\n")
print("| recorder | -F | samples | samples/s | lost |")
print("|---|---|---|---|---|")
for name in ["perf", "hrec"]:
    r = measure(name + "-hi", per_cpu, [], timed)
    print(f"| {name} | {per_cpu} | {r['samples']:.0f} | {r['samples']/r['wall']:.0f} | {r['lost']} |")
PY
