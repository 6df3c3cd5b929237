#!/usr/bin/env python3
# ===- cpu_target.py - The CPU target against memory and against lavapipe -=== #
#
# Part of the Hesper project.
#
# ===----------------------------------------------------------------------=== #
#
# Prints, side by side in one run on this machine:
#
#   1. the memory-read baseline (hesper-bench-memread: threads summing a
#      256 MiB buffer) for 1 thread and for all of them;
#   2. for each kernel graph -- matvec 4096x4096 with f32, f16, q8_0, q4_k
#      and q6_k weights, RMSNorm and softmax over 64x4096 -- the kernel time
#      on the CPU target (all threads), its bandwidth (bytes of the graph's
#      arguments and results over the kernel time) as a fraction of the
#      all-thread memory-read baseline, the same graph's kernel time on
#      lavapipe (--backend vulkan) and the speed-up;
#   3. scaling: the f32 and q4_k matvec with 1 thread and with all;
#   4. the cost of a launch in a replayed step: 32 dependent kernels over 1
#      element (run by the submitting thread alone) and over 4096 elements
#      (split over every thread), --no-fuse, the step's wall time over 32.
#
# Kernel times are the median over --repeat runs (first run dropped) of the
# per-kernel times hesper-run --profile records: the CPU driver's wall clock
# per dispatch, lavapipe's timestamps. A 4096x4096 q8_0/q4_k/q6_k matrix
# (18, 9 and 14 MB) may stay in a large last-level cache between runs, so
# its ratio can pass 1; the f32 and f16 matrices (64 and 32 MiB) come from
# memory. Never fails on time; exits non-zero when a tool fails.
#
#   bench/cpu_target.py [--hesper-run build/bin/hesper-run]
#                       [--memread build/bin/hesper-bench-memread]
#                       [--no-vulkan] [--repeat 20]
#
# ===----------------------------------------------------------------------=== #

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from throughput import graph_bytes  # noqa: E402

GRAPHS = [
    ("matvec f32", "matvec-f32-4096.mlir"),
    ("matvec f16", "matvec-f16-4096.mlir"),
    ("matvec q8_0", "matvec-q8_0-4096.mlir"),
    ("matvec q4_k", "matvec-q4_k-4096.mlir"),
    ("matvec q6_k", "matvec-q6_k-4096.mlir"),
    ("rmsnorm", "rmsnorm.mlir"),
    ("softmax", "softmax.mlir"),
]
INPUTS = ["x=random:1", "w=random:2"]


def run(cmd, timeout):
    proc = subprocess.run(cmd, capture_output=True, text=True,
                          timeout=timeout)
    if proc.returncode != 0:
        sys.exit(f"error: {' '.join(cmd)} failed ({proc.returncode}):\n"
                 f"{proc.stdout}{proc.stderr}")
    return proc.stdout


def kernel_us(opts, graph, backend, threads=None, extra=(), inputs=INPUTS):
    """Median per-step kernel time in us (first run dropped) and the step
    wall time printed by hesper-run."""
    with tempfile.TemporaryDirectory() as tmp:
        trace = os.path.join(tmp, "trace.json")
        cmd = [opts.hesper_run, graph, f"--backend={backend}",
               f"--repeat={opts.repeat}", f"--profile={trace}", *extra]
        if threads:
            cmd.append(f"--threads={threads}")
        for i in inputs:
            name = i.split("=")[0]
            if re.search(rf'circuit\.name = "{name}"', open(graph).read()):
                cmd += ["--input", i]
        stdout = run(cmd, opts.timeout)
        events = json.load(open(trace))["traceEvents"]
    runs = []
    for e in events:
        if e.get("cat") == "run" and e.get("name") == "step":
            runs.append([0.0, float(e["dur"])])
        elif e.get("cat") == "kernel" and runs:
            runs[-1][0] += float(e["dur"])
    if len(runs) < 2:
        sys.exit(f"error: {graph}: no kernel times in the trace")
    return (statistics.median(k for k, _ in runs[1:]),
            statistics.median(s for _, s in runs[1:]), stdout)


