#!/usr/bin/env bash
# Annotating the hottest functions of one perf.data, perf next to hrec, several runs each
# (medians of wall time, the largest peak RSS). The perf.data is `perf record` of
# tests/fixtures/annotate/three.c (gcc -O2 -g: three hot functions), recorded once per run of
# this script so both tools read the same file.
#   - top 3: `perf annotate --stdio -s SYM` once per function (perf 6.1 annotates one symbol
#     per run, or all) against one `hrec annotate SYM1 SYM2 SYM3`;
#   - all: `perf annotate --stdio` against `hrec annotate`, every function with samples.
#
# Usage: scripts/bench-annotate.sh [RUNS] [WORK]   (defaults: 5 runs, 200000000 iterations)
# Needs: perf, gcc, /usr/bin/time, python3. Run from the repository root. Prints a markdown
# table to paste into docs/benchmarks.md.
set -euo pipefail
RUNS=${1:-5}
WORK=${2:-200000000}
cd "$(dirname "$0")/.."
for tool in perf gcc /usr/bin/time python3; do
    command -v "$tool" >/dev/null || { echo "bench-annotate: $tool is needed" >&2; exit 1; }
done
cargo build --release --quiet --bin hrec
tmp=$(mktemp -d /tmp/hrec-bench-annotate.XXXXXX)
gcc -O2 -g -o "$tmp/three" tests/fixtures/annotate/three.c
(cd "$tmp" && perf record -q -e cpu-clock -F 4000 -o p.data ./three "$WORK" >/dev/null)
exec python3 - "$RUNS" "$tmp" "$(pwd)/target/release/hrec" <<'PY'
import os, shutil, statistics, subprocess, sys, time

runs, tmp, hrec = int(sys.argv[1]), sys.argv[2], sys.argv[3]
data = os.path.join(tmp, "p.data")

def timed(cmd):
    """(wall s, peak RSS MB) of cmd, output discarded: the wall time on a monotonic clock
    around `/usr/bin/time` (whose own %e has 10 ms steps), the RSS from its %M (wait4's
    ru_maxrss of a child forked from this Python would include Python's pages)."""
    tfile = os.path.join(tmp, "time.txt")
    t = time.perf_counter()
    r = subprocess.run(["/usr/bin/time", "-o", tfile, "-f", "%M"] + cmd, cwd=tmp,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - t
    if r.returncode != 0:
        sys.exit(f"bench-annotate: {' '.join(cmd)} failed:\n{r.stderr}")
    return wall, int(open(tfile).read().split()[-1]) / 1024

# The top 3 user functions by samples, from hrec's report of the same file.
rep = subprocess.run([hrec, "report", "-i", data, "--sort", "sym", "--json"], capture_output=True,
                     text=True, check=True).stdout
import json
rows = json.loads(rep)["events"][0]["rows"]
top = [r["key"]["sym"][4:] for r in rows if r["key"]["sym"].startswith("[.] ")][:3]
samples = json.loads(rep)["events"][0]["samples"]

res = {k: [] for k in ["perf3", "hrec3", "perfall", "hrecall"]}
for _ in range(runs):
    ws = [timed(["perf", "annotate", "-i", data, "--stdio", "-s", s]) for s in top]
    res["perf3"].append((sum(w for w, _ in ws), max(m for _, m in ws)))
    res["hrec3"].append(timed([hrec, "annotate", "-i", data] + top))
    res["perfall"].append(timed(["perf", "annotate", "-i", data, "--stdio"]))
    res["hrecall"].append(timed([hrec, "annotate", "-i", data]))
med = lambda v: statistics.median(x[0] for x in v)
mx = lambda v: max(x[1] for x in v)
print(f"{samples} samples, top 3: {', '.join(top)}; {runs} runs\n")
print("| work | perf (s) | hrec (s) | speed-up | perf RSS (MB) | hrec RSS (MB) |")
print("|---|---|---|---|---|---|")
for name, p, h in [("top 3 functions", "perf3", "hrec3"), ("every function", "perfall", "hrecall")]:
    sp = med(res[p]) / med(res[h])
    print(f"| {name} | {med(res[p]):.4f} | {med(res[h]):.4f} | {sp:.1f}x | {mx(res[p]):.1f} | {mx(res[h]):.1f} |")
shutil.rmtree(tmp, ignore_errors=True)
PY
