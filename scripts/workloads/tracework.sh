#!/bin/sh
# A workload for scripts/bench-trace.sh: ROUNDS rounds of a small write (a system call the
# tracepoints see) and, every 1000 rounds, a short sleep (a context switch).
# Usage: sh scripts/workloads/tracework.sh ROUNDS
n=${1:-20000}
i=0
while [ "$i" -lt "$n" ]; do
    echo "$i" > /dev/null
    i=$((i + 1))
    if [ $((i % 1000)) -eq 0 ]; then
        sleep 0.001
    fi
done
