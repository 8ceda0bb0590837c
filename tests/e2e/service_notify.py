#!/usr/bin/env python3
"""tally-server under systemd's notification protocol, with a stand-in for systemd's socket.

  service_notify.py TALLY_SERVER

Checks that the server says READY=1 only once its socket accepts clients, feeds a watchdog
(WATCHDOG=1 at least twice per interval's worth of time) while its dispatcher runs, feeds none
when WATCHDOG_PID names another process, says STOPPING=1 on SIGTERM and exits 0; also with an
abstract-namespace NOTIFY_SOCKET. Exits 1 with the reason otherwise.
"""
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time


def fail(message):
    sys.exit(f"service_notify: {message}")


def receive(sock, timeout):
    sock.settimeout(timeout)
    try:
        return sock.recv(4096).decode()
    except socket.timeout:
        return None


def run(server, work, address, env_extra, expect_watchdog):
    notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    notify.bind(address)
    server_socket = os.path.join(work, "server.sock")
    env = dict(os.environ, NOTIFY_SOCKET=address if address[0] != "\0" else "@" + address[1:],
               **env_extra)
    process = subprocess.Popen([server, "--emulate", "--socket", server_socket,
                                "--code-cache", "none"], env=env,
                               stderr=subprocess.DEVNULL)
    try:
        ready = receive(notify, 60)
        if ready is None or not ready.startswith("READY=1\n"):
            fail(f"the first notification is {ready!r}, not READY=1")
        if "STATUS=serving" not in ready:
            fail(f"READY=1 without a status: {ready!r}")
        client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        client.connect(server_socket)  # accepting once ready
        client.close()
        pings = 0
        deadline = time.monotonic() + 1.5
        while time.monotonic() < deadline:
            message = receive(notify, max(deadline - time.monotonic(), 0.01))
            if message == "WATCHDOG=1":
                pings += 1
            elif message is not None:
                fail(f"unexpected notification {message!r}")
        if expect_watchdog and pings < 2:
            fail(f"{pings} WATCHDOG=1 in 1.5 s with WATCHDOG_USEC=600000")
        if not expect_watchdog and pings:
            fail(f"{pings} WATCHDOG=1 although WATCHDOG_PID names another process")
        process.send_signal(signal.SIGTERM)
        stopping = None
        while stopping is None or stopping == "WATCHDOG=1":
            stopping = receive(notify, 30)
            if stopping is None:
                fail("no STOPPING=1 after SIGTERM")
        if stopping != "STOPPING=1":
            fail(f"{stopping!r} instead of STOPPING=1")
        if process.wait(60) != 0:
            fail(f"the server exited {process.returncode}")
    finally:
        if process.poll() is None:
            process.kill()
        notify.close()


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    server = sys.argv[1]
    with tempfile.TemporaryDirectory() as work:
        run(server, work, os.path.join(work, "notify"), {"WATCHDOG_USEC": "600000"}, True)
    with tempfile.TemporaryDirectory() as work:
        run(server, work, f"\0tally-notify-{os.getpid()}",
            {"WATCHDOG_USEC": "600000", "WATCHDOG_PID": "1"}, False)
    print("service notifications: READY=1 when serving, WATCHDOG=1, STOPPING=1")


if __name__ == "__main__":
    main()
