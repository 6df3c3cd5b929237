#!/usr/bin/env python3
"""Builds k-quant matvec inputs and their expected product, independently of
Hesper's interpreter, and compares .npy results.

  kquant.py make q4_k|q6_k ROWS K M SEED DIR
      writes DIR/x.npy (f32 [M, K]), DIR/w.npy (the GGUF blocks of a
      [ROWS, K] weight as u8) and DIR/expected.npy (f32 [M, ROWS], x @ w^T).
  kquant.py compare GOT.npy WANT.npy
      prints the largest absolute difference; exits 1 unless it is 0.

The scales are powers of two and x holds quarters in [-1, 1], so every
product and partial sum is exact in f32: any summation order gives the
expected value bit for bit, and a decoding mistake cannot hide in rounding.
Pure Python (struct, random): no numpy needed.
"""
import ast
import random
import struct
import sys

D_BITS = 0x2C00     # f16 1/16
DMIN_BITS = 0x2400  # f16 1/64


def write_npy(path, descr, shape, payload):
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (
        descr, "".join("%d, " % d for d in shape) if len(shape) > 1
        else "%d," % shape[0])
    total = 10 + len(header) + 1
    header += " " * ((64 - total % 64) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)))
        f.write(header.encode("latin1") + payload)


def read_f32_npy(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:6] != b"\x93NUMPY":
        sys.exit("error: %s is not a .npy file" % path)
    (hlen,) = struct.unpack("<H", data[8:10])
    header = ast.literal_eval(data[10:10 + hlen].decode("latin1"))
    if header["descr"] != "<f4":
        sys.exit("error: %s is not f32" % path)
    body = data[10 + hlen:]
    return list(struct.unpack("<%df" % (len(body) // 4), body))


def q4_k_block(rng):
    """One 144-byte q4_k super-block and its 256 decoded values."""
    scales = [rng.randrange(256) for _ in range(12)]
    qs = [rng.randrange(256) for _ in range(128)]
    d, dmin = 1 / 16, 1 / 64

    def scale_min(j):
        if j < 4:
            return scales[j] & 63, scales[j + 4] & 63
        return ((scales[j + 4] & 15) | ((scales[j - 4] >> 6) << 4),
                (scales[j + 4] >> 4) | ((scales[j] >> 6) << 4))

    values = []
    for quarter in range(4):
        chunk = qs[32 * quarter:32 * quarter + 32]
        for sub, shift in ((2 * quarter, 0), (2 * quarter + 1, 4)):
            sc, m = scale_min(sub)
            values += [d * sc * ((b >> shift) & 15) - dmin * m for b in chunk]
    raw = struct.pack("<HH", D_BITS, DMIN_BITS) + bytes(scales) + bytes(qs)
    return raw, values


def q6_k_block(rng):
    """One 210-byte q6_k super-block and its 256 decoded values."""
    ql = [rng.randrange(256) for _ in range(128)]
    qh = [rng.randrange(256) for _ in range(64)]
    scales = [rng.randrange(-128, 128) for _ in range(16)]
    d = 1 / 16
    values = [0.0] * 256
    for i in range(256):
        half, rest = divmod(i, 128)
        r, l = divmod(rest, 32)
        low = ql[64 * half + 32 * (r & 1) + l] >> (4 * (r >> 1)) & 15
        high = qh[32 * half + l] >> (2 * r) & 3
        values[i] = d * scales[8 * half + 2 * r + l // 16] * (
            (low | high << 4) - 32)
    raw = (bytes(ql) + bytes(qh) + struct.pack("<16b", *scales) +
           struct.pack("<H", D_BITS))
    return raw, values


def make(fmt, rows, k, m, seed, out):
    rng = random.Random(seed)
    block = {"q4_k": q4_k_block, "q6_k": q6_k_block}[fmt]
    raw, weights = b"", []
    for _ in range(rows):
        row = []
        for _ in range(k // 256):
            b, v = block(rng)
            raw += b
            row += v
        weights.append(row)
    x = [[rng.randrange(-4, 5) / 4 for _ in range(k)] for _ in range(m)]
    y = [sum(a * w for a, w in zip(xr, wr)) for xr in x for wr in weights]
    flat = [v for xr in x for v in xr]
    write_npy(out + "/x.npy", "<f4", (m, k), struct.pack("<%df" % len(flat), *flat))
    write_npy(out + "/w.npy", "|u1", (len(raw),), raw)
    write_npy(out + "/expected.npy", "<f4", (m, rows),
              struct.pack("<%df" % len(y), *y))


def compare(got_path, want_path):
    got, want = read_f32_npy(got_path), read_f32_npy(want_path)
    if len(got) != len(want):
        sys.exit("error: %d values, expected %d" % (len(got), len(want)))
    worst = max(abs(g - w) for g, w in zip(got, want))
    print("max |got - expected| = %g over %d values" % (worst, len(want)))
    return 0 if worst == 0 else 1


if __name__ == "__main__":
    if len(sys.argv) == 8 and sys.argv[1] == "make":
        make(sys.argv[2], *map(int, sys.argv[3:7]), sys.argv[7])
    elif len(sys.argv) == 4 and sys.argv[1] == "compare":
        sys.exit(compare(sys.argv[2], sys.argv[3]))
    else:
        sys.exit(__doc__)
