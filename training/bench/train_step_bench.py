#!/usr/bin/env python3
"""Step time of the standard training workload on polychip's cpu adapter against
the same model in PyTorch, and achieved GFLOP/s against OpenBLAS's sgemm peak,
all measured in one run on this machine. A benchmark, not a test: it prints
numbers and ratios and always exits 0 unless something fails to run.

Usage: /usr/bin/python3 training/bench/train_step_bench.py [--polychip build/bin/polychip]
Needs Debian's python3-torch and python3-numpy (tools/setup/setup.sh --bench).
"""
import argparse
import ctypes
import ctypes.util
import math
import re
import statistics
import subprocess
import tempfile
import time

import numpy as np
import torch
import torch.nn.functional as F

# The `default` preset (training/gpt2_config.cpp) and its hyperparameters.
VOCAB, POSITIONS, LAYERS, HEADS, CHANNELS = 256, 64, 4, 4, 128
BATCH, SEQ = 8, 64
LR, BETAS, EPS, WEIGHT_DECAY, CLIP = 1e-3, (0.9, 0.95), 1e-8, 0.0, 1.0


def train_step_flops():
    """Model FLOPs of one training step: forward GEMMs (the four projections
    per layer and the tied head) plus attention's two T x T products counted in
    full, and backward at twice the forward."""
    tokens = BATCH * SEQ
    gemm_params = LAYERS * 12 * CHANNELS * CHANNELS + VOCAB * CHANNELS
    forward = 2 * tokens * gemm_params + LAYERS * 4 * BATCH * SEQ * SEQ * CHANNELS
    return 3 * forward


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        c = CHANNELS
        self.ln_1 = torch.nn.LayerNorm(c, eps=1e-5)
        self.c_attn = torch.nn.Linear(c, 3 * c)
        self.c_proj = torch.nn.Linear(c, c)
        self.ln_2 = torch.nn.LayerNorm(c, eps=1e-5)
        self.c_fc = torch.nn.Linear(c, 4 * c)
        self.mlp_proj = torch.nn.Linear(4 * c, c)
        mask = torch.full((SEQ, SEQ), float("-inf")).triu(1)
        self.register_buffer("mask", mask)

    def forward(self, x):
        b, t, c = x.shape
        hd = c // HEADS
        q, k, v = self.c_attn(self.ln_1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, HEADS, hd).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hd)) + self.mask[:t, :t]
        y = (att.softmax(dim=-1) @ v).transpose(1, 2).reshape(b, t, c)
        x = x + self.c_proj(y)
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class Gpt2(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = torch.nn.Embedding(VOCAB, CHANNELS)
        self.wpe = torch.nn.Embedding(POSITIONS, CHANNELS)
        self.h = torch.nn.ModuleList(Block() for _ in range(LAYERS))
        self.ln_f = torch.nn.LayerNorm(CHANNELS, eps=1e-5)

    def forward(self, idx, targets):
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1]))
        for block in self.h:
            x = block(x)
        logits = self.ln_f(x) @ self.wte.weight.t()  # tied head
        return F.cross_entropy(logits.view(-1, VOCAB), targets.reshape(-1))


def torch_step_ms(steps, warmup):
    torch.manual_seed(1234)
    model = Gpt2()
    params = sum(p.numel() for p in model.parameters())
    opt = torch.optim.AdamW(model.parameters(), lr=LR, betas=BETAS, eps=EPS,
                            weight_decay=WEIGHT_DECAY)
    gen = torch.Generator().manual_seed(1)
    times = []
    for step in range(warmup + steps):
        data = torch.randint(0, VOCAB, (BATCH, SEQ + 1), generator=gen)
        start = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = model(data[:, :-1], data[:, 1:])
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), CLIP)
        opt.step()
        if step >= warmup:
            times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times), params


def polychip_step_ms(binary, steps, warmup):
    with tempfile.TemporaryDirectory() as out:
        run = subprocess.run(
            [binary, "train", "--adapter", "cpu", "--preset", "default", "--steps",
             str(warmup + steps), "--out", out],
            capture_output=True, text=True, check=True)
    times = [float(m.group(1)) for m in re.finditer(r"^step .*?([0-9.]+) ms$", run.stdout, re.M)]
    if len(times) != warmup + steps:
        raise SystemExit(f"could not read {warmup + steps} step times from polychip train:\n"
                         + run.stdout[-2000:])
    return statistics.median(times[warmup:])


def openblas_sgemm_gflops(threads, size=1024, reps=10):
    """Best-of-reps cblas_sgemm throughput, row-major, size^3."""
    lib = ctypes.CDLL(ctypes.util.find_library("openblas") or "libopenblas.so.0")
    lib.openblas_set_num_threads(threads)
    a, b = (np.random.default_rng(s).standard_normal((size, size), dtype=np.float32)
            for s in (1, 2))
    c = np.zeros((size, size), dtype=np.float32)
    ptr = lambda m: m.ctypes.data_as(ctypes.POINTER(ctypes.c_float))  # noqa: E731
    f = ctypes.c_float
    best = math.inf
    for _ in range(reps):
        start = time.perf_counter()
        # CblasRowMajor = 101, CblasNoTrans = 111
        lib.cblas_sgemm(101, 111, 111, size, size, size, f(1.0), ptr(a), size, ptr(b), size,
                        f(0.0), ptr(c), size)
        best = min(best, time.perf_counter() - start)
    return 2 * size**3 / best / 1e9


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--polychip", default="build/bin/polychip")
    ap.add_argument("--steps", type=int, default=30, help="timed steps (median reported)")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2, help="PyTorch and OpenBLAS threads")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)

    flops = train_step_flops()
    peak = openblas_sgemm_gflops(args.threads)
    poly_ms = polychip_step_ms(args.polychip, args.steps, args.warmup)
    torch_ms, params = torch_step_ms(args.steps, args.warmup)
    peak_after = openblas_sgemm_gflops(args.threads)

    poly_gflops, torch_gflops = flops / poly_ms / 1e6, flops / torch_ms / 1e6
    peak = max(peak, peak_after)
    print(f"workload: preset default, {params:,} parameters, batch {BATCH} x {SEQ}, fp32, AdamW, "
          f"{flops / 1e9:.3f} GFLOP per step; {args.threads} threads; median of {args.steps} steps")
    print(f"OpenBLAS sgemm 1024^3 peak: {peak:8.1f} GFLOP/s")
    print(f"polychip cpu adapter: {poly_ms:8.1f} ms/step  {poly_gflops:6.1f} GFLOP/s "
          f"({poly_gflops / peak:.1%} of sgemm peak)")
    print(f"PyTorch {torch.__version__}: {torch_ms:8.1f} ms/step  {torch_gflops:6.1f} GFLOP/s "
          f"({torch_gflops / peak:.1%} of sgemm peak)")
    print(f"step time ratio polychip / PyTorch: {poly_ms / torch_ms:.2f}x (target <= 0.5x)")


if __name__ == "__main__":
    main()
