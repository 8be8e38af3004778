#!/usr/bin/env bash
# Call graphs of programs without frame pointers (`--call-graph dwarf`), side by side with perf
# on the same workloads in one run:
#   1. recording: tests/fixtures/unwind/chain.c (built -O2 -fomit-frame-pointer, a fixed amount
#      of work through a shared library) alone, under `perf record --call-graph dwarf`,
#      `perf record -z --call-graph dwarf` and `hrec record --call-graph dwarf` (hrec unwinds
#      while recording and stores the chains): workload wall time and slowdown, bytes per
#      sample on disk, and how many of hrec's stacks reached the process root;
#   2. reporting: `perf report --stdio` vs `hrec report` (both with their defaults on a file
#      with call chains: Children and caller-order graph trees) on perf's own dwarf perf.data
#      of the C program, of tests/fixtures/names/book.cpp (C++ -O2) and of python3 running
#      scripts/workloads/pyhot.py for 20 s (~40k samples, deep interpreter stacks): wall time
#      (median of RUNS) and peak RSS (max), samples per second.
#
# Usage: scripts/bench-callgraph.sh [RUNS] [SCALE]   (defaults: 3 runs; scale 1: the C program
#        runs ~3 s, the C++ one ~3 s, python 20 s; the python perf.data is ~350 MB)
# Needs: perf, gcc, g++, python3. Prints markdown tables for docs/benchmarks.md.
set -euo pipefail
RUNS=${1:-3}
SCALE=${2:-1}
cd "$(dirname "$0")/.."
for tool in perf gcc g++ python3; do
    command -v "$tool" >/dev/null || { echo "bench-callgraph: $tool is needed" >&2; exit 1; }
done
cargo build --release --quiet --bin hrec
exec python3 - "$RUNS" "$SCALE" <<'PY'
import os, re, shutil, statistics, subprocess, sys, tempfile, time

runs, scale = int(sys.argv[1]), float(sys.argv[2])
root = os.getcwd()
hrec = os.path.join(root, "target/release/hrec")
tmp = tempfile.mkdtemp(prefix="hrec-bench-callgraph-")
fix = os.path.join(root, "tests/fixtures")

def sh(cmd, **kw):
    p = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True, **kw)
    if p.returncode != 0:
        sys.exit(f"bench-callgraph: {' '.join(cmd)} failed:\n{p.stderr}")
    return p

nofp = "-fomit-frame-pointer"
sh(["gcc", "-O2", "-g", nofp, "-shared", "-fPIC", "-o", "libhop.so", f"{fix}/unwind/hop.c"])
sh(["gcc", "-O2", "-g", nofp, "-o", "chain", f"{fix}/unwind/chain.c", f"-L{tmp}", "-lhop",
    f"-Wl,-rpath,{tmp}"])
sh(["g++", "-O2", "-g", "-o", "book", f"{fix}/names/book.cpp"])
chain = [os.path.join(tmp, "chain"), str(int(800000 * scale))]
python = os.path.realpath(sys.executable)
pyhot = [python, os.path.join(root, "scripts/workloads/pyhot.py"), str(20 * scale)]
book = [os.path.join(tmp, "book"), str(int(90000000 * scale))]

