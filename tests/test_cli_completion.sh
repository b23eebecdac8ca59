#!/usr/bin/env bash
# The generated shell completion, driven in bash as the shell would (set
# COMP_WORDS/COMP_CWORD, call the function, read COMPREPLY), and zsh's
# script checked for syntax; the man pages and the completion must offer
# exactly the options that --help lists. Also `gpuscale version --format
# json`. Usage: test_cli_completion.sh GPUSCALE_BINARY
bin=${1:?usage: test_cli_completion.sh GPUSCALE_BINARY}
source "$(dirname "$0")/cli_lib.sh"

"$bin" completion bash >"$work/gpuscale.bash" || fail "completion bash exited $?"
# shellcheck disable=SC1091
source "$work/gpuscale.bash"
complete -p gpuscale >/dev/null 2>&1 || fail "the bash script registers no completion for gpuscale"

# candidates WORD...: what TAB offers for the last word of "gpuscale WORD...".
# A trailing space in WORDS means an empty last word (TAB after a space).
candidates() {
  local words
  read -ra words <<<"$1"
  case $1 in "" | *" ") words+=("") ;; esac
  COMP_WORDS=(gpuscale "${words[@]}")
  COMP_CWORD=${#words[@]}
  COMPREPLY=()
  _gpuscale
  printf '%s\n' "${COMPREPLY[@]}"
}

# offers "WORDS" EXPECTED...: each EXPECTED is among the candidates.
offers() {
  local words=$1 got
  shift
  got=$(candidates "$words")
  for want in "$@"; do
    grep -qxF -- "$want" <<<"$got" || fail "gpuscale $words<TAB> does not offer $want: $(echo $got)"
  done
}

# exactly "WORDS" EXPECTED...: the candidates are EXPECTED, no more.
exactly() {
  local words=$1 got want
  shift
  got=$(candidates "$words" | sort)
  want=$(printf '%s\n' "$@" | sort)
  [ "$got" = "$want" ] || fail "gpuscale $words<TAB> offers $(echo $got), expected $(echo $want)"
}

offers "" run scale coll info report ingest compare version completion help
exactly "ru" run
offers "run " voxelize resample fuse mlp llm
exactly "run voxelize --mode " count occupancy mean max
exactly "run voxelize --backend c" cuda cpu
offers "run voxelize --" --points --clouds --backend --gpus --iters --split --gpu-mode --help
offers "scale mlp --" --scaling --counts --batch-sizes
exactly "scale fuse --scaling " strong weak
offers "coll " allreduce allgather reducescatter broadcast reduce alltoall sendrecv all
offers "coll allreduce -" --transport -b -e -g --stepfactor --backend
exactly "report --format " text markdown html csv json
exactly "ingest " mlperf nccl-tests
offers "ingest mlperf --" --hosts --out --quiet
offers "ingest nccl-tests --op " allreduce sendrecv
exactly "completion " bash zsh
exactly "version --format " text json
offers "help " run coll version
exactly "p2p --mode " all ce sm host latency
# A FILE value or a positional file completes file names.
touch "$work/result-a.json"
exactly "report --out $work/result-" "$work/result-a.json"
exactly "compare $work/result-" "$work/result-a.json"
# A value that is not a name (a count) offers nothing.
exactly "run voxelize --points "

# Every option --help lists is offered and is in the man page: the three
# come from the same tables.
man_dir="$work/man"
"$bin" help --man --out "$man_dir" || fail "help --man --out exited $?"
check_command() {
  local words=$1 page=$2 listed name
  # shellcheck disable=SC2086
  listed=$("$bin" $words --help | grep -oE -- '^  (-[a-zA-Z], )?--[a-z0-9-]+' | grep -oE -- '--[a-z0-9-]+')
  [ -n "$listed" ] || fail "gpuscale $words --help lists no options"
  for name in $listed; do
    offers "$words $name" "$name"
    grep -qF -- "\\fB\\-\\-${name#--}\\fR" "$man_dir/$page" ||
      fail "$page lacks $name (listed by gpuscale $words --help)"
  done
}
for c in info check p2p coll plan exec suite report compare predict help completion version; do
  check_command "$c" "gpuscale-$c.1"
done
for w in voxelize resample fuse mlp llm; do
  check_command "run $w" gpuscale-run.1
  check_command "scale $w" gpuscale-scale.1
done
check_command "ingest mlperf" gpuscale-ingest.1
check_command "ingest nccl-tests" gpuscale-ingest.1
for page in "$man_dir"/*.1; do
  command -v groff >/dev/null || break
  warnings=$(LC_ALL=C.UTF-8 MANWIDTH=80 groff -man -Tutf8 -ww -z "$page" 2>&1) ||
    fail "groff cannot render $page"
  [ -z "$warnings" ] || fail "groff warns on $page: $warnings"
done
[ "$(ls "$man_dir" | wc -l)" -eq 17 ] || fail "help --man --out wrote $(ls "$man_dir")"
expect 0 '\\fB\\-\\-points\\fR' -- help --man run
expect 2 "unknown command 'nope'" -- help --man nope
expect 2 "option --out: writes every manual page" -- help --out "$work/x"
expect 0 "usage: gpuscale run WORKLOAD" -- help run
expect 0 "Options of llm" -- help run llm

# zsh's script: the same data; syntax-checked where zsh is installed.
"$bin" completion zsh >"$work/_gpuscale" || fail "completion zsh exited $?"
head -1 "$work/_gpuscale" | grep -qx '#compdef gpuscale' || fail "the zsh script lacks #compdef"
if command -v zsh >/dev/null; then
  zsh -n "$work/_gpuscale" || fail "zsh -n rejects the zsh script"
fi
expect 2 "unknown shell 'fish'" -- completion fish

# The version as JSON, for fleet tooling.
"$bin" --version --format json >"$work/version.json" || fail "--version --format json exited $?"
python3 - "$work/version.json" <<'PY' || fail "version JSON: see above"
import json, sys
v = json.load(open(sys.argv[1]))
assert v["tool"] == "gpuscale" and v["version"].count(".") == 2, v
assert v["git_revision"], v
for part in ("cuda", "nccl", "mpi", "nvml", "gnuplot"):
    assert isinstance(v[part]["built_in"], bool), part
assert v["cuda"]["architectures"] and all(a for a in v["cuda"]["architectures"]), v["cuda"]
PY
expect 0 '^gpuscale [0-9]+\.[0-9]+\.[0-9]+ \(git ' -- version
expect 2 "option --format" -- version --format yaml

[ "$failures" = 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "all completion, man page and version tests passed"
