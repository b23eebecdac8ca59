#!/usr/bin/env python3
"""Checks llm's per-group arrival skew (docs/stragglers.md, "llm's
tensor-parallel all-reduces") in a result document and its JSON and text
reports, for tests/llm_arrival_groups.sh.

usage: llm_arrival_groups.py DOC REPORT_JSON REPORT_TEXT LATE_US TP EXPECT...
EXPECT is REPLICA:STAGE:WHO per group, in the document's order: WHO the
member (shard index in its stage) named with a lateness within 20% of
LATE_US, "nobody" for none, or "follower" for none or a shard less than
2 ms late (under a launcher a follower starts a call when the first
shard's message arrives)."""
import json
import sys

doc_path, report_path, text_path, late_us, tp = sys.argv[1:6]
late, tp = float(late_us) * 1e-6, int(tp)
expect = [e.split(":") for e in sys.argv[6:]]
m = json.load(open(doc_path))["measurements"][0]
assert "arrival" not in m, "a measurement of several groups has no single arrival"
groups = m["arrival_groups"]
rows = [r for s in json.load(open(report_path))["series"] for r in s["rows"]]
assert rows[0]["arrival"] is None, rows[0]["arrival"]
report = rows[0]["arrival_groups"]
text = open(text_path).read()
assert len(groups) == len(expect) == len(report), (len(groups), len(expect), len(report))
for g, r, (replica, stage, who) in zip(groups, report, expect):
    where = f"replica {replica} stage {stage}"
    assert (g["replica"], g["stage"]) == (int(replica), int(stage)), (where, g["replica"], g["stage"])
    assert (r["replica"], r["stage"]) == (g["replica"], g["stage"]), (where, r)
    first = (int(replica) * len({x["stage"] for x in groups}) + int(stage)) * tp
    ranks = list(range(first, first + tp))
    assert g["global_ranks"] == ranks == r["global_ranks"], (where, g["global_ranks"], ranks)
    assert len(g["ranks"]) == tp and g["iterations"] >= 6, (where, len(g["ranks"]), g["iterations"])
    assert len(g["sample"]) <= 64, (where, len(g["sample"]))
    print(f"{where}: {g['iterations']} calls, named {r['named']}, last {g['last_rank']} in "
          f"{r['last_share']:.0%}, lateness {g['lateness_seconds'] * 1e6:.1f} us, threshold "
          f"{r['threshold_seconds'] * 1e6:.1f} us")
    head = (f"Arrival at the collectives of replica {replica}'s stage {stage} shards "
            f"(shards 0-{tp - 1} = ranks {', '.join(map(str, ranks))};")
    line = next((l for l in text.splitlines() if head in l), None)
    assert line, (where, "no sentence in the text report")
    if who == "nobody":
        assert r["named"] is None and "named nobody" in line, (where, r, line)
    elif who == "follower":
        assert r["named"] is None or g["lateness_seconds"] < 2e-3, (where, r, g["lateness_seconds"])
    else:
        assert r["named"] == int(who) and r["last_share"] >= 0.9, (where, r)
        assert r["named_rank"] == first + int(who), (where, r)
        assert abs(g["lateness_seconds"] - late) <= 0.2 * late, (where, g["lateness_seconds"])
        assert f"named shard {who} (rank {first + int(who)}," in line, (where, line)
