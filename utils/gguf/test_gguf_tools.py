#!/usr/bin/env python3
"""Tests for make_model.py (GGUF writer) and reference.py (NumPy oracle).

Run:  /usr/bin/python3 utils/gguf/test_gguf_tools.py [-v]
Only the standard library and NumPy are needed; files go to a temp dir.
"""

import math
import os
import struct
import subprocess
import sys
import tempfile
import time
import unittest

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import make_model as mm  # noqa: E402
import reference as ref  # noqa: E402

PY = sys.executable
MAKE = os.path.join(HERE, "make_model.py")
REF = os.path.join(HERE, "reference.py")

ARCHES = ["llama", "qwen2", "qwen3", "gemma", "gemma2", "gemma3"]
GEMMA_ARCHES = ["gemma", "gemma2", "gemma3"]
TYPES = ["f32", "q8_0", "q4_k", "q6_k", "q4_0", "q5_k", "iq4_nl", "iq4_xs",
         "q4_1", "q5_0", "q5_1", "q2_k", "q3_k"]
GGML_ID = {"f32": 0, "f16": 1, "q4_0": 2, "q8_0": 8, "q4_k": 12, "q5_k": 13,
           "q6_k": 14, "iq4_nl": 20, "iq4_xs": 23, "q4_1": 3, "q5_0": 6,
           "q5_1": 7, "q2_k": 10, "q3_k": 11}
# relative RMS error bound of dequantize(quantize(w)) for Gaussian weights
REL_TOL = {"f32": 0.0, "f16": 1e-3, "q8_0": 0.01, "q4_0": 0.11, "q4_k": 0.10,
           "q5_k": 0.05, "q6_k": 0.025, "iq4_nl": 0.11, "iq4_xs": 0.12,
           "q4_1": 0.11, "q5_0": 0.06, "q5_1": 0.06, "q2_k": 0.45,
           "q3_k": 0.25}
K_TYPES = {"q4_k", "q5_k", "q6_k", "iq4_xs", "q2_k", "q3_k"}


def rel_rms(a, b):
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    return float(np.sqrt(np.mean((a - b) ** 2)) / max(np.sqrt(np.mean(b ** 2)), 1e-30))


def f16_bytes(v):
    return np.array([v], "<f2").tobytes()


def f16_value(raw2):
    return np.frombuffer(bytes(raw2), "<f2")[0].astype(np.float32)


