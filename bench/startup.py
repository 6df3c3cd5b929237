#!/usr/bin/env python3
# ===- startup.py - Time to the first token and memory, cold and warm -----=== #
#
# Part of the Hesper project.
#
# ===----------------------------------------------------------------------=== #
#
# Prints, for one GGUF file on one backend (issue 31's targets):
#
#   - the wall time of `hesper-run FILE -p PROMPT -n 1` (load, compile or
#     load the compiled programs, the prompt, one token) with an empty
#     program cache (cold: a compile) and with a warm one (a hit), and the
#     compile or load time hesper-run reports;
#   - each run's peak resident memory (the child's ru_maxrss);
#   - with --llama PATH (an existing llama.cpp build's `llama-cli` or
#     `llama-completion`, built by hand outside this repository), the same
#     two figures for it on the same file and prompt, alternating with
#     Hesper's trials, and the ratios.
#
# Medians of --trials runs. Nothing fails on time; a failing run exits
# non-zero.
#
#   /usr/bin/python3 bench/startup.py --hesper-run build/bin/hesper-run \
#       [--model FILE] [--backend cpu] [--threads 2] [--ctx 2048] \
#       [--trials 5] [--llama PATH]
#
# Without --model it writes the demo file (q8_0) with utils/gguf.
#
# ===----------------------------------------------------------------------=== #

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
MAKE_MODEL = os.path.join(os.path.dirname(HERE), "utils", "gguf",
                          "make_model.py")
PROMPT = "Once upon a time"


def timed(cmd, env):
    """Runs `cmd`; returns (wall seconds, peak RSS MiB, combined output)."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, env=env)
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    text = out.decode("utf-8", "replace")
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit("error: %s failed:\n%s" % (" ".join(cmd), text[-2000:]))
    return wall, usage.ru_maxrss / 1024.0, text


def hesper(args, model, cache, cold):
    if cold:
        shutil.rmtree(cache, ignore_errors=True)
    env = dict(os.environ, HESPER_CACHE_DIR=cache)
    wall, rss, text = timed(
        [args.hesper_run, model, "-p", PROMPT, "-n", "1", "--temp", "0",
         "--backend", args.backend, "-t", str(args.threads), "-c",
         str(args.ctx)], env)
    m = re.search(r"(compiled in|loaded from the program cache in) (\d+) ms",
                  text)
    if not m:
        sys.exit("error: no compile line in hesper-run's output:\n" + text)
    hit = "program cache: hit" in text
    if hit == cold:
        sys.exit("error: expected a %s:\n%s" % ("miss" if cold else "hit",
                                                 text))
    return wall, rss, float(m.group(2))


def llama(args, model):
    wall, rss, _ = timed(
        [args.llama, "-m", model, "-p", PROMPT, "-n", "1", "--temp", "0",
         "-t", str(args.threads), "-c", str(args.ctx), "-no-cnv"],
        dict(os.environ))
    return wall, rss


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hesper-run", required=True)
    ap.add_argument("--model")
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--ctx", type=int, default=2048)
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--llama")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        model = args.model
        if not model:
            model = os.path.join(tmp, "demo-q8_0.gguf")
            subprocess.run([sys.executable, MAKE_MODEL, model, "--preset",
                            "demo", "--type", "q8_0", "--quiet"], check=True)
        cache = os.path.join(tmp, "cache")
        cold, warm, ref = [], [], []
        for _ in range(args.trials):
            cold.append(hesper(args, model, cache, cold=True))
            warm.append(hesper(args, model, cache, cold=False))
            if args.llama:
                ref.append(llama(args, model))

    def med(rows, i):
        return statistics.median(r[i] for r in rows)

    print("file: %s, backend %s, %d threads, context %d, %d trials "
          "(medians)" % (os.path.basename(model), args.backend, args.threads,
                         args.ctx, args.trials))
    print("%-22s %10s %14s %12s" % ("", "wall s", "compile/load", "peak MiB"))
    print("%-22s %10.3f %11.0f ms %12.1f" % ("hesper cold (miss)",
                                             med(cold, 0), med(cold, 2),
                                             med(cold, 1)))
    print("%-22s %10.3f %11.0f ms %12.1f" % ("hesper warm (hit)",
                                             med(warm, 0), med(warm, 2),
                                             med(warm, 1)))
    if ref:
        print("%-22s %10.3f %14s %12.1f" % ("llama.cpp", med(ref, 0), "",
                                            med(ref, 1)))
        print("warm wall / llama.cpp: %.2fx (target <= 2); peak memory / "
              "llama.cpp: %.2fx (target <= 1.3)" %
              (med(warm, 0) / med(ref, 0), med(warm, 1) / med(ref, 1)))
    print("cold compile: %.0f ms (target <= 300 ms)" % med(cold, 2))


if __name__ == "__main__":
    main()
