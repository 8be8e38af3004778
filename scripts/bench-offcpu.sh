#!/usr/bin/env bash
# Off-CPU recording on a switch storm, hrec beside perf recording the same information: the
# switches with the stack each thread leaves with, and cpu-clock samples (4000 Hz).
#   - hrec record --off-cpu (-g, or --call-graph dwarf): switch records + context-switches
#     stacks in rings of their own, paired while recording; short intervals added up
#     (--off-cpu-thresh, default 1 ms), and with --off-cpu-thresh 0 every interval a sample;
#   - perf record -e cpu-clock -e sched:sched_switch --switch-events (-g, or --call-graph
#     dwarf): the tracepoint at every switch-out, switch records, one ring per CPU (what
#     hotspot records for its off-CPU view; perf's own --off-cpu needs a BPF build).
# Workload: examples/switchstorm ROUND_TRIPS (two threads ping-pong a byte through a socket
# pair, a third spins; a fixed amount of work). Per row, medians of RUNS runs:
#   - switches: the workload's own count of its threads' switches (/proc, voluntary +
#     involuntary), the same for both tools;
#   - switches/s under the recorder (the storm's rate, which the recorder slows);
#   - bytes per switch: output file size / switches;
#   - recorder CPU time: CPU of recorder + workload (wait4 rusage) minus the workload's own
#     CPU (/usr/bin/time around it inside the recording);
#   - cpu-clock kept: cpu-clock samples in the file / (4000 Hz x the workload's CPU seconds):
#     how many on-CPU samples survived the storm;
#   - lost: hrec: on-CPU samples lost / off-CPU records lost (its summary); perf: the lost
#     counts `perf report --stats` gives per event (cpu-clock's include the switch records
#     lost, which perf writes on that event) and LOST records.
# A second table picks the default threshold: a few workloads recorded with every interval a
# sample (--off-cpu-thresh 0, -g), and per threshold the share of intervals that would be
# aggregated, the share of off-CPU time that would keep direct (timed) samples, and the direct
# samples per second the file would get.
#
# Usage: scripts/bench-offcpu.sh [RUNS] [ROUND_TRIPS]   (defaults: 5 runs, 20000 round trips)
# Needs: root (or kernel.perf_event_paranoid <= 1) and tracefs for sched:sched_switch, perf,
# /usr/bin/time, python3. Run from the repository root. Prints markdown tables for
# docs/benchmarks.md.
set -euo pipefail
RUNS=${1:-5}
TRIPS=${2:-20000}
cd "$(dirname "$0")/.."
for tool in perf /usr/bin/time python3; do
    command -v "$tool" >/dev/null || { echo "bench-offcpu: $tool is needed" >&2; exit 1; }
done
cargo build --release --quiet --bin hrec --example switchstorm --example offcpu
exec python3 - "$RUNS" "$TRIPS" <<'PY'
import os, re, shutil, statistics, subprocess, sys, tempfile

runs, trips = int(sys.argv[1]), sys.argv[2]
root = os.getcwd()
hrec = os.path.join(root, "target/release/hrec")
work = [os.path.join(root, "target/release/examples/switchstorm"), trips]
tmp = tempfile.mkdtemp(prefix="hrec-bench-offcpu-")
HZ = 4000

def run_rusage(cmd):
    """Runs cmd + the timed workload; returns (workload stdout, workload wall, workload cpu,
    CPU of the whole tree from wait4, stderr)."""
    tfile = os.path.join(tmp, "time.txt")
    full = cmd + ["/usr/bin/time", "-f", "%e %U %S", "-o", tfile] + work
    p = subprocess.Popen(full, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp)
    out = p.stdout.read().decode()
    err = p.stderr.read().decode(errors="replace")
    _, status, ru = os.wait4(p.pid, 0)
    if status != 0:
        sys.exit(f"bench-offcpu: {' '.join(full)} failed ({status}):\n{err}")
    e, u, s = map(float, open(tfile).read().split()[-3:])
    return out, e, u + s, ru.ru_utime + ru.ru_stime, err

def switches(out):
    n = 0
    for l in out.splitlines():
        w = l.split()
        if w and w[0] == "switches":
            n += int(w[3]) + int(w[5])
    return n

def perf_stats(path):
    out = subprocess.run(["perf", "report", "-i", path, "--stats"], capture_output=True,
                         text=True, cwd=tmp).stdout
    agg, _, per = out.partition("cpu-clock stats:")
    m = re.search(r"LOST events:\s+(\d+)", agg)
    lost_records = int(m.group(1)) if m else 0
    def ev(section, what):
        m = re.search(what + r" events:\s+(\d+)", section)
        return int(m.group(1)) if m else 0
    clock, _, sw = per.partition("sched:sched_switch stats:")
    return {"clock": ev(clock, "SAMPLE"), "clock_lost": ev(clock, "LOST_SAMPLES"),
            "stacks_lost": ev(sw, "LOST_SAMPLES"), "lost_records": lost_records}

def hrec_stats(err):
    m = re.search(r"\((\d+) samples: cpu-clock (\d+);.*?; (\d+) lost", err)
    if not m:
        sys.exit(f"bench-offcpu: no hrec summary line in:\n{err}")
    off = re.search(r"kernel lost (\d+) off-CPU records", err)
    iv = re.search(r"off-CPU: (\d+) intervals", err)
    return {"clock": int(m.group(2)), "clock_lost": int(m.group(3)),
            "off_lost": int(off.group(1)) if off else 0,
            "intervals": int(iv.group(1)) if iv else 0}

