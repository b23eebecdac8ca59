#!/usr/bin/env bash
# Every nccl-tests output under tests/data/ingest/nccl-tests (text or JSON;
# bench/nccl-tests-outputs.sh writes more of them on a GPU machine) goes
# through ingest, report and compare, and the report's figures are checked
# against the raw lines: per size and form the time, algbw, busbw, data type,
# rank count and NCCL version, and busbw = algbw x the op's bus factor.
# Then the consistency check: the same document with one busbw halved is
# reported with the mismatch named (exit 1, the report still written), and
# compare calls it a regression (exit 3). $1 is the gpuscale binary.
set -u
bin=$1
data=$(cd "$(dirname "$0")/data/ingest/nccl-tests" && pwd)
. "$(dirname "$0")/cli_lib.sh"

# The collective a file's name starts with (for outputs without the
# "# Collective test starting" line, which need --op).
op_of_name() {
  case $(basename "$1") in
    all_reduce*) echo allreduce ;;
    all_gather*) echo allgather ;;
    reduce_scatter*) echo reducescatter ;;
    alltoall*) echo alltoall ;;
    broadcast*) echo broadcast ;;
    sendrecv*) echo sendrecv ;;
    reduce*) echo reduce ;;
    *) echo unknown ;;
  esac
}

checked=0
for f in "$data"/*.txt "$data"/*.json; do
  [ -e "$f" ] || continue
  name=$(basename "$f")
  doc=$work/$name.doc.json
  if ! "$bin" ingest nccl-tests -q -o "$doc" "$f" >"$work/log" 2>&1; then
    grep -q -- "--op" "$work/log" || { fail "ingest $name: $(cat "$work/log")"; continue; }
    "$bin" ingest nccl-tests -q --op "$(op_of_name "$f")" -o "$doc" "$f" >"$work/log" 2>&1 ||
      { fail "ingest --op $(op_of_name "$f") $name: $(cat "$work/log")"; continue; }
  fi
  "$bin" report -f json -o "$work/$name.report.json" "$doc" >"$work/log" 2>&1 ||
    { fail "report of $name exited non-zero: $(cat "$work/log")"; continue; }
  "$bin" report -o "$work/$name.report.txt" "$doc" >"$work/log" 2>&1 || fail "text report of $name: $(cat "$work/log")"
  "$bin" report -f csv -o "$work/$name.report.csv" "$doc" >"$work/log" 2>&1 || fail "csv report of $name: $(cat "$work/log")"
  grep -q "busbw check" "$work/$name.report.txt" || fail "$name: the text report has no busbw check column"
  python3 - "$f" "$work/$name.report.json" "$work/$name.report.csv" <<'PY' || fail "$name: the report differs from the raw output"
import csv, json, re, sys

raw_path, report_path, csv_path = sys.argv[1:4]
report = json.load(open(report_path))
rows = [r for s in report["series"] for r in s["rows"]]
assert rows, "no rows in the report"

# The raw output: per (bytes, in_place) time (us), algbw and busbw (GB/s).
raw, ranks, version = {}, None, None
if raw_path.endswith(".json"):
    d = json.load(open(raw_path))
    # One entry per process (its first rank), each of nthreads x ngpus ranks.
    c = d["config"]
    ranks = len(c["devices"]) * c["nthreads"] * c["ngpus"]
    code = d.get("nccl_version")
    if isinstance(code, int):
        version = "%d.%d.%d" % (code // 10000, code % 10000 // 100, code % 100)
    for r in d["results"]:
        for key, in_place in (("out_of_place", False), ("in_place", True)):
            h = r.get(key)
            if h:
                raw[(r["size"], in_place)] = (r["type"], h["time"], h["alg_bw"], h["bus_bw"])
else:
    ranks = 0
    for line in open(raw_path, errors="replace"):
        if re.match(r"#\s+Rank\s+\d+ ", line):
            ranks += 1
        m = re.search(r"nccl-library=(\d+)", line)
        if m:
            code = int(m.group(1))
            version = "%d.%d.%d" % (code // 10000, code % 10000 // 100, code % 100)
        m = re.match(r"NCCL version (\d+\.\d+\.\d+)", line)
        if m and not version:
            version = m.group(1)
        t = line.split()
        if line.startswith("#") or len(t) < 9 or not t[0].isdigit() or not t[1].isdigit():
            continue
        assert len(t) == 13, "a table row of %d columns: %s" % (len(t), line)
        raw[(int(t[0]), False)] = (t[2], float(t[5]), float(t[6]), float(t[7]))
        raw[(int(t[0]), True)] = (t[2], float(t[9]), float(t[10]), float(t[11]))
assert raw, "no table rows in the raw output"

def close(a, b):
    return abs(a - b) <= 1e-9 * max(abs(a), abs(b), 1e-30)

seen = set()
for r in rows:
    c = r["collective"]
    key = (int(c["bytes"]), c["in_place"])
    assert key in raw, "report row %s has no raw line" % (key,)
    dtype, time_us, algbw, busbw = raw[key]
    assert c["dtype"] == dtype, (key, c["dtype"], dtype)
    assert close(c["time_seconds"], time_us * 1e-6), (key, c["time_seconds"], time_us)
    assert close(c["algbw_bytes_per_second"], algbw * 1e9), (key, c["algbw_bytes_per_second"], algbw)
    assert close(c["busbw_bytes_per_second"], busbw * 1e9), (key, c["busbw_bytes_per_second"], busbw)
    assert c["busbw_consistent"] is True, (key, c)
    assert r["world_size"] == ranks, (r["world_size"], ranks)
    if version:
        assert c["nccl_version"] == version, (c["nccl_version"], version)
    seen.add(key)
assert seen == set(raw), "raw lines missing from the report: %s" % sorted(set(raw) - seen)
# the CSV has one row per measurement with the same figures
table = list(csv.DictReader(open(csv_path)))
assert len(table) == len(rows), (len(table), len(rows))
for t in table:
    dtype, time_us, algbw, busbw = raw[(int(t["size_bytes"]), t["form"] == "in-place")]
    assert close(float(t["busbw_bytes_per_s"]), busbw * 1e9) and t["busbw_consistent"] == "true", t
    assert close(float(t["time_s"]), time_us * 1e-6), t
PY
  # compare with itself: no change
  out=$("$bin" compare "$doc" "$doc" 2>&1)
  rc=$?
  [ "$rc" = 0 ] || fail "compare $name with itself exited $rc: $(tail -3 <<<"$out")"
  # one busbw halved (the largest non-zero one): report names it and exits 1,
  # compare calls it a regression
  python3 - "$doc" "$work/$name.edited.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
ms = [m for m in d["measurements"] if m["collective"]["busbw_bytes_per_second"] > 0]
if ms:
    m = max(ms, key=lambda m: m["collective"]["busbw_bytes_per_second"])
    m["collective"]["busbw_bytes_per_second"] /= 2
    json.dump(d, open(sys.argv[2], "w"), indent=1)
PY
  if [ -e "$work/$name.edited.json" ]; then
    expect 1 "collective row with a busbw that is not algbw x the op's bus factor" -- \
      report -o "$work/$name.edited.txt" "$work/$name.edited.json"
    grep -q "MISMATCH: algbw x" "$work/$name.edited.txt" || fail "$name: the edited report lacks MISMATCH"
    grep -q "inconsistent bus bandwidth: 1 of" "$work/$name.edited.txt" || fail "$name: no advice on the mismatch"
    expect 3 "busbw .* regression" -- compare "$doc" "$work/$name.edited.json"
  fi
  checked=$((checked + 1))
done
[ "$checked" -ge 3 ] || fail "only $checked nccl-tests outputs checked"
echo "checked $checked nccl-tests outputs"

if [ "$failures" -ne 0 ]; then
  echo "$failures failure(s)"
  exit 1
fi
