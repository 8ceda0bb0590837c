#!/usr/bin/env python3
"""Kill storm: clients of one tally-server connect, work and die by SIGKILL at random moments.

Waves of --concurrency clients start together through tally-run; each is a tenant computing
and checking results or running a kernel of many blocks that never ends, and each is killed
at its own random moment within --max-delay-ms of its start (some before they have connected,
most while their work runs). After each wave the reclaim time is measured: from the wave's last
kill until `tally-ctl status` shows no client and all device memory free again.

After the storm the server must be alive, hold no client and no client memory, its RSS must be
back within --rss-tolerance-kib of where it stood after a warm-up client (the module registry's
cache and the allocator's arenas are warm by then), every client that connected must have been
freed (a "gone: freed" log line each, no "abandoned"), and a client started right after must
compute correct results within --hang-seconds (a hang detector, not a timing assertion). After
the server's exit its log must hold no sanitizer report.

With --sanitized (a server built with AddressSanitizer) the RSS is not checked: it measures the
sanitizer's allocator, shadow memory and quarantine, not the server's; LeakSanitizer's report at
the server's exit finds leaks there instead.

"No client memory": the device memory in use is back to the warm baseline's, plus at most one
PTB state slot per client of a wave (PTB_SLOT_BYTES): the server keeps a pool of them, one per
preemptible kernel that ran at once, for reuse (server/kernel_runs.cc), so the pool may have
grown during the storm but never beyond the number of clients alive at once.

Usage: kill_storm.py --server BIN --run BIN --ctl BIN --programs DIR [--kills N] ...
Exit status 0 when every check passed; the figures go to stdout.
"""
import argparse
import json
import os
import random
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# The tenant modes a client of the storm runs (tests/e2e/tenant.cu).
WORKLOADS = (["compute", "100000"], ["runaway"])
# A PTB state slot: a PtbState on the device and its page-locked readback, each one 256-byte
# block of the emulated GPU's allocator.
PTB_SLOT_BYTES = 512
# What a sanitizer writes when it finds something (LeakSanitizer's leaks come at the exit).
SANITIZER_REPORT = re.compile(r"ERROR: [A-Za-z]+Sanitizer|runtime error:")


class Failure(Exception):
    pass


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--server", required=True, help="the tally-server binary")
    parser.add_argument("--run", required=True, help="the tally-run binary")
    parser.add_argument("--ctl", required=True, help="the tally-ctl binary")
    parser.add_argument("--programs", required=True, help="directory of the e2e programs")
    parser.add_argument("--kills", type=int, default=24, help="clients to kill in all")
    parser.add_argument("--concurrency", type=int, default=4, help="clients alive at once")
    parser.add_argument("--max-delay-ms", type=float, default=400,
                        help="each client is killed this long after its start at most")
    parser.add_argument("--max-seconds", type=float, default=90,
                        help="stop starting waves after this long (the count may fall short)")
    parser.add_argument("--seed", type=int, default=1, help="random seed (0: from the clock)")
    parser.add_argument("--rss-tolerance-kib", type=int, default=64 * 1024,
                        help="how far the server's RSS may end above its warm baseline")
    parser.add_argument("--sanitized", action="store_true",
                        help="the server carries AddressSanitizer: no RSS check (see above)")
    parser.add_argument("--hang-seconds", type=float, default=60,
                        help="bound on each wait (reclaim, the client after the storm)")
    return parser.parse_args()


class Server:
    """A private tally-server --emulate, stopped by its pid whatever happens."""

    def __init__(self, args, work):
        self.args = args
        self.socket = work / "server.sock"
        self.log_path = work / "server.log"
        self.log = open(self.log_path, "w")
        self.process = subprocess.Popen(
            [args.server, "--emulate", "--socket", str(self.socket),
             "--profile-cache", str(work / "profiles.json"), "--code-cache", "none"],
            stdout=subprocess.DEVNULL, stderr=self.log)
        deadline = time.monotonic() + 5
        while not self.socket.exists():
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise Failure(f"the server did not create {self.socket}")
            time.sleep(0.05)

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
        self.log.close()

    def rss_kib(self):
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        raise Failure("no VmRSS for the server")

    def status(self):
        if self.process.poll() is not None:
            raise Failure(f"the server exited with {self.process.returncode}")
        out = subprocess.run([self.args.ctl, "status", "--json", "--server", str(self.socket)],
                             capture_output=True, text=True, timeout=30)
        if out.returncode != 0:
            raise Failure(f"tally-ctl status failed: {out.stderr}")
        return json.loads(out.stdout)

    def client(self, mode, **popen):
        return subprocess.Popen(
            [self.args.run, "--server", str(self.socket), "--",
             str(Path(self.args.programs) / "tenant"), *mode], **popen)


