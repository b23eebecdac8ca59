#!/usr/bin/env python3
"""Produces the genuine LoadGen logs under tests/data/ingest/loadgen/ with
the real LoadGen (pip install mlcommons-loadgen): a small SUT that answers
each sample after a short sleep, in the Offline, Server and SingleStream
scenarios, one VALID and one INVALID run each (the invalid ones fail the
minimum duration or query count), and a Server run that misses its latency
bound (server-latency-invalid: a 1 ms target against the SUT's 2 ms). Not
run by CI: the logs are committed.
Usage: python3 tests/loadgen/make_logs.py OUTDIR [NAME...] (NAME: e.g.
server-latency-invalid; all when none is given)"""
import os
import sys
import time

import mlperf_loadgen as lg

SLEEP_S = 0.002  # the SUT's "inference" time per query
SAMPLE_S = 0.00025  # and per sample of an Offline query (4000 samples/s)


def run(outdir, scenario, valid, latency_bound_ns=500_000_000):
    settings = lg.TestSettings()
    settings.mode = lg.TestMode.PerformanceOnly
    if scenario == "offline":
        settings.scenario = lg.TestScenario.Offline
        # Invalid: expecting 500/s, LoadGen issues too few samples for 1 s.
        settings.offline_expected_qps = 5000 if valid else 500
    elif scenario == "server":
        settings.scenario = lg.TestScenario.Server
        settings.server_target_qps = 200
        settings.server_target_latency_ns = latency_bound_ns
    else:
        settings.scenario = lg.TestScenario.SingleStream
        settings.single_stream_expected_latency_ns = 3_000_000
    # Server's early stopping needs some 700 queries at 200/s: run 5 s.
    settings.min_duration_ms = 5000 if scenario == "server" and valid else 1000
    settings.min_query_count = 100
    if not valid and scenario != "offline":
        # stopped after 0.5 s, before 1 s and 100000 queries
        settings.max_duration_ms = 500
        settings.min_query_count = 100000

    # Completed on LoadGen's issuing thread: completions from Python
    # threads of our own crashed the binding now and then.
    def issue(samples):
        time.sleep(SLEEP_S + (SAMPLE_S * len(samples) if len(samples) > 1 else 0))
        lg.QuerySamplesComplete([lg.QuerySampleResponse(s.id, 0, 0) for s in samples])

    sut = lg.ConstructSUT(issue, lambda: None)
    qsl = lg.ConstructQSL(64, 64, lambda idx: None, lambda idx: None)
    log = lg.LogOutputSettings()
    log.outdir = outdir
    log.copy_summary_to_stdout = False
    ls = lg.LogSettings()
    ls.log_output = log
    ls.enable_trace = False
    os.makedirs(outdir, exist_ok=True)
    lg.StartTestWithLogSettings(sut, qsl, settings, ls, "")
    lg.DestroyQSL(qsl)
    lg.DestroySUT(sut)


def main():
    root, wanted = sys.argv[1], set(sys.argv[2:])
    cases = []
    for scenario in ("offline", "server", "singlestream"):
        for valid in (True, False):
            cases.append(("%s-%s" % (scenario, "valid" if valid else "invalid"), scenario, valid,
                          500_000_000))
    # Long and busy enough to be valid but for its latency: every query
    # takes the SUT's 2 ms against a 1 ms bound.
    cases.append(("server-latency-invalid", "server", True, 1_000_000))
    for name, scenario, valid, bound in cases:
        if not wanted or name in wanted:
            run(os.path.join(root, name, "node0"), scenario, valid, bound)


if __name__ == "__main__":
    main()
