#!/usr/bin/env python3
"""Writes the seeds of session_fuzz (tests/fuzz/seeds/session): short client sessions in the
target's input format (session_fuzz.cc), each a file. Run it again when cuda_calls.def changes.

Usage: make_session_seeds.py  (from anywhere; writes next to itself)
"""
import re
import struct
from pathlib import Path

HERE = Path(__file__).resolve().parent
CALLS = [m.group(1) for m in re.finditer(r"^TALLY_CUDA_CALL\((\w+),",
                                         (HERE.parent.parent / "ipc/cuda_calls.def").read_text(),
                                         re.MULTILINE)]
FIELD_BYTES = 288  # kFieldBytes
BULK_WRITE, IMAGE = len(CALLS), len(CALLS) + 1


def latest(back=0, plus=0):
    """A field word taken from the answered values: `back` before the latest, plus `plus`."""
    return back | plus << 8


def request(name, words=(), answered=(), tail=b""):
    """A request step; `words` are its 8-byte field words, those at the indexes in `answered`
    replaced by answered values (their word says which, see latest())."""
    mask = sum(1 << i for i in answered)
    fields = b"".join(struct.pack("<Q", w) for w in words).ljust(FIELD_BYTES, b"\0")
    return bytes([CALLS.index(name), mask]) + fields + bytes([len(tail)]) + tail


def u32_pair(low, high):
    return low | high << 32


def bulk_write(offset, data):
    return bytes([BULK_WRITE]) + struct.pack("<HB", offset, len(data)) + data


def image(data):
    return bytes([IMAGE]) + struct.pack("<H", len(data)) + data


ADD_ONE_PTX = re.search(r'R"\((.*)\)"', (HERE.parent / "e2e/add_one_ptx.h").read_text(),
                        re.DOTALL).group(1).encode() + b"\0"

SEEDS = {
    "memory": [
        request("MemAlloc", [4096]),
        bulk_write(0, bytes(range(64))),
        request("MemcpyHtoD", [latest(), 0, 0, 64], answered=[0]),
        request("MemcpyDtoH", [latest(), 0, 64, 64], answered=[0]),
        request("MemcpyDtoD", [latest(0, 64), latest(), 64, 0], answered=[0, 1]),
        request("DeviceSynchronize"),
        request("MemFree", [latest()], answered=[0]),
        request("MemGetInfo"),
    ],
    "streams_events": [
        request("StreamCreate", [u32_pair(1, 0)]),
        request("EventCreate", [0]),
        request("EventRecord", [latest(), latest(1)], answered=[0, 1]),
        request("StreamWaitEvent", [latest(1), latest()], answered=[0, 1]),
        request("StreamQuery", [latest(1)], answered=[0]),
        request("EventSynchronize", [latest()], answered=[0]),
        request("StreamSynchronize", [latest(1)], answered=[0]),
        request("EventDestroy", [latest()], answered=[0]),
        request("StreamDestroy", [latest(1)], answered=[0]),
    ],
    "module": [
        image(ADD_ONE_PTX),
        request("GetFunction", [latest()], answered=[0], tail=b"add_one"),
        request("DeviceSynchronize"),
        image(ADD_ONE_PTX),  # the same module again: its handle is the latest answer
        request("ModuleUnload", [latest()], answered=[0]),
    ],
    "vendor_calls": [
        # The modes, then a 4x4x4 f32 GEMM (ops N, N; leading dimensions 4; batch 1; compute
        # 32F): the fuzzed server runs no vendor library, so it is refused.
        request("LibraryModes"),
        request("VendorGemm", [u32_pair(0, 0), 4, 4, 4, 4, 4, 4, 0, 0, 0, 1, 0, u32_pair(0, 68)]),
        request("DeviceSynchronize"),
    ],
    "host_blocks": [
        # The host region is the first answered value: 16 pages, page-aligned.
        request("HostAlloc", [latest(0, 0), 8192], answered=[0]),
        request("DeviceReset"),
        request("LaunchHostFunc"),
    ],
}


def main():
    out = HERE / "seeds/session"
    out.mkdir(parents=True, exist_ok=True)
    for name, steps in SEEDS.items():
        (out / name).write_bytes(b"".join(steps))


if __name__ == "__main__":
    main()
