#!/usr/bin/env python3
# ===- llama_compare.py - Decode and prefill against llama.cpp -------------=== #
#
# Part of the Hesper project.
#
# ===----------------------------------------------------------------------=== #
#
# The whole comparison of issue 24 and 25 in one run, on one device: for the
# 29.4M demo model and a 1B-class llama (dim 2048, 16 layers, 32/8 heads,
# FFN 8192, vocabulary 32000), in each weight type, written by
# utils/gguf/make_model.py,
#
#   - Hesper's decode tok/s at depth 0 and after a 512-token prompt, and
#     its prefill tok/s over that prompt, measured as llama-bench measures
#     them (`hesper-run --bench`: each test warmed up once, then the mean
#     of --runs runs; after a run that fills the program cache);
#   - llama.cpp's `llama-bench` on the same files (tg and pp at depth 0 and
#     at the same depth; an existing build given by --llama-bench, made by
#     hand outside the repository: never a script here that builds it);
#   - the ratios, Hesper over llama.cpp;
#   - `--kernel-times` of the 512-token run (where a token's time goes, each
#     kernel's GB/s against the device's copy) and `hesper-eval --quick`,
#     saved under --out and summarized.
#
# It runs wherever the tools do: the GPU machine (bench/gpu/run.sh unpacks
# `make dist`'s release there and calls this), or here on the CPU target
# with a small --models list. Nothing fails on time; errors exit non-zero.
#
#   bench/llama_compare.py --bin build/bin --backend cuda \
#       --llama-bench /path/to/llama-bench --out /tmp/compare
#
# ===----------------------------------------------------------------------=== #

import argparse
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DEFAULT_MAKE_MODEL = os.path.join(ROOT, "utils", "gguf", "make_model.py")

# The models, as make_model.py arguments.
MODELS = {
    "demo": ["--preset", "demo"],
    "1b": ["--arch", "llama", "--dim", "2048", "--layers", "16", "--heads",
           "32", "--kv-heads", "8", "--ffn", "8192", "--vocab", "32000",
           "--ctx", "4096", "--seed", "1"],
    # Small enough for a CPU-only check of this script.
    "tiny": ["--arch", "llama", "--dim", "256", "--layers", "2", "--heads",
             "4", "--kv-heads", "2", "--ffn", "512", "--vocab", "1024",
             "--seed", "1"],
}


class BenchError(Exception):
    pass


def run(cmd, timeout=1800):
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True,
                              errors="replace", timeout=timeout)
    except FileNotFoundError:
        raise BenchError(f"cannot run {cmd[0]}")
    except subprocess.TimeoutExpired:
        raise BenchError(f"timed out after {timeout} s: {' '.join(cmd)}")
    if proc.returncode != 0:
        raise BenchError(f"failed ({proc.returncode}): {' '.join(cmd)}\n"
                         f"{proc.stdout[-2000:]}{proc.stderr[-4000:]}")
    return proc


def hesper_run(args, model, tokens, gen, extra=()):
    cmd = [os.path.join(args.bin, "hesper-run"), model,
           f"--backend={args.backend}", "--tokens", tokens, "-n", str(gen),
           "--temp", "0", "--ignore-eos", *args.hesper_args.split(), *extra]
    return run(cmd).stderr


def bench_results(data, depth, what):
    """tg and pp at depth 0 and tg at `depth` (0.0 when absent) from
    llama-bench's -o json list, which hesper-run --bench writes too."""
    found = {}
    for entry in data:
        d = entry.get("n_depth", 0)
        prompt, gen = entry.get("n_prompt", 0), entry.get("n_gen", 0)
        kind = "pg" if prompt and gen else "tg" if gen else "pp"
        found[(kind, d)] = float(entry["avg_ts"])
    try:
        tg, pp = found[("tg", 0)], found[("pp", 0)]
    except KeyError as missing:
        raise BenchError(f"{what} gave no {missing} result: {data}")
    return tg, pp, found.get(("tg", depth), 0.0), found


def measure_hesper(args, model, prompt):
    """Decode tok/s at depth 0 and after the prompt, prefill tok/s."""
    hesper_run(args, model, "1", 2)  # fills the program cache
    cmd = [os.path.join(args.bin, "hesper-run"), model,
           f"--backend={args.backend}", "--bench", "--bench-output=json",
           f"--bench-prompt={args.depth}", f"--bench-gen={args.gen}",
           f"--bench-depth=0,{args.depth}", f"--bench-reps={args.runs}",
           *args.hesper_args.split()]
    d0, pp, dd, _ = bench_results(json.loads(run(cmd).stdout), args.depth,
                                  "hesper-run --bench")
    times = hesper_run(args, model, prompt, args.gen, ["--kernel-times"])
    return d0, dd, pp, times


