#!/usr/bin/env python3
# ===- python_api.py - The Python module's cost against hesper-run --------=== #
#
# Part of the Hesper project.
#
# ===----------------------------------------------------------------------=== #
#
# Prints, side by side in one run on the CPU target (issue 27's targets):
#
#   - decode tok/s of the ~29M-parameter demo model (q8_0) through
#     `hesper.Llama.generate_ids` (a Python loop over tokens: sample and
#     step in C++) and through `hesper-run` (all C++), alternating trials,
#     medians; 1 - python/hesper-run is the Python share of a token as far
#     as run-to-run noise lets two processes tell it;
#   - the Python share measured inside one generation: the time of a
#     token outside the C++ calls (sampling, the step), timed around each
#     call, against the token's whole time (target: under 2 %; the timing
#     wrappers' own cost counts as Python's);
#   - the wall time of `import hesper` in a fresh interpreter (target:
#     under 0.5 s), median of 5.
#
# Nothing here fails on time; errors (a failing hesper-run, no module) exit
# non-zero.
#
#   PYTHONPATH=build/python /usr/bin/python3 bench/python_api.py \
#       --hesper-run build/bin/hesper-run [--threads 2] [--trials 3]
#
# ===----------------------------------------------------------------------=== #

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
MAKE_MODEL = os.path.join(os.path.dirname(HERE), "utils", "gguf",
                          "make_model.py")
PROMPT = "Once upon a time"


def hesper_run_tps(hesper_run, model, tokens, threads):
    out = subprocess.run(
        [hesper_run, model, "-p", PROMPT, "-n", str(tokens), "--temp", "0",
         "--ignore-eos", "--backend", "cpu", "-t", str(threads)],
        capture_output=True, text=True, errors="replace", check=True)
    m = re.search(r"^decode: (\d+) tokens in ([\d.]+) ms", out.stdout + out.stderr,
                  re.M)
    if not m:
        raise SystemExit("error: no decode line in hesper-run's output")
    return int(m.group(1)) / (float(m.group(2)) / 1000.0)


def python_tps(llm, tokens):
    ids = llm.tokenize(PROMPT.encode())
    llm.reset()
    start = None
    count = 0
    for _ in llm.generate_ids(ids, max_tokens=tokens + 1, temperature=0,
                              stop_at_eog=False):
        # The clock starts at the first token (the prompt is not decode).
        if start is None:
            start = time.perf_counter()
            continue
        count += 1
    return count / (time.perf_counter() - start)


class Timed:
    """Forwards to `inner`, adding the time its methods take to `clock`."""

    def __init__(self, inner, clock):
        self._inner, self._clock = inner, clock

    def __getattr__(self, name):
        attr = getattr(self._inner, name)
        if not callable(attr):
            return attr

        def timed(*a, **k):
            start = time.perf_counter()
            try:
                return attr(*a, **k)
            finally:
                self._clock[0] += time.perf_counter() - start
        return timed


def python_share(hesper, llm, tokens):
    """(Python seconds per token, whole seconds per token) of one
    generate_ids run, from timers around every C++ call it makes."""
    clock = [0.0]
    real_generator, real_session = hesper._hesper.Generator, llm._session
    hesper._hesper.Generator = lambda session, *a: Timed(
        real_generator(real_session, *a), clock)
    llm._session = Timed(real_session, clock)
    try:
        ids = llm.tokenize(PROMPT.encode())
        llm.reset()
        start = None
        for _ in llm.generate_ids(ids, max_tokens=tokens + 1, temperature=0,
                                  stop_at_eog=False):
            if start is None:
                start, clock[0] = time.perf_counter(), 0.0
        total = time.perf_counter() - start
    finally:
        hesper._hesper.Generator, llm._session = real_generator, real_session
    return (total - clock[0]) / tokens, total / tokens


def import_seconds():
    times = []
    for _ in range(5):
        out = subprocess.run(
            [sys.executable, "-c",
             "import time; s = time.perf_counter(); import hesper; "
             "print(time.perf_counter() - s)"],
            capture_output=True, text=True, check=True)
        times.append(float(out.stdout))
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--hesper-run", default="hesper-run")
    parser.add_argument("--model", help="a GGUF file (default: the demo "
                        "model, q8_0, written to a temporary folder)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--trials", type=int, default=3)
    args = parser.parse_args()
    try:
        import hesper
    except ImportError as e:
        raise SystemExit(f"error: cannot import hesper ({e}); set "
                         "PYTHONPATH=build/python")

    with tempfile.TemporaryDirectory() as tmp:
        model = args.model
        if not model:
            model = os.path.join(tmp, "demo.gguf")
            subprocess.run([sys.executable, MAKE_MODEL, model, "--preset",
                            "demo", "--type", "q8_0", "--quiet"], check=True)
        llm = hesper.Llama(model, n_ctx=args.tokens + 64, device="cpu",
                           n_threads=args.threads)
        python_tps(llm, 8)  # warm up
        py, cpp = [], []
        for _ in range(args.trials):
            cpp.append(hesper_run_tps(args.hesper_run, model, args.tokens,
                                      args.threads))
            py.append(python_tps(llm, args.tokens))
        py_med, cpp_med = statistics.median(py), statistics.median(cpp)
        share = 1 - py_med / cpp_med
        print(f"model: {os.path.basename(model)}, CPU target, "
              f"{args.threads} threads, {args.tokens} tokens, "
              f"{args.trials} alternating trials (medians)")
        print(f"decode hesper-run:            {cpp_med:8.1f} tok/s  "
              f"({', '.join(f'{v:.1f}' for v in cpp)})")
        print(f"decode hesper.Llama (Python): {py_med:8.1f} tok/s  "
              f"({', '.join(f'{v:.1f}' for v in py)})")
        print(f"side by side: python/hesper-run = {py_med / cpp_med:.3f} "
              f"({share * 100:+.1f} % of a token, within the noise above)")
        shares = [python_share(hesper, llm, args.tokens)
                  for _ in range(args.trials)]
        outside, whole = min(shares, key=lambda s: s[0] / s[1])
        median = statistics.median(s[0] / s[1] for s in shares)
        print(f"Python share of a token, timed inside: "
              f"{outside * 1e6:.1f} us of {whole * 1e6:.1f} us = "
              f"{median * 100:.2f} % (median of {args.trials}; target < 2 %)")
        print(f"import hesper: {import_seconds():.3f} s (target < 0.5 s)")


if __name__ == "__main__":
    main()
