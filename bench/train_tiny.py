#!/usr/bin/env python3
# ===- train_tiny.py - Training steps against PyTorch eager ---------------=== #
#
# Part of the Hesper project.
#
# ===----------------------------------------------------------------------=== #
#
# Trains HLX's "Tiny" model (byte vocabulary 256, width 256, 4 layers, 4
# heads, FFN 1024, sequence 128, one sequence per step) side by side in one
# run on one machine:
#
#   - hesper-train on the native CPU target and on a Vulkan device (lavapipe
#     where there is no GPU);
#   - the same model in PyTorch eager mode on the CPU (Debian's
#     python3-torch): RMSNorm, rotary attention over adjacent pairs with a
#     causal mask, SwiGLU, an untied head, cross-entropy, clipping by global
#     norm and AdamW, with as many threads as hesper-train's CPU target.
#
# It prints the time per training step (median after warm-up steps), tokens
# per second, the ratio to PyTorch (the issue aims at >= 1.5x PyTorch's
# speed) and memory: Hesper's device buffers against the parameter + AdamW
# state bytes, and each process's peak resident set. Nothing here fails on
# time; errors exit non-zero.
#
#   bench/train_tiny.py --hesper-train build/bin/hesper-train [--steps 30]
#
# ===----------------------------------------------------------------------=== #

import argparse
import math
import os
import re
import tempfile
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CORPUS = "/usr/share/common-licenses/GPL-3"
TINY = dict(vocab=256, dim=256, layers=4, heads=4, ffn=1024, seq=128)


class BenchError(Exception):
    pass


def run_measured(cmd, timeout=3600):
    """Runs `cmd`; returns (returncode, stdout, stderr, peak RSS in MiB of
    that process alone)."""
    with tempfile.TemporaryFile("w+") as out, \
            tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, text=True)
        start = time.time()
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.time() - start > timeout:
                proc.kill()
                raise BenchError("%s timed out" % cmd[0])
            time.sleep(0.05)
        out.seek(0)
        err.seek(0)
        return (os.waitstatus_to_exitcode(status), out.read(), err.read(),
                usage.ru_maxrss / 1024.0)


def run_hesper(binary, backend, steps, threads):
    """Runs hesper-train and returns (ms per step, device MiB, state MiB,
    peak RSS MiB, compile s)."""
    cmd = [binary, CORPUS, "--preset", "tiny", "--steps", str(steps),
           "--warmup", "10", "--backend", backend, "--log-every",
           str(steps)]
    if backend == "cpu" and threads:
        cmd += ["-t", str(threads)]
    code, out, err, rss = run_measured(cmd)
    if code != 0:
        raise BenchError("%s failed:\n%s" % (" ".join(cmd), err))
    m = re.search(r"trained steps \d+\.\.\d+: ([0-9.]+) ms/step", out)
    mem = re.search(r"memory: ([0-9.]+) MiB of device buffers for ([0-9.]+) "
                    r"MiB", out)
    comp = re.search(r"in ([0-9.]+) s\n", out)
    if not m or not mem:
        raise BenchError("unexpected hesper-train output:\n" + out)
    return (float(m.group(1)), float(mem.group(1)), float(mem.group(2)),
            rss, float(comp.group(1)) if comp else 0.0)


