#!/usr/bin/env bash
# Peak memory (RSS) and wall time of `hrec report -i F` vs `perf report --stdio -i F` on big
# synthetic perf.data files (scripts/gen-perfdata.py: python3 samples in libpython, 2 CPUs,
# 4 threads, FINISHED_ROUND every 2,000 samples, 48 bytes per sample without callchains).
#
# Usage: scripts/bench-memory.sh [--with-callchain | --spread] [--hrec-format] [SIZES...]
#        (default sizes: 500000 4000000 20000000 samples)
# --spread: samples at any address of ~1,500 libpython functions (gen-perfdata.py --spread),
# so the distinct addresses grow with the size while the report's rows stay ~1,500 (files
# perfdata-N-spread.data); the default draws from 65,536 addresses in 400 functions.
# Environment:
#   RUNS=3       runs of each report per size; wall = median, peak RSS = max over the runs
#   DATA_DIR=D   keep the perf.data files in D and reuse the ones already there
#                (perfdata-N.data / perfdata-N-cc.data / perfdata-N-spread.data); default:
#                a new temp dir
#   KEEP=1       keep the files this run generated (default: delete them at the end)
#   HREC=path    the hrec binary to measure (default: target/release/hrec, built here)
#   SEED=S       gen-perfdata.py seed (default 1)
# --hrec-format also converts each file to hrec's own format (examples/perfdata_to_hrec: one
# block stream per CPU, as the recorder writes) and measures hrec report on that too.
# Each report runs in a fresh child with output to /dev/null; wall is measured around it and
# peak RSS is that child's ru_maxrss (os.wait4); its anonymous / file-backed split is sampled
# from /proc/PID/status every 5 ms. Page cache is warmed before the runs.
# Prints a markdown table, the RSS growth from the smallest size to each larger one, and a
# second table splitting the peaks into anonymous and file-backed memory.
set -euo pipefail
cd "$(dirname "$0")/.."
CC=""
SPREAD=""
HF=0
SIZES=()
for a in "$@"; do
    case "$a" in
        --with-callchain) CC=1 ;;
        --spread) SPREAD=1 ;;
        --hrec-format) HF=1 ;;
        -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
        *[!0-9]*|"") echo "bench-memory: bad size '$a'" >&2; exit 2 ;;
        *) SIZES+=("$a") ;;
    esac
