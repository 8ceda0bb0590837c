#!/usr/bin/env python3
"""The high-priority job's latency and the best-effort job's throughput under each policy.

Runs tests/e2e/priority_jobs through tally-run against a private tally-server per case:
  first the trainer alone long enough for the profiler to measure every candidate form of its
  kernel (the cache, in a temporary directory, is then shared by every case, as a production
  server's would be warm), then serve alone, train alone (under `fifo`: its kernels in their
  original forms, the speed the device gives it), train alone under `priority+shape-alone`
  (what its transformed forms cost it where they run even alone), and serve (high) beside train
  (best-effort) under each policy, serve starting --warmup seconds after train. A case
  `POLICY+FLAG` runs tally-server --policy=POLICY --FLAG: `priority+shape-alone` shapes the
  trainer from its start, where `priority` runs it unshaped until serve connects, so that
  serve's first request may wait behind trainer kernels already on the device (the "first"
  column). Throughputs are relative to train alone under `fifo`.
Prints a Markdown table and writes every sample as JSON. Figures go to benchmarks/RESULTS.md;
nothing here asserts a timing (the smoke test only checks that every case ran and reported).

  priority_bench.py --server BIN --run BIN --jobs BIN [--out FILE] [--policies a,b,c]
                    [--train ARGS] [--serve ARGS] [--server-args ARGS] [--gpu]
"""
import argparse
import json
import os
import shlex
import signal
import statistics
import subprocess
import sys
import tempfile
import time

# 300 requests, so that p99 is not simply the slowest one; a trainer long enough to run beside
# all of them (about 9 s on the emulated GPU).
DEFAULT_TRAIN = "--kernels 16 --blocks 2048 --work 2000"
DEFAULT_SERVE = "--kernels 300 --blocks 8 --work 400 --per-request 3 --max-gap-ms 30"


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p * (len(ordered) - 1) + 0.5))]


class Server:
    """A private tally-server with one policy, stopped on exit."""

    def __init__(self, args, case, work):
        self.socket = os.path.join(work, f"{case}.sock")
        self.log = open(os.path.join(work, f"{case}.log"), "w")
        emulate = [] if args.gpu else ["--emulate"]
        policy, *flags = case.split("+")
        self.process = subprocess.Popen(
            [args.server, *emulate, "--socket", self.socket, f"--policy={policy}",
             *[f"--{flag}" for flag in flags],
             f"--profile-cache={os.path.join(work, 'profiles.json')}", "--code-cache=none",
             *shlex.split(args.server_args)], stderr=self.log)
        for _ in range(200):
            if os.path.exists(self.socket):
                return
            time.sleep(0.05)
        raise RuntimeError(f"tally-server ({policy}) did not start")

    def close(self):
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(timeout=60)
        self.log.close()


def start_job(args, server, priority, mode, extra, work, name):
    timeline = os.path.join(work, f"{name}.timeline")
    latencies = os.path.join(work, f"{name}.latencies")
    command = [args.run, "--priority", priority, "--server", server.socket, "--", args.jobs, mode,
               *shlex.split(extra), "--timeline", timeline]
    if mode == "serve":
        command += ["--latencies", latencies]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    return process, timeline, latencies


def finish(process, what):
    out, err = process.communicate(timeout=1800)
    if process.returncode != 0:
        raise RuntimeError(f"{what} failed ({process.returncode}): {out}{err}")
    return out


def busy_seconds(timeline):
    """Time the device spent on the job's kernels, overlaps merged."""
    spans = sorted(tuple(map(int, line.split())) for line in open(timeline))
    busy, end = 0, None
    for start, stop in spans:
        if end is None or start > end:
            busy += stop - start
            end = stop
        elif stop > end:
            busy += stop - end
            end = stop
    return busy / 1e9


def warm_profiler(args, work):
    """Runs the trainer alone until its kernel's candidates are measured (the cache is kept)."""
    server = Server(args, "priority", work)
    try:
        extra = f"{args.train} --kernels {args.warm_kernels}"
        process, _, _ = start_job(args, server, "best-effort", "train", extra, work, "warm")
        finish(process, "the profiler's warm-up")
    finally:
        server.close()


def read_profiles(work):
    """The profiler's cache as the cases left it (what it chose for the trainer's kernel)."""
    try:
        with open(os.path.join(work, "profiles.json")) as cache:
            return json.load(cache)
    except (OSError, ValueError):
        return None


