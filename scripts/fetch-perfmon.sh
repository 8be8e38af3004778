#!/usr/bin/env bash
# Downloads Intel's perfmon files that `hrec stat -M` reads (mapfile.csv, then the metric,
# core event and retire-latency JSON files mapfile.csv lists for this CPU, or for every CPU
# with --all) from github.com/intel/perfmon into ~/.cache/hrec/perfmon (BSD-3-Clause; the
# licence is fetched with them).
#
# Usage: scripts/fetch-perfmon.sh [--all] [--cpuid GenuineIntel-6-AD-1] [--dest DIR]
#                                 [--from URL_OR_DIR]
#   --from   a mirror: another URL base, or a local checkout of intel/perfmon (copied, not
#            downloaded; also how this script is tested without internet)
# Needs curl (for URLs) and python3.
set -euo pipefail
FROM=https://raw.githubusercontent.com/intel/perfmon/main
DEST=${HREC_PERFMON_DIR:-$HOME/.cache/hrec/perfmon}
CPUID=""
ALL=0
while [ $# -gt 0 ]; do
    case "$1" in
        --all) ALL=1 ;;
        --cpuid) CPUID=$2; shift ;;
        --dest) DEST=$2; shift ;;
        --from) FROM=$2; shift ;;
        -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
        *) echo "fetch-perfmon: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done
fetch() { # relative path -> $DEST/path
    mkdir -p "$(dirname "$DEST/$1")"
    if [ -d "$FROM" ]; then
        cp "$FROM/$1" "$DEST/$1" 2>/dev/null \
            || { echo "fetch-perfmon: $1 is not in $FROM" >&2; return 1; }
    else
        curl -fsSL --retry 2 "$FROM/$1" -o "$DEST/$1" \
            || { echo "fetch-perfmon: cannot download $FROM/$1" >&2; return 1; }
    fi
}
if [ -z "$CPUID" ] && [ "$ALL" = 0 ]; then
    CPUID=$(python3 - <<'PY'
info = {}
for line in open("/proc/cpuinfo"):
    if ":" in line:
        k, v = (x.strip() for x in line.split(":", 1))
        info.setdefault(k, v)
    if not line.strip() and info:
        break
print("%s-%s-%X-%s" % (info.get("vendor_id", "?"), info.get("cpu family", "?"),
                       int(info.get("model", "0")), info.get("stepping", "0")))
PY
)
fi
fetch mapfile.csv
fetch LICENSE || true
python3 - "$DEST/mapfile.csv" "$CPUID" "$ALL" <<'PY' > "$DEST/.wanted"
import csv, re, sys
path, cpuid, everything = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
wanted = set()
for row in csv.DictReader(open(path)):
    pattern = row["Family-model"]
    if everything or re.match(pattern + r"(-|$)", cpuid) or re.fullmatch(pattern, cpuid):
        wanted.add(row["Filename"].lstrip("/"))
for f in sorted(wanted):
    print(f)
PY
if [ ! -s "$DEST/.wanted" ]; then
    echo "fetch-perfmon: mapfile.csv lists no files for $CPUID (not an Intel CPU Intel publishes metrics for?)" >&2
    exit 1
fi
n=0
while read -r f; do
    fetch "$f" && n=$((n + 1))
done < "$DEST/.wanted"
rm -f "$DEST/.wanted"
echo "fetch-perfmon: $n files for ${CPUID:-every CPU} in $DEST"
