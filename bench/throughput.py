#!/usr/bin/env python3
# ===- throughput.py - Elementwise and RMSNorm bandwidth vs a copy ---------=== #
#
# Part of the Hesper project.
#
# ===----------------------------------------------------------------------=== #
#
# Runs Circuit graphs (bench/graphs/) through hesper-run on one device and
# reports the memory bandwidth each achieves, as a fraction of a plain copy
# kernel's on the same device:
#
#   copy         y = x                         (the baseline)
#   elementwise  y = x * 2 + 1                 (two maps, fused into one)
#   rmsnorm      y = x * rsqrt(mean(x^2) + eps) * w, 64 rows of 4096
#   matvec-f32   y = W x, W [512, 4096] f32
#   matvec-q4_k  y = W x, W [2048, 4096] q4_k (decoded in the kernel)
#
# Bytes moved are the graph's arguments read once plus its results written
# once (what an ideal kernel moves); GB/s is that over the kernel time.
#
# Kernel time. hesper-run --profile=FILE writes every run's kernel times
# (GPU timestamps) to a Chrome trace; per run they are added up over the
# graph's kernels, the first run of every hesper-run process is dropped (it
# includes the driver's first-use work: lavapipe compiles the shader then,
# unless Mesa's on-disk shader cache has it, and that run can take 3-30x as
# long as a later one), and the
# figure is the median of the rest, pooled over --trials processes that take
# turns with the other graphs. As a cross-check the script also reports
# hesper-run's own printed average ("kernel NAME: X us"): newer builds leave
# the first run out of it ("first run excluded"); with an older build that
# averages all N runs, the first run is taken out by differencing with a
# --repeat 1 run: (N * avg_N - avg_1) / (N - 1).
#
# Needs python3 only (no numpy). Never fails on time: the exit status is
# non-zero only when hesper-run fails or its output cannot be read.
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

# (name, graph file, inputs). The copy kernel must come first: it is the
# baseline of the ratios.
GRAPHS = [
    ("copy", "copy.mlir", ["x=random:1"]),
    ("elementwise", "elementwise.mlir", ["x=random:1"]),
    ("rmsnorm", "rmsnorm.mlir", ["x=random:1", "w=random:2"]),
    ("matvec-f32", "matvec-f32.mlir", ["x=random:1", "w=random:2"]),
    ("matvec-q4_k", "matvec-q4_k.mlir", ["x=random:1", "w=random:2"]),
]

# --diagnose: the two halves of the RMSNorm kernel on their own (no target).
DIAGNOSTICS = [
    ("rms-reduce", os.path.join("diag", "rmsnorm-reduce.mlir"),
     ["x=random:1"]),
    ("rms-scale", os.path.join("diag", "rmsnorm-scale.mlir"),
     ["x=random:1", "w=random:2"]),
]

ELEMENT_BYTES = {"f32": 4, "f16": 2, "bf16": 2, "i32": 4, "i16": 2, "i8": 1}
# GGUF block formats: (values per block, bytes per block).
BLOCK_BYTES = {"!circuit.q8_0": (32, 34), "!circuit.q8_1": (32, 36),
               "!circuit.q4_k": (256, 144), "!circuit.q6_k": (256, 210)}

TARGET = 0.9


class BenchError(Exception):
    pass


def tensor_bytes(spec):
    """Bytes of a tensor type body such as '64x4096xf32'."""
    *dims, elem = spec.split("x")
    n = 1
    for d in dims:
        n *= int(d)
    if elem in BLOCK_BYTES:
        values, nbytes = BLOCK_BYTES[elem]
        return n // values * nbytes
    if elem not in ELEMENT_BYTES:
        raise BenchError(f"unsupported element type in tensor<{spec}>")
    return n * ELEMENT_BYTES[elem]


def graph_bytes(path):
    """(bytes read, bytes written): the graph's arguments and results."""
    text = open(path).read()
    m = re.search(r"circuit\.graph\s+@\w+\s*\((.*?)\)\s*->\s*(.*?)\{", text,
                  re.S)
    if not m:
        raise BenchError(f"{path}: no circuit.graph signature found")
    args, results = m.group(1), m.group(2)
    read = sum(tensor_bytes(t) for t in re.findall(r"tensor<([^>]*)>", args))
    written = sum(
        tensor_bytes(t) for t in re.findall(r"tensor<([^>]*)>", results))
    return read, written


