#!/usr/bin/env python3
"""hold_ceiling.py on the smoke scenario: its figures are consistent, and `priority` stays under
the ceiling of a policy that holds background work while the foreground is busy (a policy that
ran background kernels beside foreground requests, as mps-priority does, would exceed it).

  hold_ceiling_test.py TALLY_BENCH SCENARIO
"""
import pathlib
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import hold_ceiling  # noqa: E402

# A background kernel running when a request arrives goes on until its preemption's turnaround
# (tens of microseconds, a few hundred times a second): that much beyond the idle time.
TURNAROUND_OVERLAP = 0.03


def main():
    bench, scenario = sys.argv[1], pathlib.Path(sys.argv[2])
    with tempfile.TemporaryDirectory() as tmp:
        row = hold_ceiling.account(bench, scenario, pathlib.Path(tmp))
    print(row)
    failures = []
    if not 1 < row["ceiling"] < 2:
        failures.append("the foreground's idle fraction is not between 0 and 1")
    if not 0.5 < row["efficiency"] <= 1.01:
        failures.append("the shaping efficiency is not a fraction near 1")
    if row["priority"] > row["ceiling"] + TURNAROUND_OVERLAP:
        failures.append("priority ran background work beyond the foreground's idle time")
    if abs(row["predicted"] - row["priority"]) > 0.05:
        failures.append("idle time x shaping efficiency no longer accounts for priority's figure")
    if row["best"] < row["priority"]:
        failures.append("no baseline was compared")
    for name in ("min_idle_10us", "no_latency", "ptb_slowdown_1"):
        if not 1 <= row[name] <= 2:
            failures.append(f"{name}: system throughput {row[name]} outside [1, 2]")
    for failure in failures:
        print("FAIL:", failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
