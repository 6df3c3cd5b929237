#!/usr/bin/env python3
# ===- tune_speedups.py - Tuned against default kernels, per workload ------=== #
#
# Part of the Hesper project.
#
# ===----------------------------------------------------------------------=== #
#
# Measures what tuning buys on one device, side by side in one run:
#
#   1. hesper-eval runs the workloads with the default knobs (no cache);
#   2. hesper-tune tunes each workload into a fresh cache, timed;
#   3. hesper-eval runs them again with that cache ($HESPER_CACHE_DIR) and
#      compares with step 1's report.
#
# It prints, per workload, the default and tuned medians (device time), the
# speed-up, the tuning time and whether both runs matched the interpreter.
# The workloads are hesper-eval's --quick set, or those --filter names, plus
# the decode step of a generated GGUF model (utils/gguf/make_model.py; skip
# with --no-model). Nothing here fails on time; errors exit non-zero.
#
#   bench/tune_speedups.py --bin build/bin --backend cpu [--filter NAME]
#
# ===----------------------------------------------------------------------=== #

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
MAKE_MODEL = os.path.join(ROOT, "utils", "gguf", "make_model.py")


def run(cmd, env=None):
    result = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if result.returncode != 0:
        sys.exit("error: %s failed:\n%s%s" % (" ".join(cmd), result.stdout,
                                              result.stderr))
    return result.stdout


def medians(path):
    report = json.load(open(path))
    return {w["name"]: (w["latency_us"]["median"], w["correct"])
            for w in report["workloads"]}, report["device"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "bin"))
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--filter", default="")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--no-model", action="store_true")
    args = ap.parse_args()
    evaluate = os.path.join(args.bin, "hesper-eval")
    tune = os.path.join(args.bin, "hesper-tune")
    with tempfile.TemporaryDirectory() as tmp:
        common = ["--backend=" + args.backend, "--runs", str(args.runs)]
        select = ["--filter", args.filter] if args.filter else ["--quick"]
        models = []
        if not args.no_model:
            model = os.path.join(tmp, "tiny.gguf")
            run([sys.executable, MAKE_MODEL, model, "--dim", "256", "--ffn",
                 "512", "--seed", "3", "--quiet"])
            models = ["--model", model]
        names = run([evaluate, "--list"] + select + models).split()
        env = dict(os.environ)
        env.pop("HESPER_CACHE_DIR", None)
        default = os.path.join(tmp, "default.json")
        run([evaluate] + common + select + models + ["-o", default], env)
        cache = os.path.join(tmp, "cache")
        seconds = {}
        for name in names:
            start = time.monotonic()
            run([tune, "--workload", name, "--cache-dir", cache,
                 "--backend=" + args.backend] + models)
            seconds[name] = time.monotonic() - start
        tuned = os.path.join(tmp, "tuned.json")
        env["HESPER_CACHE_DIR"] = cache
        run([evaluate] + common + select + models + ["-o", tuned], env)
        before, device = medians(default)
        after, _ = medians(tuned)
    print("device: %s" % device)
    print("| workload | default us | tuned us | speed-up | tuning s | "
          "correct |")
    print("|---|---|---|---|---|---|")
    for name in names:
        (d, ok1), (t, ok2) = before[name], after[name]
        print("| %s | %.1f | %.1f | %.2fx | %.1f | %s |" %
              (name, d, t, d / t if t else 0, seconds[name],
               "yes" if ok1 and ok2 else "NO"))
    print("tuning took %.1f s in all" % sum(seconds.values()))


if __name__ == "__main__":
    main()