def run_hesper(opts, graph, inputs, repeat, profile=None):
    """Runs hesper-run once; returns its stdout."""
    cmd = [opts.hesper_run, graph, f"--backend={opts.backend}",
           f"--repeat={repeat}"]
    for i in inputs:
        cmd += ["--input", i]
    if profile:
        cmd.append(f"--profile={profile}")
    if opts.check:
        cmd.append("--check")
    if opts.verbose:
        print("+ " + " ".join(cmd), file=sys.stderr)
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True,
                              timeout=opts.timeout)
    except FileNotFoundError:
        raise BenchError(f"cannot run {opts.hesper_run} (pass --hesper-run)")
    except subprocess.TimeoutExpired:
        raise BenchError(f"timed out after {opts.timeout} s: {' '.join(cmd)}")
    if proc.returncode != 0:
        raise BenchError(f"hesper-run failed ({proc.returncode}): "
                         f"{' '.join(cmd)}\n{proc.stdout}{proc.stderr}")
    if opts.check and not re.search(r"^check .*: ok$", proc.stdout, re.M):
        raise BenchError(f"no passing check in the output of "
                         f"{' '.join(cmd)}:\n{proc.stdout}")
    return proc.stdout


def printed_kernel_us(stdout):
    """hesper-run's printed per-step kernel time (sum of 'kernel X: Y us')
    and whether it says the first run was left out."""
    times = [float(t) for t in
             re.findall(r"^  kernel [^:]+: ([0-9.]+) us$", stdout, re.M)]
    if not times:
        raise BenchError("hesper-run printed no kernel times (does the device "
                         "have timestamps?)\n" + stdout)
    return sum(times), "first run excluded" in stdout


def traced_runs(profile):
    """Per run (in order): (kernel us summed over the run's kernels, step us)
    from a hesper-run --profile trace."""
    with open(profile) as f:
        events = json.load(f)["traceEvents"]
    runs = []
    kernels = 0
    for e in events:
        if e.get("cat") == "run" and e.get("name") == "step":
            runs.append([0.0, float(e["dur"])])
        elif e.get("cat") == "kernel":
            if not runs:
                raise BenchError(f"{profile}: kernel event before any step")
            runs[-1][0] += float(e["dur"])
            kernels += 1
    if not kernels:
        raise BenchError("the trace has no kernel times (a backend or device "
                         "without GPU timestamps?)")
    return [tuple(r) for r in runs]


def measure(opts, name, path, inputs, out):
    """One trial of one graph: appends the per-run times (first run dropped)
    and the JIT-free printed average to `out`."""
    with tempfile.TemporaryDirectory() as tmp:
        profile = os.path.join(tmp, "trace.json")
        stdout = run_hesper(opts, path, inputs, opts.repeat, profile)
        runs = traced_runs(profile)
    if len(runs) != opts.repeat:
        raise BenchError(f"{name}: trace has {len(runs)} runs, expected "
                         f"{opts.repeat}")
    out.setdefault("device", re.search(r"^device: (.*)$", stdout, re.M))
    # "graph @g: 3 dispatch ops -> 1 kernel launches" (newer hesper-run),
    # else "compiled 1 kernels (1 launches)".
    fused = re.search(r"(\d+) dispatch ops -> (\d+) kernel launches", stdout)
    launches = re.search(r"\((\d+) launches\)", stdout)
    if fused:
        out["launches"] = f"{fused.group(1)} -> {fused.group(2)}"
    else:
        out["launches"] = launches.group(1) if launches else "?"
    out["first"].append(runs[0][0])
    out["trial"].append(statistics.median(k for k, _ in runs[1:]))
    out["kernel"] += [k for k, _ in runs[1:]]
    out["step"] += [s for _, s in runs[1:]]

    avg, excluded = printed_kernel_us(stdout)
    if not excluded and opts.repeat > 1:
        # An older hesper-run: its average includes the JIT run.
        single, _ = printed_kernel_us(run_hesper(opts, path, inputs, 1))
        avg = (opts.repeat * avg - single) / (opts.repeat - 1)
        out["printed_how"] = "differenced with --repeat 1"
    else:
        out["printed_how"] = "hesper-run excludes the first run"
    out["printed"].append(avg)


