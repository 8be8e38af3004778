#!/usr/bin/env bash
# The cost of recording metric groups (issue 42, "Cost"): `perf record`, `perf record -z` and
# `hrec record` on the same fixed work (`examples/hotspots`), with today's default event alone
# and with 1, 2 and 4 sampling-read groups, several times each; prints medians.
#
# A metric group is a leader that samples with PERF_SAMPLE_READ and read_format
# GROUP|ID|LOST|TOTAL_TIME_ENABLED|TOTAL_TIME_RUNNING, and counting members: every sample
# carries 24 + 24 * (events in the group) bytes of read values on top of the plain sample.
# This VM has no hardware PMU, so the groups are software events of the same shape:
#   - each group's sampling leader is cpu-clock at 4000 Hz, its members software counters
#     (task-clock, page-faults, context-switches, ...; repeated where the group has more
#     members than there are software events: both recorders and the kernel take duplicates);
#   - group sizes are those of Granite Rapids' `hrec record --td-level 3` plan, read from
#     `--dry-run` on the test fixture (the first 1, 2, 4 groups); 17, 8, 8, 8 events if the
#     fixture or ../shared/perfmon is missing;
#   - `-s` (both recorders) turns on TOTAL_TIME_ENABLED|TOTAL_TIME_RUNNING as the metric
#     plan does (it also sets inherit_stat, which only acts on threads and processes the
#     workload starts: none here);
#   - unlike hardware groups, which take turns on the counters (multiplexing), software
#     groups all run at once, so N groups give N times the samples: read per sample as well
#     as the totals;
#   - perf 6.1 turns `inherit` off for sample-read groups (it follows the started thread only;
#     hrec keeps inherit, which this kernel takes with PERF_SAMPLE_READ), so the workload is
#     started directly, without scripts/bench-record.sh's /usr/bin/time around it (a child
#     perf would not follow).
# Columns: recorder CPU = CPU of recorder + workload (wait4 rusage) minus the workload's own
# CPU, which is what `hotspots N times` reports for its two loops (schedstat's run time, what
# rusage is made from) plus its CPU outside them measured alone (median), so both
# recorders are charged the same way; CPU/sample = recorder CPU / samples; bytes per sample =
# output file size / samples in it (perf: `perf report --stats`, hrec: its summary line);
# read bytes/sample = the read values each sample carries, averaged over the groups.
#
# Usage: scripts/bench-metric-groups.sh [RUNS] [SECONDS]   (defaults: 5 runs, about 2 s of work)
# Needs: perf, python3. Run from the repository root. Prints a markdown table
# to paste into docs/benchmarks.md.
set -euo pipefail
RUNS=${1:-5}
SECS=${2:-2}
cd "$(dirname "$0")/.."
for tool in perf python3; do
    command -v "$tool" >/dev/null || { echo "bench-metric-groups: $tool is needed" >&2; exit 1; }
done
cargo build --release --quiet --bin hrec --example hotspots
exec python3 - "$RUNS" "$SECS" <<'PY'
import os, re, statistics, subprocess, sys, tempfile

runs, secs = int(sys.argv[1]), float(sys.argv[2])
root = os.getcwd()
hrec = os.path.join(root, "target/release/hrec")
# hotspots: scale 1 is about 0.4 s of fixed work on a 2-core VM.
# `times`: it prints the CPU time of its two loops (schedstat), nearly all of its own CPU.
fixed = [os.path.join(root, "target/release/examples/hotspots"), str(max(1, round(secs / 0.4))), "times"]
tmp = tempfile.mkdtemp(prefix="hrec-bench-mg-")
FREQ = 4000

def plan_sizes():
    """Events per group of Granite Rapids' --td-level 3 plan (hrec's own dry run on the fixture)."""
    env = dict(os.environ,
               HREC_SYSFS_ROOT=os.path.join(root, "tests/fixtures/sysfs/graniterapids"),
               HREC_PROCFS_ROOT=os.path.join(root, "tests/fixtures/procfs/graniterapids"))
    perfmon = os.path.join(root, "../shared/perfmon")
    p = subprocess.run([hrec, "record", "--perfmon", perfmon, "--td-level", "3", "--dry-run",
                        "--", "true"], env=env, capture_output=True, text=True)
    sizes = []
    for line in (p.stdout + p.stderr).splitlines():
        if not line.startswith("event #"):
            continue
        if "group leader none" in line:
            sizes.append(0)
        if sizes:
            sizes[-1] += 1
    if p.returncode != 0 or len(sizes) < 4:
        return [17, 8, 8, 8], "fallback (no fixture dry run)"
    return sizes, "Granite Rapids --td-level 3 plan"

sizes, origin = plan_sizes()
SOFT = ["task-clock", "page-faults", "context-switches", "cpu-migrations", "minor-faults",
        "major-faults", "alignment-faults", "emulation-faults", "cgroup-switches"]

def group(n_events):
    members = [SOFT[i % len(SOFT)] for i in range(n_events - 1)]
    return "{" + ",".join(["cpu-clock"] + members) + "}:S"