class TmpDirCase(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls._tmp = tempfile.TemporaryDirectory(prefix="gguf_tools_test_")
        cls.tmp = cls._tmp.name

    @classmethod
    def tearDownClass(cls):
        cls._tmp.cleanup()

    def path(self, name):
        return os.path.join(self.tmp, name)

    def gen(self, name, *args):
        cfg = mm.parse_args([self.path(name), "--quiet"] + [str(a) for a in args])
        info = mm.write_model(cfg)
        return cfg, info

    def refuses(self, *args):
        """make_model.py's parse_args rejects these arguments."""
        with open(os.devnull, "w") as null:
            saved, sys.stderr = sys.stderr, null
            try:
                with self.assertRaises(SystemExit, msg=str(args)):
                    mm.parse_args([self.path("refused.gguf")] + [str(a) for a in args])
            finally:
                sys.stderr = saved


# ---------------------------------------------------------------------------
# An independent, loop-based forward pass used to cross-check reference.py
# ---------------------------------------------------------------------------

def naive_logits(path, tokens, n_ctx=None):
    g = ref.GGUFReader(path)
    md = g.metadata
    arch = md["general.architecture"]
    gemma = arch.startswith("gemma")
    P = arch + "."
    n_embd = md[P + "embedding_length"]
    n_head = md[P + "attention.head_count"]
    n_kv = md[P + "attention.head_count_kv"]
    n_layer = md[P + "block_count"]
    hd = md.get(P + "attention.key_length", n_embd // n_head)
    n_rot = md.get(P + "rope.dimension_count", hd)
    base = md.get(P + "rope.freq_base", 10000.0)
    factor = md.get(P + "rope.scaling.factor", 1.0)
    eps = md[P + "attention.layer_norm_rms_epsilon"]
    pairs = ([(2 * i, 2 * i + 1) for i in range(n_rot // 2)] if arch == "llama"
             else [(i, i + n_rot // 2) for i in range(n_rot // 2)])
    # Gemma: per-layer window / RoPE, soft-caps, attention scale
    window = md.get(P + "attention.sliding_window", 4096 if arch == "gemma2" else 0)
    if arch in ("gemma", "phi3") or window == 0:
        sliding = [False] * n_layer
    else:
        period = md.get(P + "attention.sliding_window_pattern",
                        2 if arch == "gemma2" else 6)
        sliding = [period == 0 or (L % period) != period - 1 for L in range(n_layer)]
    layer_rope = []
    for L in range(n_layer):
        if sliding[L] and arch == "gemma3":
            layer_rope.append((md.get(P + "rope.freq_base_swa", 10000.0), 1.0))
        elif sliding[L]:
            layer_rope.append((md.get(P + "rope.freq_base_swa", base), factor))
        else:
            layer_rope.append((base, factor))
    attn_cap = md.get(P + "attn_logit_softcapping", 50.0) if arch == "gemma2" else None
    final_cap = None
    if arch == "gemma2":
        final_cap = md.get(P + "final_logit_softcapping", 30.0) or None
    elif arch == "gemma3":
        final_cap = md.get(P + "final_logit_softcapping", 0.0) or None
    big = (arch, n_layer) in (("gemma2", 46), ("gemma3", 62))
    kq_scale = 1.0 / math.sqrt(n_embd // n_head if big else hd)

    def T(name):
        return g.tensor(name).astype(np.float64) if name in g.tensors else None

    # phi3's LongRoPE factors (long past the original context) and any
    # arch's attn_factor on the rotated cos and sin
    if n_ctx is None:
        n_ctx = min(md.get(P + "context_length", 2048), 4096)
    orig = md.get(P + "rope.scaling.original_context_length",
                  md.get(P + "context_length", 2048))
    rope_div = None
    if arch == "phi3":
        rope_div = T("rope_factors_long.weight" if n_ctx > orig
                     else "rope_factors_short.weight")
    mscale = md.get(P + "rope.scaling.attn_factor", 1.0)

    def rms(v, w):
        return v / math.sqrt(sum(float(t) * float(t) for t in v) / len(v) + eps) * w

    def rot(vec, pos, base, factor):
        out = vec.copy()
        for i, (a, b) in enumerate(pairs):
            th = (pos / factor) * base ** (-2.0 * i / n_rot)
            if rope_div is not None:
                th /= rope_div[i]
            c, s = math.cos(th) * mscale, math.sin(th) * mscale
            out[a] = vec[a] * c - vec[b] * s
            out[b] = vec[a] * s + vec[b] * c
        return out

    def act(z):
        if gemma:
            return 0.5 * z * (1.0 + math.tanh(math.sqrt(2.0 / math.pi) * (z + 0.044715 * z ** 3)))
        return z / (1.0 + math.exp(-z))

    emb = T("token_embd.weight")
    out_w = None if arch in ("gemma", "gemma2") else T("output.weight")
    if out_w is None:
        out_w = emb
    xs = [emb[t] * (math.sqrt(n_embd) if gemma else 1.0) for t in tokens]
    for L in range(n_layer):
        p = "blk.%d." % L
        wq, wk, wv, wo = (T(p + s) for s in ("attn_q.weight", "attn_k.weight",
                                              "attn_v.weight", "attn_output.weight"))
        qkv = T(p + "attn_qkv.weight")
        if qkv is not None:                         # phi3's fused Q, K, V
            wq, wk, wv = (qkv[:n_head * hd], qkv[n_head * hd:(n_head + n_kv) * hd],
                          qkv[(n_head + n_kv) * hd:])
        bq, bk, bv = (T(p + s) for s in ("attn_q.bias", "attn_k.bias", "attn_v.bias"))
        qn, kn = T(p + "attn_q_norm.weight"), T(p + "attn_k_norm.weight")
        Q, K, V = [], [], []
        for pos, x in enumerate(xs):
            h = rms(x, T(p + "attn_norm.weight"))
            q, k, v = wq @ h, wk @ h, wv @ h
            if bq is not None:
                q, k, v = q + bq, k + bk, v + bv
            qh = [q[i * hd:(i + 1) * hd] for i in range(n_head)]
            kh = [k[i * hd:(i + 1) * hd] for i in range(n_kv)]
            vh = [v[i * hd:(i + 1) * hd] for i in range(n_kv)]
            if qn is not None:
                qh = [rms(t, qn) for t in qh]
                kh = [rms(t, kn) for t in kh]
            Q.append([rot(t, pos, *layer_rope[L]) for t in qh])
            K.append([rot(t, pos, *layer_rope[L]) for t in kh])
            V.append(vh)
        post_a, post_f = T(p + "post_attention_norm.weight"), T(p + "post_ffw_norm.weight")
        new = []
        for pos, x in enumerate(xs):
            first = max(0, pos - window + 1) if sliding[L] else 0
            seen = range(first, pos + 1)
            heads = []
            for hh in range(n_head):
                kv = hh * n_kv // n_head
                sc = []
                for j in seen:
                    s = float(Q[pos][hh] @ K[j][kv]) * kq_scale
                    if attn_cap is not None:
                        s = attn_cap * math.tanh(s / attn_cap)
                    sc.append(s)
                m = max(sc)
                e = [math.exp(s - m) for s in sc]
                tot = sum(e)
                heads.append(sum((e[i] / tot) * V[j][kv] for i, j in enumerate(seen)))
            a = wo @ np.concatenate(heads)
            if post_a is not None:
                a = rms(a, post_a)
            x = x + a
            h = rms(x, T(p + "ffn_norm.weight"))
            if arch == "phi3":                      # ffn_up = [gate; up]
                gate_up = T(p + "ffn_up.weight") @ h
                gt, up = gate_up[:len(gate_up) // 2], gate_up[len(gate_up) // 2:]
            else:
                gt = T(p + "ffn_gate.weight") @ h
                up = T(p + "ffn_up.weight") @ h
            f = T(p + "ffn_down.weight") @ (np.array([act(z) for z in gt]) * up)
            if post_f is not None:
                f = rms(f, post_f)
            new.append(x + f)
        xs = new
    onorm = T("output_norm.weight")
    rows = [out_w @ rms(x, onorm) for x in xs]
    if final_cap is not None:
        rows = [np.array([final_cap * math.tanh(v / final_cap) for v in r]) for r in rows]
    return np.stack(rows)


# ---------------------------------------------------------------------------
# Scalar transliterations of ggml's block layouts (per-element, float32 ops)
# ---------------------------------------------------------------------------

def scalar_scale_min(scales, j):
    if j < 4:
        return scales[j] & 63, scales[j + 4] & 63
    sc = (scales[j + 4] & 0x0F) | ((scales[j - 4] >> 6) << 4)
    mn = (scales[j + 4] >> 4) | ((scales[j] >> 6) << 4)
    return sc, mn


def scalar_q4_k(block):
    d, dmin = f16_value(block[0:2]), f16_value(block[2:4])
    scales, qs = block[4:16], block[16:144]
    out = []
    for chunk in range(4):
        for half in range(2):
            sc, mn = scalar_scale_min(scales, 2 * chunk + half)
            dl = np.float32(d * np.float32(sc))
            ml = np.float32(dmin * np.float32(mn))
            for l in range(32):
                byte = qs[32 * chunk + l]
                q = (byte & 0x0F) if half == 0 else (byte >> 4)
                out.append(np.float32(dl * np.float32(q)) - ml)
    return np.array(out, np.float32)


def scalar_q5_k(block):
    d, dmin = f16_value(block[0:2]), f16_value(block[2:4])
    scales, qh, qs = block[4:16], block[16:48], block[48:176]
    out = []
    for chunk in range(4):
        for half in range(2):
            sc, mn = scalar_scale_min(scales, 2 * chunk + half)
            dl = np.float32(d * np.float32(sc))
            ml = np.float32(dmin * np.float32(mn))
            bit = 1 << (2 * chunk + half)
            for l in range(32):
                byte = qs[32 * chunk + l]
                q = (byte & 0x0F) if half == 0 else (byte >> 4)
                if qh[l] & bit:
                    q += 16
                out.append(np.float32(dl * np.float32(q)) - ml)
    return np.array(out, np.float32)


def scalar_q6_k(block):
    ql, qh = block[0:128], block[128:192]
    scales = np.frombuffer(bytes(block[192:208]), np.int8)
    d = f16_value(block[208:210])
    out = np.zeros(256, np.float32)
    for e in range(256):
        half, r = divmod(e, 128)
        quarter, l = divmod(r, 32)
        lo_byte = ql[64 * half + l + (32 if quarter in (1, 3) else 0)]
        lo = (lo_byte & 0x0F) if quarter < 2 else (lo_byte >> 4)
        hi = (qh[32 * half + l] >> (2 * quarter)) & 3
        q = (lo | (hi << 4)) - 32
        out[e] = np.float32(np.float32(d * np.float32(scales[e // 16])) * np.float32(q))
    return out


def random_k_blocks(rng, n, block_bytes, d_positions):
    raw = rng.integers(0, 256, size=(n, block_bytes), dtype=np.uint8)
    for pos in d_positions:
        vals = (rng.standard_normal(n) * 0.05).astype("<f2")
        raw[:, pos:pos + 2] = vals.view(np.uint8).reshape(n, 2)
    return raw


# ---------------------------------------------------------------------------
# Tests
# ---------------------------------------------------------------------------

class TestHandBuiltBlocks(unittest.TestCase):
    def test_q8_0_block(self):
        qs = list(range(-16, 16))
        qs[0], qs[31] = -127, 127
        raw = f16_bytes(0.5) + struct.pack("<32b", *qs)
        y = ref.dequantize(np.frombuffer(raw, np.uint8), 8, 32)
        self.assertEqual(y.dtype, np.float32)
        self.assertEqual(y.tolist(), [0.5 * q for q in qs])

    def test_q4_0_block(self):
        # byte j: low nibble = j (element j), high nibble = 15 - j (element j+16)
        raw = f16_bytes(0.25) + bytes(j | ((15 - j) << 4) for j in range(16))
        y = ref.dequantize(np.frombuffer(raw, np.uint8), 2, 32)
        expected = [(j - 8) * 0.25 for j in range(16)] + [(7 - j) * 0.25 for j in range(16)]
        self.assertEqual(y.tolist(), expected)

    def test_q4_1_q5_0_q5_1_blocks(self):
        # byte j of the nibbles: j (element j), 15 - j (element j + 16);
        # fifth bits 0x0ff05aa5 (bit j for element j); d = 0.25, m = -1.5.
        nib = bytes(j | ((15 - j) << 4) for j in range(16))
        qh = struct.pack("<I", 0x0ff05aa5)
        nibble = [j for j in range(16)] + [15 - j for j in range(16)]
        q5 = [nibble[j] | (((0x0ff05aa5 >> j) & 1) << 4) for j in range(32)]
        cases = [
            (3, f16_bytes(0.25) + f16_bytes(-1.5) + nib,
             [0.25 * q - 1.5 for q in nibble]),
            (6, f16_bytes(0.25) + qh + nib, [0.25 * (q - 16) for q in q5]),
            (7, f16_bytes(0.25) + f16_bytes(-1.5) + qh + nib,
             [0.25 * q - 1.5 for q in q5]),
        ]
        for ggml_type, raw, expected in cases:
            y = ref.dequantize(np.frombuffer(raw, np.uint8), ggml_type, 32)
            self.assertEqual(y.tolist(), expected, ggml_type)
        # The writer's blocks decode to the nearest step of each block's
        # grid: within half a step (plus f16 rounding of d and m).
        x = np.random.default_rng(5).normal(size=64).astype(np.float32)
        for name, levels in (("q4_1", 15), ("q5_1", 31), ("q5_0", 31)):
            raw = mm.QUANTIZERS[name](x)
            y = ref.dequantize(raw, GGML_ID[name], 64)
            for blk in range(2):
                b = x[32 * blk:32 * blk + 32]
                step = (b.max() - b.min()) / levels if name != "q5_0" else \
                    np.abs(b).max() / 16
                err = np.abs(y[32 * blk:32 * blk + 32] - b).max()
                self.assertLessEqual(err, 0.5 * step * 1.01 + 1e-3, name)

    def test_q2_k_q3_k_blocks(self):
        # Code bytes 0xe4 (bits 2j hold j), byte 32 + 5 0xff (code 3 for
        # n = 1, l = 5); value v = 128 n + 32 j + l in sub-block v // 16.
        codes = bytearray([0xE4] * 64)
        codes[32 + 5] = 0xFF
        q = [3 if (v // 128 == 1 and v % 32 == 5) else (v % 128) // 32
             for v in range(256)]
        # q2_k: scale byte i | (15 - i) << 4, d 0.5, dmin 0.25.
        raw = (bytes(i | ((15 - i) << 4) for i in range(16)) + bytes(codes)
               + f16_bytes(0.5) + f16_bytes(0.25))
        y = ref.dequantize(np.frombuffer(raw, np.uint8), 10, 256)
        self.assertEqual(y.tolist(), [0.5 * (v // 16) * q[v] - 0.25 * (15 - v // 16)
                                      for v in range(256)])
        # q3_k: hmask byte 7 = 0xa5; scale i = 32 + i - 8, packed; d 0.5.
        hmask = bytearray(32)
        hmask[7] = 0xA5
        packed = bytearray(12)
        for i in range(16):
            s = 32 + i - 8
            packed[i % 8] |= (s & 0xF) << (4 * (i // 8))
            packed[8 + i % 4] |= (s >> 4) << (2 * (i // 4))
        raw = bytes(hmask) + bytes(codes) + bytes(packed) + f16_bytes(0.5)
        y = ref.dequantize(np.frombuffer(raw, np.uint8), 11, 256)
        bit = [1 if (v % 32 == 7 and (0xA5 >> (4 * (v // 128) + (v % 128) // 32)) & 1)
               else 0 for v in range(256)]
        self.assertEqual(y.tolist(), [0.5 * (v // 16 - 8) * (q[v] + 4 * bit[v] - 4)
                                      for v in range(256)])

    def test_q4_k_block(self):
        sc = [1, 2, 3, 4, 37, 50, 63, 16]
        mn = [5, 6, 7, 8, 33, 20, 45, 63]
        s = [0] * 12
        for j in range(4):
            s[j] = sc[j] | ((sc[j + 4] >> 4) << 6)
            s[j + 4] = mn[j] | ((mn[j + 4] >> 4) << 6)
            s[j + 8] = (sc[j + 4] & 15) | ((mn[j + 4] & 15) << 4)
        qs = bytes((l % 16) | ((15 - l % 16) << 4) for l in range(128))
        raw = f16_bytes(1.0) + f16_bytes(0.5) + bytes(s) + qs
        y = ref.dequantize(np.frombuffer(raw, np.uint8), 12, 256)
        exp = []
        for chunk in range(4):
            for half in range(2):
                j = 2 * chunk + half
                for l in range(32):
                    q = (l % 16) if half == 0 else 15 - (l % 16)
                    exp.append(1.0 * sc[j] * q - 0.5 * mn[j])
        self.assertEqual(y.tolist(), exp)

    def test_q6_k_block(self):
        # every value q = 33 (i.e. +1), scale of group g = g - 8, d = 0.5
        ql = bytes([0x11] * 128)          # low nibble 1 in both halves
        qh = bytes([0b10101010] * 64)     # high 2 bits = 2 -> 1 | (2 << 4) = 33
        scales = struct.pack("<16b", *range(-8, 8))
        raw = ql + qh + scales + f16_bytes(0.5)
        y = ref.dequantize(np.frombuffer(raw, np.uint8), 14, 256)
        exp = [0.5 * (e // 16 - 8) * 1 for e in range(256)]
        self.assertEqual(y.tolist(), exp)

    def test_k_quants_match_scalar_ggml_loops(self):
        rng = np.random.default_rng(5)
        cases = [(12, 144, [0, 2], scalar_q4_k), (13, 176, [0, 2], scalar_q5_k),
                 (14, 210, [208], scalar_q6_k)]
        for gid, size, dpos, scalar in cases:
            with self.subTest(type=gid):
                raw = random_k_blocks(rng, 6, size, dpos)
                got = ref.dequantize(raw.reshape(-1), gid, 6 * 256)
                # Python ints, not NumPy uint8 scalars: the loops' integer
                # arithmetic must not depend on NumPy's promotion rules
                # (value-based in 1.x, NEP 50 in 2.x, where uint8 - 32 wraps).
                want = np.concatenate([scalar(b.tolist()) for b in raw])
                self.assertTrue(np.array_equal(got.view(np.uint32), want.view(np.uint32)))

    def test_f16_bf16(self):
        vals = np.array([1.0, -2.5, 65504.0, 6e-8, 0.0, -0.0, 3.140625], np.float32)
        y = ref.dequantize(np.frombuffer(vals.astype("<f2").tobytes(), np.uint8), 1, 7)
        self.assertTrue(np.array_equal(y, vals.astype(np.float16).astype(np.float32)))
        bf = (vals.view(np.uint32) >> 16).astype("<u2")
        y = ref.dequantize(np.frombuffer(bf.tobytes(), np.uint8), 30, 7)
        self.assertTrue(np.array_equal(y.view(np.uint32), (bf.astype(np.uint32) << 16)))

    def test_bf16_writer_rounds_to_nearest_even(self):
        # 1 + 2^-8 is halfway between two bf16 values and rounds to the even
        # one (1.0); 1 + 3*2^-8 is halfway too and rounds up to 1 + 2^-6;
        # 1 + 2^-8 + 2^-20 is past halfway and rounds up.
        vals = np.array([1.0 + 2**-8, 1.0 + 3 * 2**-8, 1.0 + 2**-8 + 2**-20,
                         -2.5, 0.0], np.float32)
        want = np.array([1.0, 1.0 + 2**-6, 1.0 + 2**-7, -2.5, 0.0], np.float32)
        raw = np.frombuffer(mm.encode_tensor(vals, "bf16"), np.uint8)
        self.assertEqual(raw.size, 2 * vals.size)
        got = ref.dequantize(raw, 30, vals.size)
        self.assertTrue(np.array_equal(got, want), got)
        nan = np.frombuffer(mm.to_bf16(np.array([np.nan], np.float32)).tobytes(), np.uint8)
        self.assertTrue(np.isnan(ref.dequantize(nan, 30, 1)[0]))


class TestCacheRound(unittest.TestCase):
    def test_q8_0_hand_block(self):
        # One token, one head of 32: max |v| = 127 makes d = 1, so the
        # quants are the values rounded half away from zero (-63.5 -> -64,
        # 0.5 -> 1, -0.5 -> -1; np.rint would give -64, 0 and -0).
        x = np.zeros((1, 1, 32))
        x[0, 0, :5] = [127.0, -63.5, 0.5, -0.5, 2.25]
        got = ref.cache_round(x, "q8_0")[0, 0]
        self.assertEqual(list(got[:5]), [127.0, -64.0, 1.0, -1.0, 2.0])
        self.assertTrue(np.all(got[5:] == 0))

    def test_q8_0_scale_is_f16(self):
        # max |v| = 1: d = 1/127 in f32, read back through f16, so 127 q
        # is 127 * f16(1/127), not 1.
        x = np.zeros((1, 2, 32))
        x[0, 1, 0] = 1.0
        got = ref.cache_round(x, "q8_0")
        d16 = float(np.float16(np.float32(1.0) / np.float32(127.0)))
        self.assertEqual(got[0, 1, 0], 127 * d16)
        self.assertNotEqual(got[0, 1, 0], 1.0)
        self.assertTrue(np.all(got[0, 0] == 0))  # an all-zero block: d = 0

    def test_f16_and_f32(self):
        x = np.array([[[1.0 + 2.0 ** -12]]])
        self.assertEqual(ref.cache_round(x, "f32")[0, 0, 0], 1.0 + 2.0 ** -12)
        self.assertEqual(ref.cache_round(x, "f16")[0, 0, 0], 1.0)


class TestQuantizers(unittest.TestCase):
    def arrays(self):
        rng = np.random.default_rng(11)
        g = rng.standard_normal(256 * 8).astype(np.float32)
        outl = g.copy()
        outl[::97] *= 25.0
        return {
            "gauss": g,
            "gauss_small": g * 1e-3,
            "gauss_big": g * 40.0,
            "positive": np.abs(g) + 0.5,
            "negative": -np.abs(g) - 0.5,
            "outliers": outl,
            "constant": np.full(512, 0.75, np.float32),
        }

    def test_round_trip(self):
        for t, fn in mm.QUANTIZERS.items():
            gid, blk, size, _ = mm.TYPES[t]
            for name, x in self.arrays().items():
                with self.subTest(type=t, data=name):
                    raw = fn(x)
                    self.assertEqual(raw.dtype, np.uint8)
                    self.assertEqual(raw.size, x.size // blk * size)
                    y = ref.dequantize(raw, gid, x.size)
                    tol = REL_TOL[t] * (2.5 if name == "outliers" else 1.0)
                    self.assertLess(rel_rms(y, x), tol)

    def test_zeros(self):
        for t, fn in mm.QUANTIZERS.items():
            gid, blk, _, _ = mm.TYPES[t]
            y = ref.dequantize(fn(np.zeros(512, np.float32)), gid, 512)
            self.assertTrue(np.all(y == 0), t)

    def test_nibble_order(self):
        # Q4_0/Q4_K element order is independent of the packer: a ramp must
        # come back as a ramp.
        x = np.linspace(-1, 1, 256, dtype=np.float32)
        for t in ("q4_0", "q4_k", "q5_k", "q6_k", "q8_0"):
            gid = mm.TYPES[t][0]
            y = ref.dequantize(mm.QUANTIZERS[t](x), gid, 256)
            self.assertGreater(np.corrcoef(x, y)[0, 1], 0.99, t)


class TestParser(TmpDirCase):
    def test_all_metadata_types_v2_alignment(self):
        kvs = [
            ("general.architecture", mm.MT_STRING, "llama"),
            ("general.alignment", mm.MT_UINT32, 64),
            ("t.u8", mm.MT_UINT8, 250), ("t.i8", mm.MT_INT8, -7),
            ("t.u16", mm.MT_UINT16, 65000), ("t.i16", mm.MT_INT16, -30000),
            ("t.u32", mm.MT_UINT32, 4000000000), ("t.i32", mm.MT_INT32, -2000000000),
            ("t.f32", mm.MT_FLOAT32, 0.5), ("t.bool", mm.MT_BOOL, True),
            ("t.str", mm.MT_STRING, "h\u00e9llo \u2581"),
            ("t.u64", mm.MT_UINT64, 2 ** 63 + 5), ("t.i64", mm.MT_INT64, -2 ** 62),
            ("t.f64", mm.MT_FLOAT64, 1.0 / 3.0),
            ("t.arr_i32", mm.MT_ARRAY, (mm.MT_INT32, [1, -2, 3])),
            ("t.arr_bool", mm.MT_ARRAY, (mm.MT_BOOL, [True, False])),
            ("t.arr_str", mm.MT_ARRAY, (mm.MT_STRING, ["a", "", "b c"])),
            ("t.arr_f64", mm.MT_ARRAY, (mm.MT_FLOAT64, [0.25, -1e300])),
            ("t.arr_nested", mm.MT_ARRAY, (mm.MT_ARRAY, [(mm.MT_UINT8, [1, 2]),
                                                        (mm.MT_STRING, ["x"])])),
            ("t.arr_empty", mm.MT_ARRAY, (mm.MT_UINT64, [])),
        ]
        a = np.arange(6, dtype=np.float32) - 2.5
        b = np.arange(64, dtype=np.float32).reshape(2, 32) / 7.0
        bf = (np.array([1.5, -3.0, 0.125], np.float32).view(np.uint32) >> 16).astype("<u2")
        tensors = [
            ("a", [6], 0, a.tobytes()),                      # 24 bytes -> padding
            ("b", [32, 2], 1, b.astype("<f2").tobytes()),
            ("c", [3], 30, bf.tobytes()),
            ("d", [32], 8, mm.quantize_q8_0(b[0]).tobytes()),
        ]
        p = self.path("types_v2.gguf")
        mm.write_gguf(p, kvs, tensors, version=2)
        g = ref.GGUFReader(p)
        self.assertEqual(g.version, 2)
        self.assertEqual(g.alignment, 64)
        self.assertEqual(g.data_offset % 64, 0)
        for key, vt, val in kvs:
            self.assertEqual(g.metadata_types[key], vt, key)
        md = g.metadata
        self.assertEqual(md["t.u8"], 250)
        self.assertEqual(md["t.i8"], -7)
        self.assertEqual(md["t.u16"], 65000)
        self.assertEqual(md["t.i16"], -30000)
        self.assertEqual(md["t.u32"], 4000000000)
        self.assertEqual(md["t.i32"], -2000000000)
        self.assertEqual(md["t.f32"], 0.5)
        self.assertIs(md["t.bool"], True)
        self.assertEqual(md["t.str"], "h\u00e9llo \u2581")
        self.assertEqual(md["t.u64"], 2 ** 63 + 5)
        self.assertEqual(md["t.i64"], -2 ** 62)
        self.assertEqual(md["t.f64"], 1.0 / 3.0)
        self.assertEqual(md["t.arr_i32"], [1, -2, 3])
        self.assertEqual(md["t.arr_bool"], [True, False])
        self.assertEqual(md["t.arr_str"], ["a", "", "b c"])
        self.assertEqual(md["t.arr_f64"], [0.25, -1e300])
        self.assertEqual(md["t.arr_nested"], [[1, 2], ["x"]])
        self.assertEqual(md["t.arr_empty"], [])
        for name in "abcd":
            self.assertEqual(g.tensors[name].offset % 64, 0)
        self.assertTrue(np.array_equal(g.tensor("a"), a))
        self.assertEqual(g.tensor("b").shape, (2, 32))
        self.assertTrue(np.array_equal(g.tensor("b"), b.astype(np.float16).astype(np.float32)))
        self.assertEqual(g.tensor("c").tolist(), [1.5, -3.0, 0.125])
        self.assertLess(rel_rms(g.tensor("d"), b[0]), 0.01)

    def test_version3_and_errors(self):
        p = self.path("v3.gguf")
        mm.write_gguf(p, [("general.architecture", mm.MT_STRING, "llama")],
                      [("w", [4], 0, np.ones(4, np.float32).tobytes())])
        g = ref.GGUFReader(p)
        self.assertEqual((g.version, g.alignment), (3, 32))
        self.assertEqual(g.tensor("w").tolist(), [1.0] * 4)
        bad = self.path("bad.gguf")
        with open(p, "rb") as f:
            data = bytearray(f.read())
        data[0:4] = b"GGUX"
        with open(bad, "wb") as f:
            f.write(data)
        with self.assertRaises(ref.GGUFError):
            ref.GGUFReader(bad)
        with open(bad, "wb") as f:
            f.write(bytes(data[:-2]).replace(b"GGUX", b"GGUF", 1))
        with self.assertRaises(ref.GGUFError):
            ref.GGUFReader(bad)


class TestRoundTrip(TmpDirCase):
    """Every arch x type: the writer's file loads, dequantizes close to the
    float weights it was generated from, and the forward pass runs."""

    def shape_args(self, t):
        # K-quants need rows that are multiples of 256 to actually quantize
        if t in K_TYPES:
            return ["--dim", 256, "--ffn", 512, "--heads", 4, "--kv-heads", 2]
        return []

    def test_matrix(self):
        tokens = [1, 17, 42, 99, 250, 7, 300]
        for arch in ARCHES:
            for t in TYPES:
                with self.subTest(arch=arch, type=t):
                    name = "rt_%s_%s.gguf" % (arch, t)
                    cfg, info = self.gen(name, "--arch", arch, "--type", t, "--seed", 3,
                                         *self.shape_args(t))
                    self.assertEqual(info["fallbacks"], [])
                    g = ref.GGUFReader(self.path(name))
                    weights = mm.make_weights(cfg)
                    self.assertEqual(sorted(g.tensors), sorted(n for n, _ in weights))
                    for tname, w in weights:
                        ti = g.tensors[tname]
                        self.assertEqual(ti.dims, list(w.shape[::-1]), tname)
                        got = g.tensor(tname)
                        if w.ndim == 1:
                            self.assertEqual(ti.type, 0, tname)
                            self.assertTrue(np.array_equal(got, w), tname)
                        else:
                            self.assertEqual(ti.type, GGML_ID[t], tname)
                            if t == "f32":
                                self.assertTrue(np.array_equal(got, w), tname)
                            else:
                                self.assertLess(rel_rms(got, w), REL_TOL[t], tname)
                    m = ref.Model(self.path(name))
                    lg = m.logits(tokens)
                    self.assertEqual(lg.shape, (len(tokens), cfg.vocab))
                    self.assertTrue(np.all(np.isfinite(lg)))
                    self.assertGreater(lg.std(axis=1).min(), 0.1)

    def test_quantized_logits_track_f32(self):
        tokens = [1, 5, 9, 200, 33, 64]
        for arch in ARCHES:
            base_args = ["--arch", arch, "--seed", 9] + self.shape_args("q4_k")
            self.gen("trk_f32.gguf", *base_args)
            ref_lg = ref.Model(self.path("trk_f32.gguf")).logits(tokens)
            for t, min_corr in (("f16", 0.9999), ("q8_0", 0.999), ("q6_k", 0.995),
                                ("q5_k", 0.98), ("q4_k", 0.9), ("q4_0", 0.9)):
                with self.subTest(arch=arch, type=t):
                    self.gen("trk_q.gguf", *(base_args + ["--type", t]))
                    lg = ref.Model(self.path("trk_q.gguf")).logits(tokens)
                    c = np.corrcoef(lg.ravel(), ref_lg.ravel())[0, 1]
                    self.assertGreater(c, min_corr)

    def test_fallback_to_f32(self):
        cfg, info = self.gen("fb.gguf", "--type", "q4_k")   # dim 64: no 256-blocks
        self.assertIn("token_embd.weight", info["fallbacks"])
        g = ref.GGUFReader(self.path("fb.gguf"))
        for name, t in g.tensors.items():
            self.assertEqual(t.type, 0, name)
        # mixed: dim 256 rows quantize, ffn_down (ne0 = 320) falls back
        cfg, info = self.gen("fb2.gguf", "--type", "q6_k", "--dim", 256, "--ffn", 320)
        self.assertEqual(sorted(info["fallbacks"]),
                         ["blk.0.ffn_down.weight", "blk.1.ffn_down.weight"])
        g = ref.GGUFReader(self.path("fb2.gguf"))
        self.assertEqual(g.tensors["blk.0.ffn_down.weight"].type, 0)
        self.assertEqual(g.tensors["blk.0.ffn_up.weight"].type, 14)
        ref.Model(self.path("fb2.gguf")).logits([1, 2, 3])


class TestForward(TmpDirCase):
    VARIANTS = [
        ("llama", []),
        ("llama", ["--tied", "--rope-scale", 4, "--rope-base", 500]),
        ("qwen2", ["--type", "q8_0"]),
        ("qwen2", ["--rope-dims", 8]),
        ("qwen3", ["--head-dim", 24, "--tied"]),
        ("qwen3", ["--heads", 8, "--kv-heads", 2, "--rope-dims", 12, "--head-dim", 16]),
        ("llama", ["--heads", 4, "--kv-heads", 4, "--rope-dims", 10]),
        ("gemma", []),
        ("gemma", ["--head-dim", 32, "--type", "q8_0", "--rope-scale", 2]),
        ("gemma2", ["--sliding-window", 3, "--attn-softcap", 2.0, "--final-softcap", 5.0]),
        ("gemma2", ["--layers", 3, "--sliding-window", 2, "--swa-pattern", 3,
                    "--rope-base-swa", 100, "--rope-scale", 2, "--head-dim", 32]),
        ("gemma2", ["--layers", 46, "--head-dim", 32, "--sliding-window", 4]),  # "27B"
        ("gemma3", ["--layers", 3, "--sliding-window", 3, "--head-dim", 32]),
        ("gemma3", ["--layers", 4, "--sliding-window", 2, "--swa-pattern", 2,
                    "--rope-scale", 4, "--rope-base-swa", 500, "--tied"]),
        ("gemma3", ["--sliding-window", 0, "--final-softcap", 3.0, "--rope-scale", 2]),
        ("gemma3", ["--sliding-window", 0, "--swa-pattern", 2]),
        ("phi3", []),
        ("phi3", ["--separate-qkv", "--type", "q8_0", "--sliding-window", 2]),
        ("phi3", ["--ctx", 64, "--long-rope", 32, "--rope-dims", 8]),
    ]

    def test_against_loop_oracle(self):
        tokens = [1, 300, 45, 45, 7, 128, 2]
        for i, (arch, extra) in enumerate(self.VARIANTS):
            with self.subTest(arch=arch, extra=extra):
                name = "oracle_%d.gguf" % i
                self.gen(name, "--arch", arch, "--seed", 100 + i, *extra)
                got = ref.Model(self.path(name)).logits(tokens)
                want = naive_logits(self.path(name), tokens)
                np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9)

    def test_metadata_reaches_model(self):
        self.gen("hp.gguf", "--arch", "qwen3", "--head-dim", 24, "--rope-scale", 2.5,
                 "--rope-base", 1e6, "--eps", 1e-6, "--rope-dims", 16)
        m = ref.Model(self.path("hp.gguf"))
        self.assertEqual((m.hd_k, m.hd_v, m.n_rot, m.rope_style), (24, 24, 16, "neox"))
        self.assertAlmostEqual(m.pos_scale, 1 / 2.5, places=6)
        self.assertAlmostEqual(m.rope_base, 1e6)
        self.assertAlmostEqual(m.eps, 1e-6, places=12)
        md = m.gguf.metadata
        self.assertEqual(md["qwen3.attention.key_length"], 24)
        self.assertEqual(md["qwen3.rope.scaling.type"], "linear")
        self.assertEqual(m.layers[0]["q_norm"].shape, (24,))

    def test_rope_matches_complex_rotation(self):
        self.gen("rope.gguf", "--arch", "llama")
        m = ref.Model(self.path("rope.gguf"))
        rng = np.random.default_rng(1)
        x = rng.standard_normal((3, 2, m.hd_k))
        pos = np.array([0, 5, 77])
        ang = pos[:, None] * m.rope_base ** (-np.arange(m.hd_k // 2) * 2.0 / m.hd_k)
        rot = np.exp(1j * ang)[:, None, :]
        m.rope_style = "normal"
        z = x[..., 0::2] + 1j * x[..., 1::2]
        y = m._rope(x, pos)
        np.testing.assert_allclose(y[..., 0::2] + 1j * y[..., 1::2], z * rot, atol=1e-12)
        m.rope_style = "neox"
        h = m.hd_k // 2
        z = x[..., :h] + 1j * x[..., h:]
        y = m._rope(x, pos)
        np.testing.assert_allclose(y[..., :h] + 1j * y[..., h:], z * rot, atol=1e-12)

    def test_causal(self):
        for arch in ARCHES:
            with self.subTest(arch=arch):
                self.gen("causal.gguf", "--arch", arch, "--type", "q8_0")
                m = ref.Model(self.path("causal.gguf"))
                a = [1, 10, 20, 30, 40, 50, 60]
                la = m.logits(a)
                for p in (2, 5):
                    b = list(a)
                    b[p] = 311
                    b[-1] = 5
                    lb = m.logits(b)
                    np.testing.assert_allclose(la[:p], lb[:p], rtol=0, atol=1e-12)
                    self.assertGreater(np.abs(la[p] - lb[p]).max(), 1e-3)
                    # prefix alone gives the same rows
                    np.testing.assert_allclose(m.logits(a[:p]), la[:p], rtol=0, atol=1e-12)

    def test_incremental_equals_batch(self):
        self.gen("inc.gguf", "--arch", "qwen2", "--type", "q4_0")
        m = ref.Model(self.path("inc.gguf"))
        toks = [3, 14, 15, 92, 65, 35, 89, 79]
        full = m.logits(toks)
        m.reset()
        steps = np.concatenate([m.forward(toks[:3])] + [m.forward([t]) for t in toks[3:]])
        np.testing.assert_allclose(steps, full, rtol=1e-10, atol=1e-10)


class TestPhi3(TmpDirCase):
    """phi3: the fused tensors hold the llama set's weights; LongRoPE
    chooses its factors by the context; attn_factor as the converter
    derives it."""

    SHAPE = ["--seed", 41, "--heads", 4, "--kv-heads", 2, "--rope-dims", 8,
             "--head-dim", 16, "--ctx", 64]

    def test_fused_tensors_stack_the_llama_weights(self):
        cfg, _ = self.gen("fused.gguf", "--arch", "phi3", *self.SHAPE)
        llama = dict(mm.make_weights(mm.parse_args(
            [self.path("unused.gguf"), "--arch", "llama"] + [str(a) for a in self.SHAPE])))
        g = ref.GGUFReader(self.path("fused.gguf"))
        for L in range(cfg.layers):
            b = "blk.%d." % L
            np.testing.assert_array_equal(
                g.tensor(b + "attn_qkv.weight"),
                np.concatenate([llama[b + "attn_q.weight"], llama[b + "attn_k.weight"],
                                llama[b + "attn_v.weight"]]))
            np.testing.assert_array_equal(
                g.tensor(b + "ffn_up.weight"),
                np.concatenate([llama[b + "ffn_gate.weight"], llama[b + "ffn_up.weight"]]))
            for gone in ("attn_q", "attn_k", "attn_v", "ffn_gate"):
                self.assertNotIn(b + gone + ".weight", g.tensors)

    def test_long_rope_by_context(self):
        self.gen("long.gguf", "--arch", "phi3", "--long-rope", 32, *self.SHAPE)
        md = ref.GGUFReader(self.path("long.gguf")).metadata
        # sqrt(1 + ln(64 / 32) / ln(32)) = sqrt(1.2)
        self.assertAlmostEqual(md["phi3.rope.scaling.attn_factor"], math.sqrt(1.2), places=6)
        self.assertEqual(md["phi3.rope.scaling.original_context_length"], 32)
        tokens = [1, 300, 45, 45, 7, 128, 2]
        by_ctx = {}
        for n_ctx in (32, 64):
            got = ref.Model(self.path("long.gguf"), n_ctx=n_ctx).logits(tokens)
            want = naive_logits(self.path("long.gguf"), tokens, n_ctx=n_ctx)
            np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9)
            by_ctx[n_ctx] = got
        self.assertGreater(np.abs(by_ctx[32] - by_ctx[64]).max(), 1e-3)
        self.assertEqual(mm.phi3_attn_factor(32, 32), 1.0)

    def test_refused(self):
        for args in (["--arch", "phi3", "--dim", 64, "--heads", 4, "--head-dim", 8],
                     ["--arch", "phi3", "--ctx", 64, "--long-rope", 64],
                     ["--arch", "llama", "--separate-qkv"],
                     ["--arch", "llama", "--long-rope", 8]):
            with self.subTest(args=args):
                self.refuses(*args)


class TestMoE(TmpDirCase):
    """qwen3moe and llama with experts: the writer's stacked tensors, the
    router's ties, and the MoE path against the dense one."""

    PROMPT = [1, 300, 45, 45, 7, 128, 2]

    def test_one_expert_is_the_dense_ffn(self):
        # One expert, always chosen with weight 1: the dense llama FFN of
        # that expert's matrices.
        self.gen("one.gguf", "--arch", "llama", "--experts", 1, "--experts-used", 1,
                 "--seed", 51)
        m = ref.Model(self.path("one.gguf"))
        got = m.logits(self.PROMPT)
        for L in m.layers:
            L.update(w_gate=L["gate_exps"][0], w_up=L["up_exps"][0],
                     w_down=L["down_exps"][0])
        m.n_expert = 0
        np.testing.assert_allclose(got, m.logits(self.PROMPT), rtol=1e-12, atol=1e-12)

    def test_stacked_tensors_and_metadata(self):
        cfg, _ = self.gen("q.gguf", "--arch", "qwen3moe", "--experts", 4,
                          "--experts-used", 3, "--ffn", 96, "--seed", 52)
        g = ref.GGUFReader(self.path("q.gguf"))
        md = g.metadata
        self.assertEqual((md["qwen3moe.expert_count"], md["qwen3moe.expert_used_count"],
                          md["qwen3moe.expert_feed_forward_length"]), (4, 3, 32))
        self.assertEqual(g.tensors["blk.0.ffn_gate_exps.weight"].dims, [64, 32, 4])
        self.assertEqual(g.tensors["blk.0.ffn_down_exps.weight"].dims, [32, 64, 4])
        self.assertEqual(g.tensors["blk.0.ffn_gate_inp.weight"].dims, [64, 4])
        self.assertNotIn("blk.0.ffn_gate.weight", g.tensors)
        self.assertIn("blk.0.attn_q_norm.weight", g.tensors)

    def test_ties_and_poison(self):
        self.gen("t.gguf", "--arch", "qwen3moe", "--router-tie", 0,
                 "--poison-expert", "0:3", "--seed", 53)
        low = ref.Model(self.path("t.gguf"))
        a = low.logits(self.PROMPT)
        self.assertEqual(low.expert_usage[0], [7, 7, 0, 0, 0, 0, 0, 0])
        self.assertTrue(np.isfinite(a).all())
        high = ref.Model(self.path("t.gguf"), tie_high=True)
        b = high.logits(self.PROMPT)
        self.assertEqual(high.expert_usage[0], [0, 0, 0, 0, 0, 0, 7, 7])
        self.assertGreater(np.abs(a - b).max(), 1e-3)
        # choosing the poisoned expert would make the logits NaN
        g = ref.GGUFReader(self.path("t.gguf"))
        self.assertTrue(np.isnan(g.tensor("blk.0.ffn_up_exps.weight")[3]).all())

    def test_refused(self):
        for args in (["--arch", "qwen2", "--experts", 4],
                     ["--arch", "llama", "--experts-used", 2],
                     ["--arch", "llama", "--experts", 4, "--experts-used", 5],
                     ["--arch", "llama", "--experts", 4, "--expert-ffn", 32],
                     ["--arch", "qwen3moe", "--poison-expert", "0:8"],
                     ["--arch", "qwen3moe", "--poison-expert", "x"],
                     ["--arch", "qwen3moe", "--router-tie", 5]):
            with self.subTest(args=args):
                self.refuses(*args)


class TestGemma(TmpDirCase):
    """gemma / gemma2 / gemma3: writer metadata, reference semantics (window
    masks, soft-caps, per-layer RoPE), incremental decoding."""

    SHAPE = ["--dim", 64, "--layers", 3, "--heads", 4, "--kv-heads", 2,
             "--head-dim", 32, "--vocab", 320]
    PROMPT = [1, 17, 42, 99, 250, 7, 300, 5, 6, 7, 8, 9]      # 12 tokens

    def make(self, name, arch, *extra):
        return self.gen(name, "--arch", arch, "--seed", 21, *(self.SHAPE + list(extra)))

    def model(self, name, **kw):
        return ref.Model(self.path(name), **kw)

    def test_gelu_tanh_by_hand(self):
        # 0.5 (1 + tanh(sqrt(2/pi) * 1.044715)) = 0.5 (1 + tanh(0.8335516)) = 0.8411920
        self.assertAlmostEqual(float(ref.gelu_tanh(1.0)), 0.8411920, places=7)
        self.assertEqual(float(ref.gelu_tanh(0.0)), 0.0)
        # gelu(z) - gelu(-z) = z
        self.assertAlmostEqual(float(ref.gelu_tanh(-1.0)), 0.8411920 - 1.0, places=7)
        self.assertAlmostEqual(float(ref.gelu_tanh(10.0)), 10.0, places=12)
        self.assertAlmostEqual(float(ref.gelu_tanh(-10.0)), 0.0, places=12)

    def test_metadata_and_tensors(self):
        want_window = {"gemma": None, "gemma2": 4096, "gemma3": 512}
        want_sliding = {"gemma": [False] * 3, "gemma2": [True, False, True],
                        "gemma3": [True] * 3}
        for arch in GEMMA_ARCHES:
            with self.subTest(arch=arch):
                name = "meta_%s.gguf" % arch
                cfg, _ = self.make(name, arch)
                g = ref.GGUFReader(self.path(name))
                md, types = g.metadata, g.metadata_types
                P = arch + "."
                self.assertEqual(md["general.architecture"], arch)
                self.assertEqual(md["tokenizer.ggml.model"], "llama")
                self.assertEqual(md[P + "attention.key_length"], 32)
                self.assertEqual(md[P + "rope.dimension_count"], 32)
                self.assertAlmostEqual(md[P + "rope.freq_base"],
                                       1e6 if arch == "gemma3" else 1e4)
                # the head is always the token embedding
                self.assertNotIn("output.weight", g.tensors)
                self.assertTrue(cfg.tied)
                self.assertAlmostEqual(float(g.tensor("token_embd.weight").std()),
                                       1 / 8.0, delta=0.01)
                window = md.get(P + "attention.sliding_window")
                self.assertEqual(window, want_window[arch])
                if window is not None:
                    self.assertEqual(types[P + "attention.sliding_window"], 4)
                for key in ("attention.sliding_window_pattern", "rope.freq_base_swa"):
                    self.assertNotIn(P + key, md)
                if arch == "gemma2":
                    self.assertEqual(md[P + "attn_logit_softcapping"], 50.0)
                    self.assertEqual(md[P + "final_logit_softcapping"], 30.0)
                    self.assertEqual(types[P + "attn_logit_softcapping"], 6)
                    self.assertEqual(types[P + "final_logit_softcapping"], 6)
                else:
                    self.assertNotIn(P + "attn_logit_softcapping", md)
                    self.assertNotIn(P + "final_logit_softcapping", md)
                # tensors: exactly the writer's, with llama.cpp's names
                self.assertEqual(sorted(g.tensors), sorted(n for n, _ in mm.make_weights(cfg)))
                post = arch != "gemma"
                for L in range(3):
                    b = "blk.%d." % L
                    for t in ("attn_norm", "attn_q", "attn_k", "attn_v", "attn_output",
                              "ffn_norm", "ffn_gate", "ffn_up", "ffn_down"):
                        self.assertIn(b + t + ".weight", g.tensors)
                    self.assertEqual(b + "post_attention_norm.weight" in g.tensors, post)
                    self.assertEqual(b + "post_ffw_norm.weight" in g.tensors, post)
                    if post:
                        self.assertEqual(g.tensors[b + "post_attention_norm.weight"].dims, [64])
                        self.assertEqual(g.tensors[b + "post_ffw_norm.weight"].dims, [64])
                    qk = arch == "gemma3"
                    self.assertEqual(b + "attn_q_norm.weight" in g.tensors, qk)
                    self.assertEqual(b + "attn_k_norm.weight" in g.tensors, qk)
                    if qk:
                        self.assertEqual(g.tensors[b + "attn_q_norm.weight"].dims, [32])
                        self.assertEqual(g.tensors[b + "attn_k_norm.weight"].dims, [32])
                    self.assertEqual(g.tensors[b + "attn_q.weight"].dims, [64, 128])
                    self.assertEqual(g.tensors[b + "attn_k.weight"].dims, [64, 64])
                # what the reference made of it
                m = self.model(name)
                self.assertEqual(m.rope_style, "neox")
                self.assertEqual(m.embd_scale, 8.0)
                self.assertEqual(m.kq_div, math.sqrt(32))
                self.assertEqual(m.swa_layers, want_sliding[arch])
                self.assertIs(m.w_out, m.tok_embd)
                self.assertEqual(m.window, want_window[arch])
                self.assertEqual(m.attn_softcap, 50.0 if arch == "gemma2" else None)
                self.assertEqual(m.final_softcap, 30.0 if arch == "gemma2" else None)
                self.assertEqual(m.post_norms, post)

    def test_writer_options(self):
        self.make("opt2.gguf", "gemma2", "--sliding-window", 8, "--swa-pattern", 3,
                  "--attn-softcap", 20, "--final-softcap", 7, "--rope-base-swa", 123)
        md = ref.GGUFReader(self.path("opt2.gguf")).metadata
        self.assertEqual(md["gemma2.attention.sliding_window"], 8)
        self.assertEqual(md["gemma2.attention.sliding_window_pattern"], 3)
        self.assertEqual(md["gemma2.attn_logit_softcapping"], 20.0)
        self.assertEqual(md["gemma2.final_logit_softcapping"], 7.0)
        self.assertEqual(md["gemma2.rope.freq_base_swa"], 123.0)
        self.make("opt3.gguf", "gemma3", "--final-softcap", 9, "--rope-base", 5e5,
                  "--sliding-window", 0)
        md = ref.GGUFReader(self.path("opt3.gguf")).metadata
        self.assertEqual(md["gemma3.final_logit_softcapping"], 9.0)
        self.assertEqual(md["gemma3.rope.freq_base"], 5e5)
        self.assertEqual(md["gemma3.attention.sliding_window"], 0)
        self.gen("opt_tok.gguf", "--arch", "gemma", "--tokenizer", "gpt2", "--tied")
        md = ref.GGUFReader(self.path("opt_tok.gguf")).metadata
        self.assertEqual(md["tokenizer.ggml.model"], "gpt2")
        for bad in (["--arch", "gemma", "--untied"],
                    ["--arch", "gemma3", "--untied"],
                    ["--arch", "gemma", "--sliding-window", 4],
                    ["--arch", "llama", "--sliding-window", 4],
                    ["--arch", "qwen3", "--swa-pattern", 2],
                    ["--arch", "gemma", "--swa-pattern", 2],
                    ["--arch", "gemma3", "--attn-softcap", 5],
                    ["--arch", "gemma", "--attn-softcap", 5],
                    ["--arch", "llama", "--final-softcap", 5],
                    ["--arch", "gemma", "--final-softcap", 5],
                    ["--arch", "qwen2", "--rope-base-swa", 5],
                    ["--arch", "gemma", "--rope-base-swa", 5],
                    ["--arch", "gemma2", "--sliding-window", 0],
                    ["--arch", "gemma2", "--attn-softcap", 0],
                    ["--arch", "gemma2", "--swa-pattern", -1]):
            self.refuses(*bad)

    def test_greedy_and_incremental(self):
        variants = [(arch, []) for arch in GEMMA_ARCHES]
        variants += [("gemma2", ["--sliding-window", 4]),
                     ("gemma3", ["--sliding-window", 3, "--swa-pattern", 2, "--rope-scale", 2]),
                     ("gemma3", ["--sliding-window", 0])]
        for i, (arch, extra) in enumerate(variants):
            with self.subTest(arch=arch, extra=extra):
                name = "inc_%d.gguf" % i
                self.make(name, arch, *extra)
                m = self.model(name)
                prompt_logits, ids = m.greedy(self.PROMPT, 6)
                self.assertEqual(len(ids), 6)
                self.assertTrue(all(0 <= t < 320 for t in ids))
                full = m.logits(self.PROMPT + ids)
                np.testing.assert_allclose(prompt_logits, full[:12], rtol=1e-9, atol=1e-9)
                self.assertEqual(list(full[11:-1].argmax(axis=1)), ids)
                m.reset()
                steps = np.concatenate([m.forward([t]) for t in self.PROMPT])
                np.testing.assert_allclose(steps, full[:12], rtol=1e-9, atol=1e-9)
                m.reset()
                chunks = np.concatenate([m.forward(self.PROMPT[:5]), m.forward(self.PROMPT[5:9]),
                                         m.forward(self.PROMPT[9:])])
                np.testing.assert_allclose(chunks, full[:12], rtol=1e-9, atol=1e-9)

    def test_sliding_window_changes_logits(self):
        self.make("win.gguf", "gemma2", "--sliding-window", 4)
        real = self.model("win.gguf").logits(self.PROMPT)
        wrong = self.model("win.gguf", ignore_window=True).logits(self.PROMPT)
        # positions 0..3 see at most 4 positions: nothing to cut off
        np.testing.assert_allclose(real[:4], wrong[:4], rtol=0, atol=1e-12)
        diff = np.abs(real - wrong).max(axis=1)
        self.assertTrue(np.all(diff[4:] > 1e-4), diff)
        # the window also holds token by token
        m = self.model("win.gguf")
        steps = np.concatenate([m.forward([t]) for t in self.PROMPT])
        np.testing.assert_allclose(steps, real, rtol=1e-9, atol=1e-9)
        # one layer, and it slides: row p depends on tokens p-3..p only
        self.make("win1.gguf", "gemma2", "--sliding-window", 4, "--layers", 1)
        m = self.model("win1.gguf")
        self.assertEqual(m.swa_layers, [True])
        base = m.logits(self.PROMPT)
        for changed in (0, 1, 5):
            toks = list(self.PROMPT)
            toks[changed] = 311
            lg = m.logits(toks)
            diff = np.abs(lg - base).max(axis=1)
            for p in range(12):
                if changed <= p < changed + 4:
                    self.assertGreater(diff[p], 1e-6, (changed, p))
                else:
                    self.assertEqual(diff[p], 0.0, (changed, p))

    def test_softcaps_change_logits(self):
        self.make("cap50.gguf", "gemma2")
        self.make("cap05.gguf", "gemma2", "--attn-softcap", 0.5)
        a = self.model("cap50.gguf").logits(self.PROMPT)
        b = self.model("cap05.gguf").logits(self.PROMPT)
        self.assertGreater(np.abs(a - b).max(), 1e-2)
        # same weights: without capping the two files are the same model
        a0 = self.model("cap50.gguf", ignore_softcap=True).logits(self.PROMPT)
        b0 = self.model("cap05.gguf", ignore_softcap=True).logits(self.PROMPT)
        np.testing.assert_array_equal(a0, b0)
        self.assertGreater(np.abs(b - b0).max(), 1e-2)
        # huge caps are no caps
        self.make("capbig.gguf", "gemma2", "--attn-softcap", 1e9, "--final-softcap", 1e9)
        big = self.model("capbig.gguf").logits(self.PROMPT)
        np.testing.assert_allclose(big, a0, rtol=1e-9, atol=1e-9)
        # the final cap bounds every logit
        self.make("capfin.gguf", "gemma2", "--final-softcap", 0.5)
        fin = self.model("capfin.gguf").logits(self.PROMPT)
        self.assertLess(np.abs(fin).max(), 0.5)
        np.testing.assert_allclose(fin, 0.5 * np.tanh(a0 / 0.5), rtol=0, atol=0.05)

    def test_gemma3_softcap_and_rope(self):
        # final soft-capping exactly when the file gives a cap (llama.cpp's
        # gemma3 loader: 0 by default), window or not
        self.make("g3cap.gguf", "gemma3", "--final-softcap", 0.5)
        self.assertEqual(self.model("g3cap.gguf").final_softcap, 0.5)
        self.make("g3nocap.gguf", "gemma3", "--sliding-window", 0)
        m = self.model("g3nocap.gguf")
        self.assertEqual((m.window, m.swa_layers, m.final_softcap), (None, [False] * 3, None))
        self.make("g3capb.gguf", "gemma3", "--sliding-window", 0, "--final-softcap", 0.5)
        capped = self.model("g3capb.gguf").logits(self.PROMPT)
        self.assertLess(np.abs(capped).max(), 0.5)
        raw = self.model("g3capb.gguf", ignore_softcap=True).logits(self.PROMPT)
        np.testing.assert_allclose(capped, 0.5 * np.tanh(raw / 0.5), rtol=1e-12, atol=1e-12)
        # SWA layers: base 10000 (or rope.freq_base_swa), no linear scaling
        i = np.arange(16)
        for extra, swa_base in (([], 10000.0), (["--rope-base-swa", 500], 500.0)):
            with self.subTest(extra=extra):
                self.make("g3rope.gguf", "gemma3", "--swa-pattern", 2, "--rope-scale", 4, *extra)
                m = self.model("g3rope.gguf")
                self.assertEqual(m.swa_layers, [True, False, True])
                for L, (base, scale) in enumerate([(swa_base, 1.0), (1e6, 0.25), (swa_base, 1.0)]):
                    inv_freq, pos_scale = m.layer_rope[L]
                    np.testing.assert_allclose(inv_freq, base ** (-2.0 * i / 32), rtol=1e-12)
                    self.assertAlmostEqual(pos_scale, scale)
        # gemma2: SWA layers keep the global base and scale unless freq_base_swa
        for extra, swa_base in (([], 1e4), (["--rope-base-swa", 100], 100.0)):
            with self.subTest(extra=extra):
                self.make("g2rope.gguf", "gemma2", "--rope-scale", 4, *extra)
                m = self.model("g2rope.gguf")
                for L, base in enumerate([swa_base, 1e4, swa_base]):
                    inv_freq, pos_scale = m.layer_rope[L]
                    np.testing.assert_allclose(inv_freq, base ** (-2.0 * i / 32), rtol=1e-12)
                    self.assertAlmostEqual(pos_scale, 0.25)
        # a different SWA base changes the logits
        self.make("g2b1.gguf", "gemma2", "--sliding-window", 3)
        self.make("g2b2.gguf", "gemma2", "--sliding-window", 3, "--rope-base-swa", 100)
        self.assertGreater(np.abs(self.model("g2b1.gguf").logits(self.PROMPT) -
                                  self.model("g2b2.gguf").logits(self.PROMPT)).max(), 1e-3)

    def test_27b_attention_scale(self):
        # llama.cpp: 1/sqrt(n_embd / n_head) = 1/sqrt(16) for these layer counts
        for arch, layers, div in (("gemma2", 46, 4.0), ("gemma3", 62, 4.0),
                                  ("gemma2", 45, math.sqrt(32)), ("gemma3", 46, math.sqrt(32)),
                                  ("gemma", 46, math.sqrt(32))):
            with self.subTest(arch=arch, layers=layers):
                self.gen("big.gguf", "--arch", arch, "--layers", layers, "--head-dim", 32)
                self.assertEqual(self.model("big.gguf").kq_div, div)

    def test_cli_negative_flags(self):
        p = self.path("cli_g2.gguf")
        r = subprocess.run([PY, MAKE, p, "--arch", "gemma2", "--sliding-window", "4", "--quiet"]
                           + [str(a) for a in self.SHAPE], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        toks = ",".join(str(t) for t in self.PROMPT)
        outs = {}
        for flag in ("", "--ignore-window", "--ignore-softcap"):
            out = self.path("cli%s.npy" % flag)
            args = [PY, REF, p, "--tokens", toks, "--dump-logits", out, "--greedy", "3"]
            r = subprocess.run(args + ([flag] if flag else []), capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertTrue(r.stdout.startswith("ids: "))
            outs[flag] = np.load(out)
        want = ref.Model(p, cache_types=("f16", "f16")).logits(
            self.PROMPT).astype(np.float32)
        np.testing.assert_array_equal(outs[""], want)
        self.assertTrue(np.array_equal(outs[""][:4], outs["--ignore-window"][:4]))
        moved = np.abs(outs[""] - outs["--ignore-window"]).max(axis=1)
        self.assertTrue(np.all(moved[4:] > 1e-4), moved)
        self.assertGreater(np.abs(outs[""] - outs["--ignore-softcap"]).max(), 1e-4)


class TestTokenizers(TmpDirCase):
    def test_llama_layout(self):
        for vocab in (259, 320, 1000, 8192):
            with self.subTest(vocab=vocab):
                self.gen("tok_l.gguf", "--tokenizer", "llama", "--vocab", vocab)
                md = ref.GGUFReader(self.path("tok_l.gguf")).metadata
                toks = md["tokenizer.ggml.tokens"]
                types = md["tokenizer.ggml.token_type"]
                scores = md["tokenizer.ggml.scores"]
                self.assertEqual(md["tokenizer.ggml.model"], "llama")
                self.assertEqual(len(toks), vocab)
                self.assertEqual(len(types), vocab)
                self.assertEqual(len(scores), vocab)
                self.assertEqual(md["llama.vocab_size"], vocab)
                self.assertEqual(len(set(toks)), vocab)
                self.assertEqual(toks[:3], ["<unk>", "<s>", "</s>"])
                self.assertEqual(types[:3], [2, 3, 3])
                self.assertEqual(toks[3:259], ["<0x%02X>" % i for i in range(256)])
                self.assertEqual(set(types[3:259]), {6})
                self.assertTrue(all(t == 1 for t in types[259:]))
                self.assertEqual((md["tokenizer.ggml.unknown_token_id"],
                                  md["tokenizer.ggml.bos_token_id"],
                                  md["tokenizer.ggml.eos_token_id"]), (0, 1, 2))
                self.assertIs(md["tokenizer.ggml.add_bos_token"], True)
                self.assertNotIn("tokenizer.ggml.merges", md)
                if vocab >= 1000:
                    self.assertIn("\u2581the", toks)
                    self.assertIn("\u2581", toks)
                    # merge pieces first, scores strictly decreasing
                    self.assertTrue(all(scores[i] > scores[i + 1] for i in range(259, vocab - 1)))

    def check_gpt2(self, md, vocab):
        toks = md["tokenizer.ggml.tokens"]
        types = md["tokenizer.ggml.token_type"]
        merges = md["tokenizer.ggml.merges"]
        self.assertEqual(md["tokenizer.ggml.model"], "gpt2")
        self.assertEqual(len(toks), vocab)
        self.assertEqual(len(set(toks)), vocab)
        self.assertEqual(len(types), vocab)
        self.assertNotIn("tokenizer.ggml.scores", md)
        # byte symbols
        self.assertEqual(toks[0], "!")
        self.assertEqual(toks[ord("a") - 33], "a")
        self.assertEqual(toks[220], "\u0120")          # 'Ġ' = byte 0x20
        self.assertEqual(len(set(toks[:256])), 256)
        self.assertEqual(toks[-3:], ["<|endoftext|>", "<|im_start|>", "<|im_end|>"])
        self.assertEqual(types[-3:], [3, 3, 3])
        self.assertTrue(all(t == 1 for t in types[:-3]))
        eot = vocab - 3
        self.assertEqual(md["tokenizer.ggml.bos_token_id"], eot)
        self.assertEqual(md["tokenizer.ggml.eos_token_id"], eot)
        self.assertEqual(len(merges), vocab - 259)
        known = set(toks)
        for i, mg in enumerate(merges):
            a, b = mg.split(" ")
            self.assertIn(a, known)
            self.assertIn(b, known)
            self.assertEqual(toks[256 + i], a + b)
        self.assertEqual(len(set(merges)), len(merges))

    def test_gpt2_layout(self):
        for vocab in (259, 320, 8192):
            with self.subTest(vocab=vocab):
                self.gen("tok_g.gguf", "--arch", "qwen2", "--vocab", vocab)
                md = ref.GGUFReader(self.path("tok_g.gguf")).metadata
                self.check_gpt2(md, vocab)
                self.assertEqual(md["tokenizer.ggml.pre"], "default")
                self.assertIs(md["tokenizer.ggml.add_bos_token"], False)
        self.gen("tok_g2.gguf", "--arch", "llama", "--tokenizer", "gpt2", "--pre", "qwen2")
        md = ref.GGUFReader(self.path("tok_g2.gguf")).metadata
        self.check_gpt2(md, 320)
        self.assertEqual(md["tokenizer.ggml.pre"], "qwen2")
        self.assertIn("\u0120the", md["tokenizer.ggml.tokens"])


class TestTensorTypes(TmpDirCase):
    """--tensor-type: per-tensor storage types, as llama-quantize mixes
    them (first matching glob wins; 1-D tensors stay f32)."""

    def test_mix(self):
        self.gen("mix.gguf", "--arch", "llama", "--type", "q4_k", "--dim", 256,
                 "--ffn", 512, "--layers", 2, "--seed", 3,
                 "--tensor-type", "blk.1.ffn_down.weight=q8_0",
                 "--tensor-type", "*.ffn_down.weight=q6_k",
                 "--tensor-type", "*_norm.weight=q8_0")
        g = ref.GGUFReader(self.path("mix.gguf"))
        ts = g.tensors.values() if isinstance(g.tensors, dict) else g.tensors
        types = {t.name: t.type_name for t in ts}
        self.assertEqual(types["blk.0.ffn_down.weight"], "Q6_K")
        self.assertEqual(types["blk.1.ffn_down.weight"], "Q8_0")
        self.assertEqual(types["blk.0.ffn_up.weight"], "Q4_K")
        self.assertEqual(types["blk.0.ffn_norm.weight"], "F32")
        self.assertEqual(ref.Model(self.path("mix.gguf")).logits([1, 2, 3]).shape[0], 3)

    def test_refused(self):
        for spec in ("nothing", "=q8_0", "*.weight=q9_9", "*.weight=tq2_0"):
            with open(os.devnull, "w") as null:
                saved, sys.stderr = sys.stderr, null
                try:
                    with self.assertRaises(SystemExit, msg=spec):
                        mm.parse_args([self.path("x.gguf"), "--tensor-type", spec])
                finally:
                    sys.stderr = saved


class TestCLI(TmpDirCase):
    def run_ok(self, *args):
        r = subprocess.run([PY] + [str(a) for a in args], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r

    def test_compare_logits(self):
        cmp = os.path.join(HERE, "compare_logits.py")
        want = np.arange(12, dtype=np.float32).reshape(2, 6) + 1
        files = {}
        for name, arr in (("want", want), ("close", want * (1 + 1e-6)),
                          ("far", want * (1 + 1e-3)),
                          ("nan_got", np.where(want == 3, np.nan, want)),
                          ("nan_want", np.where(want == 5, np.nan, want))):
            files[name] = self.path(name + ".npy")
            np.save(files[name], arr.astype(np.float32))

        def run(got, ref):
            return subprocess.run([PY, cmp, files[got], files[ref], "--rtol", "1e-4"],
                                  capture_output=True, text=True)
        self.assertEqual(run("close", "want").returncode, 0)
        self.assertIn("PASS", run("close", "want").stdout)
        self.assertEqual(run("far", "want").returncode, 1)
        # A NaN on either side fails (NaN > tolerance is false).
        r = run("nan_got", "want")
        self.assertEqual((r.returncode, r.stdout.strip()), (1, "FAIL: non-finite logits"))
        r = run("want", "nan_want")
        self.assertEqual((r.returncode, r.stdout.strip()),
                         (1, "FAIL: non-finite expected logits"))

    def test_make_and_greedy_cli(self):
        p = self.path("cli.gguf")
        t0 = time.time()
        r = self.run_ok(MAKE, p, "--arch", "qwen3", "--type", "q8_0", "--seed", 4)
        self.assertIn("wrote", r.stderr)
        self.assertLess(time.time() - t0, 5.0)
        out = self.path("logits.npy")
        args = [REF, p, "--tokens", "1,2,3,100,200", "--dump-logits", out, "--greedy", 12]
        r1 = self.run_ok(*args)
        lg = np.load(out)
        r2 = self.run_ok(*args)
        self.assertEqual(r1.stdout, r2.stdout)
        line = [l for l in r1.stdout.splitlines() if l.startswith("ids: ")]
        self.assertEqual(len(line), 1)
        ids = [int(v) for v in line[0][5:].split(",")]
        self.assertEqual(len(ids), 12)
        self.assertEqual(lg.dtype, np.float32)
        self.assertEqual(lg.shape, (5, 320))
        # The CLI stores the KV cache in f16 unless told (as hesper-run).
        m = ref.Model(p, cache_types=("f16", "f16"))
        full = m.logits([1, 2, 3, 100, 200] + ids)
        np.testing.assert_allclose(lg, full[:5].astype(np.float32), rtol=1e-6, atol=1e-6)
        self.assertEqual(list(full[4:-1].argmax(axis=1)), ids)
        # --info and --dump-tensor
        r = self.run_ok(REF, p, "--info")
        self.assertIn("qwen3.attention.head_count", r.stdout)
        tout = self.path("t.npy")
        self.run_ok(REF, p, "--dump-tensor", "blk.0.attn_q.weight", tout)
        self.assertEqual(np.load(tout).shape, (64, 64))

    def test_writer_deterministic(self):
        blobs = []
        for name, seed in (("d1.gguf", 5), ("d2.gguf", 5), ("d3.gguf", 6)):
            self.gen(name, "--type", "q4_0", "--seed", seed, "--arch", "qwen2")
            with open(self.path(name), "rb") as f:
                blobs.append(f.read())
        self.assertEqual(blobs[0], blobs[1])
        self.assertNotEqual(blobs[0], blobs[2])

    def test_tiny_speed(self):
        for t in ("f32", "q8_0", "q4_0"):
            t0 = time.time()
            self.gen("speed.gguf", "--type", t)
            dt = time.time() - t0
            self.assertLess(dt, 1.0, "%s took %.2fs" % (t, dt))

    def test_demo_preset(self):
        t0 = time.time()
        cfg, info = self.gen("demo.gguf", "--preset", "demo", "--type", "q8_0")
        dt = time.time() - t0
        self.assertLess(dt, 15.0)
        self.assertTrue(28e6 < info["params"] < 31e6, info["params"])
        g = ref.GGUFReader(self.path("demo.gguf"))
        md = g.metadata
        self.assertEqual((md["llama.embedding_length"], md["llama.block_count"],
                          md["llama.attention.head_count"],
                          md["llama.attention.head_count_kv"],
                          md["llama.feed_forward_length"], md["llama.context_length"],
                          len(md["tokenizer.ggml.tokens"])),
                         (512, 8, 8, 4, 1536, 2048, 8192))
        self.assertNotIn("output.weight", g.tensors)
        self.assertEqual(g.tensors["token_embd.weight"].type, 8)
        m = ref.Model(self.path("demo.gguf"))
        _, ids = m.greedy([1, 400, 500, 600], 6)
        self.assertEqual(len(ids), 6)


# ---------------------------------------------------------------------------
# BitNet b1.58: ternary formats (TQ1_0, TQ2_0, I2_S) and the bitnet graph
# ---------------------------------------------------------------------------

def ternary_pattern(n, seed):
    """A fixed ternary vector with every value present."""
    rng = np.random.default_rng(seed)
    return rng.integers(-1, 2, size=n).astype(np.int64)


def hand_tq2_0(t, d):
    """One TQ2_0 block from 256 trits, one element at a time."""
    qs = [0] * 64
    for e, v in enumerate(t):
        half, r = divmod(e, 128)
        slot, m = divmod(r, 32)                 # element 128 h + 32 slot + m
        qs[32 * half + m] |= (v + 1) << (2 * slot)
    return bytes(qs) + f16_bytes(d)


def hand_tq1_0(t, d):
    """One TQ1_0 block from 256 trits: base-3 numbers, first element the most
    significant digit, scaled to a byte by ceil(q * 256 / 243)."""
    def to_byte(digits):
        q = 0
        for c in digits:
            q = 3 * q + c
        return (q * 256 + 242) // 243
    c = [v + 1 for v in t]
    qs = [to_byte([c[m + 32 * n] for n in range(5)]) for m in range(32)]
    qs += [to_byte([c[160 + m + 16 * n] for n in range(5)]) for m in range(16)]
    qh = [to_byte([c[240 + j + 4 * n] for n in range(4)] + [0]) for j in range(4)]
    return bytes(qs + qh) + f16_bytes(d)


def hand_i2_s(t, s):
    """An I2_S tensor from n trits (n % 128 == 0): 32-byte groups of 128,
    element 32 k + m in bits 7-2k..6-2k of byte m; then f32 s, 28 zero bytes."""
    out = []
    for base in range(0, len(t), 128):
        for m in range(32):
            byte = 0
            for k in range(4):
                byte |= (t[base + 32 * k + m] + 1) << (6 - 2 * k)
            out.append(byte)
    return bytes(out) + struct.pack("<f", s) + bytes(28)


def scalar_vec_dot_tq2_0_q8_k(block_bytes, q8, dy):
    """ggml_vec_dot_tq2_0_q8_K, generic C, for whole rows: per block an int
    sum of (code - 1) * q, times float(d_x * d_y), summed in float32."""
    acc = np.float32(0)
    for b in range(len(dy)):
        blk = block_bytes[66 * b:66 * b + 66]
        sumi = 0
        for j in (0, 32):
            for l in range(4):
                for k in range(32):
                    code = (blk[j + k] >> (2 * l)) & 3
                    sumi += int(q8[b][j * 4 + l * 32 + k]) * (code - 1)
        fac = np.float32(f16_value(blk[64:66]) * np.float32(dy[b]))
        acc = np.float32(acc + np.float32(sumi) * fac)
    return acc


class TestTernaryBlocks(unittest.TestCase):
    def check(self, gid, raw, values, quantizer):
        y = ref.dequantize(np.frombuffer(raw, np.uint8), gid, len(values))
        self.assertEqual(y.dtype, np.float32)
        self.assertEqual(y.tolist(), [float(v) for v in values])
        got = quantizer(np.asarray(values, np.float32))
        self.assertEqual(bytes(got), raw)

    def test_tq2_0_block(self):
        # literal bytes first: codes 1 (t = 0) everywhere = 0x55; one +1 at
        # element 197 = 128 + 32*2 + 5 -> byte 32 + 5, bits 4..5 = 2
        t = [0] * 256
        t[197] = 1
        raw = hand_tq2_0(t, 0.5)
        self.assertEqual(raw[37], 0x65)
        self.assertEqual(set(raw[:37] + raw[38:64]), {0x55})
        self.assertEqual(hand_tq2_0([1] * 256, 1.0)[:64], bytes([0xAA] * 64))
        self.assertEqual(hand_tq2_0([-1] * 256, 1.0)[:64], bytes(64))
        self.check(35, raw, [0.5 * v for v in t], mm.quantize_tq2_0)
        for seed, d in ((1, 0.5), (2, 0.0078125), (3, 3.0)):
            t = ternary_pattern(256, seed)
            self.check(35, hand_tq2_0(list(t), d), t * d, mm.quantize_tq2_0)

    def test_tq1_0_block(self):
        # all-zero trits (codes 1): q = 121 -> 128; qh q = 40 * 3 -> 127
        raw = hand_tq1_0([0] * 256, 0.0)         # an all-zero block has d = 0
        self.assertEqual(raw[:48], bytes([0x80] * 48))
        self.assertEqual(raw[48:52], bytes([0x7F] * 4))
        self.assertEqual(hand_tq1_0([1] * 256, 1.0)[:52], bytes([255] * 48 + [253] * 4))
        self.assertEqual(hand_tq1_0([-1] * 256, 1.0)[:52], bytes(52))
        self.check(34, raw, [0.0] * 256, mm.quantize_tq1_0)
        # one -1 per region: elements 0 (qs[0] top digit), 161 (qs[33], digit 0),
        # 255 (qh[3], digit 3)
        t = [0] * 256
        for e in (0, 161, 255):
            t[e] = -1
        raw = hand_tq1_0(t, 2.0)
        self.assertEqual(raw[0], (40 * 256 + 242) // 243)          # q = 121 - 81
        self.assertEqual(raw[33], (40 * 256 + 242) // 243)
        self.assertEqual(raw[51], ((39 * 3) * 256 + 242) // 243)     # q = 40 - 1
        self.check(34, raw, [2.0 * v for v in t], mm.quantize_tq1_0)
        for seed, d in ((4, 0.25), (5, 0.0009765625), (6, 7.5)):
            t = ternary_pattern(256, seed)
            self.check(34, hand_tq1_0(list(t), d), t * d, mm.quantize_tq1_0)

    def test_i2_s_tensor(self):
        t = [0] * 128
        t[0] = 1                                   # byte 0 bits 6..7 = 2
        t[96] = -1                                 # byte 0 bits 0..1 = 0
        raw = hand_i2_s(t, 0.75)
        self.assertEqual(len(raw), 128 // 4 + 32)
        self.assertEqual(raw[0], 0b10010100)
        self.assertEqual(set(raw[1:32]), {0x55})
        self.assertEqual(raw[32:36], struct.pack("<f", 0.75))
        self.assertEqual(raw[36:], bytes(28))
        self.check(36, raw, [0.75 * v for v in t], mm.quantize_i2_s)
        # several rows: one stream of blocks, one scale after all of them
        t = ternary_pattern(3 * 256, 7)
        raw = hand_i2_s(list(t), 0.046875)
        self.assertEqual(len(raw), 3 * 256 // 4 + 32)
        self.check(36, raw, t * 0.046875, mm.quantize_i2_s)

    def test_codes_and_scales(self):
        t = ternary_pattern(512, 8)
        for gid, raw in ((34, mm.quantize_tq1_0(t * 0.5)), (35, mm.quantize_tq2_0(t * 0.5))):
            codes, d = ref.ternary_codes(raw, gid, 512)
            self.assertEqual(codes.shape, (2, 256))
            self.assertEqual(codes.reshape(-1).tolist(), t.tolist())
            self.assertEqual(d.tolist(), [0.5, 0.5])
        codes, s = ref.ternary_codes(mm.quantize_i2_s(t * 0.5), 36, 512)
        self.assertEqual((codes.tolist(), float(s)), (t.tolist(), 0.5))
        # the bit pair 3, never written, reads as +2 (as the dot kernels do)
        raw = bytes([0xFF] * 64) + f16_bytes(1.0)
        self.assertEqual(set(ref.dequantize(np.frombuffer(raw, np.uint8), 35, 256)), {2.0})

    def test_round_trips(self):
        rng = np.random.default_rng(12)
        # per-tensor scale (f16 value): exact in all three
        t = rng.integers(-1, 2, size=(6, 512)).astype(np.float32)
        s = np.float32(np.float16(0.0371))
        for name, gid in (("tq1_0", 34), ("tq2_0", 35), ("i2_s", 36)):
            raw = mm.TERNARY_QUANTIZERS[name](t * s)
            size = t.size // 4 + 32 if name == "i2_s" else t.size // 256 * mm.TYPES[name][2]
            self.assertEqual(raw.size, size)
            self.assertTrue(np.array_equal(ref.dequantize(raw, gid, t.size), (t * s).reshape(-1)))
        # per-block scales: exact in TQ1_0 / TQ2_0
        d = np.float16(rng.uniform(0.01, 2.0, size=12)).astype(np.float32)
        x = t.reshape(12, 256) * d[:, None]
        for name, gid in (("tq1_0", 34), ("tq2_0", 35)):
            y = ref.dequantize(mm.TERNARY_QUANTIZERS[name](x), gid, x.size)
            self.assertTrue(np.array_equal(y, x.reshape(-1)))
        # arbitrary data: ggml's rule, round(x / max|x|) * f16(max|x|) per block
        g = rng.standard_normal((4, 256)).astype(np.float32)
        g[1] = 0.0
        amax = np.abs(g).max(axis=1)
        inv = np.where(amax > 0, np.float32(1) / np.where(amax > 0, amax, 1), 0).astype(np.float32)
        v = (g * inv[:, None]).astype(np.float64)
        want = (np.sign(v) * np.floor(np.abs(v) + 0.5)).astype(np.float32) * \
            amax.astype(np.float16).astype(np.float32)[:, None]
        for name, gid in (("tq1_0", 34), ("tq2_0", 35)):
            y = ref.dequantize(mm.TERNARY_QUANTIZERS[name](g), gid, g.size)
            self.assertTrue(np.array_equal(y, want.reshape(-1)), name)
        # I2_S keeps only signs: |x| < 1e-6 -> 0, else sign(x) * max|x|
        h = g.copy()
        h[0, :5] = [1e-7, -1e-7, 0.0, 2e-6, -2e-6]
        y = ref.dequantize(mm.quantize_i2_s(h), 36, h.size)
        m = np.float32(np.abs(h).max())
        want = np.where(np.abs(h) < 1e-6, 0, np.sign(h)).astype(np.float32) * m
        self.assertTrue(np.array_equal(y, want.reshape(-1)))

    def test_i2_s_in_a_file(self):
        # the reader sizes an I2_S tensor n/4 + 32 and finds what follows it
        t = ternary_pattern(2 * 128, 9).reshape(2, 128)
        after = np.arange(8, dtype=np.float32)
        with tempfile.TemporaryDirectory() as tmp:
            p = os.path.join(tmp, "i2s.gguf")
            mm.write_gguf(p, [("general.architecture", mm.MT_STRING, "bitnet")],
                          [("w", [128, 2], 36, mm.quantize_i2_s(t * 0.5).tobytes()),
                           ("after", [8], 0, after.tobytes())])
            g = ref.GGUFReader(p)
            self.assertEqual(g.tensors["w"].n_bytes, 96)
            self.assertEqual(g.tensors["w"].type_name, "I2_S")
            self.assertEqual(g.tensors["after"].offset, 96)
            self.assertTrue(np.array_equal(g.tensor("w"), t * 0.5))
            self.assertTrue(np.array_equal(g.tensor("after"), after))

    def test_q8_k_activations(self):
        # m = -127 (largest |x|, negative) -> iscale = 1, d = 1, q = rint(x)
        x = np.zeros(256, np.float32)
        x[:8] = [0.5, 1.5, 2.5, -0.5, -1.5, 126.5, -127.0, 3.25]
        q, d = ref.quantize_q8_k(x[None, :])
        self.assertEqual(q[0, 0, :8].tolist(), [0, 2, 2, 0, -2, 126, -127, 3])
        self.assertEqual(d.tolist(), [[1.0]])
        # positive maximum: iscale = -127 / m flips the sign, d negative
        q, d = ref.quantize_q8_k(np.full((1, 256), 2.0, np.float32))
        self.assertEqual(set(q.reshape(-1).tolist()), {-127})
        self.assertAlmostEqual(float(d[0, 0]), -2.0 / 127, places=7)
        q, d = ref.quantize_q8_k(np.zeros((2, 512), np.float32))
        self.assertFalse(q.any() or d.any())

    def test_i8_s_activations(self):
        x = np.array([[1.0, -0.5, 0.25, 1 / 127.0 * 2.5, 0.0]], np.float32)
        q, s = ref.quantize_i8_s(x)
        self.assertEqual(s.tolist(), [127.0])
        self.assertEqual(q.tolist(), [[127, -64, 32, 2, 0]])   # 63.5 -> 64, 31.75, 2.5 -> 2
        q, s = ref.quantize_i8_s(np.zeros((1, 4), np.float32))
        self.assertAlmostEqual(float(s[0]), 127 / 1e-5, delta=1.0)

    def test_quantized_matmul_matches_scalar_kernel(self):
        rng = np.random.default_rng(13)
        t = rng.integers(-1, 2, size=(3, 512)).astype(np.float32)
        raw = mm.quantize_tq2_0(t * np.float32(0.0625))
        x = rng.standard_normal((2, 512)).astype(np.float32)
        codes, d = ref.ternary_codes(raw, 35, t.size)
        y = ref.ternary_matmul_quantized(x, ("tq", codes.reshape(3, 2, 256), d.reshape(3, 2)))
        q, dy = ref.quantize_q8_k(x)
        for n in range(2):
            for o in range(3):
                row = bytes(raw[o * 132:(o + 1) * 132])
                want = scalar_vec_dot_tq2_0_q8_k(row, q[n], dy[n])
                self.assertEqual(np.float32(y[n, o]), want)
        np.testing.assert_allclose(y, x.astype(np.float64) @ (t * 0.0625).T, rtol=0.02, atol=0.05)
        # I2_S: per-token int8, float32(sum) / s_act * s_w
        raw = mm.quantize_i2_s(t * np.float32(0.0625))
        codes, s = ref.ternary_codes(raw, 36, t.size)
        y = ref.ternary_matmul_quantized(x, ("i2s", codes.reshape(3, 512), s))
        q, sx = ref.quantize_i8_s(x)
        for n in range(2):
            for o in range(3):
                sumi = int(np.dot(q[n].astype(np.int64), t[o].astype(np.int64)))
                want = np.float32(np.float32(np.float32(sumi) / sx[n]) * np.float32(0.0625))
                self.assertEqual(np.float32(y[n, o]), want)


def naive_bitnet_logits(path, tokens):
    """Loop oracle for llama.cpp's bitnet graph (independent of reference.Model)."""
    g = ref.GGUFReader(path)
    md = g.metadata
    n_embd = md["bitnet.embedding_length"]
    n_head = md["bitnet.attention.head_count"]
    n_kv = md["bitnet.attention.head_count_kv"]
    hd = n_embd // n_head
    n_rot = md.get("bitnet.rope.dimension_count", hd)
    base = md["bitnet.rope.freq_base"]
    factor = md.get("bitnet.rope.scaling.factor", 1.0) or 1.0
    eps = md["bitnet.attention.layer_norm_rms_epsilon"]
    act_name = md.get("bitnet.hidden_activation", "silu")

    def T(name):
        return g.tensor(name).astype(np.float64) if name in g.tensors else None

    def rms(v, w):
        return v / math.sqrt(sum(float(t) ** 2 for t in v) / len(v) + eps) * w

    def rot(vec, pos):
        out = vec.copy()
        for i in range(n_rot // 2):
            th = (pos / factor) * base ** (-2.0 * i / n_rot)
            a, b = i, i + n_rot // 2
            out[a] = vec[a] * math.cos(th) - vec[b] * math.sin(th)
            out[b] = vec[a] * math.sin(th) + vec[b] * math.cos(th)
        return out

    def act(z):
        if act_name == "relu2":
            return max(z, 0.0) ** 2
        return z / (1.0 + math.exp(-z))

    def proj(prefix, stem, v):
        y = T(prefix + stem + ".weight") @ v
        s = T(prefix + stem + ".scale")
        return y if s is None else y * float(s[0])

    emb = T("token_embd.weight")
    xs = [emb[t] for t in tokens]
    for L in range(md["bitnet.block_count"]):
        p = "blk.%d." % L
        Q, K, V = [], [], []
        for pos, x in enumerate(xs):
            h = rms(x, T(p + "attn_norm.weight"))
            q, k, v = proj(p, "attn_q", h), proj(p, "attn_k", h), proj(p, "attn_v", h)
            Q.append([rot(q[i * hd:(i + 1) * hd], pos) for i in range(n_head)])
            K.append([rot(k[i * hd:(i + 1) * hd], pos) for i in range(n_kv)])
            V.append([v[i * hd:(i + 1) * hd] for i in range(n_kv)])
        new = []
        for pos, x in enumerate(xs):
            heads = []
            for hh in range(n_head):
                kv = hh * n_kv // n_head
                sc = [float(Q[pos][hh] @ K[j][kv]) / math.sqrt(hd) for j in range(pos + 1)]
                m = max(sc)
                e = [math.exp(s - m) for s in sc]
                heads.append(sum((e[j] / sum(e)) * V[j][kv] for j in range(pos + 1)))
            a = proj(p, "attn_output", rms(np.concatenate(heads), T(p + "attn_sub_norm.weight")))
            x = x + a
            h = rms(x, T(p + "ffn_norm.weight"))
            f = np.array([act(z) for z in proj(p, "ffn_gate", h)]) * proj(p, "ffn_up", h)
            f = proj(p, "ffn_down", rms(f, T(p + "ffn_sub_norm.weight")))
            new.append(x + f)
        xs = new
    onorm = T("output_norm.weight")
    return np.stack([emb @ rms(x, onorm) for x in xs])


class TestBitNet(TmpDirCase):
    SHAPE = ["--dim", 256, "--ffn", 512, "--heads", 4, "--kv-heads", 2, "--layers", 2]
    PROMPT = [1, 17, 42, 99, 250, 7, 300, 5, 6]
    FTYPE = {"f32": 0, "f16": 1, "tq1_0": 36, "tq2_0": 37, "i2_s": 40}
    PROJ = ("attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down")

    def make(self, name, *extra):
        return self.gen(name, "--arch", "bitnet", "--seed", 31, *(self.SHAPE + list(extra)))

    def test_metadata_and_tensors(self):
        for t in ("f32", "tq1_0", "tq2_0", "i2_s"):
            with self.subTest(type=t):
                cfg, info = self.make("meta_%s.gguf" % t, "--type", t)
                self.assertEqual(info["fallbacks"], [])
                g = ref.GGUFReader(self.path("meta_%s.gguf" % t))
                md = g.metadata
                self.assertEqual(md["general.architecture"], "bitnet")
                self.assertEqual(md["general.file_type"], self.FTYPE[t])
                self.assertEqual(md["tokenizer.ggml.model"], "llama")
                self.assertEqual(md["bitnet.hidden_activation"], "relu2")
                self.assertEqual(md["bitnet.rope.scaling.type"], "linear")
                self.assertEqual(md["bitnet.rope.scaling.factor"], 1.0)
                self.assertNotIn("output.weight", g.tensors)
                self.assertEqual(sorted(g.tensors), sorted(n for n, _ in mm.make_weights(cfg)))
                gid = {"f32": 0, "tq1_0": 34, "tq2_0": 35, "i2_s": 36}[t]
                self.assertEqual(g.tensors["token_embd.weight"].type, 0 if t == "f32" else 1)
                for L in range(2):
                    b = "blk.%d." % L
                    for proj in self.PROJ:
                        self.assertEqual(g.tensors[b + proj + ".weight"].type, gid)
                        self.assertNotIn(b + proj + ".scale", g.tensors)
                    for norm, n in (("attn_norm", 256), ("attn_sub_norm", 256),
                                    ("ffn_norm", 256), ("ffn_sub_norm", 512)):
                        self.assertEqual(g.tensors[b + norm + ".weight"].dims, [n])
                        self.assertEqual(g.tensors[b + norm + ".weight"].type, 0)
                    self.assertEqual(g.tensors[b + "attn_k.weight"].dims, [256, 128])
                    self.assertEqual(g.tensors[b + "ffn_down.weight"].dims, [512, 256])
                m = ref.Model(self.path("meta_%s.gguf" % t))
                self.assertEqual((m.rope_style, m.hidden_act, m.kq_div), ("neox", "relu2", 8.0))
                self.assertIs(m.w_out, m.tok_embd)

    def test_weights_are_scaled_ternary(self):
        cfg, _ = self.make("w.gguf")
        scales = set()
        counts = np.zeros(3)
        for name, w in mm.make_weights(cfg):
            if mm.is_bitnet_projection(name):
                s = np.abs(w).max()
                self.assertEqual(float(np.float16(s)), float(s))
                self.assertTrue(set(np.unique(w / s).tolist()) <= {-1.0, 0.0, 1.0}, name)
                counts += [(w < 0).sum(), (w == 0).sum(), (w > 0).sum()]
                scales.add(float(s))
        self.assertEqual(len(scales), 14)            # one scale per tensor
        frac = counts / counts.sum()
        self.assertTrue(np.all(np.abs(frac - 1 / 3) < 0.01), frac)

    def test_types_give_the_same_model(self):
        # projections s * T and an f16 token_embd are stored exactly by f16
        # and by every ternary type: identical logits
        base = None
        for t in ("f16", "tq1_0", "tq2_0", "i2_s"):
            self.make("same_%s.gguf" % t, "--type", t)
            lg = ref.Model(self.path("same_%s.gguf" % t)).logits(self.PROMPT)
            if base is None:
                base = lg
            else:
                self.assertTrue(np.array_equal(lg, base), t)
        self.make("same_f32.gguf")
        f32 = ref.Model(self.path("same_f32.gguf")).logits(self.PROMPT)
        np.testing.assert_allclose(f32, base, rtol=0, atol=0.02)

    def test_scale_tensors(self):
        self.make("plain.gguf", "--type", "tq2_0")
        cfg, _ = self.make("scaled.gguf", "--type", "tq2_0", "--scale-tensors")
        g = ref.GGUFReader(self.path("scaled.gguf"))
        plain = ref.GGUFReader(self.path("plain.gguf"))
        for L in range(2):
            for proj in self.PROJ:
                b = "blk.%d.%s" % (L, proj)
                self.assertEqual(g.tensors[b + ".scale"].dims, [1])
                self.assertEqual(g.tensors[b + ".scale"].type, 0)
                w = g.tensor(b + ".weight")
                self.assertTrue(set(np.unique(w).tolist()) <= {-1.0, 0.0, 1.0})
                s = float(g.tensor(b + ".scale")[0])
                self.assertTrue(np.array_equal(w * np.float32(s), plain.tensor(b + ".weight")))
        a = ref.Model(self.path("plain.gguf")).logits(self.PROMPT)
        b = ref.Model(self.path("scaled.gguf")).logits(self.PROMPT)
        np.testing.assert_allclose(b, a, rtol=1e-10, atol=1e-10)
        # ... and the scales matter
        m = ref.Model(self.path("scaled.gguf"))
        for L in m.layers:
            L["scale"].clear()
        self.assertGreater(np.abs(m.logits(self.PROMPT) - a).max(), 0.1)

    def test_against_loop_oracle(self):
        small = ["--dim", 64, "--ffn", 128, "--layers", 2, "--heads", 4, "--kv-heads", 2]
        variants = [[], ["--hidden-act", "silu"], ["--hidden-act", "none"],
                    ["--scale-tensors"], ["--kv-heads", 1, "--rope-dims", 8],
                    ["--type", "i2_s", "--scale-tensors", "--rope-base", 500]]
        toks = [1, 300, 45, 45, 7, 128]
        for i, extra in enumerate(variants):
            with self.subTest(extra=extra):
                name = "oracle_bn_%d.gguf" % i
                self.gen(name, "--arch", "bitnet", "--seed", 40 + i, *(small + extra))
                got = ref.Model(self.path(name)).logits(toks)
                np.testing.assert_allclose(got, naive_bitnet_logits(self.path(name), toks),
                                           rtol=1e-9, atol=1e-9)

    def test_activation_key(self):
        self.make("relu2.gguf")
        self.make("silu.gguf", "--hidden-act", "silu")
        self.make("none.gguf", "--hidden-act", "none")
        self.assertNotIn("bitnet.hidden_activation",
                         ref.GGUFReader(self.path("none.gguf")).metadata)
        lr = ref.Model(self.path("relu2.gguf")).logits(self.PROMPT)
        ls = ref.Model(self.path("silu.gguf")).logits(self.PROMPT)
        ln = ref.Model(self.path("none.gguf")).logits(self.PROMPT)
        self.assertTrue(np.array_equal(ls, ln))          # absent key: silu
        self.assertGreater(np.abs(lr - ls).max(), 0.1)
        self.assertEqual(ref.relu_sqr(np.array([-2.0, 0.0, 3.0])).tolist(), [0.0, 0.0, 9.0])

    def test_sub_norms_matter(self):
        self.make("sub.gguf")
        base = ref.Model(self.path("sub.gguf")).logits(self.PROMPT)
        for key in ("attn_sub_norm", "ffn_sub_norm"):
            m = ref.Model(self.path("sub.gguf"))
            for L in m.layers:
                L[key] = L[key] * 2.0
            self.assertGreater(np.abs(m.logits(self.PROMPT) - base).max(), 1e-3, key)

    def test_incremental_equals_full(self):
        for t, qa in (("tq2_0", False), ("tq1_0", True), ("tq2_0", True), ("i2_s", True)):
            with self.subTest(type=t, quantize_activations=qa):
                self.make("inc_%s.gguf" % t, "--type", t)
                m = ref.Model(self.path("inc_%s.gguf" % t), quantize_activations=qa)
                prompt_logits, ids = m.greedy(self.PROMPT, 5)
                full = m.logits(self.PROMPT + ids)
                np.testing.assert_allclose(prompt_logits, full[:9], rtol=1e-9, atol=1e-9)
                self.assertEqual(list(full[8:-1].argmax(axis=1)), ids)
                m.reset()
                steps = np.concatenate([m.forward([tok]) for tok in self.PROMPT + ids])
                np.testing.assert_allclose(steps, full, rtol=1e-9, atol=1e-9)
                m.reset()
                chunks = np.concatenate([m.forward(self.PROMPT[:4]), m.forward(self.PROMPT[4:])])
                np.testing.assert_allclose(chunks, full[:9], rtol=1e-9, atol=1e-9)

    def test_quantized_activations(self):
        for t in ("tq1_0", "tq2_0", "i2_s"):
            with self.subTest(type=t):
                self.make("qa_%s.gguf" % t, "--type", t)
                exact = ref.Model(self.path("qa_%s.gguf" % t)).logits(self.PROMPT)
                m = ref.Model(self.path("qa_%s.gguf" % t), quantize_activations=True)
                self.assertEqual(len(m.layers[0]["codes"]), 7)
                q = m.logits(self.PROMPT)
                self.assertFalse(np.array_equal(q, exact))
                self.assertGreater(np.corrcoef(q.ravel(), exact.ravel())[0, 1], 0.999)
                self.assertLess(np.abs(q - exact).max(), 0.5)
        # TQ1_0 and TQ2_0 hold the same codes and scales: same numbers
        a = ref.Model(self.path("qa_tq1_0.gguf"), quantize_activations=True).logits(self.PROMPT)
        b = ref.Model(self.path("qa_tq2_0.gguf"), quantize_activations=True).logits(self.PROMPT)
        self.assertTrue(np.array_equal(a, b))
        # nothing to quantize in a float file
        self.make("qa_f16.gguf", "--type", "f16")
        m = ref.Model(self.path("qa_f16.gguf"), quantize_activations=True)
        self.assertEqual(m.layers[0]["codes"], {})
        self.assertTrue(np.array_equal(m.logits(self.PROMPT),
                                       ref.Model(self.path("qa_f16.gguf")).logits(self.PROMPT)))

    def test_fallback_and_refusals(self):
        # dim 64: no projection row is a multiple of 256 -> f32, token_embd f16
        cfg, info = self.gen("fb_bn.gguf", "--arch", "bitnet", "--type", "tq2_0")
        self.assertEqual(len(info["fallbacks"]), 14)
        g = ref.GGUFReader(self.path("fb_bn.gguf"))
        self.assertEqual(g.tensors["blk.0.attn_q.weight"].type, 0)
        self.assertEqual(g.tensors["token_embd.weight"].type, 1)
        # i2_s needs rows % 128: ffn_down (ne0 = 128) packs, the rest fall back
        cfg, info = self.gen("fb_i2.gguf", "--arch", "bitnet", "--type", "i2_s")
        self.assertEqual(len(info["fallbacks"]), 12)
        self.assertEqual(ref.GGUFReader(self.path("fb_i2.gguf")).tensors[
            "blk.1.ffn_down.weight"].type, 36)
        ref.Model(self.path("fb_i2.gguf"), quantize_activations=True).logits([1, 2, 3])
        for bad in (["--arch", "llama", "--type", "tq2_0"],
                    ["--arch", "qwen2", "--type", "i2_s"],
                    ["--arch", "llama", "--hidden-act", "relu2"],
                    ["--arch", "gemma", "--scale-tensors"],
                    ["--arch", "bitnet", "--untied"],
                    ["--arch", "bitnet", "--head-dim", 32]):
            self.refuses(*bad)

    def test_cli(self):
        p = self.path("cli_bn.gguf")
        r = subprocess.run([PY, MAKE, p, "--arch", "bitnet", "--type", "i2_s", "--seed", "3",
                            "--quiet"] + [str(a) for a in self.SHAPE],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        toks = ",".join(str(t) for t in self.PROMPT)
        outs = {}
        for flag in ("", "--quantize-activations"):
            out = self.path("cli_bn%s.npy" % flag)
            r = subprocess.run([PY, REF, p, "--tokens", toks, "--dump-logits", out, "--greedy", "3"]
                               + ([flag] if flag else []), capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertTrue(r.stdout.startswith("ids: "))
            outs[flag] = np.load(out)
        want = ref.Model(p, cache_types=("f16", "f16")).logits(
            self.PROMPT).astype(np.float32)
        np.testing.assert_array_equal(outs[""], want)
        self.assertFalse(np.array_equal(outs[""], outs["--quantize-activations"]))
        r = subprocess.run([PY, REF, p, "--info"], capture_output=True, text=True)
        self.assertIn("I2_S", r.stdout)
        self.assertIn("bitnet.hidden_activation", r.stdout)



def naive_gemma4_logits(path, tokens, owner=None):
    """Loop oracle for llama.cpp's gemma4 graph (dense), independent of
    reference.Gemma4Model; owner overrides the KV-reuse map."""
    g = ref.GGUFReader(path)
    md = g.metadata

    def hp(k, d=None):
        return md.get("gemma4." + k, d)

    def T(name):
        return g.tensor(name).astype(np.float64) if name in g.tensors else None

    def arr(v, n):
        return list(v) if isinstance(v, list) else [v] * n

    def rms(v, w):
        return v / math.sqrt(sum(e * e for e in v) / len(v) + eps) * w

    def gelu(z):
        return 0.5 * z * (1 + math.tanh(math.sqrt(2 / math.pi) * (z + 0.044715 * z ** 3)))

    L, D = hp("block_count"), hp("embedding_length")
    eps = hp("attention.layer_norm_rms_epsilon")
    nh = arr(hp("attention.head_count"), L)
    nkv = arr(hp("attention.head_count_kv"), L)
    swa = hp("attention.sliding_window_pattern")
    W = hp("attention.sliding_window")
    P = hp("embedding_length_per_layer_input")
    nkv_start = L - hp("attention.shared_kv_layers", 0)
    if owner is None:
        owner = [i if i < nkv_start else nkv_start - (2 if swa[i] else 1) for i in range(L)]
    emb = T("token_embd.weight")
    out_w = T("output.weight")
    out_w = emb if out_w is None else out_w
    freqs = T("rope_freqs.weight")
    cache = {}
    n = len(tokens)
    xs = [emb[t] * math.sqrt(D) for t in tokens]
    pl = None
    if P:
        ple, pproj, pnorm = (T("per_layer_token_embd.weight"),
                             T("per_layer_model_proj.weight"), T("per_layer_proj_norm.weight"))
        pl = []
        for t, x in zip(tokens, xs):
            pr = pproj @ x / math.sqrt(D)
            pl.append([(rms(pr[i * P:(i + 1) * P], pnorm) + ple[t][i * P:(i + 1) * P]
                        * math.sqrt(P)) / math.sqrt(2) for i in range(L)])
    for il in range(L):
        b = "blk.%d." % il
        hd = hp("attention.key_length_swa") if swa[il] else hp("attention.key_length")
        nr = hp("rope.dimension_count_swa") if swa[il] else hp("rope.dimension_count")
        base = hp("rope.freq_base_swa") if swa[il] else hp("rope.freq_base")

        def rope(v, p):
            v = v.copy()
            for i in range(nr // 2):
                th = p * base ** (-2.0 * i / nr)
                if not swa[il]:
                    th /= freqs[i]
                c, s_ = math.cos(th), math.sin(th)
                a0, a1 = v[i], v[i + nr // 2]
                v[i], v[i + nr // 2] = a0 * c - a1 * s_, a0 * s_ + a1 * c
            return v
        hs = [rms(x, T(b + "attn_norm.weight")) for x in xs]
        if owner[il] == il:
            wk, wv, kn = T(b + "attn_k.weight"), T(b + "attn_v.weight"), T(b + "attn_k_norm.weight")
            ks, vs = [], []
            for p, h in enumerate(hs):
                kr = wk @ h
                vr = kr if wv is None else wv @ h
                ks.append([rope(rms(kr[j * hd:(j + 1) * hd], kn), p) for j in range(nkv[il])])
                vs.append([rms(vr[j * hd:(j + 1) * hd], 1.0) for j in range(nkv[il])])
            cache[il] = (ks, vs)
        ks, vs = cache[owner[il]]
        grp = nh[il] // len(ks[0])
        wq, qn = T(b + "attn_q.weight"), T(b + "attn_q_norm.weight")
        new = []
        for p, (x, h) in enumerate(zip(xs, hs)):
            qr = wq @ h
            att = []
            for hh in range(nh[il]):
                q = rope(rms(qr[hh * hd:(hh + 1) * hd], qn), p)
                ts = [t for t in range(p + 1) if not (swa[il] and p - t >= W)]
                sc = np.array([q @ ks[t][hh // grp] for t in ts])
                e = np.exp(sc - sc.max())
                e /= e.sum()
                att.append(sum(w * vs[t][hh // grp] for w, t in zip(e, ts)))
            a = T(b + "attn_output.weight") @ np.concatenate(att)
            x = x + rms(a, T(b + "post_attention_norm.weight"))
            h2 = rms(x, T(b + "ffn_norm.weight"))
            gt = np.array([gelu(z) for z in T(b + "ffn_gate.weight") @ h2])
            f = T(b + "ffn_down.weight") @ (gt * (T(b + "ffn_up.weight") @ h2))
            x = x + rms(f, T(b + "post_ffw_norm.weight"))
            if P:
                gg = np.array([gelu(z) for z in T(b + "inp_gate.weight") @ x]) * pl[p][il]
                x = x + rms(T(b + "proj.weight") @ gg, T(b + "post_norm.weight"))
            sc_t = T(b + "layer_output_scale.weight")
            if sc_t is not None:
                x = x * sc_t[0]
            new.append(x)
        xs = new
    cap = hp("final_logit_softcapping")
    out = []
    for x in xs:
        lg = out_w @ rms(x, T("output_norm.weight"))
        out.append(cap * np.tanh(lg / cap) if cap else lg)
    return np.array(out)


class TestGemma4(TmpDirCase):
    """gemma4 (dense): writer metadata and names, the reference against a loop
    oracle, incremental decoding, shared-KV layers, window, V = K."""

    SHAPE = ["--dim", 64, "--layers", 6, "--heads", 4, "--kv-heads", 2,
             "--head-dim", 16, "--head-dim-swa", 8, "--rope-dims-swa", 4,
             "--swa-pattern", 3, "--vocab", 320, "--per-layer-dim", 8]
    PROMPT = [1, 17, 42, 99, 250, 7, 300, 5, 6]

    def make(self, name, *extra):
        return self.gen(name, "--arch", "gemma4", "--seed", 5, *(self.SHAPE + list(extra)))

    def variant(self, cfg, name, edit):
        """cfg's weights edited by edit(list) -> list, written as f32."""
        w = edit(mm.make_weights(cfg))
        tensors = [(n, list(a.shape[::-1]), mm.TYPES["f32"][0], mm.encode_tensor(a, "f32"))
                   for n, a in w]
        mm.write_gguf(self.path(name), mm.build_metadata(cfg, mm.build_spm_vocab(cfg.vocab)),
                      tensors)
        return self.path(name)

    def test_metadata_and_tensors(self):
        cfg, _ = self.make("g4_meta.gguf", "--shared-kv-layers", 3,
                           "--kv-heads-per-layer", "2,1,2,1,1,2", "--layer-output-scale",
                           "--ffn-per-layer", "64,64,64,64,128,128")
        g = ref.GGUFReader(self.path("g4_meta.gguf"))
        md, ty = g.metadata, g.metadata_types
        P = "gemma4."
        self.assertEqual(md["general.architecture"], "gemma4")
        self.assertEqual(md[P + "attention.sliding_window_pattern"],
                         [True, True, False, True, True, False])
        self.assertEqual(ty[P + "attention.sliding_window_pattern"], 9)
        for key, val in (("attention.shared_kv_layers", 3),
                         ("embedding_length_per_layer_input", 8),
                         ("attention.key_length", 16), ("attention.value_length", 16),
                         ("attention.key_length_swa", 8), ("attention.value_length_swa", 8),
                         ("rope.dimension_count", 16), ("rope.dimension_count_swa", 4),
                         ("attention.sliding_window", 512)):
            self.assertEqual(md[P + key], val, key)
            self.assertEqual(ty[P + key], 4, key)
        self.assertEqual(md[P + "attention.head_count_kv"], [2, 1, 2, 1, 1, 2])
        self.assertEqual(md[P + "feed_forward_length"], [64, 64, 64, 64, 128, 128])
        self.assertEqual(md[P + "rope.freq_base"], 1e6)
        self.assertEqual(md[P + "rope.freq_base_swa"], 1e4)
        self.assertEqual(md[P + "final_logit_softcapping"], 30.0)
        self.assertEqual(sorted(g.tensors), sorted(n for n, _ in mm.make_weights(cfg)))
        for name, dims in (("per_layer_token_embd.weight", [48, 320]),
                           ("per_layer_model_proj.weight", [64, 48]),
                           ("per_layer_proj_norm.weight", [8]),
                           ("rope_freqs.weight", [8]),
                           ("blk.0.attn_q.weight", [64, 32]), ("blk.2.attn_q.weight", [64, 64]),
                           ("blk.1.attn_k.weight", [64, 8]), ("blk.2.attn_k_norm.weight", [16]),
                           ("blk.0.inp_gate.weight", [64, 8]), ("blk.0.proj.weight", [8, 64]),
                           ("blk.5.post_norm.weight", [64]),
                           ("blk.4.ffn_down.weight", [128, 64]),
                           ("blk.3.layer_output_scale.weight", [1])):
            self.assertEqual(g.tensors[name].dims, dims, name)
        for il in (3, 4, 5):            # shared-KV layers: no K/V tensors
            for stem in ("attn_k", "attn_v", "attn_k_norm"):
                self.assertNotIn("blk.%d.%s.weight" % (il, stem), g.tensors)
        self.assertNotIn("output.weight", g.tensors)
        self.assertGreater(g.tensor("rope_freqs.weight").max(), 1.0)
        m = ref.Model(self.path("g4_meta.gguf"))
        self.assertIsInstance(m, ref.Gemma4Model)
        self.assertEqual(m.owner, [0, 1, 2, 1, 1, 2])

    def test_against_loop_oracle_and_incremental(self):
        for name, extra in (("g4_a.gguf", []),
                            ("g4_b.gguf", ["--shared-kv-layers", 3, "--no-attn-v",
                                           "--layer-output-scale", "--sliding-window", 3,
                                           "--kv-heads-per-layer", "2,1,2,1,1,2", "--untied"])):
            with self.subTest(name=name):
                self.make(name, *extra)
                m = ref.Model(self.path(name))
                full = m.logits(self.PROMPT)
                np.testing.assert_allclose(full, naive_gemma4_logits(self.path(name), self.PROMPT),
                                           rtol=1e-9, atol=1e-9)
                m.reset()
                inc = np.concatenate([m.forward(self.PROMPT[:4])] +
                                     [m.forward([t]) for t in self.PROMPT[4:]])
                np.testing.assert_allclose(inc, full, rtol=1e-10, atol=1e-10)

    def test_shared_layers_read_owner_cache(self):
        cfg, _ = self.make("g4_sh.gguf", "--shared-kv-layers", 3)
        base = ref.Model(self.path("g4_sh.gguf")).logits(self.PROMPT)
        # junk attn_k / attn_v / attn_k_norm on a shared layer are never read
        rng = np.random.default_rng(0)
        junk = [("blk.4.attn_k.weight", rng.standard_normal((16, 64)).astype(np.float32)),
                ("blk.4.attn_v.weight", rng.standard_normal((16, 64)).astype(np.float32)),
                ("blk.4.attn_k_norm.weight", np.ones(8, np.float32))]
        p = self.variant(cfg, "g4_junk.gguf", lambda w: w + junk)
        np.testing.assert_array_equal(ref.Model(p).logits(self.PROMPT), base)
        # the shared layers attend over their owner's cache: the oracle agrees
        # only with the llama.cpp map, not with another one of the same kinds
        right = naive_gemma4_logits(self.path("g4_sh.gguf"), self.PROMPT)
        np.testing.assert_allclose(base, right, rtol=1e-9, atol=1e-9)
        wrong = naive_gemma4_logits(self.path("g4_sh.gguf"), self.PROMPT,
                                    owner=[0, 1, 2, 0, 0, 2])
        self.assertGreater(np.abs(wrong - base).max(), 1e-3)
        # changing the owner's attn_k changes what shared layer 4 sees: with
        # everything up to the owner unchanged, only the cache differs
        m = ref.Model(self.path("g4_sh.gguf"))
        m.logits(self.PROMPT)
        self.assertEqual(sorted(m.cache_k), [0, 1, 2])
        self.assertEqual(m.cache_k[1].shape, (len(self.PROMPT), 2, 8))
        m2 = ref.Model(self.path("g4_sh.gguf"))
        m2.logits(self.PROMPT)
        m2.cache_k[1] = m2.cache_k[1] * 1.5          # only layers 1, 3, 4 read it
        a, b = m.forward([9]), m2.forward([9])
        self.assertGreater(np.abs(a - b).max(), 1e-6)

    def test_window(self):
        self.make("g4_w.gguf", "--sliding-window", 3)
        real = ref.Model(self.path("g4_w.gguf")).logits(self.PROMPT)
        wide = ref.Model(self.path("g4_w.gguf"), ignore_window=True).logits(self.PROMPT)
        np.testing.assert_allclose(real[:3], wide[:3], rtol=1e-12, atol=1e-12)
        self.assertGreater(np.abs(real[3:] - wide[3:]).max(), 1e-4)

    def test_v_is_k_without_attn_v(self):
        cfg, _ = self.make("g4_nov.gguf", "--no-attn-v")
        g = ref.GGUFReader(self.path("g4_nov.gguf"))
        self.assertFalse(any(n.endswith("attn_v.weight") for n in g.tensors))
        no_v = ref.Model(self.path("g4_nov.gguf")).logits(self.PROMPT)

        def add_v(w):
            out = []
            for n, a in w:
                out.append((n, a))
                if n.endswith("attn_k.weight"):
                    out.append((n.replace("attn_k", "attn_v"), a.copy()))
            return out
        p = self.variant(cfg, "g4_vk.gguf", add_v)
        np.testing.assert_allclose(ref.Model(p).logits(self.PROMPT), no_v, rtol=1e-12, atol=1e-12)

    def test_refusals(self):
        cfg, _ = self.make("g4_r.gguf")
        p = self.variant(cfg, "g4_moe.gguf",
                         lambda w: w + [("blk.0.ffn_gate_inp.weight", np.ones((4, 64), np.float32))])
        with self.assertRaises(ref.GGUFError):
            ref.Model(p)
        for bad in (["--shared-kv-layers", 2],            # SWA layer 4 -> full layer 2
                    ["--kv-heads-per-layer", "2,3,2,2,2,2"],
                    ["--rope-scale", 2], ["--swa-pattern", 0]):
            with open(os.devnull, "w") as null:
                saved, sys.stderr = sys.stderr, null
                try:
                    with self.assertRaises(SystemExit, msg=str(bad)):
                        mm.parse_args([self.path("x.gguf"), "--arch", "gemma4"] +
                                      [str(a) for a in self.SHAPE + bad])
                finally:
                    sys.stderr = saved
        for flag in (["--per-layer-dim", 4], ["--no-attn-v"], ["--shared-kv-layers", 1]):
            with open(os.devnull, "w") as null:
                saved, sys.stderr = sys.stderr, null
                try:
                    with self.assertRaises(SystemExit):
                        mm.parse_args([self.path("x.gguf"), "--arch", "gemma3"] + [str(a) for a in flag])
                finally:
                    sys.stderr = saved



if __name__ == "__main__":
    unittest.main()