def run_case(args, policy, work, serve, train):
    server = Server(args, policy, work)
    try:
        result = {"policy": policy}
        started = time.monotonic()
        jobs = {}
        if train:
            jobs["train"] = start_job(args, server, "best-effort", "train", args.train, work,
                                      f"{policy}-train")
        if serve:
            if train:
                time.sleep(args.warmup)  # the trainer is under way when requests come
            jobs["serve"] = start_job(args, server, "high", "serve", args.serve, work,
                                      f"{policy}-serve")
        if serve:
            process, timeline, latencies = jobs["serve"]
            finish(process, "serve")
            samples = [float(line) for line in open(latencies)]
            result["latencies_us"] = samples
            result["p50_us"] = percentile(samples, 0.5)
            result["p99_us"] = percentile(samples, 0.99)
            result["first_us"] = samples[0]
            result["serve_busy_s"] = busy_seconds(timeline)
            result["serve_wall_s"] = time.monotonic() - started
        if train:
            process, timeline, _ = jobs["train"]
            out = finish(process, "train")
            result["train_kernels_per_s"] = float(out.split("kernels/s")[1].split()[0])
        return result
    finally:
        server.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", required=True)
    parser.add_argument("--run", required=True)
    parser.add_argument("--jobs", required=True)
    parser.add_argument("--out")
    parser.add_argument("--policies",
                        default="fifo,priority-no-transform,priority,priority+shape-alone")
    parser.add_argument("--train", default=DEFAULT_TRAIN)
    parser.add_argument("--serve", default=DEFAULT_SERVE)
    parser.add_argument("--warm-kernels", type=int, default=48,
                        help="trainer kernels run first, so that profiling is done")
    parser.add_argument("--server-args", default="",
                        help="more tally-server flags, e.g. --turnaround-ms=1")
    parser.add_argument("--gpu", action="store_true",
                        help="servers on NVIDIA's driver instead of the emulated GPU")
    parser.add_argument("--warmup", type=float, default=1.0,
                        help="seconds between the trainer's start and the first request")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tally-priority-bench-") as work:
        if args.warm_kernels > 0:
            warm_profiler(args, work)
            print("profiler warmed up", file=sys.stderr)
        alone_serve = run_case(args, "fifo", work, serve=True, train=False)
        print(f"serve alone: p50 {alone_serve['p50_us']:.0f} us, p99 {alone_serve['p99_us']:.0f} us",
              file=sys.stderr)
        alone_train = run_case(args, "fifo", work, serve=False, train=True)
        print(f"train alone: {alone_train['train_kernels_per_s']:.3f} kernels/s", file=sys.stderr)
        alone_train_forms = run_case(args, "priority+shape-alone", work, serve=False, train=True)
        print(f"train alone (priority+shape-alone): "
              f"{alone_train_forms['train_kernels_per_s']:.3f} kernels/s", file=sys.stderr)
        profiles = read_profiles(work)
        shared = []
        for policy in args.policies.split(","):
            result = run_case(args, policy, work, serve=True, train=True)
            print(f"{policy}: p99 {result['p99_us']:.0f} us, "
                  f"train {result['train_kernels_per_s']:.3f} kernels/s", file=sys.stderr)
            shared.append(result)
    # The trainer's fair share: the time the high-priority job leaves the device idle.
    idle_fraction = 1 - alone_serve["serve_busy_s"] / alone_serve["serve_wall_s"]
    rows = ["| case | serve first (us) | serve p50 (us) | serve p99 (us) | p99 vs alone "
            "| train kernels/s | train vs alone | train vs idle share |",
            "|---|---|---|---|---|---|---|---|",
            f"| serve alone | {alone_serve['first_us']:.0f} | {alone_serve['p50_us']:.0f} "
            f"| {alone_serve['p99_us']:.0f} | 1.00 | - | - | - |",
            f"| train alone | - | - | - | - | {alone_train['train_kernels_per_s']:.3f} | 1.00 "
            "| - |",
            f"| train alone (priority+shape-alone) | - | - | - | - | "
            f"{alone_train_forms['train_kernels_per_s']:.3f} | "
            f"{alone_train_forms['train_kernels_per_s'] / alone_train['train_kernels_per_s']:.2f} "
            "| - |"]
    for result in shared:
        train_ratio = result["train_kernels_per_s"] / alone_train["train_kernels_per_s"]
        result["p99_vs_alone"] = result["p99_us"] / alone_serve["p99_us"]
        result["train_vs_alone"] = train_ratio
        result["train_vs_idle_share"] = train_ratio / idle_fraction
        rows.append(f"| {result['policy']} | {result['first_us']:.0f} | {result['p50_us']:.0f} | "
                    f"{result['p99_us']:.0f} | "
                    f"{result['p99_vs_alone']:.2f} | {result['train_kernels_per_s']:.3f} | "
                    f"{train_ratio:.2f} | {result['train_vs_idle_share']:.2f} |")
    print("\n".join(rows))
    print(f"\nIdle share of the device left by the high-priority job alone: {idle_fraction:.2f}")
    if args.out:
        with open(args.out, "w") as out:
            json.dump({"serve_alone": alone_serve, "train_alone": alone_train,
                       "train_alone_shaped": alone_train_forms, "shared": shared,
                       "idle_fraction": idle_fraction, "train": args.train,
                       "serve": args.serve, "profiles": profiles}, out, indent=1)


if __name__ == "__main__":
    main()