def used_bytes(status):
    return status["device"]["total_memory_bytes"] - status["device"]["free_memory_bytes"]


def await_settled(server, max_used, bound_s):
    """Polls the status until no client is left and at most `max_used` bytes of device memory
    are in use; that status, or the last one after `bound_s`."""
    deadline = time.monotonic() + bound_s
    while True:
        status = server.status()
        settled = not status["clients"] and used_bytes(status) <= max_used
        if settled or time.monotonic() > deadline:
            return settled, status
        time.sleep(0.001)


def run_wave(server, rng, size):
    """Starts `size` clients, kills each at its own random moment; the time of the last kill."""
    clients = []
    for _ in range(size):
        process = server.client(rng.choice(WORKLOADS), stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        clients.append((time.monotonic() + rng.uniform(0, server.args.max_delay_ms) / 1000,
                        process))
    last_kill = time.monotonic()
    for kill_at, process in sorted(clients, key=lambda entry: entry[0]):
        time.sleep(max(0.0, kill_at - time.monotonic()))
        # tally-run execs the tenant, so the pid is the client's own.
        process.send_signal(signal.SIGKILL)
        last_kill = time.monotonic()
    for _, process in clients:
        process.wait()
    return last_kill


def storm(server, args, rng, max_used):
    """The waves; the reclaim time of each in ms."""
    reclaims = []
    started = time.monotonic()
    kills = 0
    while kills < args.kills and time.monotonic() - started < args.max_seconds:
        size = min(args.concurrency, args.kills - kills)
        last_kill = run_wave(server, rng, size)
        settled, status = await_settled(server, max_used, args.hang_seconds)
        if not settled:
            raise Failure(f"not reclaimed {args.hang_seconds} s after the last kill: {status}")
        reclaims.append((time.monotonic() - last_kill) * 1000)
        kills += size
    return kills, reclaims


def check_log(server):
    log = server.log_path.read_text()
    connected = log.count(" connected: pid ")
    freed = log.count(" gone: freed ")
    if "abandoned" in log or "goes on in the background" in log:
        raise Failure("a client's resources were abandoned")
    if connected != freed:
        raise Failure(f"{connected} clients connected but {freed} were freed")
    return connected


def check_fresh_client(server, args):
    """A client right after the storm computes correct results (bounded: a hang detector)."""
    started = time.monotonic()
    try:
        out = server.client(["compute", "3"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True).communicate(timeout=args.hang_seconds)[0]
    except subprocess.TimeoutExpired:
        raise Failure(f"the client after the storm did not finish in {args.hang_seconds} s")
    if "COMPUTED" not in out:
        raise Failure(f"the client after the storm failed: {out}")
    return (time.monotonic() - started) * 1000


def main():
    args = parse_args()
    seed = args.seed or int(time.time())
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory(prefix="tally-stress-") as work:
        server = Server(args, Path(work))
        try:
            # The warm baseline: one client has loaded the tenant's module and been freed.
            check_fresh_client(server, args)
            settled, status = await_settled(server, 1 << 62, args.hang_seconds)
            if not settled:
                raise Failure(f"the warm-up client was not freed: {status}")
            rss_before = server.rss_kib()
            max_used = used_bytes(status) + args.concurrency * PTB_SLOT_BYTES
            kills, reclaims = storm(server, args, rng, max_used)
            rss_after = server.rss_kib()
            connected = check_log(server)
            fresh_ms = check_fresh_client(server, args)
            print(f"seed {seed}: {kills} kills in {len(reclaims)} waves of up to "
                  f"{args.concurrency}; {connected} clients connected (the warm-up one too)")
            print(f"reclaim (last kill -> no client, memory freed): p50 {statistics.median(reclaims):.1f} ms,"
                  f" max {max(reclaims):.1f} ms")
            print(f"device memory in use: {used_bytes(status)} bytes at the warm baseline, "
                  f"at most {max_used} after each wave")
            print(f"server RSS: {rss_before} KiB before, {rss_after} KiB after")
            print(f"client after the storm: correct in {fresh_ms:.0f} ms")
            if not args.sanitized and rss_after > rss_before + args.rss_tolerance_kib:
                raise Failure(f"RSS grew by {rss_after - rss_before} KiB "
                              f"(tolerance {args.rss_tolerance_kib} KiB)")
            server.stop()
            if SANITIZER_REPORT.search(server.log_path.read_text()):
                raise Failure("a sanitizer report in the server's log")
        except Failure as failure:
            print(f"FAIL: {failure}\n--- server log", file=sys.stderr)
            sys.stderr.write(server.log_path.read_text()[-20000:])
            return 1
        finally:
            server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