def chain_graph(path, n):
    lines = [f'circuit.graph @chain(%x: tensor<{n}xf32> '
             f'{{circuit.name = "x"}}) -> tensor<{n}xf32> {{']
    prev = "%x"
    for i in range(32):
        lines += [f"  %v{i} = circuit.map ins({prev} : tensor<{n}xf32>) "
                  f"-> tensor<{n}xf32> {{",
                  "  ^bb0(%lane: i32, %a: f32):",
                  "    %one = exp.constant 1.0 : f32",
                  "    %b = exp.add %a, %one : f32",
                  "    circuit.yield %b : f32", "  }"]
        prev = f"%v{i}"
    lines += [f"  circuit.output {prev} : tensor<{n}xf32>", "}"]
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    build = os.path.join(os.path.dirname(HERE), "build", "bin")
    ap.add_argument("--hesper-run", default=os.path.join(build, "hesper-run"))
    ap.add_argument("--memread",
                    default=os.path.join(build, "hesper-bench-memread"))
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--no-vulkan", action="store_true",
                    help="skip the lavapipe column")
    ap.add_argument("--timeout", type=int, default=900)
    opts = ap.parse_args()

    listing = run([opts.hesper_run, "--list-devices"], opts.timeout)
    cpu = re.search(r"^cpu 0: (.*)$", listing, re.M)
    if not cpu:
        sys.exit("error: hesper-run lists no CPU device")
    threads = int(re.search(r"\((\d+) threads", cpu.group(1)).group(1))
    vulkan = not opts.no_vulkan and re.search(r"^vulkan 0:", listing, re.M)
    print(f"cpu device: {cpu.group(1)}")

    base = {}
    for line in run([opts.memread, "--threads", f"1,{threads}"],
                    opts.timeout).splitlines():
        m = re.match(r"memread: threads (\d+): ([0-9.]+) GB/s", line)
        if m:
            base[int(m.group(1))] = float(m.group(2))
        print(line)
    print()

    graphs = os.path.join(HERE, "graphs")
    print(f"{'kernel':<12} {'MB':>6} {'cpu us':>9} {'GB/s':>7} "
          f"{'/memread':>8}" + (f" {'lavapipe us':>12} {'speed-up':>9}"
                                if vulkan else ""))
    for name, file in GRAPHS:
        path = os.path.join(graphs, file)
        read, written = graph_bytes(path)
        mb = (read + written) / 1e6
        us, _, _ = kernel_us(opts, path, "cpu")
        gbs = (read + written) / us / 1e3
        row = (f"{name:<12} {mb:>6.1f} {us:>9.1f} {gbs:>7.1f} "
               f"{gbs / base[threads]:>8.2f}")
        if vulkan:
            vus, _, _ = kernel_us(opts, path, "vulkan")
            row += f" {vus:>12.1f} {vus / us:>8.1f}x"
        print(row)
    print()

    print("scaling (kernel us, 1 thread -> all):")
    for name, file in [("matvec f32", "matvec-f32-4096.mlir"),
                       ("matvec q4_k", "matvec-q4_k-4096.mlir")]:
        path = os.path.join(graphs, file)
        one, _, _ = kernel_us(opts, path, "cpu", threads=1)
        every, _, _ = kernel_us(opts, path, "cpu", threads=threads)
        print(f"  {name:<12} {one:9.1f} -> {every:9.1f} us "
              f"({one / every:.2f}x on {threads} threads)")
    print()

    print("launch cost in a replayed step (32 dependent kernels, --no-fuse):")
    with tempfile.TemporaryDirectory() as tmp:
        for n in (1, 4096):
            path = os.path.join(tmp, f"chain{n}.mlir")
            chain_graph(path, n)
            _, step, out = kernel_us(opts, path, "cpu", extra=["--no-fuse"],
                                     inputs=["x=const:0"])
            launches = re.search(r"-> (\d+) kernel launches", out)
            count = int(launches.group(1)) if launches else 32
            print(f"  {n:>5} elements per kernel: {step / count:6.2f} us "
                  f"per launch (step {step:.1f} us, {count} launches)")


if __name__ == "__main__":
    main()
