#!/usr/bin/env python3
"""PyTorch under tally-run for gpu-check.sh: a small inference loop or training loop on the GPU.

  gpu_check_torch.py kernels     PyTorch's own kernels (elementwise, reductions, softmax, sort,
                                 scan; no cuBLAS or cuDNN), 200 rounds, compared with the CPU
  gpu_check_torch.py inference   a convolution + linear model's outputs on the GPU, 50 batches,
                                 compared with the same model on the CPU
  gpu_check_torch.py training    300 SGD steps of a small regression on the GPU; the loss must
                                 fall below a tenth of its start
Exit status 0 when the check holds; the last line says what was measured.
"""
import sys
import time

import torch


def kernels():
    torch.manual_seed(0)
    x, w = torch.randn(1 << 20), torch.randn(1 << 20)

    def compute(a, b):
        return ((a * b).relu().sum(), torch.softmax(a[:4096], 0).max(), a.sort().values[-5:],
                torch.cumsum(a, 0)[-1])

    expected = compute(x, w)
    gx, gw = x.to("cuda"), w.to("cuda")
    start = time.monotonic()
    for _ in range(200):
        outputs = compute(gx, gw)
    torch.cuda.synchronize()
    seconds = time.monotonic() - start
    worst = max(float((out.cpu() - want).abs().max()) / (1 + float(want.abs().max()))
                for out, want in zip(outputs, expected))
    if worst > 1e-3:
        sys.exit(f"kernels: GPU and CPU results differ by {worst} (relative)")
    print(f"kernels: 200 rounds in {seconds:.3f} s, worst relative error {worst:.2e}")


def inference():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(),
                                torch.nn.Flatten(), torch.nn.Linear(8 * 16 * 16, 10)).eval()
    batches = [torch.randn(16, 3, 16, 16) for _ in range(50)]
    with torch.no_grad():
        expected = [model(batch) for batch in batches]
        gpu_model = model.to("cuda")
        start = time.monotonic()
        outputs = [gpu_model(batch.to("cuda")).to("cpu") for batch in batches]
        torch.cuda.synchronize()
        seconds = time.monotonic() - start
    worst = max((out - want).abs().max().item() for out, want in zip(outputs, expected))
    # TF32 convolutions (cuDNN's default) keep about 3 decimal digits.
    if worst > 2e-2:
        sys.exit(f"inference: GPU and CPU outputs differ by {worst}")
    print(f"inference: 50 batches in {seconds:.3f} s, max |GPU - CPU| {worst:.2e}")


def training():
    torch.manual_seed(0)
    inputs = torch.randn(512, 32, device="cuda")
    truth = torch.randn(32, 1, device="cuda")
    targets = inputs @ truth
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.Tanh(),
                                torch.nn.Linear(64, 1)).to("cuda")
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    start = time.monotonic()
    first = None
    for _ in range(300):
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(inputs), targets)
        loss.backward()
        optimizer.step()
        if first is None:
            first = loss.item()
    last = loss.item()
    seconds = time.monotonic() - start
    if not last < first / 10:
        sys.exit(f"training: the loss went from {first:.4f} to {last:.4f} only")
    print(f"training: 300 steps in {seconds:.3f} s, loss {first:.4f} -> {last:.4f}")


if __name__ == "__main__":
    modes = {"kernels": kernels, "inference": inference, "training": training}
    if len(sys.argv) != 2 or sys.argv[1] not in modes:
        sys.exit(__doc__)
    if not torch.cuda.is_available():
        sys.exit("torch.cuda.is_available() is False under tally-run")
    modes[sys.argv[1]]()
