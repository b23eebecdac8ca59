# Shared by tests/test_cli_llm_arrival_groups*.sh (sourced, after
# cli_lib.sh): `arrival_case` runs llm with 2 shards per stage under
# "${launch[@]}" (empty: threads), reports it (JSON and text) and checks
# each group's summary with llm_arrival_groups.py.
l=(run llm --backend cpu --model tiny --input-min 4 --input-max 10 --output-min 4 --output-max 6
   --samples 12 --batch 4 --no-progress -q --tp 2)
late_us=100000

# arrival_case NAME EXPECT... -- OPTIONS...: EXPECT as llm_arrival_groups.py takes it.
arrival_case() {
  local name=$1 expects=()
  shift
  while [ "$1" != -- ]; do expects+=("$1"); shift; done
  shift
  "${launch[@]}" "$bin" "${l[@]}" "$@" -o "$work/$name.json" >"$work/$name.out" 2>&1 ||
    fail "$name: $(cat "$work/$name.out")"
  "$bin" report --format json -o "$work/$name.report.json" "$work/$name.json" ||
    fail "json report of $name"
  "$bin" report -o "$work/$name.txt" "$work/$name.json" || fail "text report of $name"
  python3 "$(dirname "${BASH_SOURCE[0]}")/llm_arrival_groups.py" "$work/$name.json" \
    "$work/$name.report.json" "$work/$name.txt" "$late_us" 2 "${expects[@]}" || fail "$name"
}