def measure_llama(args, model):
    """llama-bench's tg and pp at depth 0 and its tg at args.depth, tok/s,
    and whether that last one is derived. A build without -d (before
    mid-2025) runs the prompt and then the generation (-pg): decode after
    the prompt takes the time of that run less the prompt's alone (pp)."""
    cmd = [args.llama_bench, "-m", model, "-p", str(args.depth), "-n",
           str(args.gen), "-r", str(args.runs), "-o", "json",
           *args.llama_bench_args.split()]
    try:
        out = run(cmd + ["-d", f"0,{args.depth}"]).stdout
    except BenchError:
        out = run(cmd + ["-pg", f"{args.depth},{args.gen}"]).stdout
    tg, pp, at_depth, found = bench_results(json.loads(out), args.depth,
                                            "llama-bench")
    derived = False
    pg = found.get(("pg", 0), 0.0)
    if not at_depth and pg:
        gen_seconds = (args.depth + args.gen) / pg - args.depth / pp
        if gen_seconds > 0:
            at_depth, derived = args.gen / gen_seconds, True
    return tg, at_depth, pp, derived


def ratio(a, b):
    return f"{a / b:.2f}" if b else "-"


def main():
    ap = argparse.ArgumentParser(
        description="Decode and prefill against llama.cpp, one device.")
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "bin"),
                    help="folder of hesper-run and hesper-eval (a build's "
                         "bin/ or make dist's release's)")
    ap.add_argument("--backend", default="cuda")
    ap.add_argument("--models", default="demo,1b",
                    help=f"comma-separated, of {','.join(MODELS)}")
    ap.add_argument("--types", default="q8_0,q4_k,f16")
    ap.add_argument("--gen", type=int, default=128)
    ap.add_argument("--depth", type=int, default=512,
                    help="prompt tokens before the second decode")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--llama-bench", default="",
                    help="an existing llama.cpp build's llama-bench")
    ap.add_argument("--llama-bench-args", default="-ngl 99 -fa 0",
                    help="passed to llama-bench (default: all layers on "
                         "the GPU, no flash attention)")
    ap.add_argument("--hesper-args", default="",
                    help="passed to every hesper-run (e.g. "
                         "--quantize-activations)")
    ap.add_argument("--no-eval", action="store_true",
                    help="skip hesper-eval --quick")
    ap.add_argument("--python", default=sys.executable,
                    help="a Python with NumPy, for make_model.py")
    ap.add_argument("--make-model", default=DEFAULT_MAKE_MODEL)
    ap.add_argument("--out", default="llama-compare",
                    help="folder for the logs")
    ap.add_argument("--models-dir", default="",
                    help="folder for the model files (default: --out)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    if args.models_dir:
        os.makedirs(args.models_dir, exist_ok=True)
    # A prompt of --depth token ids, all inside every vocabulary here.
    prompt = ",".join(str(1 + (i * 37) % 1000) for i in range(args.depth))

    rows = []
    try:
        for name in args.models.split(","):
            if name not in MODELS:
                raise BenchError(f"unknown model '{name}'")
            for wtype in args.types.split(","):
                model = os.path.join(args.models_dir or args.out,
                                     f"{name}-{wtype}.gguf")
                if not os.path.exists(model):
                    print(f"writing {model}", file=sys.stderr, flush=True)
                    run([args.python, args.make_model, model, *MODELS[name],
                         "--type", wtype, "--quiet"])
                print(f"measuring {model}", file=sys.stderr, flush=True)
                d0, dd, pp, times = measure_hesper(args, model, prompt)
                with open(os.path.join(args.out,
                                       f"{name}-{wtype}.kernel-times.txt"),
                          "w") as f:
                    f.write(times)
                llama = (measure_llama(args, model) if args.llama_bench
                         else (0.0, 0.0, 0.0, False))
                rows.append((name, wtype, d0, dd, pp, llama, times))
        eval_out = ""
        if not args.no_eval:
            report = os.path.join(args.out, "eval.json")
            eval_out = run([os.path.join(args.bin, "hesper-eval"),
                            f"--backend={args.backend}", "--quick", "-o",
                            report]).stdout
    except BenchError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1

    d = args.depth
    print(f"| model | weights | decode tok/s | llama.cpp tg{args.gen} | ratio "
          f"| decode @{d} | llama.cpp @{d} | ratio | prefill tok/s "
          f"({d} tokens) | llama.cpp pp{d} | ratio |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name, wtype, d0, dd, pp, (l0, ld, lp, derived), _ in rows:
        mark = "*" if derived else ""
        print(f"| {name} | {wtype} | {d0:.1f} | {l0:.1f} | {ratio(d0, l0)} "
              f"| {dd:.1f} | {ld:.1f}{mark} | {ratio(dd, ld)} | {pp:.1f} "
              f"| {lp:.1f} | {ratio(pp, lp)} |")
    if not args.llama_bench:
        print("(no --llama-bench: llama.cpp columns are 0)")
    if any(row[5][3] for row in rows):
        print(f"* this llama-bench has no -d: its decode after {d} prompt "
              f"tokens is derived from -pg {d},{args.gen} less pp{d}")
    for name, wtype, *_, times in rows:
        bound = re.search(r"^  bound: .*$", times, re.M)
        if bound:
            print(f"{name} {wtype} @{d}:{bound.group(0)}")
    if eval_out:
        print(eval_out, end="")
    print(f"logs: {args.out}/*.kernel-times.txt, {args.out}/eval.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