TORCH_SCRIPT = r"""
import math, sys, time
import torch
import torch.nn.functional as F

V, D, L, H, FF, T = %(vocab)d, %(dim)d, %(layers)d, %(heads)d, %(ffn)d, %(seq)d
steps, threads = %(steps)d, %(threads)d
torch.set_num_threads(threads)
torch.manual_seed(1)
hd = D // H

def rmsnorm(x, w):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * w

pos = torch.arange(T, dtype=torch.float32)[:, None]
j = torch.arange(hd // 2, dtype=torch.float32)[None, :]
theta = pos * torch.exp(j * (-2.0 * math.log(10000.0) / hd))
cos, sin = torch.cos(theta), torch.sin(theta)

def rope(x):  # x [T, H, hd], adjacent pairs
    a, b = x[..., 0::2], x[..., 1::2]
    c, s = cos[:, None, :], sin[:, None, :]
    return torch.stack((a * c - b * s, a * s + b * c), -1).flatten(-2)

def param(*shape, scale):
    return (torch.randn(*shape) * scale).requires_grad_()

emb = param(V, D, scale=1.0)
layers = []
for _ in range(L):
    r = 1 / math.sqrt(2 * L)
    layers.append(dict(
        an=torch.ones(D, requires_grad=True),
        q=param(D, D, scale=D ** -0.5), k=param(D, D, scale=D ** -0.5),
        v=param(D, D, scale=D ** -0.5), o=param(D, D, scale=D ** -0.5 * r),
        fn=torch.ones(D, requires_grad=True),
        g=param(FF, D, scale=D ** -0.5), u=param(FF, D, scale=D ** -0.5),
        d=param(D, FF, scale=FF ** -0.5 * r)))
onorm = torch.ones(D, requires_grad=True)
head = param(V, D, scale=D ** -0.5)
params = [emb, onorm, head] + [p for l in layers for p in l.values()]
opt = torch.optim.AdamW(params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8,
                        weight_decay=0.0)
mask = torch.triu(torch.full((T, T), float("-inf")), 1)

def forward(tokens):
    x = emb[tokens]
    for l in layers:
        h = rmsnorm(x, l["an"])
        q = rope((h @ l["q"].T).view(T, H, hd)).transpose(0, 1)
        k = rope((h @ l["k"].T).view(T, H, hd)).transpose(0, 1)
        v = (h @ l["v"].T).view(T, H, hd).transpose(0, 1)
        s = q @ k.transpose(1, 2) / math.sqrt(hd) + mask
        a = (torch.softmax(s, -1) @ v).transpose(0, 1).reshape(T, D)
        x = x + a @ l["o"].T
        h = rmsnorm(x, l["fn"])
        x = x + (F.silu(h @ l["g"].T) * (h @ l["u"].T)) @ l["d"].T
    return rmsnorm(x, onorm) @ head.T

# The BLAS PyTorch runs on: Debian's reference libblas is some 40x slower
# than OpenBLAS (libopenblas0-pthread, which update-alternatives makes the
# libblas.so.3 PyTorch loads); report what this one does.
a, b = torch.randn(128, D), torch.randn(FF, D)
for _ in range(3):
    a @ b.T
t0 = time.perf_counter()
for _ in range(20):
    a @ b.T
print("gemm GFLOP/s %%.1f" %% (2 * 128 * D * FF * 20 / (time.perf_counter() - t0) / 1e9))

data = open("%(corpus)s", "rb").read()
times = []
for step in range(steps):
    off = (step * 7919) %% (len(data) - T - 1)
    chunk = torch.tensor(list(data[off:off + T + 1]), dtype=torch.long)
    t0 = time.perf_counter()
    loss = F.cross_entropy(forward(chunk[:-1]), chunk[1:])
    opt.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(params, 1.0)
    opt.step()
    times.append(time.perf_counter() - t0)
warm = times[min(5, len(times) - 1):]
warm.sort()
print("ms/step %%.3f" %% (1000 * warm[len(warm) // 2]))
print("loss %%.4f" %% loss.item())
"""


def run_torch(python, steps, threads):
    script = TORCH_SCRIPT % dict(TINY, steps=steps, threads=threads,
                                 corpus=CORPUS)
    code, out, err, rss = run_measured([python, "-c", script])
    if code != 0:
        raise BenchError("PyTorch run failed:\n" + err)
    ms = float(re.search(r"ms/step ([0-9.]+)", out).group(1))
    gemm = float(re.search(r"gemm GFLOP/s ([0-9.]+)", out).group(1))
    return ms, rss, gemm


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--hesper-train",
                    default=os.path.join(ROOT, "build", "bin", "hesper-train"))
    ap.add_argument("--python", default="/usr/bin/python3",
                    help="a Python with torch (Debian: python3-torch)")
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--vulkan-steps", type=int, default=5,
                    help="steps on the Vulkan device (lavapipe is slow)")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    args = ap.parse_args()

    params = (TINY["vocab"] * TINY["dim"] * 2 + TINY["dim"] +
              TINY["layers"] * (4 * TINY["dim"] ** 2 +
                                3 * TINY["dim"] * TINY["ffn"] +
                                2 * TINY["dim"]))
    print("Tiny model: %d parameters, %d tokens per step, %d CPU threads"
          % (params, TINY["seq"], args.threads))
    rows = []
    try:
        torch_ms, torch_rss, gemm = run_torch(args.python, args.steps,
                                              args.threads)
        print("PyTorch's BLAS: %.1f GFLOP/s on a [128, %d] x [%d, %d] GEMM%s"
              % (gemm, TINY["dim"], TINY["dim"], TINY["ffn"],
                 " (a reference BLAS: install libopenblas0-pthread for a "
                 "fair baseline)" if gemm < 10 else ""))
        rows.append(("PyTorch eager (CPU)", torch_ms, None, torch_rss, None))
        cpu = run_hesper(args.hesper_train, "cpu", args.steps, args.threads)
        rows.append(("hesper-train, CPU target", cpu[0], cpu[1:3], cpu[3],
                     cpu[4]))
        try:
            vk = run_hesper(args.hesper_train, "vulkan", args.vulkan_steps,
                            args.threads)
            rows.append(("hesper-train, Vulkan", vk[0], vk[1:3], vk[3],
                         vk[4]))
        except BenchError as e:
            print("(no Vulkan run: %s)" % str(e).splitlines()[0])
    except (BenchError, OSError, subprocess.TimeoutExpired) as e:
        print("error: %s" % e, file=sys.stderr)
        return 1

    print()
    print("| run | ms/step | tok/s | speed vs PyTorch | device MiB "
          "(state MiB) | peak RSS MiB | compile s |")
    print("|---|---|---|---|---|---|---|")
    for name, ms, mem, rss, compile_s in rows:
        print("| %s | %.1f | %.0f | %.2fx | %s | %.0f | %s |" % (
            name, ms, 1000.0 * TINY["seq"] / ms, torch_ms / ms,
            "%.1f (%.1f)" % mem if mem else "-", rss,
            "%.1f" % compile_s if compile_s is not None else "-"))
    print()
    print("speed vs PyTorch: PyTorch's ms/step divided by the run's "
          "(the target is >= 1.5x).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
