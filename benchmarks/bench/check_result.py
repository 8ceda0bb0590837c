#!/usr/bin/env python3
"""Checks that a tally-bench result is complete and consistent (the tally_bench_smoke and
tally_bench_live_smoke tests): every policy at every load, every metric present, percentiles
ordered, every sample kept, the throughput ratios and sums agreeing with their parts; in live
mode also the server's preemption counters, every job's command, every latency accounted for
(completed or unfinished), the open-loop jobs' repeated runs alone (each one's p99, the
median run the reference, the foreground's spread), and that the servers ran on the emulated
device the scenario's [emulator] table asked for. Asserts no timing.
Usage: check_result.py RESULT_JSON"""
import json
import math
import os
import sys


def fail(message):
    sys.exit(f"check_result: {message}")


def close(a, b):
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)


def check_latency(stats, samples, where):
    for key in ("mean", "p50", "p95", "p99", "max", "count"):
        if key not in stats:
            fail(f"{where}: no {key}")
    if stats["count"] != len(samples):
        fail(f"{where}: count {stats['count']} but {len(samples)} samples")
    ordered = stats["p50"] <= stats["p95"] <= stats["p99"] <= stats["max"]
    if samples and not (min(samples) <= stats["p50"] and ordered):
        fail(f"{where}: percentiles out of order")


def check_live_run(run, where):
    """The server's counters: preemption latencies measured for at most every preemption.
    Turnarounds are the profiler's, one per launch configuration, not one per preemption."""
    latency = run.get("preemption_latency_us")
    if latency is None or not all(k in latency for k in ("mean", "max", "count")):
        fail(f"{where}: no preemption_latency_us mean, max and count")
    if latency["count"] > run["preemptions"]:
        fail(f"{where}: more preemption latencies than preemptions")
    if latency["mean"] > latency["max"] or (latency["count"] == 0 and latency["max"] != 0):
        fail(f"{where}: preemption latency mean, max and count disagree")
    # The runs of the policies that follow the profiler start from the profile cache that the
    # unmeasured first run filled.
    if "profiles_at_start" not in run:
        fail(f"{where}: no profiles_at_start")
    profiled = run["policy"] == "priority" or run["policy"].startswith("priority-budget")
    if profiled and run["profiles_at_start"] == 0:
        fail(f"{where}: the profiler started with an empty cache")
    if "measured_slowdown" not in run:
        fail(f"{where}: no measured_slowdown")
    measured = run["measured_slowdown"]
    if measured is not None and (not run["policy"].startswith("priority-budget") or measured < 0):
        fail(f"{where}: a measured slowdown of {measured}")