def measure(name, cmd, out):
    rows = []
    for _ in range(runs):
        for f in (out, out + ".old"):
            if os.path.exists(f):
                os.remove(f)
        wout, wall, wcpu, total, err = run_rusage(cmd)
        n = max(switches(wout), 1)
        size = os.path.getsize(out)
        st = perf_stats(out) if name.startswith("perf") else hrec_stats(err)
        lost = (f"{st['clock_lost']} / {st['off_lost']}" if not name.startswith("perf")
                else f"{st['clock_lost']} / {st['stacks_lost']} ({st['lost_records']} LOST)")
        rows.append((n, n / wall, size / n, total - wcpu, st["clock"] / (HZ * wcpu), lost, size))
        os.remove(out)  # perf's dwarf files are hundreds of MB
    med = lambda k: statistics.median(r[k] for r in rows)
    worst = max(rows, key=lambda r: r[6])[5]
    return {"n": med(0), "rate": med(1), "bps": med(2), "rcpu": med(3), "kept": med(4),
            "lost": worst, "size": med(6)}

base = [run_rusage([]) for _ in range(runs)]
bsw = statistics.median(switches(b[0]) for b in base)
bwall = statistics.median(b[1] for b in base)
print(f"workload: switchstorm {trips} round trips, {os.cpu_count()} CPUs, {runs} runs each, medians "
      f"(alone: {bsw:.0f} switches, {bsw / bwall:.0f}/s)\n")
print("| recorder | switches | switches/s | bytes/switch | file (MB) | recorder CPU (s) | cpu-clock kept | lost: on-CPU / off-CPU |")
print("|---|---|---|---|---|---|---|---|")
rows = [
    ("hrec --off-cpu -g", [hrec, "record", "-g", "--off-cpu"]),
    ("hrec --off-cpu -g --off-cpu-thresh 0", [hrec, "record", "-g", "--off-cpu", "--off-cpu-thresh", "0"]),
    ("perf -g", ["perf", "record", "-q", "-g", "-e", "cpu-clock", "-e", "sched:sched_switch", "--switch-events"]),
    ("hrec --off-cpu --call-graph dwarf", [hrec, "record", "--call-graph", "dwarf", "--off-cpu"]),
    ("perf --call-graph dwarf", ["perf", "record", "-q", "--call-graph", "dwarf", "-e", "cpu-clock", "-e", "sched:sched_switch", "--switch-events"]),
]
res = {}
for name, cmd in rows:
    out = os.path.join(tmp, "out." + re.sub(r"\W+", "_", name))
    r = measure(name, cmd + ["-o", out, "--"], out)
    res[name] = r
    print(f"| {name} | {r['n']:.0f} | {r['rate']:.0f} | {r['bps']:.2f} | {r['size']/1e6:.3f} | {r['rcpu']:.3f} | {100*r['kept']:.0f}% | {r['lost']} |")
print()
for a, b in [("hrec --off-cpu -g", "perf -g"), ("hrec --off-cpu --call-graph dwarf", "perf --call-graph dwarf")]:
    ra, rb = res[a], res[b]
    print(f"{a} / {b}: bytes per switch {ra['bps']/rb['bps']:.4f}, recorder CPU {ra['rcpu']/max(rb['rcpu'],1e-9):.2f}")

# Part 2: the threshold.
loads = {
    "switchstorm": work,
    "examples/offcpu (sleeps, a lock, a join)": [os.path.join(root, "target/release/examples/offcpu")],
    "tar, gzip -1, wc (a pipeline)": ["sh", "-c", "tar cf - /usr/share/doc /usr/lib/python3* 2>/dev/null | gzip -1 | wc -c"],
    "python3, 4 threads hashing (GIL)": ["python3", "-c", "import threading,hashlib\ndef w():\n  for i in range(20000): hashlib.sha256(b'x'*256).digest()\nts=[threading.Thread(target=w) for _ in range(4)]\n[t.start() for t in ts]; [t.join() for t in ts]"],
    "git grep in this repository": ["git", "-C", root, "grep", "-c", "fn "],
}
TH = [0.1, 1, 10, 100, 500]
print()
print("Per threshold: intervals aggregated % / off-CPU time in direct samples % / direct samples per second")
print()
print("| workload | intervals | off-CPU s | " + " | ".join(f"{t:g} ms" for t in TH) + " |")
print("|---|---|---|" + "---|" * len(TH))
for name, cmd in loads.items():
    out = os.path.join(tmp, "thresh.hrec")
    r = subprocess.run([hrec, "record", "-q", "-g", "--off-cpu", "--off-cpu-thresh", "0", "-o", out, "--"] + cmd,
                       capture_output=True, text=True, cwd=tmp)
    if r.returncode != 0:
        sys.exit(f"bench-offcpu: {name} failed:\n{r.stderr}")
    s = subprocess.run([hrec, "script", "-i", out, "-F", "event,period,time", "-G", "--ns"],
                       capture_output=True, text=True, cwd=tmp).stdout
    per, times = [], []
    for m in re.finditer(r"(\d+\.\d+):\s+(\d+)\s+offcpu-time", s):
        times.append(float(m.group(1)))
        per.append(int(m.group(2)))
    if not per:
        sys.exit(f"bench-offcpu: no offcpu-time samples for {name}")
    dur = max(max(times) - min(times), 1e-3)
    tot = sum(per)
    cells = []
    for t in TH:
        ns = t * 1e6
        agg = sum(1 for p in per if p < ns)
        direct_t = sum(p for p in per if p >= ns)
        cells.append(f"{100*agg/len(per):.1f} / {100*direct_t/tot:.0f} / {(len(per)-agg)/dur:.0f}")
    print(f"| {name} | {len(per)} | {tot/1e9:.2f} | " + " | ".join(cells) + " |")
shutil.rmtree(tmp, ignore_errors=True)
PY
