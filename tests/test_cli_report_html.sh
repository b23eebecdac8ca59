#!/usr/bin/env bash
# The HTML report (with its gnuplot plots inline) loaded in a real headless
# browser: Debian's chromium must render it without console errors and the
# rendered DOM must hold the tables, the plots and the recommendations.
# Skips (exit 77) with the reason when chromium is not installed. $1 is the
# gpuscale binary.
set -u
bin=$1
data=$(cd "$(dirname "$0")/data/report" && pwd)
. "$(dirname "$0")/cli_lib.sh"

browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then
  echo "SKIP: chromium is not installed (apt-get install chromium; scripts/bootstrap does)"
  exit 77
fi

"$bin" report -f html --plots "$work/plots" --price H100=7 -o "$work/r.html" \
  "$data/strong.json" "$data/two_host.json" "$data/coll.json" 2>"$work/err" ||
  fail "html report failed: $(cat "$work/err")"
# Self-contained: no script, no stylesheet link, no reference but to "#id"
# inside the page (gnuplot's SVG markers).
grep -qE "<script|<link|url\(|(src|href)=['\"][^#]" "$work/r.html" &&
  fail "the HTML refers to something outside itself"

browser_dom "$browser" "$work/r.html" "$work/dom.html"

has() { grep -qF -- "$2" "$1" || fail "the rendered page lacks '$2'"; }
has "$work/dom.html" "<h1>gpuscale report</h1>"
has "$work/dom.html" "strong scaling (fixed total work"
has "$work/dom.html" "<td>node-b</td>"
has "$work/dom.html" "critical (straggler)"
has "$work/dom.html" "investigate the transport"
has "$work/dom.html" "why not 2.0x at 2 ranks"
has "$work/dom.html" "<figcaption>"
svgs=$(grep -o '<svg' "$work/dom.html" | wc -l)
[ "$svgs" -ge 7 ] || fail "the rendered page has $svgs inline SVG plots, expected at least 7"
pngs=$(ls "$work/plots"/*.png 2>/dev/null | wc -l)
[ "$pngs" -ge 7 ] || fail "--plots wrote $pngs PNG files, expected at least 7"

if [ "$failures" -ne 0 ]; then
  echo "$failures failure(s)"
  exit 1
fi
echo "HTML report rendered by $browser without errors"
