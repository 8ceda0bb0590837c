#!/usr/bin/env python3
"""PyTorch under tally-run for gpu-check.sh: a small inference loop or training loop on the GPU.

  gpu_check_torch.py kernels     PyTorch's own kernels (elementwise, reductions, softmax, sort,
                                 scan; no cuBLAS or cuDNN), 200 rounds, compared with the CPU
  gpu_check_torch.py inference   a convolution + linear model's outputs on the GPU, 50 batches,
                                 compared with the same model on the CPU
  gpu_check_torch.py training    300 SGD steps of a small regression on the GPU; the loss must
                                 fall below a tenth of its start
  gpu_check_torch.py resnet      a small ResNet (convolution, BatchNorm, ReLU, pooling, linear):
                                 three training steps and an inference step in f32 (TF32 off),
                                 outputs, loss and gradients compared with the same on the CPU;
                                 then the inference step under bf16 autocast (cuDNN's graph path,
                                 or its classic path with TORCH_CUDNN_V8_API_DISABLED=1)
  gpu_check_torch.py transformer a transformer block (linear layers, scaled dot-product
                                 attention, LayerNorm) the same way: f32 forward and backward
                                 against the CPU, then forward under bf16 autocast
  gpu_check_torch.py rnn         two-layer bidirectional nn.LSTM (also with proj_size) and nn.GRU
                                 (cuDNN's RNN functions) with a linear head, the same way
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


def exact_float32():
    """f32 on the GPU as on the CPU: no TF32 in cuBLAS or cuDNN."""
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False


def compare(what, gpu, cpu, tolerance):
    """Exits when a GPU tensor differs from its CPU counterpart by more than `tolerance`,
    relative to the CPU tensor's largest magnitude."""
    error = float((gpu.float().cpu() - cpu.float()).abs().max()) / (1 + float(cpu.abs().max()))
    if not error <= tolerance:
        sys.exit(f"{what}: GPU and CPU differ by {error:.3e} (relative), more than {tolerance}")
    return error


def check_model(name, make_model, make_input, steps=3):
    """Trains copies of one model on the CPU and the GPU for `steps` SGD steps and compares
    the loss and gradients of each step, then the eval-mode outputs in f32 and under bf16
    autocast."""
    exact_float32()
    torch.manual_seed(0)
    cpu_model = make_model()
    gpu_model = make_model()
    gpu_model.load_state_dict(cpu_model.state_dict())
    gpu_model = gpu_model.to("cuda")
    optimizers = [torch.optim.SGD(m.parameters(), lr=0.01) for m in (cpu_model, gpu_model)]
    worst = 0.0
    start = time.monotonic()
    for step in range(steps):
        batch, target = make_input()
        losses = []
        for model, optimizer, device in zip((cpu_model, gpu_model), optimizers, ("cpu", "cuda")):
            optimizer.zero_grad()
            loss = torch.nn.functional.mse_loss(model(batch.to(device)), target.to(device))
            loss.backward()
            optimizer.step()
            losses.append(loss)
        worst = max(worst, compare(f"{name} step {step} loss", losses[1], losses[0], 1e-3))
        for (label, p_cpu), p_gpu in zip(cpu_model.named_parameters(), gpu_model.parameters()):
            worst = max(worst, compare(f"{name} step {step} gradient of {label}", p_gpu.grad,
                                       p_cpu.grad, 1e-3))
    batch, _ = make_input()
    cpu_model.eval()
    gpu_model.eval()
    with torch.no_grad():
        expected = cpu_model(batch)
        worst = max(worst, compare(f"{name} inference", gpu_model(batch.to("cuda")), expected,
                                   1e-3))
        with torch.autocast("cuda", dtype=torch.bfloat16):
            low = gpu_model(batch.to("cuda"))
        bf16 = compare(f"{name} bf16 inference", low, expected, 5e-2)
    torch.cuda.synchronize()
    seconds = time.monotonic() - start
    print(f"{name}: {steps} training steps and inference in {seconds:.3f} s, f32 worst relative "
          f"error {worst:.2e}, bf16 {bf16:.2e}")


class Residual(torch.nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.body = torch.nn.Sequential(
            torch.nn.Conv2d(channels, channels, 3, padding=1, bias=False),
            torch.nn.BatchNorm2d(channels), torch.nn.ReLU(),
            torch.nn.Conv2d(channels, channels, 3, padding=1, bias=False),
            torch.nn.BatchNorm2d(channels))

    def forward(self, x):
        return torch.relu(x + self.body(x))


def resnet():
    def model():
        return torch.nn.Sequential(
            torch.nn.Conv2d(3, 16, 3, stride=2, padding=1, bias=False), torch.nn.BatchNorm2d(16),
            torch.nn.ReLU(), torch.nn.MaxPool2d(2), Residual(16), Residual(16),
            torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(16, 10))

    check_model("resnet", model, lambda: (torch.randn(8, 3, 32, 32), torch.randn(8, 10)))


class Block(torch.nn.Module):
    def __init__(self, width=64, heads=4):
        super().__init__()
        self.heads = heads
        self.qkv = torch.nn.Linear(width, 3 * width)
        self.out = torch.nn.Linear(width, width)
        self.norm1 = torch.nn.LayerNorm(width)
        self.norm2 = torch.nn.LayerNorm(width)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(width, 4 * width), torch.nn.GELU(),
                                       torch.nn.Linear(4 * width, width))

    def forward(self, x):
        batch, length, width = x.shape
        q, k, v = self.qkv(self.norm1(x)).split(width, dim=-1)
        q, k, v = (t.view(batch, length, self.heads, -1).transpose(1, 2) for t in (q, k, v))
        attention = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.out(attention.transpose(1, 2).reshape(batch, length, width))
        return x + self.mlp(self.norm2(x))


def transformer():
    check_model("transformer", Block, lambda: (torch.randn(4, 32, 64), torch.randn(4, 32, 64)))


class Recurrent(torch.nn.Module):
    def __init__(self, cell, **options):
        super().__init__()
        self.rnn = cell(16, 24, num_layers=2, bidirectional=True, batch_first=True, **options)
        self.head = torch.nn.Linear(2 * options.get("proj_size", 24), 8)

    def forward(self, x):
        return self.head(self.rnn(x)[0])


def rnn():
    for name, cell, options in (("lstm", torch.nn.LSTM, {}),
                                ("lstm-proj", torch.nn.LSTM, {"proj_size": 12}),
                                ("gru", torch.nn.GRU, {})):
        check_model(name, lambda: Recurrent(cell, **options),
                    lambda: (torch.randn(4, 12, 16), torch.randn(4, 12, 8)))


if __name__ == "__main__":
    modes = {"kernels": kernels, "inference": inference, "training": training, "resnet": resnet,
             "transformer": transformer, "rnn": rnn}
    if len(sys.argv) != 2 or sys.argv[1] not in modes:
        sys.exit(__doc__)
    if not torch.cuda.is_available():
        sys.exit("torch.cuda.is_available() is False under tally-run")
    modes[sys.argv[1]]()
