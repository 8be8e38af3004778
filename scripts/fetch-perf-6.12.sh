#!/usr/bin/env bash
# Unpacks Debian's perf 6.12 (bookworm-backports' linux-perf, with its libtraceevent) into
# target/perf-6.12/ beside the system's perf 6.1, which stays the reference everywhere else.
# perf 6.8+ has data-type profiling (`annotate --data-type`), which tests/data_types.rs
# compares with hrec's when target/perf-6.12/perf runs. Nothing is installed system-wide.
# Usage: scripts/fetch-perf-6.12.sh   (exits non-zero, with a line why, when it cannot)
set -euo pipefail
cd "$(dirname "$0")/.."
dest=target/perf-6.12
if [ -x "$dest/perf" ]; then
    exit 0
fi
command -v apt-get >/dev/null || { echo "fetch-perf-6.12: apt-get not found" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lists/partial" "$work/cache/archives/partial"
printf '%s\n' "deb http://deb.debian.org/debian bookworm main" \
    "deb http://deb.debian.org/debian bookworm-backports main" >"$work/sources.list"
apt=(-q -o "Dir::Etc::SourceList=$work/sources.list" -o Dir::Etc::SourceParts=/dev/null
    -o "Dir::State::Lists=$work/lists" -o "Dir::Cache=$work/cache"
    -o Dir::State::status=/dev/null -o APT::Sandbox::User=root)
timeout 300 apt-get "${apt[@]}" update >/dev/null
(cd "$work" && timeout 300 apt-get "${apt[@]}" download 'linux-perf/bookworm-backports' libtraceevent1 >/dev/null)
mkdir -p "$dest.tmp"
for deb in "$work"/*.deb; do
    dpkg-deb -x "$deb" "$dest.tmp/root"
done
bin=$(cd "$dest.tmp/root/usr/bin" && ls perf* | head -1)
cat >"$dest.tmp/perf" <<WRAP
#!/bin/sh
here=\$(dirname "\$(readlink -f "\$0")")
LD_LIBRARY_PATH="\$here/root/usr/lib/x86_64-linux-gnu" exec "\$here/root/usr/bin/$bin" "\$@"
WRAP
chmod +x "$dest.tmp/perf"
rm -rf "$dest"
mv "$dest.tmp" "$dest"
"$dest/perf" --version