done
[ ${#SIZES[@]} -gt 0 ] || SIZES=(500000 4000000 20000000)
if [ -n "$CC" ] && [ -n "$SPREAD" ]; then
    echo "bench-memory: --with-callchain and --spread do not go together" >&2
    exit 2
fi
# The files' name suffix: -cc, -spread or none.
SUF="${CC:+-cc}${SPREAD:+-spread}"
command -v perf >/dev/null || { echo "bench-memory: perf is needed" >&2; exit 1; }
if [ -z "${HREC:-}" ]; then
    cargo build --release --quiet --bin hrec
    HREC=target/release/hrec
fi
[ -x "$HREC" ] || { echo "bench-memory: no hrec binary at $HREC" >&2; exit 1; }

created_dir=""
if [ -z "${DATA_DIR:-}" ]; then
    DATA_DIR=$(mktemp -d "${TMPDIR:-/tmp}/hrec-bench-memory.XXXXXX")
    created_dir=$DATA_DIR
fi
mkdir -p "$DATA_DIR"

# Generate the missing files, after checking the disk has room for them.
generated=()
need=0
per_sample=48
[ -z "$CC" ] || per_sample=190  # measured: ~180 bytes with the generator's callchains
for n in "${SIZES[@]}"; do
    f="$DATA_DIR/perfdata-$n$SUF.data"
    [ -s "$f" ] || need=$((need + n * per_sample))
done
avail=$(( $(df -Pk "$DATA_DIR" | awk 'NR == 2 {print $4}') * 1024 ))
if [ "$need" -gt 0 ] && [ $((need + (1 << 30))) -gt "$avail" ]; then
    echo "bench-memory: need ~$((need >> 20)) MiB (+1 GiB spare) in $DATA_DIR," \
        "$((avail >> 20)) MiB free" >&2
    exit 1
fi
cleanup() {
    if [ "${KEEP:-0}" = 1 ]; then
        echo "bench-memory: files kept in $DATA_DIR" >&2
        return
    fi
    [ ${#generated[@]} -eq 0 ] || rm -f "${generated[@]}"
    [ -z "$created_dir" ] || rmdir "$created_dir" 2>/dev/null || true
}
trap cleanup EXIT
for n in "${SIZES[@]}"; do
    f="$DATA_DIR/perfdata-$n$SUF.data"
    [ -s "$f" ] && continue
    generated+=("$f")
    start=$(date +%s%N)
    python3 scripts/gen-perfdata.py "$n" "$f" --seed "${SEED:-1}" ${CC:+--callchain} ${SPREAD:+--spread} 2>/dev/null
    echo "bench-memory: generated $f ($(( $(stat -c %s "$f") / 1000000 )) MB)" \
        "in $(( ($(date +%s%N) - start) / 1000000 )) ms" >&2
done

if [ "$HF" = 1 ]; then
    cargo build --release --quiet --example perfdata_to_hrec
    for n in "${SIZES[@]}"; do
        f="$DATA_DIR/perfdata-$n$SUF.data"
        h="${f%.data}.hrec"
        [ -s "$h" ] && continue
        generated+=("$h")
        target/release/examples/perfdata_to_hrec "$f" "$h"
    done
fi

python3 - "$HREC" "$DATA_DIR" "${RUNS:-3}" "$SUF" "$HF" "${SIZES[@]}" <<'PY'
import os, statistics, subprocess, sys, tempfile, time

hrec, ddir, runs, suf, hf = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], \
    sys.argv[5] == "1"
sizes = [int(s) for s in sys.argv[6:]]
shape = {"-cc": "with callchains", "-spread": "no callchains, spread over every address",
         "": "no callchains"}[suf]

def status_mb(pid):
    """RssAnon and RssFile of a running process, in MB (None once it is gone)."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            v = {l.split(":")[0]: int(l.split()[1]) for l in fh if l.startswith("Rss")}
        return v.get("RssAnon", 0) / 1024, v.get("RssFile", 0) / 1024
    except (OSError, ValueError, IndexError):
        return None

def measure(cmd):
    """(wall s, peak RSS MB, peak anon MB, peak file-backed MB) of one run in a fresh child.
    Peak RSS is the child's ru_maxrss; anon/file peaks are sampled every 5 ms."""
    with tempfile.TemporaryFile() as err:
        t = time.monotonic()
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err)
        anon = filed = 0.0
        while True:
            pid, status, ru = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            s = status_mb(p.pid)
            if s:
                anon, filed = max(anon, s[0]), max(filed, s[1])
            time.sleep(0.005)
        wall = time.monotonic() - t
        p.returncode = os.waitstatus_to_exitcode(status)
        if p.returncode != 0:
            err.seek(0)
            sys.exit(f"bench-memory: {' '.join(cmd)} failed ({p.returncode}):\n"
                     f"{err.read().decode(errors='replace')[-2000:]}")
    return wall, ru.ru_maxrss / 1024, anon, filed  # ru_maxrss is in KiB on Linux

def fmt_n(n):
    return f"{n / 1e6:g}M" if n >= 1_000_000 else f"{n / 1e3:g}k"

rows = {}
for n in sizes:
    f = os.path.join(ddir, f"perfdata-{n}{suf}.data")
    with open(f, "rb") as fh:  # warm the page cache
        while fh.read(1 << 24):
            pass
    res = {"perf": [], "hrec": []}
    own = f[:-len(".data")] + ".hrec"
    if hf:
        res["own"] = []
        with open(own, "rb") as fh:
            while fh.read(1 << 24):
                pass
    for _ in range(runs):  # alternate the tools run by run
        res["perf"].append(measure(["perf", "report", "--stdio", "-i", f]))
        res["hrec"].append(measure([hrec, "report", "-i", f]))
        if hf:
            res["own"].append(measure([hrec, "report", "-i", own]))
    rows[n] = {k: (statistics.median(m[0] for m in v), max(m[1] for m in v),
                   max(m[2] for m in v), max(m[3] for m in v)) for k, v in res.items()}
    print(f"bench-memory: {fmt_n(n)} done", file=sys.stderr)

print(f"perf.data of N samples ({shape}); wall = median of {runs} "
      f"runs, peak RSS = max over them; {os.cpu_count()} CPUs; hrec = {hrec}")
print()
print("| size | perf wall (s) | perf peak RSS MB | hrec wall (s) | hrec peak RSS MB "
      "| RSS ratio hrec/perf | wall ratio hrec/perf |")
print("|---|---|---|---|---|---|---|")
for n in sizes:
    (pw, pr, _, _), (hw, hr, _, _) = rows[n]["perf"], rows[n]["hrec"]
    print(f"| {fmt_n(n)} | {pw:.2f} | {pr:.0f} | {hw:.2f} | {hr:.0f} | {hr / pr:.2f} "
          f"| {hw / pw:.2f} |")
print()
base = min(sizes)
for n in sorted(sizes):
    if n == base:
        continue
    for tool in ("hrec", "perf"):
        g = rows[n][tool][1] / rows[base][tool][1]
        print(f"{tool} RSS growth {fmt_n(base)}→{fmt_n(n)}: {g:.2f}x "
              f"({rows[base][tool][1]:.0f} → {rows[n][tool][1]:.0f} MB)")
if hf:
    print()
    print("hrec report of the same samples in hrec's own format (converted by "
          "examples/perfdata_to_hrec), against perf report of the perf.data:")
    print()
    print("| size | hrec file MB | hrec wall (s) | hrec peak RSS MB | RSS ratio to perf "
          "| wall ratio to perf |")
    print("|---|---|---|---|---|---|")
    for n in sizes:
        own = os.path.join(ddir, f"perfdata-{n}{suf}.hrec")
        (pw, pr, _, _), (ow, orss, _, _) = rows[n]["perf"], rows[n]["own"]
        print(f"| {fmt_n(n)} | {os.path.getsize(own) / 1e6:.1f} | {ow:.2f} | {orss:.0f} "
              f"| {orss / pr:.2f} | {ow / pw:.2f} |")
    base = min(sizes)
    print()
    for n in sorted(sizes):
        if n != base:
            g = rows[n]["own"][1] / rows[base]["own"][1]
            print(f"hrec (own format) RSS growth {fmt_n(base)}→{fmt_n(n)}: {g:.2f}x")
print()
print("Where the peak RSS is (sampled): anonymous vs file-backed (perf report mmaps the whole "
      "perf.data on 64-bit, so its RSS is mostly the file's pages)")
print()
print("| size | perf anon MB | perf file-backed MB | hrec anon MB | hrec file-backed MB |")
print("|---|---|---|---|---|")
for n in sizes:
    p, h = rows[n]["perf"], rows[n]["hrec"]
    print(f"| {fmt_n(n)} | {p[2]:.0f} | {p[3]:.0f} | {h[2]:.0f} | {h[3]:.0f} |")
PY
