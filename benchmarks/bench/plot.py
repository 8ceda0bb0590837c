#!/usr/bin/env python3
"""Plots of a tally-bench result (tally-bench plot RESULT): the foreground latency CDF per
policy at each load; the foreground p99 overhead against system throughput at each load (each
policy a point, priority-budget's budgets a curve); and, when the scenario has several loads, the foreground p99 against alone and
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


BUDGET = "priority-budget "


def save(fig, ax, title, legend_size, path):
    """Finishes a plot the way all of them look and writes it to `path`."""
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=legend_size)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def tradeoff(name, load, out_dir):
    """p99 overhead (as a ratio to alone, log) against system throughput: each policy a point,
    the runs of priority-budget at its budgets one curve."""
    runs = load["runs"]
    fig, ax = plt.subplots(figsize=(6, 3.6), dpi=80)
    curve = [r for r in runs if r["policy"].startswith(BUDGET)]
    if curve:
        ax.plot([r["system_throughput"] for r in curve],
                [1 + r["foreground_p99_overhead"] for r in curve], "o-", lw=1.5, ms=4,
                label="priority-budget")
        for r in curve:
            ax.annotate(r["policy"][len(BUDGET):], (r["system_throughput"],
                        1 + r["foreground_p99_overhead"]), fontsize=6,
                        textcoords="offset points", xytext=(3, 3))
    for r in runs:
        if not r["policy"].startswith(BUDGET):
            ax.plot(r["system_throughput"], 1 + r["foreground_p99_overhead"], "s", ms=5,
                    label=r["policy"])
    ax.set_yscale("log")
    ax.set_xlabel("system throughput (sum of normalised)")
    ax.set_ylabel("foreground p99 / alone p99 (log)")
    return save(fig, ax, f"{name}, load {load['load']:.2f}", 6,
                os.path.join(out_dir, f"tradeoff_load{load['load']:.2f}.png"))


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
        written.append(save(fig, ax, f"{name}, load {load['load']:.2f}", 7,
                            os.path.join(out_dir, f"latency_cdf_load{load['load']:.2f}.png")))
        written.append(tradeoff(name, load, out_dir))
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
            written.append(save(fig, ax, name, 7, os.path.join(out_dir, file)))
    for path in written:
        print("plot:", path)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
