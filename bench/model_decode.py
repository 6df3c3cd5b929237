#!/usr/bin/env python3
# ===- model_decode.py - Model execution against the copy bandwidth -------=== #
#
# Part of the Hesper project.
#
# ===----------------------------------------------------------------------=== #
#
# Runs generated GGUF models through `hesper-run` and prints, side by side in
# one run on one device:
#
#   - kernels per layer and per token for each architecture (llama, qwen2,
#     qwen3, gemma, gemma2, gemma3, gemma4, bitnet, phi3, qwen3moe): the
#     difference between a 2-layer and a 1-layer model is one layer; the
#     rest is the final norm and the LM head;
#   - for the ~29M-parameter demo model (f32 and q8_0): prefill tok/s for a
#     128-token prompt, decode tok/s, the decode bound set by the weight
#     bytes / the copy bandwidth measured on the same device in the same run,
#     and the ratio (issue 10 aims at >= 0.5 on lavapipe);
#   - the host time per decoded token outside the kernels (sampling, replay,
#     upload of the embedding row, readback of the logits) as a fraction of
#     the token's time.
#
# The baseline copy is bench/graphs/copy.mlir (y = x over 1 MiB), the same
# graph throughput.py uses. Nothing here fails on time; errors (no device, a
# failing hesper-run) exit non-zero.
#
#   bench/model_decode.py --hesper-run build/bin/hesper-run [--backend vulkan]
#
# ===----------------------------------------------------------------------=== #

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
MAKE_MODEL = os.path.join(ROOT, "utils", "gguf", "make_model.py")
TARGET = 0.5


class BenchError(Exception):
    pass


def run(cmd, timeout):
    try:
        # Generated text may end inside a UTF-8 sequence.
        proc = subprocess.run(cmd, capture_output=True, text=True,
                              errors="replace", timeout=timeout)
    except FileNotFoundError:
        raise BenchError(f"cannot run {cmd[0]}")
    except subprocess.TimeoutExpired:
        raise BenchError(f"timed out after {timeout} s: {' '.join(cmd)}")
    if proc.returncode != 0:
        raise BenchError(f"failed ({proc.returncode}): {' '.join(cmd)}\n"
                         f"{proc.stdout}{proc.stderr}")
    return proc.stdout + proc.stderr


def find(pattern, text, what):
    m = re.search(pattern, text, re.M)
    if not m:
        raise BenchError(f"no {what} in the output:\n{text}")
    return m


def make_model(opts, path, *args):
    run([opts.python, MAKE_MODEL, path, "--quiet", *args], opts.timeout)


def copy_gbps(opts):
    """Copy bandwidth of the device: bytes read + written per kernel time."""
    graph = os.path.join(HERE, "graphs", "copy.mlir")
    out = run([opts.hesper_run, graph, f"--backend={opts.backend}",
               "--input", "x=random:1", "--repeat", str(opts.copy_repeat)],
              opts.timeout)
    us = float(find(r"kernels total: ([0-9.]+) us per step", out,
                    "copy kernel time").group(1))
    moved = 2 * 64 * 4096 * 4
    return moved / (us * 1e-6) / 1e9, out


def kernels_per_token(opts, tmp, arch, layers):
    path = os.path.join(tmp, f"{arch}-{layers}.gguf")
    make_model(opts, path, "--arch", arch, "--layers", str(layers))
    out = run([opts.hesper_run, path, f"--backend={opts.backend}",
               "--tokens", "1,2", "-n", "0"], opts.timeout)
    return int(find(r"kernels per token: ([0-9]+)", out, "kernel count")
               .group(1))


def decode_run(opts, model, prompt_tokens):
    """One run: prefill tok/s, decode tok/s, kernel ms and wall ms per
    token, weight MiB."""
    ids = ",".join(str(3 + (i * 37) % 8000) for i in range(prompt_tokens))
    out = run([opts.hesper_run, model, f"--backend={opts.backend}",
               "--tokens", ids, "-n", str(opts.decode_tokens), "--temp", "0",
               "-c", str(prompt_tokens + opts.decode_tokens + 8),
               "--kernel-times"], opts.timeout)
    prefill = float(find(r"^prompt: .*\(([0-9.]+) tok/s\)", out,
                         "prompt rate").group(1))
    decode = float(find(r"^decode: .*\(([0-9.]+) tok/s\)", out,
                        "decode rate").group(1))
    m = find(r"kernel time per token: ([0-9.]+) ms of ([0-9.]+) ms wall", out,
             "kernel time")
    weights = float(find(r"\(weights ([0-9.]+) MiB\b", out,
                         "weight size").group(1))
    return prefill, decode, float(m.group(1)), float(m.group(2)), weights


