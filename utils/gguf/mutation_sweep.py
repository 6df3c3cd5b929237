#!/usr/bin/env python3
"""Feeds hesper-run GGUF files with random bytes changed and checks that
every run either succeeds or ends with one `error: ...` line and exit
status 1 -- never a crash, a hang or another status.

  mutation_sweep.py HESPER_RUN MODEL.gguf --runs 100 --seed 1

Half of the runs change 1-4 bytes in the file's first 64 KiB (header,
metadata, tensor infos: the parser and the loader's checks), the other half
anywhere (also the weights: numbers, never memory safety). Prints a summary
and exits 1 when any run misbehaved, saving that file next to the model.
"""

import argparse
import os
import random
import subprocess
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("hesper_run")
    ap.add_argument("model")
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=int, default=60)
    args = ap.parse_args()
    data = open(args.model, "rb").read()
    rng = random.Random(args.seed)
    mutated = args.model + ".mutated.gguf"
    outcomes = {"ok": 0, "error": 0}
    bad = 0
    for run in range(args.runs):
        d = bytearray(data)
        limit = min(len(d), 65536) if run % 2 == 0 else len(d)
        for _ in range(rng.randint(1, 4)):
            d[rng.randrange(limit)] = rng.randrange(256)
        with open(mutated, "wb") as f:
            f.write(d)
        try:
            p = subprocess.run(
                [args.hesper_run, mutated, "--backend=interp", "-p",
                 "hello world", "-n", "2", "-c", "16"],
                capture_output=True, timeout=args.timeout)
        except subprocess.TimeoutExpired:
            p = None
        err = p.stderr.decode("utf-8", "replace").strip() if p else ""
        last = err.splitlines()[-1] if err else ""
        if p and p.returncode == 0:
            outcomes["ok"] += 1
        elif p and p.returncode == 1 and last.startswith("error: "):
            outcomes["error"] += 1
        else:
            bad += 1
            keep = f"{args.model}.bad{run}.gguf"
            os.replace(mutated, keep)
            status = "timeout" if p is None else f"status {p.returncode}"
            print(f"BAD run {run}: {status}, kept {keep}: {err[-300:]}")
    if os.path.exists(mutated):
        os.remove(mutated)
    print(f"{args.runs} mutated files: {outcomes['ok']} ran, "
          f"{outcomes['error']} refused with one error line, {bad} bad")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
