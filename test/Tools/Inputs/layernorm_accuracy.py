"""The oracle-accuracy case of check-accuracy.test, with NumPy in float64.

  layernorm_accuracy.py make X.npy      writes x = 1000 + noise (771 values)
  layernorm_accuracy.py check X.npy Y.npy TOL
      compares hesper-run's Y with the graph's LayerNorm computed as the
      graph states it: every tensor (the mean, the deviations, the scale) is
      float32, every element operation rounds to float32, and each sum is
      exact (float64) rounded to float32 once. It fails beyond TOL. It also
      prints the error of the same computation with left-to-right float32
      sums (the interpreter before it accumulated in double), which must
      exceed TOL: otherwise the case could not tell the two apart.
"""
import sys

import numpy as np


def layernorm(x, acc):
    f32 = np.float32
    x = x.astype(f32)
    n = f32(len(x))
    total = acc(0)
    for v in x:
        total = acc(total + acc(v))
    mean = f32(f32(total) / n)
    dev = (x - mean).astype(f32)
    ss = acc(0)
    for d in dev:
        ss = acc(ss + acc(d) * acc(d))
    var = f32(f32(ss) / n)
    rstd = f32(1.0 / np.sqrt(np.float64(f32(var + f32(1e-5)))))
    return (dev * rstd).astype(f32)


def main():
    if sys.argv[1] == "make":
        rng = np.random.default_rng(2)
        x = (1000.0 + rng.uniform(-0.5, 0.5, 771)).astype(np.float32)
        np.save(sys.argv[2], x)
        return 0
    x = np.load(sys.argv[2])
    y = np.load(sys.argv[3]).astype(np.float64)
    tol = float(sys.argv[4])
    want = layernorm(x, np.float64).astype(np.float64)
    err = np.max(np.abs(y - want))
    f32_err = np.max(np.abs(layernorm(x, np.float32).astype(np.float64) -
                            want))
    print(f"max error {err:.2e}; sequential float32 sums: {f32_err:.2e}")
    if f32_err <= tol:
        print("FAIL: the tolerance does not separate float32 sums")
        return 1
    print("PASS" if err <= tol else "FAIL")
    return 0 if err <= tol else 1


if __name__ == "__main__":
    sys.exit(main())
