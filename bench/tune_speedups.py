#!/usr/bin/env python3
# ===- tune_speedups.py - Tuned against default kernels, per workload ------=== #
#
# Part of the Hesper project.
#
# ===----------------------------------------------------------------------=== #
#
# Measures what tuning buys on one device, side by side in one run:
#
#   1. hesper-tune tunes each workload into a fresh cache, timed;
#   2. hesper-eval runs the workloads with the default knobs (no cache) and
#      with that cache ($HESPER_CACHE_DIR), alternately, --repeats times
#      (a small machine's run-to-run noise is larger than one run's).
#
# It prints, per workload, the best of the repeats' medians (device time)
# with the defaults and tuned, the speed-up, the tuning time, the knobs the
# tuner chose, and whether every run matched the interpreter.
# The workloads are hesper-eval's --quick set, or those --filter names, plus
# the decode step of a generated GGUF model (utils/gguf/make_model.py; skip
# with --no-model). Nothing here fails on time; errors exit non-zero.
#
#   bench/tune_speedups.py --bin build/bin --backend cpu [--filter NAME]
#                          [--repeats 3] [--no-model]
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


def medians(path, best):
    """Folds a report into best: name -> (least median, all correct)."""
    report = json.load(open(path))
    for w in report["workloads"]:
        median, ok = best.get(w["name"], (float("inf"), True))
        best[w["name"]] = (min(median, w["latency_us"]["median"]),
                           ok and w["correct"])
    return report["device"]


def chosen(plan):
    """The knobs a plan gives, as 'op knobs' per tuned kernel."""
    out = []
    for k in json.load(open(plan))["kernels"]:
        if k["knobs"]:
            op = k["signature"].split(" ")[0].replace("circuit.", "")
            out.append("%s %s" % (op, ",".join(
                "%s=%s" % kv for kv in sorted(k["knobs"].items()))))
    return "; ".join(out) or "defaults"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "bin"))
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--filter", default="")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=3)
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
        cache = os.path.join(tmp, "cache")
        seconds, knobs = {}, {}
        for name in names:
            plan = os.path.join(tmp, name + ".json")
            start = time.monotonic()
            run([tune, "--workload", name, "--cache-dir", cache, "-o", plan,
                 "--backend=" + args.backend] + models, env)
            seconds[name] = time.monotonic() - start
            knobs[name] = chosen(plan)
        before, after = {}, {}
        for r in range(args.repeats):
            for cached, best in ((False, before), (True, after)):
                report = os.path.join(tmp, "report.json")
                if cached:
                    env["HESPER_CACHE_DIR"] = cache
                else:
                    env.pop("HESPER_CACHE_DIR", None)
                run([evaluate] + common + select + models + ["-o", report],
                    env)
                device = medians(report, best)
    print("device: %s" % device)
    print("| workload | default us | tuned us | speed-up | tuning s | "
          "correct | knobs |")
    print("|---|---|---|---|---|---|---|")
    for name in names:
        (d, ok1), (t, ok2) = before[name], after[name]
        print("| %s | %.1f | %.1f | %.2fx | %.1f | %s | %s |" %
              (name, d, t, d / t if t else 0, seconds[name],
               "yes" if ok1 and ok2 else "NO", knobs[name]))
    print("tuning took %.1f s in all" % sum(seconds.values()))


if __name__ == "__main__":
    main()