def run(cmd):
    """Runs cmd + the workload; returns (workload cpu by its own account, cpu of the whole tree, stderr)."""
    p = subprocess.Popen(cmd + fixed, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=tmp)
    err = p.stderr.read().decode(errors="replace")
    _, status, ru = os.wait4(p.pid, 0)
    if status != 0:
        sys.exit(f"bench-metric-groups: {' '.join(cmd + fixed)} failed ({status}):\n{err}")
    m = re.search(r"hotspots: cpu ns hot_multiply (\d+) hot_scan (\d+)", err)
    if not m:
        sys.exit(f"bench-metric-groups: no cpu line from hotspots in:\n{err}")
    return (int(m.group(1)) + int(m.group(2))) / 1e9, ru.ru_utime + ru.ru_stime, err

def perf_samples(path):
    out = subprocess.run(["perf", "report", "-i", path, "--stats"], capture_output=True,
                         text=True, cwd=tmp).stdout
    # Only the "Aggregated stats" section: the per-event sections count each group member's
    # value of a sample again.
    agg = out.split(" stats:")[1] if " stats:" in out else out
    m = re.search(r"SAMPLE events:\s+(\d+)", agg)
    samples = int(m.group(1)) if m else 0
    lost = sum(int(x) for x in re.findall(r"LOST(?:_SAMPLES)? events:\s+(\d+)", agg))
    return samples, lost

def hrec_samples(err):
    m = re.search(r"\((\d+) samples:.*?; (\d+) lost", err)
    if not m:
        sys.exit(f"bench-metric-groups: no hrec summary line in:\n{err}")
    return int(m.group(1)), int(m.group(2))

def measure(tool, extra, events, stat):
    rows = []
    for i in range(runs):
        out = os.path.join(tmp, f"out.{tool}")
        for f in (out, out + ".old"):
            if os.path.exists(f):
                os.remove(f)
        s = ["-s"] if stat else []
        if tool == "perf":
            cmd = ["perf", "record", "-q", "-e", events, "-F", str(FREQ), "-o", out] + s + extra + ["--"]
        else:
            cmd = [hrec, "record", "-e", events, "-F", str(FREQ), "-o", out] + s + extra + ["--"]
        loops, total, err = run(cmd)
        samples, lost = perf_samples(out) if tool == "perf" else hrec_samples(err)
        size = os.path.getsize(out)
        rcpu = total - (loops + startup)
        rows.append((loops + startup, rcpu, size / max(samples, 1), samples, lost, size,
                     rcpu / max(samples, 1) * 1e6))
    med = lambda k: statistics.median(r[k] for r in rows)
    return {"wcpu": med(0), "rcpu": med(1), "bps": med(2), "samples": med(3),
            "lost": max(r[4] for r in rows), "size": med(5), "us": med(6)}

# The workload's CPU outside its two loops (start, the 32 MiB buffer, exit), alone: added to
# what the loops report under each recorder to make the workload's own CPU.
alone = [run([]) for _ in range(runs)]
startup = statistics.median(total - loops for loops, total, _ in alone)
base = statistics.median(total for _, total, _ in alone)
ncpu = os.cpu_count()
print(f"workload: {' '.join(os.path.basename(w) for w in fixed)} (fixed work, one thread, "
      f"{base:.3f} s CPU alone, {startup:.3f} s of it outside the loops), {ncpu} CPUs, {runs} runs each, medians; every group leader "
      f"cpu-clock at {FREQ} Hz")
print(f"group sizes (events per group, {origin}): {', '.join(map(str, sizes))}\n")
configs = [("default (-e cpu-clock)", "cpu-clock", False, 0, 0)]
for n in (1, 2, 4):
    evs = sizes[:n]
    configs.append((f"{n} group{'s' if n > 1 else ''} ({'+'.join(map(str, evs))} events)",
                    ",".join(group(k) for k in evs), True, n, sum(evs)))
print("| recorder | events | read bytes/sample | workload CPU (s) | samples | recorder CPU (s) "
      "| CPU/sample (µs) | file (KB) | bytes/sample | lost |")
print("|---|---|---|---|---|---|---|---|---|---|")
res = {}
for label, events, stat, ngroups, nevents in configs:
    # Read values in each sample record: nr, time_enabled, time_running, then value, id and
    # lost for every event of the sampling group.
    rb = "-" if ngroups == 0 else f"{24 + 24 * nevents / ngroups:.0f}"
    for name, tool, extra in [("perf", "perf", []), ("perf -z", "perf", ["-z"]), ("hrec", "hrec", [])]:
        r = measure(tool, extra, events, stat)
        res[(name, ngroups)] = r
        print(f"| {name} | {label} | {rb} | {r['wcpu']:.3f} | {r['samples']:.0f} "
              f"| {r['rcpu']:.3f} | {r['us']:.1f} | {r['size']/1000:.1f} | {r['bps']:.2f} "
              f"| {r['lost']} |", flush=True)
print()
for n in (0, 1, 2, 4):
    h, p, pz = res[("hrec", n)], res[("perf", n)], res[("perf -z", n)]
    what = "default" if n == 0 else f"{n} group{'s' if n > 1 else ''}"
    print(f"{what}: hrec/perf recorder CPU {h['rcpu']/max(p['rcpu'], 1e-9):.2f}, "
          f"hrec/perf -z bytes per sample {h['bps']/max(pz['bps'], 1e-9):.2f}, "
          f"hrec bytes per sample x{h['bps']/max(res[('hrec', 0)]['bps'], 1e-9):.1f} of the default")
PY
