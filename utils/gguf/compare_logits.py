#!/usr/bin/env python3
"""Compares two logits files (.npy, shape [positions, vocabulary]).

The error of a position is max|got - want| / max|want| over its row (the
relative error of the row, so that logits near zero do not dominate).
Prints the worst position and exits 1 when any position exceeds --rtol, when
the shapes differ, when either file holds a NaN or an infinity, or when
there are fewer than --min-positions rows.

  compare_logits.py got.npy want.npy --rtol 1e-4 --min-positions 16
"""

import argparse
import sys

import numpy as np


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("got")
    ap.add_argument("want")
    ap.add_argument("--rtol", type=float, default=1e-4)
    ap.add_argument("--min-positions", type=int, default=1)
    ap.add_argument("--argmax", action="store_true",
                    help="also require the same argmax at every position")
    args = ap.parse_args()
    got = np.load(args.got).astype(np.float64)
    want = np.load(args.want).astype(np.float64)
    if got.shape != want.shape:
        print(f"FAIL: shapes differ: {got.shape} vs {want.shape}")
        return 1
    if got.ndim != 2 or got.shape[0] < args.min_positions:
        print(f"FAIL: expected at least {args.min_positions} positions, "
              f"got shape {got.shape}")
        return 1
    # NaN compares false with everything: a NaN on either side would pass
    # the tolerance test below.
    for what, logits in (("", got), ("expected ", want)):
        if not np.all(np.isfinite(logits)):
            print(f"FAIL: non-finite {what}logits")
            return 1
    scale = np.maximum(np.abs(want).max(axis=1), 1e-30)
    err = np.abs(got - want).max(axis=1) / scale
    worst = int(err.argmax())
    print(f"positions: {got.shape[0]}, vocabulary: {got.shape[1]}, "
          f"max relative error {err.max():.3g} at position {worst} "
          f"(tolerance {args.rtol:g})")
    status = 0
    if err.max() > args.rtol:
        print("FAIL: relative error above tolerance")
        status = 1
    if args.argmax:
        same = (got.argmax(axis=1) == want.argmax(axis=1))
        if not same.all():
            print(f"FAIL: argmax differs at positions "
                  f"{np.nonzero(~same)[0].tolist()}")
            status = 1
    if status == 0:
        print("PASS")
    return status


if __name__ == "__main__":
    sys.exit(main())
