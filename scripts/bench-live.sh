#!/usr/bin/env bash
# The interactive views, measured beside their text or perf counterparts in one run:
#
#   1. report's view: the time from starting `hrec report --tui -i F` in a tmux terminal to
#      its first screen, against `hrec report --stdio -i F > /dev/null`, on a synthetic
#      perf.data of N samples (scripts/gen-perfdata.py; default 4,000,000, with call chains);
#   2. top: the CPU time `hrec top --stdio -F 999 -d 1` uses per second of wall time over
#      SECS seconds of a quiet machine, against `perf top --stdio -F 999 -d 1` for as long.
#
#   scripts/bench-live.sh [N] [SECS]
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-4000000}
secs=${2:-20}
cargo build --release --locked --bin hrec >/dev/null
hrec=$PWD/target/release/hrec
work=$(mktemp -d)
trap 'tmux kill-session -t hrec-bench 2>/dev/null || true; rm -rf "$work"' EXIT

python3 scripts/gen-perfdata.py "$n" "$work/big.data" --callchain >/dev/null
now() { date +%s.%N; }

# 1. The report's first screen vs the text report.
t0=$(now)
"$hrec" report --stdio -i "$work/big.data" >/dev/null 2>&1
t1=$(now)
stdio=$(echo "$t1 - $t0" | bc -l)
tmux kill-session -t hrec-bench 2>/dev/null || true
t0=$(now)
tmux new-session -d -s hrec-bench -x 120 -y 40 "$hrec report --tui -i $work/big.data 2>/dev/null; sleep 60"
until tmux capture-pane -p -t hrec-bench | grep -q "h:help"; do sleep 0.02; done
t1=$(now)
tui=$(echo "$t1 - $t0" | bc -l)
tmux kill-session -t hrec-bench
printf '| %s samples (perf.data, call chains) | report --stdio %.2f s | view first screen %.2f s | ratio %.2f |\n' \
    "$n" "$stdio" "$tui" "$(echo "$tui / $stdio" | bc -l)"

# 2. CPU use of the live top views, per second of wall time. Each runs in a tmux terminal
#    (perf top reads its keys from the terminal; with stdin not a terminal perf 6.1 spins on
#    it and samples nothing), stopped with SIGINT after SECS seconds.
cpu_of() {
    rm -f "$work/time"
    tmux new-session -d -s hrec-bench -x 120 -y 40 \
        "/usr/bin/time -f '%U %S %e' -o $work/time.tmp timeout --foreground -s INT $secs $* >/dev/null 2>&1; mv $work/time.tmp $work/time"
    until [ -s "$work/time" ]; do sleep 0.2; done
    tmux kill-session -t hrec-bench 2>/dev/null || true
    awk '/^[0-9]/ { printf "%.3f %.1f\n", $1 + $2, $3 }' "$work/time"
}
read -r hcpu hwall < <(cpu_of "$hrec" top --stdio -F 999 -d 1)
printf '| hrec top --stdio -F 999 -d 1 | %.2f s CPU in %.1f s | %.1f %% of one CPU |\n' \
    "$hcpu" "$hwall" "$(echo "$hcpu * 100 / $hwall" | bc -l)"
if command -v perf >/dev/null; then
    read -r pcpu pwall < <(cpu_of perf top --stdio -F 999 -d 1)
    printf '| perf top --stdio -F 999 -d 1 | %.2f s CPU in %.1f s | %.1f %% of one CPU |\n' \
        "$pcpu" "$pwall" "$(echo "$pcpu * 100 / $pwall" | bc -l)"
fi