def check_alone_runs(load, result, where):
    """Every open-loop job ran alone `alone_runs` times; its reference is the run of median p99;
    the foreground's spread is largest / smallest - 1, averaged over its open-loop jobs."""
    runs = result["scenario"]["alone_runs"]
    p99s = load.get("alone_p99s_us")
    if p99s is None or len(p99s) != len(result["jobs"]):
        fail(f"{where}: no alone_p99s_us per job")
    spreads = []
    for job, job_p99s in zip(load["runs"][0]["jobs"], p99s):
        if not job["open_loop"]:
            if job_p99s:
                fail(f"{where}, {job['name']}: p99s alone of a closed-loop job")
            continue
        if len(job_p99s) != runs:
            fail(f"{where}, {job['name']}: {len(job_p99s)} runs alone, not {runs}")
        if not close(job["alone_latency_us"]["p99"], sorted(job_p99s)[(runs - 1) // 2]):
            fail(f"{where}, {job['name']}: the reference alone is not the median run")
        if job["role"] == "foreground" and runs > 1:
            spreads.append(max(job_p99s) / min(job_p99s) - 1)
    spread = load.get("foreground_alone_p99_spread", "absent")
    expected = sum(spreads) / len(spreads) if spreads else None
    if spread == "absent" or (spread is None) != (expected is None) or (
            expected is not None and not close(spread, expected)):
        fail(f"{where}: foreground_alone_p99_spread {spread}, expected {expected}")


# The emulated GPU's shared memory per SM, and what it reserves per resident block
# (emulator/README.md, "Grids").
EMU_SHARED_PER_SM = 164 * 1024
EMU_RESERVED_PER_BLOCK = 1024


def check_emulated_device(result, path):
    """With [emulator] sm_count given to the servers (not with --gpu), their profile cache (OUT/live/profiles.json) is of a
    device of that many SMs, and no kernel has more blocks resident per SM than its shared
    memory allows there (its transformed forms' own static shared memory only lowers that)."""
    variables = dict(v.split("=", 1) for v in result["scenario"]["server_environment"])
    if "TALLY_EMU_SM_COUNT" not in variables:
        return
    sms = int(variables["TALLY_EMU_SM_COUNT"])
    with open(os.path.join(os.path.dirname(path), "live", "profiles.json")) as f:
        cache = json.load(f)
    if cache["device"]["sm_count"] != sms:
        fail(f"the servers' device had {cache['device']['sm_count']} SMs, not {sms}")
    for profile in cache["profiles"]:
        fits = EMU_SHARED_PER_SM // (profile["shared_bytes"] + EMU_RESERVED_PER_BLOCK)
        if profile["sm_count"] != sms or profile["resident_per_sm"] > fits:
            fail(f"profile of {profile['grid']} blocks: {profile['resident_per_sm']} resident "
                 f"per SM on {profile['sm_count']} SMs (at most {fits} on {sms})")


def main(path):
    with open(path) as f:
        result = json.load(f)
    for key in ("format", "command", "mode", "scenario", "policies", "jobs", "loads"):
        if key not in result:
            fail(f"no '{key}'")
    if result["mode"] not in ("sim", "live"):
        fail(f"mode {result['mode']}")
    live = result["mode"] == "live"
    if live:
        check_emulated_device(result, path)
        for job in result["jobs"]:
            if not job["command"]:
                fail(f"job {job['name']}: no command in live mode")
    policies = result["policies"]
    roles = {j["name"]: j["role"] for j in result["jobs"]}
    if "foreground" not in roles.values() or "background" not in roles.values():
        fail("the scenario should have foreground and background jobs")
    for load in result["loads"]:
        where = f"load {load['load']}"
        if [r["policy"] for r in load["runs"]] != policies:
            fail(f"{where}: runs {[r['policy'] for r in load['runs']]} != policies {policies}")
        if live:
            check_alone_runs(load, result, where)
        for run in load["runs"]:
            w = f"{where}, {run['policy']}"
            for key in ("foreground_p99_overhead", "background_throughput", "system_throughput",
                        "preemptions", "turnaround_us", "turnarounds_us", "risky_launches"):
                if key not in run:
                    fail(f"{w}: no {key}")
            if live:
                check_live_run(run, w)
            elif run["preemptions"] < len(run["turnarounds_us"]):
                fail(f"{w}: more turnarounds than preemptions")
            check_latency(run["turnaround_us"], run["turnarounds_us"], f"{w} turnaround")
            if [j["name"] for j in run["jobs"]] != [j["name"] for j in result["jobs"]]:
                fail(f"{w}: jobs differ from the scenario's")
            system = background = 0.0
            for job in run["jobs"]:
                jw = f"{w}, {job['name']}"
                for key in ("completed_per_s", "alone_completed_per_s", "normalized_throughput"):
                    if key not in job:
                        fail(f"{jw}: no {key}")
                if job["alone_completed_per_s"] <= 0:
                    fail(f"{jw}: nothing completed alone")
                if not close(job["normalized_throughput"],
                             job["completed_per_s"] / job["alone_completed_per_s"]):
                    fail(f"{jw}: normalized throughput is not the ratio")
                system += job["normalized_throughput"]
                if job["role"] == "background":
                    background += job["normalized_throughput"]
                if job["open_loop"]:
                    for key in ("latency_us", "alone_latency_us", "p99_overhead",
                                "latencies_us", "alone_latencies_us", "unfinished_requests"):
                        if key not in job:
                            fail(f"{jw}: no {key}")
                    check_latency(job["latency_us"], job["latencies_us"], f"{jw} latency")
                    check_latency(job["alone_latency_us"], job["alone_latencies_us"], f"{jw} alone")
                    if not job["latencies_us"]:
                        fail(f"{jw}: no request completed")
                    if not close(job["p99_overhead"],
                                 job["latency_us"]["p99"] / job["alone_latency_us"]["p99"] - 1):
                        fail(f"{jw}: p99 overhead is not p99 / alone p99 - 1")
            if not close(system, run["system_throughput"]):
                fail(f"{w}: system throughput is not the sum of the jobs'")
            if not close(background, run["background_throughput"]):
                fail(f"{w}: background throughput is not the sum of the background jobs'")
    print(f"check_result: {path}: {len(result['loads'])} load(s) x {len(policies)} policies "
          "complete")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