def main():
    parser = argparse.ArgumentParser(
        description="Elementwise, RMSNorm and matvec throughput against a copy "
        "kernel, measured through hesper-run.")
    parser.add_argument("--hesper-run", default=None,
                        help="hesper-run binary (default: build/bin/hesper-run "
                        "of this checkout, else hesper-run on PATH)")
    parser.add_argument("--backend", default="vulkan",
                        help="hesper-run --backend (default vulkan)")
    parser.add_argument("--repeat", type=int, default=200,
                        help="runs per hesper-run process (default 200)")
    parser.add_argument("--trials", type=int, default=5,
                        help="hesper-run processes per graph, taking turns "
                        "with the other graphs (default 5)")
    parser.add_argument("--graphs", default=os.path.join(HERE, "graphs"),
                        help="folder of the graphs (copy.mlir, ...)")
    parser.add_argument("--no-check", dest="check", action="store_false",
                        help="skip hesper-run --check (results against the "
                        "interpreter)")
    parser.add_argument("--diagnose", action="store_true",
                        help="also run the two halves of the RMSNorm kernel "
                        "alone (graphs/diag/): the row reduction, and the "
                        "broadcast multiply by w")
    parser.add_argument("--timeout", type=int, default=300,
                        help="seconds per hesper-run (default 300)")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="print the commands")
    opts = parser.parse_args()
    if opts.repeat < 2:
        parser.error("--repeat must be at least 2 (the first run is dropped)")
    if opts.trials < 1:
        parser.error("--trials must be at least 1")
    if opts.hesper_run is None:
        local = os.path.join(HERE, "..", "build", "bin", "hesper-run")
        opts.hesper_run = (os.path.normpath(local) if os.path.exists(local)
                           else "hesper-run")

    graphs = GRAPHS + (DIAGNOSTICS if opts.diagnose else [])
    try:
        results = {name: {"first": [], "trial": [], "kernel": [], "step": [],
                          "printed": []}
                   for name, _, _ in graphs}
        for trial in range(opts.trials):
            order = graphs if trial % 2 == 0 else graphs[::-1]
            for name, file, inputs in order:
                measure(opts, name, os.path.join(opts.graphs, file), inputs,
                        results[name])
    except BenchError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1

    device = results["copy"]["device"]
    print(f"throughput.py: {opts.hesper_run} --backend={opts.backend}, "
          f"device {device.group(1) if device else '(not printed)'}")
    print(f"each graph: {opts.trials} hesper-run processes x {opts.repeat} "
          f"runs; kernel time = median of the per-run kernel totals (GPU "
          f"timestamps), first run of each process dropped")
    print()
    header = (f"{'graph':<12} {'launches':>8} {'bytes moved':>12} "
              f"{'kernel us':>10} {'GB/s':>7} {'vs copy':>8} "
              f"{'step us':>9} {'1st run us':>11} {'avg us':>8}")
    print(header)
    rows = []
    for name, file, _ in graphs:
        r = results[name]
        read, written = graph_bytes(os.path.join(opts.graphs, file))
        kernel = statistics.median(r["kernel"])
        gbps = (read + written) / (kernel * 1e3)
        rows.append((name, r, read + written, kernel, gbps))
    copy_gbps = rows[0][4]
    for name, r, moved, kernel, gbps in rows:
        print(f"{name:<12} {r['launches']:>8} {moved:>12} "
              f"{kernel:>10.1f} {gbps:>7.2f} {gbps / copy_gbps:>8.3f} "
              f"{statistics.median(r['step']):>9.1f} "
              f"{statistics.median(r['first']):>11.1f} "
              f"{statistics.mean(r['printed']):>8.1f}")
    print()
    print("launches: the graph's dispatch ops -> the kernels hesper-fuse left. "
          "bytes moved: arguments read once + results written once. step us: "
          "median host time of a run (submit to fence). 1st run us: the "
          "dropped JIT run. avg us: hesper-run's printed per-step kernel "
          f"average without the first run ({rows[0][1]['printed_how']}), "
          "mean over the processes.")
    print()
    copy_trials = results["copy"]["trial"]
    copy_moved = rows[0][2]
    for name, r, moved, kernel, gbps in rows[1:len(GRAPHS)]:
        ratio = gbps / copy_gbps
        verdict = "met" if ratio >= TARGET else "NOT met"
        # Per process pair (this graph's trial t against copy's trial t, run
        # next to each other): the spread shows the noise. Bandwidth ratio:
        # (moved / g) / (copy_moved / c).
        pairs = sorted(moved * c / (copy_moved * g)
                       for c, g in zip(copy_trials, r["trial"]))
        print(f"{name}: {ratio:.3f} of copy bandwidth (target >= {TARGET}): "
              f"{verdict}; per trial {pairs[0]:.3f} .. {pairs[-1]:.3f}")
    if opts.diagnose:
        copy_us = rows[0][3]
        parts = {name: kernel for name, _, _, kernel, _ in rows}
        print(f"diagnose: kernel time relative to copy: rmsnorm "
              f"{parts['rmsnorm'] / copy_us:.2f}, its row reduction alone "
              f"{parts['rms-reduce'] / copy_us:.2f}, its scaling by w alone "
              f"{parts['rms-scale'] / copy_us:.2f} (the two halves add up to "
              f"{(parts['rms-reduce'] + parts['rms-scale']) / copy_us:.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