def main():
    ap = argparse.ArgumentParser(
        description="Model prefill/decode against the device's copy "
                    "bandwidth")
    ap.add_argument("--hesper-run", default=os.path.join(ROOT, "build", "bin",
                                                         "hesper-run"))
    ap.add_argument("--python", default=sys.executable,
                    help="a Python with NumPy, for utils/gguf/make_model.py")
    ap.add_argument("--backend", default="vulkan",
                    choices=["vulkan", "cuda", "cpu", "auto"])
    ap.add_argument("--prompt-tokens", type=int, default=128)
    ap.add_argument("--decode-tokens", type=int, default=64)
    ap.add_argument("--trials", type=int, default=3,
                    help="runs of each model (the median is reported)")
    ap.add_argument("--copy-repeat", type=int, default=20)
    ap.add_argument("--types", default="f32,q8_0")
    ap.add_argument("--arch-types",
                    default="llama:q8_0,qwen2:q8_0,qwen3:q8_0,gemma:q8_0,"
                            "gemma2:q8_0,gemma3:q8_0,gemma4:q8_0,bitnet:tq2_0,"
                            "bitnet:tq1_0,bitnet:i2_s,phi3:q8_0,qwen3moe:q8_0",
                    help="arch:type pairs decoded at the demo model's size "
                         "('' to skip)")
    ap.add_argument("--timeout", type=int, default=900)
    opts = ap.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        gbps, copy_out = copy_gbps(opts)
        device = find(r"^device: (.*)$", copy_out, "device").group(1)
        print(f"device: {device}")
        print(f"copy bandwidth: {gbps:.2f} GB/s (bench/graphs/copy.mlir)")
        print()
        print("kernels per token (hesper-fuse, one layer = 2 layers - 1 "
              "layer):")
        print(f"{'arch':<8} {'per layer':>9} {'head':>5} "
              f"{'per token (8 layers)':>21}")
        for arch in ["llama", "qwen2", "qwen3", "gemma", "gemma2", "gemma3",
                     "gemma4", "bitnet", "phi3", "qwen3moe"]:
            one = kernels_per_token(opts, tmp, arch, 1)
            two = kernels_per_token(opts, tmp, arch, 2)
            layer, rest = two - one, one - (two - one)
            print(f"{arch:<8} {layer:>9} {rest:>5} {8 * layer + rest:>21}")
        print()
        print(f"demo model (29.4M parameters), {opts.prompt_tokens}-token "
              f"prompt, {opts.decode_tokens} decoded tokens, median of "
              f"{opts.trials}:")
        print(f"{'type':<6} {'weights':>9} {'prefill':>9} {'decode':>8} "
              f"{'bound':>8} {'ratio':>6} {'kernel ms':>10} {'wall ms':>8} "
              f"{'host %':>7}")
        for t in opts.types.split(","):
            model = os.path.join(tmp, f"demo-{t}.gguf")
            make_model(opts, model, "--preset", "demo", "--type", t)
            runs = [decode_run(opts, model, opts.prompt_tokens)
                    for _ in range(opts.trials)]
            prefill = statistics.median(r[0] for r in runs)
            decode = statistics.median(r[1] for r in runs)
            kernel_ms = statistics.median(r[2] for r in runs)
            wall_ms = statistics.median(r[3] for r in runs)
            weights = runs[0][4]
            bound = gbps * 1e9 / (weights * 1048576)
            host = 100.0 * (1.0 - kernel_ms / wall_ms)
            print(f"{t:<6} {weights:>6.1f}MiB {prefill:>6.1f}t/s "
                  f"{decode:>5.1f}t/s {bound:>5.1f}t/s "
                  f"{decode / bound:>6.2f} {kernel_ms:>10.1f} "
                  f"{wall_ms:>8.1f} {host:>6.1f}%")
        if opts.arch_types:
            print()
            print(f"each architecture at the demo model's size (dim 512, 8 "
                  f"layers, 8 heads / 4 KV heads, FFN 1536, vocabulary "
                  f"8192), median of {opts.trials}:")
            print(f"{'arch':<8} {'type':<6} {'weights':>9} {'prefill':>9} "
                  f"{'decode':>8} {'bound':>8} {'ratio':>6}")
            for pair in opts.arch_types.split(","):
                arch, t = pair.split(":")
                model = os.path.join(tmp, f"{arch}-{t}.gguf")
                make_model(opts, model, "--preset", "demo", "--arch", arch,
                           "--type", t)
                runs = [decode_run(opts, model, opts.prompt_tokens)
                        for _ in range(opts.trials)]
                prefill = statistics.median(r[0] for r in runs)
                decode = statistics.median(r[1] for r in runs)
                weights = runs[0][4]
                bound = gbps * 1e9 / (weights * 1048576)
                print(f"{arch:<8} {t:<6} {weights:>6.1f}MiB "
                      f"{prefill:>6.1f}t/s {decode:>5.1f}t/s "
                      f"{bound:>5.1f}t/s {decode / bound:>6.2f}")
        print()
        print(f"ratio = decode tok/s / (copy bandwidth / weight bytes); "
              f"target >= {TARGET}. host % = share of a token's wall time "
              f"outside the kernels (device timestamps).")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BenchError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(1)
