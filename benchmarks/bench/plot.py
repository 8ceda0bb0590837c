#!/usr/bin/env python3
"""Plots of a tally-bench result (tally-bench plot RESULT): the foreground latency CDF per
policy at each load, and, when the scenario has several loads, the foreground p99 against alone and
the system throughput against load. Usage: plot.py RESULT_JSON OUT_DIR"""
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402 (the backend is chosen first)


def foreground(run):
    return [j for j in run["jobs"] if j["role"] == "foreground" and j["open_loop"]]


def cdf(ax, samples, label, style="-"):
    xs = sorted(s / 1000 for s in samples)
    if xs:
        ax.plot(xs, [(i + 1) / len(xs) for i in range(len(xs))], style, label=label, lw=1.2)


def main(result_path, out_dir):
    with open(result_path) as f:
        result = json.load(f)
    name = result["scenario"]["name"]
    os.makedirs(out_dir, exist_ok=True)
    written = []
    for load in result["loads"]:
        runs = load["runs"]
        if not runs or not foreground(runs[0]):
            continue
        fig, ax = plt.subplots(figsize=(6, 3.6), dpi=80)
        cdf(ax, foreground(runs[0])[0]["alone_latencies_us"], "alone", "k--")
        for run in runs:
            cdf(ax, foreground(run)[0]["latencies_us"], run["policy"])
        ax.set_xscale("log")
        ax.set_xlabel("foreground request latency (ms, log)")
        ax.set_ylabel("fraction of requests")
        ax.set_title(f"{name}, load {load['load']:.2f}")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
        fig.tight_layout()
        path = os.path.join(out_dir, f"latency_cdf_load{load['load']:.2f}.png")
        fig.savefig(path)
        plt.close(fig)
        written.append(path)
    if len(result["loads"]) > 1:
        loads = [l["load"] for l in result["loads"]]
        for key, label, log, file in [
            ("foreground_p99_overhead", "foreground p99 / alone p99 (log)", True,
             "p99_vs_load.png"),
            ("system_throughput", "system throughput (sum of normalised)", False,
             "throughput_vs_load.png"),
        ]:
            fig, ax = plt.subplots(figsize=(6, 3.6), dpi=80)
            for policy in result["policies"]:
                ys = [next(r[key] for r in l["runs"] if r["policy"] == policy)
                      for l in result["loads"]]
                if log:
                    ys = [1 + y for y in ys]  # the overhead as a ratio to alone
                ax.plot(loads, ys, "o-", label=policy, lw=1.2, ms=3)
            if log:
                ax.set_yscale("log")
            ax.set_xlabel("foreground load (fraction of its capacity)")
            ax.set_ylabel(label)
            ax.set_title(name)
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=7)
            fig.tight_layout()
            path = os.path.join(out_dir, file)
            fig.savefig(path)
            plt.close(fig)
            written.append(path)
    for path in written:
        print("plot:", path)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
