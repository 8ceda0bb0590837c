#!/usr/bin/env python3
"""Where a holding policy's system throughput goes, per foreground/background pair (simulated).

A policy that runs background kernels only while the foreground is idle (SCHEDULING.md, "hold,
shape, preempt": `priority`, `priority-no-transform`) gets at most the foreground's idle time
for the background: its system throughput is at most 1 + (1 - busy), where `busy` is the
fraction of time the foreground is busy alone (its completed requests x one request's time
alone). Within that idle time the background runs shaped (PTB or sliced), which costs it what
`priority` loses with the foreground almost absent (load 0.01): the shaping efficiency. This
script runs each scenario at its first load with every policy, then `priority` again with each
cost of the model removed in turn, and prints one Markdown table:

  hold_ceiling.py benchmarks/scenarios/bert_resnet50_amp.toml ...

Columns: the best baseline's system throughput (any policy but priority), the holding ceiling
1 + idle and its ratio to that best, priority's shaping efficiency, the prediction
1 + idle x efficiency, priority as measured, and priority with min_idle 10 us, with the
launch and completion latencies at 0, and with PTB's slowdown at 1.0.
"""
import argparse
import json
import pathlib
import re
import subprocess
import sys
import tempfile
import tomllib

ROOT = pathlib.Path(__file__).resolve().parents[2]


def write_variant(scenario, out_dir, name, load, policy=None, device=None, trace_rewrite=None):
    """A copy of `scenario` at one load, with [policy]/[device] tables and background traces
    rewritten; relative trace paths made absolute. Returns its path."""
    text = scenario.read_text()
    data = tomllib.loads(text)
    if "policy" in data or "device" in data:
        sys.exit(f"{scenario}: has its own [policy] or [device] table; give one without")
    background = {job["trace"] for job in data["jobs"] if job.get("priority") != "high"}

    def trace_path(match):
        original = match.group(1)
        path = (scenario.parent / original).resolve()
        if trace_rewrite and original in background:
            path = trace_rewrite(path, out_dir)
        return f'trace = "{path}"'

    text = re.sub(r'^trace\s*=\s*"([^"]*)"', trace_path, text, flags=re.M)
    text = re.sub(r"^loads\s*=.*$", f"loads = [{load}]", text, flags=re.M)
    for table, values in (("policy", policy), ("device", device)):
        if values:
            text += f"\n[{table}]\n" + "".join(f"{k} = {v}\n" for k, v in values.items())
    path = out_dir / f"{name}.toml"
    path.write_text(text)
    return path


def without_ptb_slowdown(trace, out_dir):
    data = json.loads(trace.read_text())
    for kernel in data["kernels"]:
        kernel["ptb_slowdown"] = 1.0
    path = out_dir / f"{trace.stem}_ptb1.json"
    path.write_text(json.dumps(data))
    return path


def run(bench, scenario, out_dir, policies):
    out = out_dir / scenario.stem
    command = [bench, "run", str(scenario), "--out", str(out), "--no-plot"]
    if policies:
        command += ["--policies", *policies]
    finished = subprocess.run(command, capture_output=True, text=True)
    if finished.returncode != 0:
        sys.exit(f"{' '.join(command)} failed:\n{finished.stderr}")
    result = json.loads((out / "result.json").read_text())
    return result["loads"][0]["runs"], result["jobs"]


def system(runs, policy):
    return next(r["system_throughput"] for r in runs if r["policy"] == policy)


def account(bench, scenario, tmp):
    """The figures of one scenario's row, by column name."""
    load = tomllib.loads(scenario.read_text())["loads"][0]

    def variant(name, load=load, **rewrites):
        return write_variant(scenario, tmp, name, load, **rewrites)

    def priority_system(path):
        return system(run(bench, path, tmp, ["priority"])[0], "priority")

    all_runs, jobs = run(bench, variant("all"), tmp, [])
    foreground = next(j for j in jobs if j["role"] == "foreground")
    priority_run = next(r for r in all_runs if r["policy"] == "priority")
    served = next(j for j in priority_run["jobs"] if j["role"] == "foreground")
    idle = 1 - served["alone_completed_per_s"] * foreground["alone_time_us"] * 1e-6
    efficiency = priority_system(variant("alone", load=0.01)) - 1
    removed = {
        name: priority_system(path)
        for name, path in (
            ("min_idle_10us", variant("min_idle", policy={"min_idle_us": 10})),
            ("no_latency", variant("latency", device={"launch_latency_us": 0,
                                                      "completion_latency_us": 0})),
            ("ptb_slowdown_1", variant("ptb", trace_rewrite=without_ptb_slowdown)),
        )
    }
    return {
        "best": max(r["system_throughput"] for r in all_runs if r["policy"] != "priority"),
        "ceiling": 1 + idle,
        "efficiency": efficiency,
        "predicted": 1 + idle * efficiency,
        "priority": priority_run["system_throughput"],
        **removed,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("scenarios", nargs="+", type=pathlib.Path)
    parser.add_argument("--bench", default=str(ROOT / "build/benchmarks/bench/tally-bench"))
    args = parser.parse_args()
    print("| scenario | best baseline | ceiling 1 + idle (/ best) | shaping efficiency | "
          "predicted | priority (/ best) | min_idle 10 us | no launch/completion latency | "
          "PTB slowdown 1.0 |")
    print("|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for scenario in args.scenarios:
            row = account(args.bench, scenario, pathlib.Path(tmp))
            best = row["best"]
            print(f"| {scenario.stem} | {best:.3f} | {row['ceiling']:.3f} "
                  f"({row['ceiling'] / best:.1%}) | {row['efficiency']:.3f} | "
                  f"{row['predicted']:.3f} | {row['priority']:.3f} "
                  f"({row['priority'] / best:.1%}) | {row['min_idle_10us']:.3f} | "
                  f"{row['no_latency']:.3f} | {row['ptb_slowdown_1']:.3f} |", flush=True)


if __name__ == "__main__":
    main()
