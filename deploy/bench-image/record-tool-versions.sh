#!/bin/sh
# Record the benchmark tools' versions into one file, at image build time.
#
# Usage: record-tool-versions.sh OUTPUT
#
# One line per tool, tab-separated:
#   TOOL <TAB> DEBIAN-PACKAGE-VERSION <TAB> FIRST LINE OF THE TOOL'S VERSION OUTPUT
# e.g.
#   sysbench	1.0.20+ds-5	sysbench 1.0.20
# The third column is what the host agent reports for the same tool in its host facts
# (`tool_versions`), so the two sides can be compared; the second is the exact build.
# Fails if a tool is missing or prints no version: an image without its tools must not build.
set -eu

out=${1:?usage: record-tool-versions.sh OUTPUT}
[ ! -d "$out" ] || { echo "$out is a directory" >&2; exit 1; }
tmp="$out.tmp"
trap 'rm -f "$tmp"' EXIT
: > "$tmp"
for tool in sysbench stress-ng fio hdparm iperf3 sockperf; do
    flag=--version
    [ "$tool" = hdparm ] && flag=-V
    bin=$(command -v "$tool" || command -v "/usr/sbin/$tool") || { echo "$tool: not installed" >&2; exit 1; }
    line=$("$bin" "$flag" 2>&1 | sed -n '/./{p;q;}')
    [ -n "$line" ] || { echo "$tool: printed no version" >&2; exit 1; }
    pkg=$(dpkg-query -W -f='${Version}' "$tool" 2>/dev/null || echo unknown)
    printf '%s\t%s\t%s\n' "$tool" "$pkg" "$line" >> "$tmp"
done
mv "$tmp" "$out"