def timed(cmd):
    """Runs cmd with output discarded; (wall seconds, peak RSS in MB of the child tree's
    largest process, stderr)."""
    t = time.monotonic()
    p = subprocess.Popen(cmd, cwd=tmp, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = p.stderr.read().decode(errors="replace")
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - t
    if status != 0:
        sys.exit(f"bench-callgraph: {' '.join(cmd)} failed ({status}):\n{err}")
    return wall, ru.ru_maxrss / 1024, err

def workload_wall(prefix, work):
    """Runs `prefix + /usr/bin/time + work`; (the workload's own wall time, the prefix's
    stderr)."""
    tf = os.path.join(tmp, "time.txt")
    _, _, err = timed(prefix + ["/usr/bin/time", "-f", "%e", "-o", tf] + work)
    return float(open(tf).read().split()[-1]), err

def perf_samples(path):
    out = sh(["perf", "report", "-i", path, "--stats"]).stdout
    agg = out.split(" stats:")[1] if " stats:" in out else out
    m = re.search(r"SAMPLE events:\s+(\d+)", agg)
    return int(m.group(1)) if m else 0

# 1. Recording.
print(f"workload: chain {chain[1]} (-O2 -fomit-frame-pointer, one thread, fixed work), "
      f"cpu-clock -F 2000, {runs} runs each, medians\n")
base = statistics.median(workload_wall([], chain)[0] for _ in range(runs))
print("| recorder | workload wall (s) | slowdown | samples | bytes/sample | stacks to the root |")
print("|---|---|---|---|---|---|")
print(f"| none | {base:.3f} | 1.000 | - | - | - |")
for name, cmd in [
    ("perf --call-graph dwarf", ["perf", "record", "-q", "-e", "cpu-clock", "-F", "2000", "--call-graph", "dwarf"]),
    ("perf -z --call-graph dwarf", ["perf", "record", "-q", "-z", "-e", "cpu-clock", "-F", "2000", "--call-graph", "dwarf"]),
    ("hrec --call-graph dwarf", [hrec, "record", "-e", "cpu-clock", "-F", "2000", "--call-graph", "dwarf"]),
]:
    rows = []
    for i in range(runs):
        out = os.path.join(tmp, "rec.data")
        for f in (out, out + ".old"):
            if os.path.exists(f):
                os.remove(f)
        wall, err = workload_wall(cmd + ["-o", out, "--"], chain)
        if cmd[0] == "perf":
            samples, root_share = perf_samples(out), "-"
        else:
            m = re.search(r"\((\d+) samples:", err)
            samples = int(m.group(1)) if m else 0
            info = sh([hrec, "info", "-i", out]).stdout
            m = re.search(r"(\d+) of (\d+) stacks reached the process root", info)
            root_share = f"{100 * int(m.group(1)) / max(int(m.group(2)), 1):.1f}%" if m else "?"
        rows.append((wall, os.path.getsize(out) / max(samples, 1), samples, root_share))
    wall = statistics.median(r[0] for r in rows)
    bps = statistics.median(r[1] for r in rows)
    samples = statistics.median(r[2] for r in rows)
    print(f"| {name} | {wall:.3f} | {wall / base:.3f} | {samples:.0f} | {bps:.1f} | {rows[-1][3]} |")
print()

# 2. Reporting on perf's files.
print(f"report of perf's own `perf record --call-graph dwarf` file, defaults of each (Children, "
      f"caller graphs), output to /dev/null, {runs} runs: wall median, peak RSS max\n")
print("| workload | samples | file MB | perf report (s) | hrec report (s) | speed-up | perf RSS (MB) | hrec RSS (MB) | RSS ratio | perf samples/s | hrec samples/s |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for name, work in [("chain (C)", chain), ("book (C++)", book), ("pyhot (python3)", pyhot)]:
    data = os.path.join(tmp, f"{name.split()[0]}.perf.data")
    sh(["perf", "record", "-q", "-e", "cpu-clock", "-F", "2000", "--call-graph", "dwarf", "-o", data, "--"] + work)
    samples = perf_samples(data)
    res = {}
    for tool, cmd in [("perf", ["perf", "report", "--stdio", "-i", data]), ("hrec", [hrec, "report", "-i", data])]:
        timed(cmd)  # warm the page cache and the tool's caches
        rs = [timed(cmd) for _ in range(runs)]
        res[tool] = (statistics.median(r[0] for r in rs), max(r[1] for r in rs))
    (pw, pm), (hw, hm) = res["perf"], res["hrec"]
    print(f"| {name} | {samples} | {os.path.getsize(data) / 1e6:.1f} | {pw:.2f} | {hw:.3f} | {pw / hw:.1f}x | "
          f"{pm:.0f} | {hm:.0f} | {hm / pm:.2f} | {samples / pw:.0f} | {samples / hw:.0f} |")
    os.remove(data)
shutil.rmtree(tmp, ignore_errors=True)
PY
