#!/usr/bin/env bash
# The job lifecycle that every measuring command shares: an output that
# cannot be written is refused before anything is measured (in well under
# a second) and nothing is created; a usage error writes nothing and leaves
# an existing result file byte-identical; every list of workloads (help,
# the unknown-workload error) names every registered workload, llm too.
set -u
bin=$1
. "$(dirname "$0")/cli_lib.sh"

# A path under a regular file can never be created.
: >"$work/plain"
bad="$work/plain/result.json"

# refused_fast NAME ARGS...: exits non-zero in under a second, names the
# bad path, and creates nothing in the scratch directory.
refused_fast() {
  local name=$1
  shift
  local before after start end out rc
  before=$(find "$work" | sort)
  # The fastest of three tries: a loaded machine (CI, the sanitizer build)
  # may stall one; a command that measured first would take 30 s each time.
  local best=999999 try
  for try in 1 2 3; do
    start=$(date +%s%N)
    out=$("$bin" "$@" 2>&1)
    rc=$?
    end=$(date +%s%N)
    [ $(((end - start) / 1000000)) -lt "$best" ] && best=$(((end - start) / 1000000))
    [ "$best" -lt 1000 ] && break
  done
  after=$(find "$work" | sort)
  [ "$rc" != 0 ] || fail "$name: an unwritable output was accepted: $out"
  grep -q -- "--out" <<<"$out" || fail "$name: the error does not name --out: $out"
  grep -qF -- "$work/plain" <<<"$out" || fail "$name: the error does not name the path: $out"
  [ "$best" -lt 1000 ] || fail "$name: took $best ms (fastest of 3) to refuse an unwritable output"
  [ "$before" = "$after" ] || fail "$name: created files: $(diff <(echo "$before") <(echo "$after"))"
}

cpu=(--backend cpu --no-progress -q)
refused_fast run run voxelize "${cpu[@]}" --points 1M --clouds 8 --min-time 30 --out "$bad"
refused_fast scale scale voxelize "${cpu[@]}" --ranks 2 --min-time 30 --out "$bad"
refused_fast "scale llm" scale llm "${cpu[@]}" --ranks 2 --samples 1000 --out "$bad"
refused_fast suite suite "${cpu[@]}" --ranks 2 --min-time 30 --out "$work/plain/dir"
refused_fast coll coll all "${cpu[@]}" --ranks 2 -e 64M --out "$bad"
refused_fast plan plan "${cpu[@]}" --task '0:voxelize --points 1M --clouds 8' --min-time 30 \
  --out "$bad"
refused_fast p2p p2p -q --out "$bad"

# A usage error found after the options were parsed (the counts, an llm
# option that does not apply) leaves a good document untouched.
expect 0 "" -- run voxelize "${cpu[@]}" --points 2K --clouds 2 --iters 2 --runs 1 --out "$work/good.json"
cp "$work/good.json" "$work/good.copy"
expect 2 "option --counts" -- scale voxelize "${cpu[@]}" --ranks 2 --counts 1,4 --iters 2 \
  --out "$work/good.json"
expect 2 "do not apply to llm" -- run llm "${cpu[@]}" --iters 3 --out "$work/good.json"
expect 2 "--split proportional" -- scale llm "${cpu[@]}" --ranks 2 --split proportional \
  --out "$work/good.json"
cmp -s "$work/good.json" "$work/good.copy" || fail "a usage error changed an existing result file"

# Every registered workload in every list: the help of run, scale and suite,
# and the error for an unknown workload.
workloads=$("$bin" run --help | awk '/^Workloads:/{on=1; next} on && /^$/{exit} on {print $1}')
for w in voxelize resample fuse mlp llm; do
  grep -qx "$w" <<<"$workloads" || fail "run --help does not list workload $w: $workloads"
done
for command in scale suite; do
  listed=$("$bin" "$command" --help | awk '/^Workloads:/{on=1; next} on && /^$/{exit} on {print $1}')
  [ "$listed" = "$workloads" ] || fail "$command --help lists other workloads: $listed"
done
expect 2 "voxelize, resample, fuse, mlp, llm" -- run nosuch "${cpu[@]}"

[ "$failures" = 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "ok"
