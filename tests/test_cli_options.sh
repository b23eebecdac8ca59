#!/usr/bin/env bash
# Options composed per command (docs/cli.md, "Common options"): every option
# that a command's --help lists (taken from the completion data, which is
# rendered from the same tables) is accepted by that command's parser, never
# refused as "does not apply" or unknown; one meaning per short flag across
# all commands; -f/--format wherever a format is printed; --gpus as GPU
# ordinals and -g/--ngpus as a count, malformed values refused naming the
# option on this machine, GPU or not.
set -u
bin=$1
. "$(dirname "$0")/cli_lib.sh"

sentinel=--zz-not-an-option

# The arguments that reach the parser of the page KEY ("run/voxelize",
# "coll/", "help/") into the array `prefix`.
prefix_of() {
  local cmd=${1%%/*} operand=${1#*/}
  prefix=("$cmd")
  [ -n "$operand" ] && prefix+=("$operand")
  if [ -z "$operand" ]; then
    case $cmd in
      run | scale) prefix+=(voxelize) ;;
      coll) prefix+=(allreduce) ;;
    esac
  fi
  return 0
}

# accepted KEY OPTION KIND [CHOICE]: the option (with a value of its kind)
# followed by an unknown option: the parser must get past the option and
# stop at the sentinel, or refuse the value naming the option; it must not
# call the option unknown or say that it does not apply. Returns 1 (and
# says why in $why) when it does not.
accepted() {
  local key=$1 opt=$2 kind=$3 choice=${4:-} out rc
  local value=()
  case $kind in
    flag) ;;
    choice) value=("$choice") ;;
    path) value=("$work/out.json") ;;
    *) value=(1) ;;
  esac
  prefix_of "$key"
  out=$("$bin" "${prefix[@]}" "$opt" "${value[@]}" "$sentinel" 2>&1 </dev/null)
  rc=$?
  why=""
  if grep -qF -- "does not apply" <<<"$out"; then
    why="refused: $out"
  elif grep -qF -- "unknown option '$opt'" <<<"$out"; then
    why="unknown: $out"
  elif [ "$rc" != 2 ]; then
    why="exit $rc (expected the usage error of $sentinel or of the value): $out"
  elif ! grep -qE -- "unknown option '$sentinel'|option -[-a-z]" <<<"$out"; then
    why="neither the sentinel nor the option named: $out"
  fi
  [ -z "$why" ]
}

# The checker can fail: an option coll refuses, and one no command has.
accepted coll/ --runs value && fail "the checker accepts coll --runs"
accepted coll/ -f value && fail "the checker accepts coll -f"
accepted run/voxelize --no-such-option value && fail "the checker accepts an unknown option"
accepted exec/ -n value && fail "the checker accepts exec -n"

"$bin" completion bash >"$work/completion.bash" || fail "completion bash exited $?"
grep -E '^[a-z0-9-]+/[a-z0-9-]* -' "$work/completion.bash" | sort -u >"$work/options.txt"
checked=0
while read -r key opt kind first _; do
  case $opt in --help | -h) continue ;; esac
  [ "$key" = / ] && continue
  if ! accepted "$key" "$opt" "$kind" "$first"; then
    fail "${key%/} lists $opt in --help but its parser says: $why"
  fi
  checked=$((checked + 1))
done <"$work/options.txt"
# 16 pages with their operands' pages: some 400 option spellings.
[ "$checked" -ge 300 ] || fail "only $checked listed options checked"
echo "checked $checked listed options"

# One meaning per short flag: across every help page, each -x names one
# long option.
pages=$(cut -d' ' -f1 "$work/options.txt" | sort -u)
: >"$work/shorts.txt"
for key in $pages; do
  prefix_of "$key"
  "$bin" "${prefix[@]}" --help | grep -oE -- '^  -[a-zA-Z], --[a-z0-9-]+' |
    sed 's/^  //; s/,//' >>"$work/shorts.txt"
done
sort -u "$work/shorts.txt" >"$work/pairs.txt"
while read -r short n; do
  [ "$n" = 1 ] || fail "$short means $(grep -- "^$short " "$work/pairs.txt" | cut -d' ' -f2 | xargs)"
done < <(cut -d' ' -f1 "$work/pairs.txt" | uniq -c | awk '{print $2, $1}')
for pair in "-o --out" "-f --format" "-n --iters" "-w --warmup" "-g --ngpus" "-b --minbytes" \
            "-q --quiet"; do
  grep -qx -- "$pair" "$work/pairs.txt" || fail "no command lists '$pair'"
done
# --format has -f wherever a command prints one; info and version included.
for key in $pages; do
  prefix_of "$key"
  help=$("$bin" "${prefix[@]}" --help)
  if grep -qE -- '--format' <<<"$help" && grep -qE -- '^ +--format' <<<"$help"; then
    fail "${key%/} lists --format without -f"
  fi
done
expect 0 '"version": "' -- version -f json
expect 0 '"schema"' -- info -f json
expect 0 '^Host ' -- info -f text

# coll: nccl-tests' -o and -f are told where they went; -o is --out.
cpu=(--backend cpu --no-progress -q)
expect 2 "option -o/--out: 'sum' is a reduction.*--op sum" -- coll allreduce "${cpu[@]}" -o sum
expect 2 "option -f/--format does not apply to gpuscale coll: .*--stepfactor" -- coll allreduce "${cpu[@]}" -f 2
expect 0 "Wrong elements     : 0 OK" -- coll allreduce "${cpu[@]}" --ranks 2 -b 8 -e 64 -n 2 -w 1 -o "$work/c.json"
[ -s "$work/c.json" ] || fail "coll -o FILE wrote no result file"
expect 2 "unknown option '-b'" -- run llm -b 4

# --gpus takes ordinals, -g/--ngpus a count: usage errors name the option
# whether or not a GPU is present.
for bad in 0- 1-2-3 0,,1 , x 2-1 0,0 -1; do
  expect 2 "option --gpus: " -- run voxelize --gpus "$bad" --iters 1
done
expect 2 "option --gpus: '0-' is not a list of GPU ordinals" -- scale fuse --gpus 0-
expect 2 "option --ngpus: 0 is below the minimum 1" -- run voxelize -g 0
expect 2 "option --ngpus: 'two' is not" -- scale voxelize --ngpus two
expect 2 "options --gpus and --ngpus conflict" -- run voxelize --gpus 0 -g 1
expect 2 "options --ngpus and --ranks conflict" -- run voxelize -g 1 --ranks 2
expect 2 "option --gpus applies to the cuda backend" -- run voxelize --backend cpu --gpus 0
expect 2 "option --ngpus applies to the cuda backend" -- exec --backend cpu -g 2 -- true
expect 2 "option --gpus does not apply to gpuscale predict: .*--ngpus" -- predict --gpus 8 x.json
expect 2 "option DEVICES: '0-' is not a list" -- plan --backend cpu --task '0-:fuse'
if ! nvidia-smi -L >/dev/null 2>&1; then
  # No GPU here: a well-formed selection is unsupported (exit 1), saying why.
  expect 1 "option --gpus: " -- run voxelize --gpus 0 --iters 1
  expect 1 "option --ngpus: " -- run voxelize -g 1 --iters 1
fi

exit $((failures > 0))
