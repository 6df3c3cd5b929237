#!/usr/bin/env python3
"""Write small synthetic GGUF v3 models with seeded random weights.

The files follow llama.cpp's naming of metadata keys and tensors, so any
GGUF loader that understands the llama / qwen2 / qwen3 / qwen3moe / gemma /
gemma2 / gemma3 / gemma4 / bitnet / phi3 architectures can load them.  Nothing but the single .gguf
file is written.

Examples
    make_model.py tiny.gguf                                   # llama, f32
    make_model.py q.gguf --arch qwen2 --type q8_0 --seed 7
    make_model.py k.gguf --type q4_k --dim 256 --ffn 512      # K-quants need
                                                              # rows % 256 == 0
    make_model.py demo.gguf --preset demo --type q8_0         # ~29M params
    make_model.py g2.gguf --arch gemma2 --sliding-window 8 --attn-softcap 20
    make_model.py b.gguf --arch bitnet --type tq2_0 --dim 256 --ffn 512

Quantized types apply to every 2-D tensor (token_embd and output.weight
included; ternary types: see BitNet below).  A tensor whose row length (ne0) is not a multiple of the
type's block size is stored as f32 instead, and a note is printed.
1-D tensors (norm weights, biases) are always f32.

Weights (seeded, numpy default_rng): matrices N(0,1)/sqrt(fan_in); norm
weights 1 + 0.1 N(0,1); qwen2 q/k/v biases 0.2 N(0,1); token_embd N(0,1)
times --embd-std (default 1 with an untied head, 1/sqrt(dim) with --tied,
because a large tied embedding makes the model just echo its input token).

Gemma family (--arch gemma, gemma2, gemma3).  The head is always the token
embedding (llama.cpp reads token_embd as Gemma's output matrix), so no
output.weight is written, --untied is refused and --embd-std defaults to
1/sqrt(dim); the default tokenizer is llama (SentencePiece).  Norm weights
are stored the way llama.cpp's converter writes them, with Gemma's "+1"
already added (the same 1 + 0.1 N(0,1) as every other norm here).
Tensors per layer, beyond the llama set (attn_norm, attn_q/k/v/output,
ffn_norm, ffn_gate/up/down):
    gemma2, gemma3: blk.N.post_attention_norm.weight [dim]
                    blk.N.post_ffw_norm.weight       [dim]
    gemma3:         blk.N.attn_q_norm.weight, blk.N.attn_k_norm.weight
                    [head_dim]
Gemma metadata (written only for the archs named):
    {arch}.attention.sliding_window   u32  gemma2, gemma3: --sliding-window
                                           (default 4096 / 512)
    {arch}.attention.sliding_window_pattern u32  gemma2, gemma3, only with
                                           --swa-pattern
    gemma2.attn_logit_softcapping     f32  --attn-softcap (default 50)
    {arch}.final_logit_softcapping    f32  gemma2: --final-softcap (default
                                           30); gemma3: only when given
    {arch}.rope.freq_base_swa         f32  gemma2, gemma3, only with
                                           --rope-base-swa
gemma3's --rope-base defaults to 1e6 (every other arch: 1e4).  These
options are refused for archs they do not apply to.

gemma4 (dense E2B/E4B style, or with --experts E the MoE variant:
_gemma4_experts lists its tensors; --moe-layers picks the layers,
--merged-gate-up writes ffn_gate_up_exps; docs/Gemma4-notes.md).  Keys
beyond the
common ones: attention.key_length/value_length (full layers, --head-dim),
*_swa (--head-dim-swa), rope.dimension_count_swa (--rope-dims-swa),
rope.freq_base (1e6) / rope.freq_base_swa (1e4), attention.sliding_window
(512), attention.sliding_window_pattern as a bool array (layer i slides iff
i % P < P - 1, --swa-pattern P, default 2), attention.shared_kv_layers
(--shared-kv-layers, 0), embedding_length_per_layer_input (--per-layer-dim,
16), final_logit_softcapping (30); head_count_kv / feed_forward_length
become per-layer arrays with --kv-heads-per-layer / --ffn-per-layer.
Tensors: per_layer_token_embd [P*L, vocab], per_layer_model_proj [dim, P*L],
per_layer_proj_norm [P], rope_freqs [head_dim/2] (when a full layer exists:
1, then 2/4/8 factors, 1e30 on the last rotated pair); per layer the gemma3
set (q/k norms, post-attention/post-FFN norms) plus blk.N.inp_gate
[dim, P], blk.N.proj [P, dim], blk.N.post_norm [dim], and with
--layer-output-scale blk.N.layer_output_scale [1].  Shared-KV layers (the
last N) have no attn_k / attn_v / attn_k_norm; --no-attn-v drops attn_v
everywhere (V = K).  The head is token_embd unless --untied.

BitNet b1.58 (--arch bitnet; docs/BitNet-formats.md).  llama.cpp's bitnet
graph: the llama tensors plus blk.N.attn_sub_norm.weight [heads*head_dim]
(RMSNorm before attn_output) and blk.N.ffn_sub_norm.weight [ffn] (before
ffn_down); head always token_embd (no output.weight, --untied refused,
--embd-std 1/sqrt(dim)); head_dim must be dim/heads; tokenizer llama.  The
seven projections attn_q/k/v/output and ffn_gate/up/down are W = s * T,
T uniform over {-1, 0, +1}, one scale s per tensor (an f16 value, near
sqrt(1.5 / n_in)), so that every ternary type stores them exactly.
    --type tq1_0 | tq2_0 | i2_s   ternary projections (ne0 must be a multiple
        of 256 / 256 / 128, else f32 with a note); token_embd is f16, norms
        f32 (as llama.cpp's converters write BitNet files).  Other --type
        values apply to every matrix as for the other archs.  The ternary
        types are refused for every other arch.
    --hidden-act relu2 | silu | none   bitnet.hidden_activation (default
        relu2; none writes no key, which llama.cpp reads as silu)
    --scale-tensors   projections stored as bare T, plus blk.N.<proj>.scale
        = [s] (f32, shape [1]) that llama.cpp multiplies after the matmul
rope.scaling.type linear / rope.scaling.factor 1.0 are written unless
--rope-scale is given, as llama.cpp's converter does for BitNet.

phi3 (--arch phi3): the llama weights (same seed, same values) written as
llama.cpp's Phi-3 converter writes them: blk.N.attn_qkv.weight holds the
Q, K and V rows (--separate-qkv: attn_q/k/v instead), blk.N.ffn_up.weight
the gate rows then the up rows (no ffn_gate); heads * head_dim must be
dim.  --long-rope ORIG (< --ctx) adds rope_factors_long.weight (1 to 16
over the pairs) and rope_factors_short.weight (1 to 1.25),
rope.scaling.original_context_length ORIG and rope.scaling.attn_factor
sqrt(1 + ln(ctx / ORIG) / ln(ORIG)), as the converter derives it.
--sliding-window writes phi3.attention.sliding_window (which llama.cpp's
loader ignores).

Mixture of experts (--arch qwen3moe, or --arch llama --experts E; gemma4
below): the dense FFN becomes blk.N.ffn_gate_inp.weight [dim, E] (router, N(0,1) *
2/sqrt(dim)), ffn_gate_exps / ffn_up_exps [dim, F, E] and ffn_down_exps
[F, dim, E], drawn after the other weights; keys expert_count (qwen3moe
default 8), expert_used_count (--experts-used, default 2), for qwen3moe
expert_feed_forward_length F (--expert-ffn, default --ffn / used; llama's
experts are --ffn wide), expert_weights_scale (--expert-weights-scale,
only when given).  For tests: --router-tie L gives every expert of layer
L the same router row (all probabilities tie), --router-near-tie L the
same but the last expert's row times 1.001, --poison-expert L:E fills
that expert's matrices with NaN.  qwen3moe has qwen3's Q/K norms.

Tokenizers (vocab size always equals --vocab):
  llama (SentencePiece): 0 <unk> (type 2), 1 <s>, 2 </s> (type 3),
      3..258 <0x00>..<0xFF> (type 6), then BPE pieces learned on the
      embedded corpus with U+2581 as the space marker (score = -rank),
      topped up with concatenations of pieces if the corpus runs out, then
      the corpus' single characters (lowest scores).  add_bos_token = true.
  gpt2 (byte-level BPE): 0..255 GPT-2's byte symbols in bytes_to_unicode
      order, then one token per merge ("a b" in tokenizer.ggml.merges, same
      order), then <|endoftext|> (bos = eos = pad), <|im_start|>,
      <|im_end|> as the last three ids (type 3).  add_bos_token = false.

make_weights(cfg) regenerates the float32 weights of a file (same seed),
and QUANTIZERS / write_gguf are importable for tests.

Only the Python standard library and NumPy are used.
"""

import argparse
import fnmatch
import heapq
import struct
import sys
import time

import numpy as np

# --------------------------------------------------------------------------
# GGUF constants
# --------------------------------------------------------------------------

GGUF_MAGIC = b"GGUF"
GGUF_DEFAULT_ALIGNMENT = 32

# metadata value types
MT_UINT8, MT_INT8, MT_UINT16, MT_INT16 = 0, 1, 2, 3
MT_UINT32, MT_INT32, MT_FLOAT32, MT_BOOL = 4, 5, 6, 7
MT_STRING, MT_ARRAY, MT_UINT64, MT_INT64, MT_FLOAT64 = 8, 9, 10, 11, 12

_SCALAR_FMT = {
    MT_UINT8: "<B", MT_INT8: "<b", MT_UINT16: "<H", MT_INT16: "<h",
    MT_UINT32: "<I", MT_INT32: "<i", MT_FLOAT32: "<f", MT_BOOL: "<?",
    MT_UINT64: "<Q", MT_INT64: "<q", MT_FLOAT64: "<d",
}
_SCALAR_NP = {
    MT_UINT8: "<u1", MT_INT8: "<i1", MT_UINT16: "<u2", MT_INT16: "<i2",
    MT_UINT32: "<u4", MT_INT32: "<i4", MT_FLOAT32: "<f4", MT_BOOL: "<u1",
    MT_UINT64: "<u8", MT_INT64: "<i8", MT_FLOAT64: "<f8",
}

# ggml tensor types used here
GGML_F32, GGML_F16, GGML_Q4_0, GGML_Q8_0 = 0, 1, 2, 8
GGML_Q4_K, GGML_Q5_K, GGML_Q6_K, GGML_BF16 = 12, 13, 14, 30
GGML_IQ4_NL, GGML_IQ4_XS = 20, 23
GGML_Q4_1, GGML_Q5_0, GGML_Q5_1 = 3, 6, 7
GGML_Q2_K, GGML_Q3_K = 10, 11
GGML_TQ1_0, GGML_TQ2_0 = 34, 35     # ggml's ternary types
GGML_I2_S = 36                      # microsoft/BitNet's fork of ggml only

# name -> (ggml type id, elements per block, bytes per block, llama ftype)
TYPES = {
    "f32":  (GGML_F32, 1, 4, 0),
    "f16":  (GGML_F16, 1, 2, 1),
    "bf16": (GGML_BF16, 1, 2, 32),      # LLAMA_FTYPE_MOSTLY_BF16
    "q4_0": (GGML_Q4_0, 32, 18, 2),
    "q4_1": (GGML_Q4_1, 32, 20, 3),      # LLAMA_FTYPE_MOSTLY_Q4_1
    "q5_0": (GGML_Q5_0, 32, 22, 8),      # LLAMA_FTYPE_MOSTLY_Q5_0
    "q5_1": (GGML_Q5_1, 32, 24, 9),      # LLAMA_FTYPE_MOSTLY_Q5_1
    "iq4_nl": (GGML_IQ4_NL, 32, 18, 25),  # LLAMA_FTYPE_MOSTLY_IQ4_NL
    "iq4_xs": (GGML_IQ4_XS, 256, 136, 30),  # LLAMA_FTYPE_MOSTLY_IQ4_XS
    "q8_0": (GGML_Q8_0, 32, 34, 7),
    "q2_k": (GGML_Q2_K, 256, 84, 10),    # LLAMA_FTYPE_MOSTLY_Q2_K
    "q3_k": (GGML_Q3_K, 256, 110, 12),   # LLAMA_FTYPE_MOSTLY_Q3_K_M
    "q4_k": (GGML_Q4_K, 256, 144, 15),   # LLAMA_FTYPE_MOSTLY_Q4_K_M
    "q5_k": (GGML_Q5_K, 256, 176, 17),   # LLAMA_FTYPE_MOSTLY_Q5_K_M
    "q6_k": (GGML_Q6_K, 256, 210, 18),
    # ternary (BitNet b1.58); see docs/BitNet-formats.md
    "tq1_0": (GGML_TQ1_0, 256, 54, 36),  # LLAMA_FTYPE_MOSTLY_TQ1_0
    "tq2_0": (GGML_TQ2_0, 256, 66, 37),  # LLAMA_FTYPE_MOSTLY_TQ2_0
    "i2_s": (GGML_I2_S, 128, 32, 40),    # + 32 bytes per tensor (its f32 scale)
}
# types that store only t * d with t in {-1, 0, +1}; --arch bitnet only
TERNARY_TYPES = ("tq1_0", "tq2_0", "i2_s")


# --------------------------------------------------------------------------
# Low-level GGUF writer
# --------------------------------------------------------------------------

def _gguf_str(s):
    raw = s.encode("utf-8") if isinstance(s, str) else bytes(s)
    return struct.pack("<Q", len(raw)) + raw


def _pack_value(vtype, value):
    if vtype == MT_STRING:
        return _gguf_str(value)
    if vtype == MT_ARRAY:
        etype, items = value
        head = struct.pack("<IQ", etype, len(items))
        if etype == MT_STRING:
            return head + b"".join(_gguf_str(s) for s in items)
        if etype == MT_ARRAY:
            return head + b"".join(_pack_value(MT_ARRAY, it) for it in items)
        if etype == MT_BOOL:
            return head + np.asarray([1 if v else 0 for v in items], "<u1").tobytes()
        return head + np.asarray(items, dtype=_SCALAR_NP[etype]).tobytes()
    return struct.pack(_SCALAR_FMT[vtype], value)


def write_gguf(path, kvs, tensors, version=3, alignment=None):
    """Write a GGUF file.

    kvs:     list of (key, value_type, value); for MT_ARRAY the value is
             (element_type, list_of_items).
    tensors: list of (name, ggml_dims, ggml_type, raw_bytes) where
             ggml_dims = [ne0, ne1, ...] (ne0 is the contiguous row length).
    alignment: data alignment; defaults to the value of general.alignment
             in kvs, or 32.
    """
    if alignment is None:
        alignment = GGUF_DEFAULT_ALIGNMENT
        for key, vt, val in kvs:
            if key == "general.alignment":
                alignment = int(val)
    parts = [GGUF_MAGIC, struct.pack("<IQQ", version, len(tensors), len(kvs))]
    for key, vt, val in kvs:
        parts.append(_gguf_str(key) + struct.pack("<I", vt) + _pack_value(vt, val))
    offset = 0
    offsets = []
    for name, dims, ttype, raw in tensors:
        offset = (offset + alignment - 1) // alignment * alignment
        offsets.append(offset)
        parts.append(_gguf_str(name) + struct.pack("<I", len(dims)) +
                     struct.pack("<%dQ" % len(dims), *dims) +
                     struct.pack("<IQ", ttype, offset))
        offset += len(raw)
    header_len = sum(len(p) for p in parts)
    pad = (-header_len) % alignment
    with open(path, "wb") as f:
        for p in parts:
            f.write(p)
        f.write(b"\0" * pad)
        pos = 0
        for (name, dims, ttype, raw), off in zip(tensors, offsets):
            if off > pos:
                f.write(b"\0" * (off - pos))
                pos = off
            f.write(raw)
            pos += len(raw)


# --------------------------------------------------------------------------
# Quantizers (input: float array whose size is a multiple of the block size,
# blocks taken in C order; output: uint8 array of packed ggml blocks)
# --------------------------------------------------------------------------

def _f16(a):
    return np.clip(a, -65504.0, 65504.0).astype(np.float16)


def _safe_inv(a):
    out = np.zeros_like(a, dtype=np.float32)
    np.divide(1.0, a, out=out, where=(a != 0))
    return out


def _f16_bytes(h):
    return h.astype("<f2").view(np.uint8).reshape(h.shape[0], 2)


def quantize_q8_0(x):
    """Q8_0: per 32 values, f16 scale d then 32 int8; value = q * d."""
    blk = np.asarray(x, np.float32).reshape(-1, 32)
    d = _f16(np.abs(blk).max(axis=1) / 127.0)
    inv = _safe_inv(d.astype(np.float32))
    q = np.clip(np.rint(blk * inv[:, None]), -127, 127).astype(np.int8)
    out = np.empty((blk.shape[0], 34), np.uint8)
    out[:, 0:2] = _f16_bytes(d)
    out[:, 2:] = q.view(np.uint8)
    return out.reshape(-1)


def quantize_q4_0(x):
    """Q4_0: per 32 values, f16 d then 16 bytes; byte j holds element j in
    the low nibble and element j+16 in the high nibble; value = (q-8)*d."""
    blk = np.asarray(x, np.float32).reshape(-1, 32)
    nb = blk.shape[0]
    pick = np.abs(blk).argmax(axis=1)
    extreme = blk[np.arange(nb), pick]          # signed value of largest |x|
    d = _f16(extreme / -8.0)
    inv = _safe_inv(d.astype(np.float32))
    q = np.clip(np.floor(blk * inv[:, None] + 8.5), 0, 15).astype(np.uint8)
    out = np.empty((nb, 18), np.uint8)
    out[:, 0:2] = _f16_bytes(d)
    out[:, 2:] = q[:, :16] | (q[:, 16:] << 4)
    return out.reshape(-1)


def _low_nibbles_and_fifth_bits(q):
    """q: [blocks, 32] codes 0..31 -> (16 nibble bytes per block: element j
    low, j + 16 high; the u32 whose bit j is element j's fifth bit, as 4
    little-endian bytes)."""
    qs = (q[:, :16] & 0x0F) | ((q[:, 16:] & 0x0F) << 4)
    bits = ((q.astype(np.uint32) >> 4) & 1) << np.arange(32, dtype=np.uint32)
    qh = bits.sum(axis=1, dtype=np.uint32).astype("<u4")
    return qs.astype(np.uint8), qh.view(np.uint8).reshape(-1, 4)


def _affine_blocks(x, levels):
    """Per block of 32: the minimum m and step d = (max - m) / levels (both
    as f16), and codes round((x - m) / d) in 0..levels, as ggml's Q4_1 and
    Q5_1 reference quantizers pick them (truncating x / d + 0.5)."""
    blk = np.asarray(x, np.float32).reshape(-1, 32)
    lo, hi = blk.min(axis=1), blk.max(axis=1)
    d = (hi - lo) / levels
    inv = _safe_inv(d)
    q = np.clip(((blk - lo[:, None]) * inv[:, None] + 0.5).astype(np.int32),
                0, levels).astype(np.uint8)
    return _f16(d), _f16(lo), q


def quantize_q4_1(x):
    """Q4_1: per 32 values, f16 d, f16 m, then Q4_0's nibble bytes; value =
    q * d + m."""
    d, m, q = _affine_blocks(x, 15)
    out = np.empty((q.shape[0], 20), np.uint8)
    out[:, 0:2] = _f16_bytes(d)
    out[:, 2:4] = _f16_bytes(m)
    out[:, 4:] = q[:, :16] | (q[:, 16:] << 4)
    return out.reshape(-1)


def quantize_q5_0(x):
    """Q5_0: per 32 values, f16 d, the u32 of fifth bits, then the low
    nibbles as Q4_0 stores them; value = (q - 16) * d, d mapping the block's
    largest |x| (with its sign) onto -16."""
    blk = np.asarray(x, np.float32).reshape(-1, 32)
    nb = blk.shape[0]
    extreme = blk[np.arange(nb), np.abs(blk).argmax(axis=1)]
    d = _f16(extreme / -16.0)
    inv = _safe_inv(d.astype(np.float32))
    q = np.clip(np.floor(blk * inv[:, None] + 16.5), 0, 31).astype(np.uint8)
    qs, qh = _low_nibbles_and_fifth_bits(q)
    out = np.empty((nb, 22), np.uint8)
    out[:, 0:2] = _f16_bytes(d)
    out[:, 2:6] = qh
    out[:, 6:] = qs
    return out.reshape(-1)


def quantize_q5_1(x):
    """Q5_1: per 32 values, f16 d, f16 m, the u32 of fifth bits, the low
    nibbles; value = q * d + m."""
    d, m, q = _affine_blocks(x, 31)
    qs, qh = _low_nibbles_and_fifth_bits(q)
    out = np.empty((q.shape[0], 24), np.uint8)
    out[:, 0:2] = _f16_bytes(d)
    out[:, 2:4] = _f16_bytes(m)
    out[:, 4:8] = qh
    out[:, 8:] = qs
    return out.reshape(-1)


def _k_low_bits(codes, bits):
    """codes: [blocks, 256] of `bits`-bit values -> the 64 (2-bit) bytes of
    Q2_K/Q3_K: value 128 n + 32 j + l (l < 32) in bits 2 j of byte
    32 n + l."""
    c = codes.reshape(-1, 2, 4, 32).astype(np.uint8) & ((1 << bits) - 1)
    out = np.zeros((codes.shape[0], 2, 32), np.uint8)
    for j in range(4):
        out |= c[:, :, j, :] << (2 * j)
    return out.reshape(-1, 64)


def quantize_q2_k(x):
    """Q2_K: super-blocks of 256 in 84 bytes: 16 bytes of 4-bit sub-block
    scales (low nibble) and mins (high), 64 bytes of 2-bit codes, f16 d and
    dmin; value = d * sc * q - dmin * m for the 16-value sub-block's sc, m."""
    blk = np.asarray(x, np.float32).reshape(-1, 16, 16)
    nb = blk.shape[0]
    lo = np.minimum(blk.min(axis=2), 0.0)             # [nb, 16]
    step = (blk.max(axis=2) - lo) / 3.0
    d = _f16(step.max(axis=1) / 15.0)
    dmin = _f16((-lo).max(axis=1) / 15.0)
    sc = np.clip(np.rint(step * _safe_inv(d.astype(np.float32))[:, None]),
                 0, 15).astype(np.uint8)
    mn = np.clip(np.rint(-lo * _safe_inv(dmin.astype(np.float32))[:, None]),
                 0, 15).astype(np.uint8)
    dl = d.astype(np.float32)[:, None] * sc
    ml = dmin.astype(np.float32)[:, None] * mn
    q = np.clip(np.rint((blk + ml[:, :, None]) *
                        _safe_inv(dl)[:, :, None]), 0, 3).astype(np.uint8)
    out = np.empty((nb, 84), np.uint8)
    out[:, 0:16] = sc | (mn << 4)
    out[:, 16:80] = _k_low_bits(q.reshape(nb, 256), 2)
    out[:, 80:82] = _f16_bytes(d)
    out[:, 82:84] = _f16_bytes(dmin)
    return out.reshape(-1)


def quantize_q3_k(x):
    """Q3_K: super-blocks of 256 in 110 bytes: 32 bytes hmask (bit 4 n + j
    of byte l holds the third bit of value 128 n + 32 j + l), 64 bytes of
    2-bit codes, 12 bytes of sixteen 6-bit sub-block scales, f16 d; value =
    d * (sc - 32) * (q - 4), q the 3-bit code."""
    blk = np.asarray(x, np.float32).reshape(-1, 16, 16)
    nb = blk.shape[0]
    step = np.abs(blk).max(axis=2) / 4.0
    d = _f16(step.max(axis=1) / 31.0)
    ls = np.clip(np.rint(step * _safe_inv(d.astype(np.float32))[:, None]),
                 0, 31).astype(np.int32)
    dl = d.astype(np.float32)[:, None] * ls
    q = np.clip(np.rint(blk * _safe_inv(dl)[:, :, None]) + 4, 0,
                7).astype(np.uint8).reshape(nb, 256)
    sc = (ls + 32).astype(np.uint8)                   # [nb, 16], 6 bits
    packed = np.zeros((nb, 12), np.uint8)
    for i in range(16):
        packed[:, i % 8] |= (sc[:, i] & 0xF) << (4 * (i // 8))
        packed[:, 8 + i % 4] |= (sc[:, i] >> 4) << (2 * (i // 4))
    hbits = (q >> 2).reshape(nb, 2, 4, 32)            # [n, j, l]
    hmask = np.zeros((nb, 32), np.uint8)
    for n in range(2):
        for j in range(4):
            hmask |= hbits[:, n, j, :] << (4 * n + j)
    out = np.empty((nb, 110), np.uint8)
    out[:, 0:32] = hmask
    out[:, 32:96] = _k_low_bits(q, 2)
    out[:, 96:108] = packed
    out[:, 108:110] = _f16_bytes(d)
    return out.reshape(-1)


IQ4NL_VALUES = np.array([-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25,
                         38, 53, 69, 89, 113], np.float32)


def quantize_iq4_nl(x):
    """IQ4_NL: Q4_0's layout, but nibble q stands for IQ4NL_VALUES[q] * d.
    d maps the block's largest |x| onto the table's end of the same sign;
    each value takes the nearest table entry."""
    blk = np.asarray(x, np.float32).reshape(-1, 32)
    nb = blk.shape[0]
    pick = np.abs(blk).argmax(axis=1)
    extreme = blk[np.arange(nb), pick]
    d = _f16(np.where(extreme < 0, extreme / -127.0, extreme / 113.0))
    scaled = blk * _safe_inv(d.astype(np.float32))[:, None]
    q = np.abs(scaled[:, :, None] - IQ4NL_VALUES[None, None, :]).argmin(
        axis=2).astype(np.uint8)
    out = np.empty((nb, 18), np.uint8)
    out[:, 0:2] = _f16_bytes(d)
    out[:, 2:] = q[:, :16] | (q[:, 16:] << 4)
    return out.reshape(-1)


def quantize_iq4_xs(x):
    """IQ4_XS: super-blocks of 256 as f16 d, u16 scales_h, u8 scales_l[4],
    u8 qs[128]. Each 32-value sub-block gets a 6-bit scale ls (stored as
    ls, meaning ls - 32) with (ls - 32) * d close to the scale IQ4_NL would
    pick for it; values take the nearest table entry."""
    blk = np.asarray(x, np.float32).reshape(-1, 8, 32)
    nb = blk.shape[0]
    pick = np.abs(blk).argmax(axis=2)
    extreme = np.take_along_axis(blk, pick[:, :, None], axis=2)[:, :, 0]
    want = np.where(extreme < 0, extreme / -127.0, extreme / 113.0)  # (nb, 8)
    # d so that the largest wanted scale is 31 steps (ls - 32 in -32..31).
    d = _f16(np.abs(want).max(axis=1) / 31.0)
    df = d.astype(np.float32)
    steps = np.clip(np.rint(want * _safe_inv(df)[:, None]), -32, 31)
    ls = (steps + 32).astype(np.int32)                        # 0..63
    dl = df[:, None] * steps.astype(np.float32)
    scaled = blk * _safe_inv(dl)[:, :, None]
    q = np.abs(scaled[..., None] - IQ4NL_VALUES).argmin(axis=3).astype(
        np.uint8)                                              # (nb, 8, 32)
    out = np.zeros((nb, 136), np.uint8)
    out[:, 0:2] = _f16_bytes(d)
    high = np.zeros(nb, np.uint32)
    for ib in range(8):
        high |= ((ls[:, ib] >> 4) & 3).astype(np.uint32) << (2 * ib)
        out[:, 4 + ib // 2] |= ((ls[:, ib] & 0xF) << (4 * (ib % 2))).astype(
            np.uint8)
        out[:, 8 + 16 * ib:24 + 16 * ib] = q[:, ib, :16] | (q[:, ib, 16:] << 4)
    out[:, 2] = high & 0xFF
    out[:, 3] = high >> 8
    return out.reshape(-1)


def _kquant_affine(sub, nmax):
    """Shared by Q4_K/Q5_K.  sub: (nb, 8, 32) float32.
    Returns (d, dmin) as f16 arrays, 6-bit sc/m (nb, 8) and levels (nb, 256)."""
    lo = np.minimum(sub.min(axis=2), 0.0)        # mins are stored as -min >= 0
    hi = sub.max(axis=2)
    step = (hi - lo) / nmax
    neg_min = -lo
    d = _f16(step.max(axis=1) / 63.0)
    dmin = _f16(neg_min.max(axis=1) / 63.0)
    df = d.astype(np.float32)
    mf = dmin.astype(np.float32)
    sc = np.clip(np.rint(step * _safe_inv(df)[:, None]), 0, 63).astype(np.uint8)
    mn = np.clip(np.rint(neg_min * _safe_inv(mf)[:, None]), 0, 63).astype(np.uint8)
    eff_step = df[:, None] * sc.astype(np.float32)
    eff_off = mf[:, None] * mn.astype(np.float32)
    lev = (sub + eff_off[:, :, None]) * _safe_inv(eff_step)[:, :, None]
    lev = np.clip(np.rint(lev), 0, nmax).astype(np.uint8)
    return d, dmin, sc, mn, lev.reshape(sub.shape[0], 256)


def _pack_scales_k4(sc, mn):
    """Pack 8 six-bit scales and 8 six-bit mins into ggml's 12-byte layout."""
    out = np.empty((sc.shape[0], 12), np.uint8)
    out[:, 0:4] = (sc[:, 0:4] & 63) | ((sc[:, 4:8] >> 4) << 6)
    out[:, 4:8] = (mn[:, 0:4] & 63) | ((mn[:, 4:8] >> 4) << 6)
    out[:, 8:12] = (sc[:, 4:8] & 15) | ((mn[:, 4:8] & 15) << 4)
    return out


def quantize_q4_k(x):
    """Q4_K: 256 values = 8 sub-blocks of 32; value = d*sc*q - dmin*m."""
    sub = np.asarray(x, np.float32).reshape(-1, 8, 32)
    nb = sub.shape[0]
    d, dmin, sc, mn, lev = _kquant_affine(sub, 15)
    lev = lev.reshape(nb, 4, 2, 32)     # chunk of 64 -> (low half, high half)
    out = np.empty((nb, 144), np.uint8)
    out[:, 0:2] = _f16_bytes(d)
    out[:, 2:4] = _f16_bytes(dmin)
    out[:, 4:16] = _pack_scales_k4(sc, mn)
    out[:, 16:144] = (lev[:, :, 0, :] | (lev[:, :, 1, :] << 4)).reshape(nb, 128)
    return out.reshape(-1)


def quantize_q5_k(x):
    """Q5_K: as Q4_K with 5-bit levels; the 5th bits live in qh[32]."""
    sub = np.asarray(x, np.float32).reshape(-1, 8, 32)
    nb = sub.shape[0]
    d, dmin, sc, mn, lev = _kquant_affine(sub, 31)
    lev = lev.reshape(nb, 4, 2, 32)
    low = lev & 15
    high = (lev >> 4).astype(np.uint8)
    qh = np.zeros((nb, 32), np.uint8)
    for c in range(4):
        for h in range(2):
            qh |= high[:, c, h, :] << (2 * c + h)
    out = np.empty((nb, 176), np.uint8)
    out[:, 0:2] = _f16_bytes(d)
    out[:, 2:4] = _f16_bytes(dmin)
    out[:, 4:16] = _pack_scales_k4(sc, mn)
    out[:, 16:48] = qh
    out[:, 48:176] = (low[:, :, 0, :] | (low[:, :, 1, :] << 4)).reshape(nb, 128)
    return out.reshape(-1)


def quantize_q6_k(x):
    """Q6_K: 256 values = 16 sub-blocks of 16; value = d*scale*(q-32)."""
    sub = np.asarray(x, np.float32).reshape(-1, 16, 16)
    nb = sub.shape[0]
    pick = np.abs(sub).argmax(axis=2)
    extreme = np.take_along_axis(sub, pick[:, :, None], axis=2)[:, :, 0]
    step = extreme / -32.0                           # signed sub-block scale
    d = _f16(np.abs(step).max(axis=1) / 127.0)
    df = d.astype(np.float32)
    sc = np.clip(np.rint(step * _safe_inv(df)[:, None]), -127, 127).astype(np.int8)
    eff = df[:, None] * sc.astype(np.float32)
    lev = np.rint(sub * _safe_inv(eff)[:, :, None])
    lev = (np.clip(lev, -32, 31) + 32).astype(np.uint8).reshape(nb, 2, 4, 32)
    ql = np.empty((nb, 2, 64), np.uint8)
    ql[:, :, 0:32] = (lev[:, :, 0] & 15) | ((lev[:, :, 2] & 15) << 4)
    ql[:, :, 32:64] = (lev[:, :, 1] & 15) | ((lev[:, :, 3] & 15) << 4)
    qh = ((lev[:, :, 0] >> 4) | ((lev[:, :, 1] >> 4) << 2) |
          ((lev[:, :, 2] >> 4) << 4) | ((lev[:, :, 3] >> 4) << 6))
    out = np.empty((nb, 210), np.uint8)
    out[:, 0:128] = ql.reshape(nb, 128)
    out[:, 128:192] = qh.reshape(nb, 64)
    out[:, 192:208] = sc.view(np.uint8)
    out[:, 208:210] = _f16_bytes(d)
    return out.reshape(-1)


QUANTIZERS = {
    "q8_0": quantize_q8_0, "q4_0": quantize_q4_0, "iq4_nl": quantize_iq4_nl,
    "q4_1": quantize_q4_1, "q5_0": quantize_q5_0, "q5_1": quantize_q5_1,
    "q2_k": quantize_q2_k, "q3_k": quantize_q3_k,
    "iq4_xs": quantize_iq4_xs,
    "q4_k": quantize_q4_k,
    "q5_k": quantize_q5_k, "q6_k": quantize_q6_k,
}


# -- ternary types ---------------------------------------------------------
# Each stores t * scale with t in {-1, 0, +1}; weights that already are
# s * t (make_weights for --arch bitnet) come back exactly when s is an f16
# value.  Layouts as ggml's quantize_row_tq{1,2}_0_ref and BitNet's
# quantize_i2_s write them (docs/BitNet-formats.md).

def _lround(v):
    """C lroundf: nearest integer, halves away from zero (exact in f64)."""
    v = np.asarray(v, np.float64)
    return (np.sign(v) * np.floor(np.abs(v) + 0.5)).astype(np.int64)


def _ternary_trits(x):
    """TQ1_0/TQ2_0 common part: per 256 values d = max|x| (stored as f16)
    and codes lround(x * (1/d)) + 1 in {0, 1, 2}, the product in float32."""
    blk = np.asarray(x, np.float32).reshape(-1, 256)
    amax = np.abs(blk).max(axis=1)
    inv = _safe_inv(amax)                          # float32, 0 for d = 0
    codes = _lround(blk * inv[:, None]) + 1
    return _f16(amax), codes


def _ceil_byte(q):
    """q / 3^5 as a fraction of 256, rounded up (ggml's TQ1_0 trit packing)."""
    return ((np.asarray(q, np.int64) * 256 + 242) // 243).astype(np.uint8)


def quantize_tq1_0(x):
    """TQ1_0: per 256 values, qs[48] qh[4] then f16 d (54 bytes).  Codes
    c = t + 1 are base-3 digits, the first element the most significant:
      qs[m],    m < 32: elements m + 32 n       (n = 0..4), 160 values
      qs[32+m], m < 16: elements 160 + m + 16 n (n = 0..4),  80 values
      qh[j],    j < 4:  elements 240 + j + 4 n  (n = 0..3),  16 values,
                        times 3 (a fifth, zero digit)
    and each byte is ceil(q * 256 / 243)."""
    d, c = _ternary_trits(x)
    nb = c.shape[0]
    five = np.array([81, 27, 9, 3, 1])[None, :, None]
    qa = (c[:, 0:160].reshape(nb, 5, 32) * five).sum(axis=1)
    qb = (c[:, 160:240].reshape(nb, 5, 16) * five).sum(axis=1)
    qh = (c[:, 240:256].reshape(nb, 4, 4) * five[:, 1:]).sum(axis=1) * 3
    out = np.empty((nb, 54), np.uint8)
    out[:, 0:32] = _ceil_byte(qa)
    out[:, 32:48] = _ceil_byte(qb)
    out[:, 48:52] = _ceil_byte(qh)
    out[:, 52:54] = _f16_bytes(d)
    return out.reshape(-1)


def quantize_tq2_0(x):
    """TQ2_0: per 256 values, qs[64] then f16 d (66 bytes); code c = t + 1
    of element 128 h + 32 n + m sits in bits 2n..2n+1 of qs[32 h + m]."""
    d, c = _ternary_trits(x)
    nb = c.shape[0]
    c = c.astype(np.uint8).reshape(nb, 2, 4, 32)
    qs = np.zeros((nb, 2, 32), np.uint8)
    for n in range(4):
        qs |= (c[:, :, n, :] & 3) << (2 * n)
    out = np.empty((nb, 66), np.uint8)
    out[:, 0:64] = qs.reshape(nb, 64)
    out[:, 64:66] = _f16_bytes(d)
    return out.reshape(-1)


def quantize_i2_s(x):
    """I2_S (microsoft/BitNet, x86 layout): the whole tensor is one stream
    of 128-value blocks of 32 bytes; element 32 k + m of a block sits in
    bits 7-2k..6-2k of byte m, code 0 = -1, 1 = 0, 2 = +1.  After the n/4
    packed bytes: the per-tensor scale max|x| as f32, zero-padded to 32
    bytes.  Codes as quantize_i2_s picks them: |x| < 1e-6 -> 0, else the
    sign of x (so only ternary inputs survive unchanged)."""
    flat = np.asarray(x, np.float32).reshape(-1)
    n = flat.size
    if n % 128:
        raise ValueError("i2_s needs a multiple of 128 elements")
    mag = np.abs(flat.astype(np.float64))
    scale = np.float32(mag.max()) if n else np.float32(0)
    codes = np.where(mag < 1e-6, 1, np.where(flat > 0, 2, 0)).astype(np.uint8)
    g = codes.reshape(-1, 4, 32)
    packed = (g[:, 0] << 6) | (g[:, 1] << 4) | (g[:, 2] << 2) | g[:, 3]
    out = np.zeros(n // 4 + 32, np.uint8)
    out[:n // 4] = packed.reshape(-1)
    out[n // 4:n // 4 + 4] = np.array([scale], "<f4").view(np.uint8)
    return out


TERNARY_QUANTIZERS = {
    "tq1_0": quantize_tq1_0, "tq2_0": quantize_tq2_0, "i2_s": quantize_i2_s,
}


def to_bf16(arr):
    """The top 16 bits of each f32, rounded to nearest even as ggml's
    GGML_FP32_TO_BF16 rounds (a NaN keeps its sign and becomes quiet)."""
    u = np.ascontiguousarray(arr, "<f4").view("<u4").astype(np.uint64)
    rounded = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    nan = (u & 0x7FFFFFFF) > 0x7F800000
    rounded = np.where(nan, (u >> 16) | 64, rounded)
    return rounded.astype("<u2")


def encode_tensor(arr, type_name):
    """Return raw bytes of `arr` (numpy shape = reversed ggml dims) as type."""
    if type_name == "f32":
        return np.ascontiguousarray(arr, "<f4").tobytes()
    if type_name == "f16":
        return np.ascontiguousarray(arr).astype("<f2").tobytes()
    if type_name == "bf16":
        return to_bf16(arr).tobytes()
    fn = QUANTIZERS.get(type_name) or TERNARY_QUANTIZERS[type_name]
    return fn(np.ascontiguousarray(arr, np.float32)).tobytes()


# --------------------------------------------------------------------------
# Tokenizer: tiny BPE trained on an embedded corpus
# --------------------------------------------------------------------------

CORPUS = """\
The old lighthouse stood at the end of a narrow stone pier, and every evening the keeper climbed its one hundred and twelve steps to light the lamp. He had done this for thirty years. The ships that passed in the night never saw him, but they saw the light, and that was enough for him. When the fog rolled in from the sea, he wound the clockwork horn and listened to it call across the water.
A compiler is a patient translator. It reads a program written for people and rewrites it for a machine that understands only numbers. First it breaks the text into tokens, then it builds a tree, then it lowers the tree step by step until every operation fits the hardware. Good compilers also search for shortcuts: they fold constants, remove work that nobody needs, and keep values close to the processor where they can be reached quickly.
In the spring the river rises and the meadows turn green. Children run along the bank with paper boats, and the boats spin in the current before they drift out of sight. Their parents sit on the warm grass and talk about the weather, the price of bread, and the news from the town on the other side of the hill.
Language models learn to predict the next word. They read a great deal of text and slowly adjust millions of numbers so that their guesses improve. A model does not remember every sentence it has seen; instead it builds a compressed picture of how words tend to follow one another. When we ask it a question, it writes the answer one token at a time, each choice depending on everything that came before.
The market opened at seven. By eight the square was full of voices: farmers selling apples and onions, a baker calling out the names of his loaves, and a man with a violin playing the same three songs over and over. Nobody minded. It was Saturday, the sun was out, and there was time to stand and listen.
Numbers have a quiet beauty. Two and three make five, five and eight make thirteen, and the pattern goes on forever. A careful student can find the rule by looking at the first few terms, and a careless one can find a dozen wrong rules that fit them just as well. That is why we test our ideas against new examples, and why we are glad when they fail early rather than late.
"""

SPM_SPACE = "\u2581"   # SentencePiece's visible space


def _bytes_to_unicode():
    """GPT-2's reversible byte -> printable unicode table, in its id order."""
    keep = (list(range(0x21, 0x7F)) + list(range(0xA1, 0xAD)) +
            list(range(0xAE, 0x100)))
    order = list(keep)
    chars = [chr(b) for b in keep]
    extra = 0
    for b in range(256):
        if b not in keep:
            order.append(b)
            chars.append(chr(256 + extra))
            extra += 1
    return order, chars


def _gpt2_pretokenize(text):
    """Approximation of GPT-2's split regex (enough for training merges)."""
    out = []
    i, n = 0, len(text)
    suffixes = ("'s", "'t", "'re", "'ve", "'m", "'ll", "'d")
    while i < n:
        hit = next((s for s in suffixes if text.startswith(s, i)), None)
        if hit:
            out.append(hit)
            i += len(hit)
            continue
        j = i + 1 if (text[i] == " " and i + 1 < n and not text[i + 1].isspace()) else i
        c = text[j]
        k = j
        if c.isalpha():
            while k < n and text[k].isalpha():
                k += 1
        elif c.isdigit():
            while k < n and text[k].isdigit():
                k += 1
        elif not c.isspace():
            while k < n and not (text[k].isspace() or text[k].isalnum()):
                k += 1
        else:
            while k < n and text[k].isspace():
                k += 1
            if k < n and k - i > 1:
                k -= 1          # leave one space to prefix the next word
        out.append(text[i:k])
        i = k
    return out


def learn_bpe(words, min_count=2):
    """Greedy BPE on a {tuple_of_symbols: frequency} dict.
    Returns the list of merges (left, right) in rank order.  Ties are broken
    by the lexicographically smallest pair, so the result is deterministic."""
    seqs = [list(w) for w in words]
    freq = list(words.values())
    counts = {}
    where = {}
    for wi, s in enumerate(seqs):
        for p in zip(s, s[1:]):
            counts[p] = counts.get(p, 0) + freq[wi]
            where.setdefault(p, set()).add(wi)
    heap = [(-c, p[0], p[1]) for p, c in counts.items()]
    heapq.heapify(heap)
    merges = []
    while heap:
        negc, a, b = heapq.heappop(heap)
        pair = (a, b)
        if counts.get(pair, 0) != -negc:
            continue                       # stale heap entry
        if -negc < min_count:
            break
        merges.append(pair)
        joined = a + b
        touched = set()
        for wi in sorted(where.pop(pair, ())):
            s = seqs[wi]
            f = freq[wi]
            for p in zip(s, s[1:]):
                counts[p] -= f
                touched.add(p)
            t = []
            k = 0
            while k < len(s):
                if k + 1 < len(s) and s[k] == a and s[k + 1] == b:
                    t.append(joined)
                    k += 2
                else:
                    t.append(s[k])
                    k += 1
            seqs[wi] = t
            for p in zip(t, t[1:]):
                counts[p] = counts.get(p, 0) + f
                where.setdefault(p, set()).add(wi)
                touched.add(p)
        for p in touched:
            c = counts.get(p, 0)
            if c > 0:
                heapq.heappush(heap, (-c, p[0], p[1]))
            else:
                counts.pop(p, None)
    return merges


def _concat_candidates(base):
    """Endless deterministic stream of (a, b) concatenation candidates."""
    pool = list(base)
    while True:
        grown = list(pool)
        for a in pool:
            for b in pool:
                yield a, b
                grown.append(a + b)
        # a second pass with longer pieces, should the first not suffice
        seen = set()
        pool = [p for p in grown if not (p in seen or seen.add(p))]


# Chat templates: (tokenizer.chat_template text, its turn markers). The
# texts are short Jinja templates of each family, enough for a loader that
# recognizes the family by its markers, as llama.cpp does.
CHAT_TEMPLATES = {
    "chatml": (
        "{% for m in messages %}{{ '<|im_start|>' + m['role'] + '\\n' + "
        "m['content'] + '<|im_end|>\\n' }}{% endfor %}{% if "
        "add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}",
        ["<|im_start|>", "<|im_end|>"]),
    "llama3": (
        "{{ bos_token }}{% for m in messages %}{{ '<|start_header_id|>' + "
        "m['role'] + '<|end_header_id|>\\n\\n' + m['content'] | trim + "
        "'<|eot_id|>' }}{% endfor %}{% if add_generation_prompt %}{{ "
        "'<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{% endif %}",
        ["<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"]),
    "gemma": (
        "{{ bos_token }}{% for m in messages %}{% set role = 'model' if "
        "m['role'] == 'assistant' else m['role'] %}{{ '<start_of_turn>' + "
        "role + '\\n' + m['content'] | trim + '<end_of_turn>\\n' }}{% endfor "
        "%}{% if add_generation_prompt %}{{ '<start_of_turn>model\\n' }}"
        "{% endif %}",
        ["<start_of_turn>", "<end_of_turn>"]),
    "phi3": (
        "{% for message in messages %}{{ '<|' + message['role'] + '|>' + "
        "'\\n' + message['content'] + '<|end|>\\n' }}{% endfor %}{% if "
        "add_generation_prompt %}{{ '<|assistant|>\\n' }}{% endif %}",
        ["<|system|>", "<|user|>", "<|assistant|>", "<|end|>"]),
}


def add_control_tokens(tok, names):
    """Makes each of `names` a control token (type 3) of the vocabulary:
    an existing token is retyped; otherwise the last merged piece (the
    highest id of a normal multi-character token, which no later merge
    builds on) is replaced, and the merge that produced it dropped."""
    tokens, types = tok["tokens"], tok["types"]
    for name in names:
        if name in tokens:
            types[tokens.index(name)] = 3
            continue
        i = max(j for j in range(len(tokens))
                if types[j] == 1 and len(tokens[j]) >= 2)
        old = tokens[i]
        tokens[i] = name
        types[i] = 3
        if tok["scores"] is not None:
            tok["scores"][i] = 0.0
        if tok["merges"] is not None:
            tok["merges"] = [m for m in tok["merges"]
                             if m.replace(" ", "", 1) != old]


def build_spm_vocab(vocab_size):
    """SentencePiece-style ("llama") vocab.

    ids 0,1,2 = <unk>, <s>, </s>; ids 3..258 = <0x00>..<0xFF> (byte
    fallback); then merged pieces in merge order (score = -rank); then the
    single characters of the corpus (scores below every merge)."""
    n_fixed = 3 + 256
    if vocab_size < n_fixed:
        raise SystemExit("llama tokenizer needs --vocab >= %d" % n_fixed)
    words = {}
    char_freq = {}
    for line in CORPUS.splitlines():
        for w in line.split(" "):
            if not w:
                continue
            piece = tuple(SPM_SPACE + w)
            words[piece] = words.get(piece, 0) + 1
            for ch in piece:
                char_freq[ch] = char_freq.get(ch, 0) + 1
    chars = sorted(char_freq, key=lambda c: (-char_freq[c], c))
    room = vocab_size - n_fixed
    chars = chars[:room]
    n_merge_pieces = room - len(chars)

    pieces = []
    have = set(chars)
    for a, b in learn_bpe(words):
        if len(pieces) >= n_merge_pieces:
            break
        if a + b not in have:
            have.add(a + b)
            pieces.append(a + b)
    if len(pieces) < n_merge_pieces:
        for a, b in _concat_candidates(pieces or chars):
            if len(pieces) >= n_merge_pieces:
                break
            if a + b not in have:
                have.add(a + b)
                pieces.append(a + b)

    tokens = ["<unk>", "<s>", "</s>"] + ["<0x%02X>" % i for i in range(256)]
    scores = [0.0] * n_fixed
    types = [2, 3, 3] + [6] * 256
    for rank, p in enumerate(pieces):
        tokens.append(p)
        scores.append(-float(rank))
        types.append(1)
    for k, ch in enumerate(chars):
        tokens.append(ch)
        scores.append(-float(len(pieces) + k))
        types.append(1)
    assert len(tokens) == vocab_size
    return dict(model="llama", tokens=tokens, scores=scores, types=types,
                merges=None, bos=1, eos=2, unk=0, pad=0, add_bos=True)


GPT2_CONTROL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]


def build_gpt2_vocab(vocab_size):
    """GPT-2 style byte-level BPE vocab.

    ids 0..255 = GPT-2's byte symbols in bytes_to_unicode order ("!" = 0,
    ..., "Ġ" for space = 220); then one token per merge (merge order);
    the last three ids are <|endoftext|> (bos = eos = pad), <|im_start|>,
    <|im_end|> (control)."""
    n_fixed = 256 + len(GPT2_CONTROL)
    if vocab_size < n_fixed:
        raise SystemExit("gpt2 tokenizer needs --vocab >= %d" % n_fixed)
    order, symbols = _bytes_to_unicode()
    table = dict(zip(order, symbols))
    words = {}
    for line in CORPUS.splitlines(keepends=True):
        for pre in _gpt2_pretokenize(line):
            w = tuple(table[b] for b in pre.encode("utf-8"))
            words[w] = words.get(w, 0) + 1
    n_merges = vocab_size - n_fixed
    have = set(symbols)
    merged = []
    merges = []
    for a, b in learn_bpe(words):
        if len(merged) >= n_merges:
            break
        if a + b not in have:
            have.add(a + b)
            merged.append(a + b)
            merges.append("%s %s" % (a, b))
    if len(merged) < n_merges:
        base = merged or [table[b] for b in b"etaoinshr"]
        for a, b in _concat_candidates(base):
            if len(merged) >= n_merges:
                break
            if a + b not in have:
                have.add(a + b)
                merged.append(a + b)
                merges.append("%s %s" % (a, b))
    tokens = list(symbols) + merged + GPT2_CONTROL
    types = [1] * (256 + len(merged)) + [3] * len(GPT2_CONTROL)
    eot = 256 + len(merged)
    assert len(tokens) == vocab_size
    return dict(model="gpt2", tokens=tokens, scores=None, types=types,
                merges=merges, bos=eot, eos=eot, unk=None, pad=eot,
                add_bos=False)


# --------------------------------------------------------------------------
# Model definition
# --------------------------------------------------------------------------

ARCHES = ["llama", "qwen2", "qwen3", "gemma", "gemma2", "gemma3", "gemma4",
          "bitnet", "phi3", "qwen3moe"]
GEMMA_ARCHES = ("gemma", "gemma2", "gemma3")
# bitnet's ternary projections (llama.cpp's BitLinear layers), in the order
# make_weights draws them
BITNET_PROJ = ("attn_q", "attn_k", "attn_v", "attn_output",
               "ffn_gate", "ffn_up", "ffn_down")

PRESETS = {
    "demo": dict(arch="llama", dim=512, layers=8, heads=8, kv_heads=4,
                 ffn=1536, vocab=8192, ctx=2048, tied=True, tokenizer="llama"),
}

DEFAULTS = dict(arch="llama", type="f32", seed=1234, dim=64, layers=2, heads=4,
                kv_heads=2, ffn=128, vocab=320, ctx=256, tokenizer=None,
                head_dim=None, rope_base=None, rope_scale=None, tied=False,
                rope_dims=None, eps=1e-5, pre="default", name=None, embd_std=None,
                hidden_act=None, scale_tensors=None, separate_qkv=None,
                long_rope=None, experts=None, experts_used=None,
                expert_ffn=None, expert_weights_scale=None, router_tie=None,
                router_near_tie=None, poison_expert=None)


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description="Write a small synthetic GGUF v3 model "
                    "(llama/qwen2/qwen3/qwen3moe/gemma/gemma2/gemma3/gemma4/bitnet/phi3).")
    p.add_argument("out", help="output .gguf path")
    p.add_argument("--preset", choices=sorted(PRESETS))
    p.add_argument("--arch", choices=ARCHES)
    p.add_argument("--type", choices=list(TYPES),
                   help="storage type of 2-D tensors (default f32); the "
                        "ternary tq1_0/tq2_0/i2_s only with --arch bitnet, "
                        "where they apply to the projections")
    p.add_argument("--tensor-type", dest="tensor_types", action="append",
                   default=[], metavar="PATTERN=TYPE",
                   help="store the 2-D tensors whose name matches the glob "
                        "PATTERN as TYPE (repeatable, first match wins; as "
                        "llama-quantize's --tensor-type, e.g. "
                        "'*.ffn_down.weight=q6_k' for a Q4_K_M-style mix)")
    p.add_argument("--seed", type=int)
    p.add_argument("--dim", type=int, help="embedding length")
    p.add_argument("--layers", type=int)
    p.add_argument("--heads", type=int)
    p.add_argument("--kv-heads", dest="kv_heads", type=int)
    p.add_argument("--ffn", type=int, help="feed-forward length")
    p.add_argument("--vocab", type=int)
    p.add_argument("--ctx", type=int, help="context_length")
    p.add_argument("--tokenizer", choices=["llama", "gpt2"],
                   help="default: llama for --arch llama and gemma*, gpt2 for qwen")
    p.add_argument("--pre", help="tokenizer.ggml.pre for gpt2 (default: default)")
    p.add_argument("--head-dim", dest="head_dim", type=int,
                   help="per-head size (default dim/heads)")
    p.add_argument("--rope-base", dest="rope_base", type=float,
                   help="rope.freq_base (default 1e6 for gemma3, else 1e4)")
    p.add_argument("--rope-scale", dest="rope_scale", type=float,
                   help="linear RoPE scaling factor (positions are divided by it)")
    p.add_argument("--rope-dims", dest="rope_dims", type=int,
                   help="rope.dimension_count (default head dim)")
    p.add_argument("--eps", type=float, help="RMSNorm epsilon")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--tied", dest="tied", action="store_true", default=None,
                   help="no output.weight; logits use token_embd")
    g.add_argument("--untied", dest="tied", action="store_false",
                   help="write a separate output.weight (default; refused "
                        "for gemma*, whose head is always token_embd)")
    p.add_argument("--embd-std", dest="embd_std", type=float,
                   help="std of token_embd entries (default 1 with an untied "
                        "head, 1/sqrt(dim) with --tied: a large tied embedding "
                        "makes the model just repeat its input token)")
    p.add_argument("--sliding-window", dest="sliding_window", type=int,
                   help="gemma2/gemma3: attention.sliding_window (default "
                        "4096 for gemma2, 512 for gemma3; 0 turns gemma3's "
                        "sliding-window layers off)")
    p.add_argument("--swa-pattern", dest="swa_pattern", type=int,
                   help="gemma2/gemma3: attention.sliding_window_pattern P "
                        "(layer i slides iff i %% P < P - 1; not written "
                        "unless given)")
    p.add_argument("--attn-softcap", dest="attn_softcap", type=float,
                   help="gemma2: attn_logit_softcapping (default 50)")
    p.add_argument("--final-softcap", dest="final_softcap", type=float,
                   help="gemma2/gemma3: final_logit_softcapping (gemma2 "
                        "default 30; gemma3 not written unless given)")
    p.add_argument("--rope-base-swa", dest="rope_base_swa", type=float,
                   help="gemma2/gemma3: rope.freq_base_swa (not written "
                        "unless given)")
    p.add_argument("--chat-template", dest="chat_template",
                   choices=sorted(CHAT_TEMPLATES),
                   help="write tokenizer.chat_template of this family and "
                        "make its turn markers control tokens (replacing the "
                        "last merged pieces of the vocabulary if needed)")
    p.add_argument("--hidden-act", dest="hidden_act",
                   choices=["relu2", "silu", "none"],
                   help="bitnet: bitnet.hidden_activation (default relu2, "
                        "as bitnet-b1.58-2B-4T; none writes no key, which "
                        "llama.cpp reads as silu)")
    p.add_argument("--scale-tensors", dest="scale_tensors", action="store_true",
                   default=None,
                   help="bitnet: store the projections as bare ternary "
                        "{-1,0,1} and their per-tensor scale s as "
                        "blk.N.<proj>.scale [1] f32 tensors (same model)")
    moe = p.add_argument_group(
        "mixture of experts (--arch qwen3moe, or llama/gemma4 with --experts)")
    moe.add_argument("--experts", type=int, help="expert_count (qwen3moe: 8)")
    moe.add_argument("--experts-used", dest="experts_used", type=int,
                     help="expert_used_count (default 2)")
    moe.add_argument("--expert-ffn", dest="expert_ffn", type=int,
                     help="qwen3moe: expert_feed_forward_length (default "
                          "--ffn / --experts-used); llama's experts are --ffn wide")
    moe.add_argument("--separate-experts", dest="separate_experts",
                     nargs="?", const="contiguous",
                     choices=("contiguous", "interleaved"),
                     help="llama/qwen3moe: each expert's matrix as its own "
                          "tensor, blk.N.ffn_{gate,up,down}.E.weight, a "
                          "projection's experts one after another (files "
                          "older than llama.cpp's merged _exps tensors); "
                          "interleaved: expert by expert (gate, up, down of "
                          "expert 0, then 1, ...), for loaders' negative "
                          "tests")
    moe.add_argument("--expert-weights-scale", dest="expert_weights_scale",
                     type=float, help="expert_weights_scale (written when given)")
    moe.add_argument("--router-tie", dest="router_tie", type=int, action="append",
                     metavar="LAYER", help="every expert of LAYER gets the same "
                     "router row: all probabilities tie (repeatable)")
    moe.add_argument("--router-near-tie", dest="router_near_tie", type=int,
                     action="append", metavar="LAYER", help="as --router-tie, "
                     "but the last expert's row is scaled by 1.001")
    moe.add_argument("--poison-expert", dest="poison_expert", action="append",
                     metavar="LAYER:EXPERT", help="fill that expert's gate, up "
                     "and down matrices with NaN (it must never be chosen)")
    ph = p.add_argument_group("phi3")
    ph.add_argument("--separate-qkv", dest="separate_qkv", action="store_true",
                    default=None,
                    help="write attn_q/k/v instead of the fused attn_qkv")
    ph.add_argument("--long-rope", dest="long_rope", type=int, metavar="ORIG",
                    help="LongRoPE: rope_factors_long/short, "
                         "rope.scaling.original_context_length ORIG (< --ctx) "
                         "and the attn_factor Phi-3's converter derives")
    g4 = p.add_argument_group("gemma4 (E2B/E4B-style models; --experts: MoE)")
    g4.add_argument("--per-layer-dim", dest="per_layer_dim", type=int,
                    help="embedding_length_per_layer_input (default 16; 0: "
                         "no per-layer embedding tensors)")
    g4.add_argument("--shared-kv-layers", dest="shared_kv_layers", type=int,
                    help="attention.shared_kv_layers: the last N layers have "
                         "no attn_k/attn_v and read an earlier layer's KV "
                         "cache (default 0)")
    g4.add_argument("--head-dim-swa", dest="head_dim_swa", type=int,
                    help="attention.key_length_swa / value_length_swa "
                         "(default --head-dim, which is the full layers' size)")
    g4.add_argument("--rope-dims-swa", dest="rope_dims_swa", type=int,
                    help="rope.dimension_count_swa (default the SWA head size)")
    g4.add_argument("--kv-heads-per-layer", dest="kv_heads_per_layer",
                    help="comma list: attention.head_count_kv as a per-layer "
                         "array")
    g4.add_argument("--ffn-per-layer", dest="ffn_per_layer",
                    help="comma list: feed_forward_length as a per-layer array")
    g4.add_argument("--no-attn-v", dest="no_attn_v", action="store_true",
                    default=None,
                    help="write no attn_v (llama.cpp then uses K as V)")
    g4.add_argument("--layer-output-scale", dest="layer_output_scale",
                    action="store_true", default=None,
                    help="write blk.N.layer_output_scale.weight [1]")
    g4.add_argument("--moe-layers", dest="moe_layers",
                    help="with --experts: comma list of the layers that get "
                         "experts beside their dense FFN (default every layer)")
    g4.add_argument("--merged-gate-up", dest="merged_gate_up",
                    action="store_true", default=None,
                    help="with --experts: the experts' gate and up as one "
                         "tensor, ffn_gate_up_exps [dim, 2F, E]")
    p.add_argument("--name", help="general.name")
    p.add_argument("--quiet", action="store_true")
    cfg = p.parse_args(argv)
    preset = PRESETS.get(cfg.preset, {})
    asked_untied = cfg.tied is False
    for key, val in DEFAULTS.items():
        if getattr(cfg, key) is None:
            setattr(cfg, key, preset.get(key, val))
    gemma = cfg.arch in GEMMA_ARCHES
    G234 = ("gemma2", "gemma3", "gemma4")
    # options that only some archs understand
    only_for = [("--sliding-window", cfg.sliding_window, G234 + ("phi3",)),
                ("--swa-pattern", cfg.swa_pattern, G234),
                ("--attn-softcap", cfg.attn_softcap, ("gemma2",)),
                ("--final-softcap", cfg.final_softcap, G234),
                ("--rope-base-swa", cfg.rope_base_swa, G234),
                ("--hidden-act", cfg.hidden_act, ("bitnet",)),
                ("--scale-tensors", cfg.scale_tensors, ("bitnet",)),
                ("--separate-qkv", cfg.separate_qkv, ("phi3",)),
                ("--expert-ffn", cfg.expert_ffn, ("qwen3moe", "gemma4")),
                ("--long-rope", cfg.long_rope, ("phi3",))]
    only_for += [(flag, getattr(cfg, key), ("gemma4",)) for flag, key in GEMMA4_OPTS]
    for flag, val, archs in only_for:
        if val is not None and cfg.arch not in archs:
            p.error("%s applies to --arch %s only" % (flag, "/".join(archs)))
    overrides = []
    for spec in cfg.tensor_types:
        pattern, sep, tname = spec.rpartition("=")
        if not sep or not pattern or tname not in TYPES:
            p.error("--tensor-type takes PATTERN=TYPE with TYPE one of %s, "
                    "got %r" % (", ".join(TYPES), spec))
        if tname in TERNARY_TYPES:
            p.error("--tensor-type: ternary types follow --type (bitnet)")
        overrides.append((pattern, tname))
    cfg.tensor_types = overrides
    bitnet = cfg.arch == "bitnet"
    if cfg.type in TERNARY_TYPES and not bitnet:
        p.error("--type %s (ternary) applies to --arch bitnet only" % cfg.type)
    if gemma or bitnet:
        if asked_untied:
            p.error("--untied: llama.cpp always uses token_embd as the head "
                    "of %s; no output.weight can be written" % cfg.arch)
        cfg.tied = True
    if cfg.arch == "gemma4":
        # token_embd is the head unless --untied writes output.weight (which
        # llama.cpp's gemma4 loader reads when present)
        cfg.tied = not asked_untied
    if bitnet:
        if cfg.hidden_act is None:
            cfg.hidden_act = "relu2"
        cfg.scale_tensors = bool(cfg.scale_tensors)
        if cfg.head_dim is not None and cfg.head_dim * cfg.heads != cfg.dim:
            p.error("--head-dim: llama.cpp's bitnet needs head_dim * heads "
                    "== dim (attn_q and attn_output are dim x dim)")
    if cfg.rope_base is None:
        cfg.rope_base = 1000000.0 if cfg.arch in ("gemma3", "gemma4") else 10000.0
    if cfg.arch == "gemma2":
        if cfg.sliding_window is None:
            cfg.sliding_window = 4096
        if cfg.attn_softcap is None:
            cfg.attn_softcap = 50.0
        if cfg.final_softcap is None:
            cfg.final_softcap = 30.0
        if cfg.sliding_window < 1:
            p.error("--sliding-window must be >= 1 for gemma2")
    if cfg.arch == "gemma3":
        if cfg.sliding_window is None:
            cfg.sliding_window = 512
        if cfg.sliding_window < 0:
            p.error("--sliding-window must be >= 0 (0: no sliding-window layers)")
    if cfg.swa_pattern is not None and cfg.swa_pattern < 0:
        p.error("--swa-pattern must be >= 0")
    for flag, val in (("--attn-softcap", cfg.attn_softcap),
                      ("--final-softcap", cfg.final_softcap)):
        if val is not None and not val > 0:
            p.error("%s must be > 0" % flag)
    if cfg.tokenizer is None:
        cfg.tokenizer = ("llama" if cfg.arch in ("llama", "gemma4", "phi3")
                         or gemma or bitnet else "gpt2")
    if cfg.head_dim is None:
        if cfg.dim % cfg.heads:
            p.error("--dim must be a multiple of --heads (or give --head-dim)")
        cfg.head_dim = cfg.dim // cfg.heads
    if cfg.embd_std is None:
        cfg.embd_std = float(1.0 / np.sqrt(cfg.dim)) if cfg.tied else 1.0
    if cfg.rope_dims is None:
        cfg.rope_dims = cfg.head_dim
    if cfg.heads % cfg.kv_heads:
        p.error("--heads must be a multiple of --kv-heads")
    if cfg.rope_dims % 2 or not 0 < cfg.rope_dims <= cfg.head_dim:
        p.error("--rope-dims must be even and in (0, head_dim]")
    if cfg.arch == "gemma4":
        _gemma4_args(p, cfg, asked_untied)
    moe_flags = (cfg.experts_used, cfg.expert_weights_scale, cfg.router_tie,
                 cfg.router_near_tie, cfg.poison_expert)
    if cfg.arch == "qwen3moe" and cfg.experts is None:
        cfg.experts = 8
    if cfg.experts is None:
        if any(v is not None for v in moe_flags) or getattr(
                cfg, "moe_layers", None) is not None or getattr(
                cfg, "merged_gate_up", None) or cfg.separate_experts:
            p.error("the expert options need --experts (or --arch qwen3moe)")
    elif cfg.separate_experts and cfg.arch == "gemma4":
        p.error("--separate-experts applies to --arch llama/qwen3moe only")
    else:
        if cfg.arch not in ("llama", "qwen3moe", "gemma4"):
            p.error("--experts applies to --arch llama/qwen3moe/gemma4 only")
        if cfg.experts_used is None:
            cfg.experts_used = 2
        if not 1 <= cfg.experts_used <= cfg.experts:
            p.error("--experts-used must be in [1, --experts]")
        if cfg.expert_ffn is None:
            cfg.expert_ffn = (cfg.ffn // cfg.experts_used
                              if cfg.arch in ("qwen3moe", "gemma4") else cfg.ffn)
        poisoned = []
        for spec in cfg.poison_expert or ():
            try:
                layer, expert = (int(v) for v in spec.split(":"))
            except ValueError:
                p.error("--poison-expert takes LAYER:EXPERT, got %r" % spec)
            if not (0 <= layer < cfg.layers and 0 <= expert < cfg.experts):
                p.error("--poison-expert %s is outside the layers or experts" % spec)
            poisoned.append((layer, expert))
        cfg.poison_expert = poisoned
        if cfg.arch == "gemma4":
            cfg.moe_layers = (list(range(cfg.layers)) if cfg.moe_layers is None
                              else [int(v) for v in cfg.moe_layers.split(",")])
            if any(not 0 <= v < cfg.layers for v in cfg.moe_layers):
                p.error("--moe-layers names a layer outside [0, --layers)")
        for layer in (cfg.router_tie or []) + (cfg.router_near_tie or []):
            if not 0 <= layer < cfg.layers:
                p.error("--router-tie/--router-near-tie %d is not a layer" % layer)
    if cfg.arch == "phi3":
        if cfg.head_dim * cfg.heads != cfg.dim:
            p.error("--head-dim: llama.cpp's phi3 needs head_dim * heads == "
                    "dim (attn_output is dim x dim)")
        if cfg.long_rope is not None and not 0 < cfg.long_rope < cfg.ctx:
            p.error("--long-rope ORIG must be in (0, --ctx)")
    if cfg.name is None:
        cfg.name = "hesper-synthetic-%s-%s" % (cfg.arch, cfg.type)
    return cfg


# gemma4-only command-line options: (flag, cfg attribute)
GEMMA4_OPTS = (("--per-layer-dim", "per_layer_dim"),
               ("--shared-kv-layers", "shared_kv_layers"),
               ("--head-dim-swa", "head_dim_swa"),
               ("--rope-dims-swa", "rope_dims_swa"),
               ("--kv-heads-per-layer", "kv_heads_per_layer"),
               ("--ffn-per-layer", "ffn_per_layer"),
               ("--no-attn-v", "no_attn_v"),
               ("--layer-output-scale", "layer_output_scale"),
               ("--moe-layers", "moe_layers"),
               ("--merged-gate-up", "merged_gate_up"))


def _int_list(p, flag, text, n):
    try:
        vals = [int(v) for v in text.replace(" ", "").split(",") if v != ""]
    except ValueError:
        p.error("%s: a comma list of integers" % flag)
    if len(vals) != n:
        p.error("%s: %d values for %d layers" % (flag, len(vals), n))
    return vals


def gemma4_layout(cfg):
    """Per-layer facts of a gemma4 cfg: dict of lists (swa, head_dim, n_rot,
    kv_heads, ffn, owner).  owner[il] is the layer whose KV cache layer il
    reads: il itself below n_layer - shared_kv_layers, else llama.cpp's
    reuse rule n_kv_from_start - (2 if SWA else 1)."""
    L = cfg.layers
    P = cfg.swa_pattern
    swa = [il % P < P - 1 for il in range(L)]
    n_kv = L - cfg.shared_kv_layers
    owner = [il if il < n_kv else n_kv - (2 if swa[il] else 1) for il in range(L)]
    return dict(
        swa=swa,
        head_dim=[cfg.head_dim_swa if s else cfg.head_dim for s in swa],
        n_rot=[cfg.rope_dims_swa if s else cfg.rope_dims for s in swa],
        kv_heads=list(cfg.kv_heads_list), ffn=list(cfg.ffn_list), owner=owner,
        n_kv=n_kv)


def _gemma4_args(p, cfg, asked_untied):
    """Defaults and checks of --arch gemma4 (after the common ones)."""
    if cfg.rope_scale is not None:
        p.error("--rope-scale: not supported for gemma4 (its full layers use "
                "rope_freqs factors instead)")
    if cfg.rope_base_swa is None:
        cfg.rope_base_swa = 10000.0
    if cfg.sliding_window is None:
        cfg.sliding_window = 512
    if cfg.sliding_window < 1:
        p.error("--sliding-window must be >= 1 for gemma4")
    if cfg.swa_pattern is None:
        cfg.swa_pattern = 2
    if cfg.swa_pattern < 1:
        p.error("--swa-pattern must be >= 1 for gemma4 (1: every layer full)")
    if cfg.final_softcap is None:
        cfg.final_softcap = 30.0
    if cfg.per_layer_dim is None:
        cfg.per_layer_dim = 16
    if cfg.per_layer_dim < 0:
        p.error("--per-layer-dim must be >= 0")
    if cfg.shared_kv_layers is None:
        cfg.shared_kv_layers = 0
    cfg.no_attn_v = bool(cfg.no_attn_v)
    cfg.layer_output_scale = bool(cfg.layer_output_scale)
    if cfg.head_dim_swa is None:
        cfg.head_dim_swa = cfg.head_dim
    if cfg.rope_dims_swa is None:
        cfg.rope_dims_swa = cfg.head_dim_swa
    if cfg.rope_dims_swa % 2 or not 0 < cfg.rope_dims_swa <= cfg.head_dim_swa:
        p.error("--rope-dims-swa must be even and in (0, head_dim_swa]")
    L = cfg.layers
    cfg.kv_heads_list = ([cfg.kv_heads] * L if cfg.kv_heads_per_layer is None else
                         _int_list(p, "--kv-heads-per-layer", cfg.kv_heads_per_layer, L))
    cfg.ffn_list = ([cfg.ffn] * L if cfg.ffn_per_layer is None else
                    _int_list(p, "--ffn-per-layer", cfg.ffn_per_layer, L))
    for n in cfg.kv_heads_list:
        if n < 1 or cfg.heads % n:
            p.error("--kv-heads-per-layer: each must divide --heads")
    if min(cfg.ffn_list) < 1:
        p.error("--ffn-per-layer: each must be >= 1")
    if not 0 <= cfg.shared_kv_layers < L:
        p.error("--shared-kv-layers must be in [0, layers)")
    lay = gemma4_layout(cfg)
    for il in range(lay["n_kv"], L):
        o = lay["owner"][il]
        if o < 0 or lay["swa"][o] != lay["swa"][il]:
            p.error("--shared-kv-layers: layer %d (%s) would read layer %d's "
                    "cache, which is not a %s layer (llama.cpp's rule: "
                    "n_kv - 2 for SWA, n_kv - 1 for full layers)"
                    % (il, "SWA" if lay["swa"][il] else "full", o,
                       "SWA" if lay["swa"][il] else "full"))
        if lay["kv_heads"][o] != lay["kv_heads"][il]:
            p.error("--kv-heads-per-layer: shared layer %d must have the KV "
                    "head count of layer %d" % (il, o))


def make_weights(cfg):
    """Seeded float32 weights: list of (tensor name, numpy array).
    numpy shape is the reverse of ggml's dims: a matrix with ggml dims
    [n_in, n_out] is an (n_out, n_in) array and computes y = W @ x."""
    rng = np.random.default_rng(cfg.seed)
    if cfg.arch == "bitnet":
        return _bitnet_weights(cfg, rng)
    if cfg.arch == "gemma4":
        return _gemma4_weights(cfg, rng)
    if cfg.arch == "phi3":
        return _fuse_phi3(cfg, _llama_weights(cfg, rng))
    if getattr(cfg, "experts", None):
        return _moe_weights(cfg, _llama_weights(cfg, rng), rng)
    return _llama_weights(cfg, rng)


def _llama_weights(cfg, rng):
    """The llama set (with qwen2's biases, qwen3/gemma3's Q/K norms and
    gemma2/gemma3's post norms where the arch has them)."""
    hd, d = cfg.head_dim, cfg.dim

    def mat(n_out, n_in):
        w = rng.standard_normal((n_out, n_in), dtype=np.float32)
        w *= np.float32(1.0 / np.sqrt(n_in))
        return w

    def norm(n):
        return (1.0 + 0.1 * rng.standard_normal(n, dtype=np.float32)).astype(np.float32)

    def bias(n):
        return (0.2 * rng.standard_normal(n, dtype=np.float32)).astype(np.float32)

    # gemma2/gemma3 normalise the attention and FFN outputs before adding
    # them to the residual stream
    post_norms = cfg.arch in ("gemma2", "gemma3")
    embd = rng.standard_normal((cfg.vocab, d), dtype=np.float32)
    embd *= np.float32(cfg.embd_std)
    out = [("token_embd.weight", embd)]
    for i in range(cfg.layers):
        b = "blk.%d." % i
        out.append((b + "attn_norm.weight", norm(d)))
        out.append((b + "attn_q.weight", mat(cfg.heads * hd, d)))
        out.append((b + "attn_k.weight", mat(cfg.kv_heads * hd, d)))
        out.append((b + "attn_v.weight", mat(cfg.kv_heads * hd, d)))
        if cfg.arch == "qwen2":
            out.append((b + "attn_q.bias", bias(cfg.heads * hd)))
            out.append((b + "attn_k.bias", bias(cfg.kv_heads * hd)))
            out.append((b + "attn_v.bias", bias(cfg.kv_heads * hd)))
        if cfg.arch in ("qwen3", "gemma3", "qwen3moe"):
            out.append((b + "attn_q_norm.weight", norm(hd)))
            out.append((b + "attn_k_norm.weight", norm(hd)))
        out.append((b + "attn_output.weight", mat(d, cfg.heads * hd)))
        if post_norms:
            out.append((b + "post_attention_norm.weight", norm(d)))
        out.append((b + "ffn_norm.weight", norm(d)))
        out.append((b + "ffn_gate.weight", mat(cfg.ffn, d)))
        out.append((b + "ffn_up.weight", mat(cfg.ffn, d)))
        out.append((b + "ffn_down.weight", mat(d, cfg.ffn)))
        if post_norms:
            out.append((b + "post_ffw_norm.weight", norm(d)))
    out.append(("output_norm.weight", norm(d)))
    if not cfg.tied:
        out.append(("output.weight", mat(cfg.vocab, d)))
    return out


def _router_and_experts(cfg, rng, layer):
    """Layer `layer`'s router [E, dim] (N(0,1) * 2/sqrt(dim); --router-tie
    and --router-near-tie applied) and its experts' gate and up [E, F, dim]
    and down [E, dim, F] (--poison-expert applied), drawn in that order."""
    E, F, d = cfg.experts, cfg.expert_ffn, cfg.dim

    def mats(n_out, n_in):
        w = rng.standard_normal((E, n_out, n_in), dtype=np.float32)
        w *= np.float32(1.0 / np.sqrt(n_in))
        return w

    router = rng.standard_normal((E, d), dtype=np.float32)
    router *= np.float32(2.0 / np.sqrt(d))
    if layer in (cfg.router_tie or []) or layer in (cfg.router_near_tie or []):
        router[:] = router[0]
        if layer in (cfg.router_near_tie or []):
            router[E - 1] *= np.float32(1.001)
    gate, up, down = mats(F, d), mats(F, d), mats(d, F)
    for pl, pe in cfg.poison_expert or ():
        if pl == layer:
            gate[pe] = up[pe] = down[pe] = np.nan
    return router, gate, up, down


def _moe_weights(cfg, llama, rng):
    """qwen3moe, or llama with experts: the dense FFN of the llama set is
    replaced by blk.N.ffn_gate_inp [dim, E] (the router), ffn_gate_exps and
    ffn_up_exps [dim, F, E] and ffn_down_exps [F, dim, E] (numpy: the
    experts' matrices stacked on the first axis), drawn after the rest."""
    out = []
    for name, arr in llama:
        parts = name.split(".")
        what = parts[2] if parts[0] == "blk" else ""
        if what in ("ffn_gate", "ffn_up"):
            continue
        if what != "ffn_down":
            out.append((name, arr))
            continue
        layer = int(parts[1])
        b = "blk.%d." % layer
        router, gate, up, down = _router_and_experts(cfg, rng, layer)
        out.append((b + "ffn_gate_inp.weight", router))
        stems = (("ffn_gate", gate), ("ffn_up", up), ("ffn_down", down))
        if cfg.separate_experts == "interleaved":
            out += [(b + "%s.%d.weight" % (stem, e), mats[e])
                    for e in range(len(gate)) for stem, mats in stems]
        elif cfg.separate_experts:
            out += [(b + "%s.%d.weight" % (stem, e), mats[e])
                    for stem, mats in stems for e in range(len(mats))]
        else:
            out += [(b + stem + "_exps.weight", mats) for stem, mats in stems]
    return out


def phi3_rope_factors(n_pairs):
    """rope_factors_short / _long of a synthetic phi3 file: near 1 for the
    short ones, rising from 1 to 16 over the pairs (lower frequencies
    stretched most, as LongRoPE's long factors are) for the long ones."""
    j = np.arange(n_pairs, dtype=np.float64) / max(n_pairs - 1, 1)
    short = (1.0 + 0.25 * j).astype(np.float32)
    long_ = np.exp(j * np.log(16.0)).astype(np.float32)
    return short, long_


def phi3_attn_factor(ctx, orig):
    """rope.scaling.attn_factor as llama.cpp's converter derives it for a
    LongRoPE ("su"/"longrope") Phi-3: sqrt(1 + ln(s) / ln(orig)), s =
    ctx / orig, 1 when s <= 1."""
    scale = ctx / orig
    if scale <= 1.0:
        return 1.0
    return float(np.sqrt(1.0 + np.log(scale) / np.log(orig)))


def _fuse_phi3(cfg, llama):
    """phi3's tensors from the llama set (same seeded values): Q, K and V
    rows stacked into blk.N.attn_qkv.weight (unless --separate-qkv), gate
    then up rows into blk.N.ffn_up.weight; with --long-rope the two factor
    tables after token_embd."""
    by = dict(llama)
    out = []
    for name, arr in llama:
        parts = name.split(".")
        what = parts[2] if parts[0] == "blk" else ""
        b = "blk.%s." % parts[1] if what else ""
        if what == "ffn_gate":
            continue                        # the first half of ffn_up
        if what == "ffn_up":
            arr = np.concatenate([by[b + "ffn_gate.weight"], arr], axis=0)
        elif what in ("attn_q", "attn_k", "attn_v") and not cfg.separate_qkv:
            if what != "attn_q":
                continue                    # in attn_qkv after Q
            name = b + "attn_qkv.weight"
            arr = np.concatenate([by[b + "attn_q.weight"], by[b + "attn_k.weight"],
                                  by[b + "attn_v.weight"]], axis=0)
        out.append((name, arr))
        if name == "token_embd.weight" and cfg.long_rope is not None:
            short, long_ = phi3_rope_factors(cfg.rope_dims // 2)
            out.append(("rope_factors_long.weight", long_))
            out.append(("rope_factors_short.weight", short))
    return out


def _bitnet_weights(cfg, rng):
    """bitnet: the llama set plus attn_sub_norm [dim] and ffn_sub_norm [ffn];
    no output.weight.  Each projection is W = s * T, T uniform over
    {-1, 0, +1}, s = sqrt(1.5 / n_in) * exp(0.1 N(0,1)) rounded to an f16
    value (so TQ1_0/TQ2_0/I2_S all store it exactly).  With --scale-tensors
    the .weight holds T and blk.N.<proj>.scale = [s]."""
    hd, d = cfg.head_dim, cfg.dim

    def norm(n):
        return (1.0 + 0.1 * rng.standard_normal(n, dtype=np.float32)).astype(np.float32)

    def ternary(name, n_out, n_in):
        s = np.float32(np.float16(np.sqrt(1.5 / n_in) * np.exp(0.1 * rng.standard_normal())))
        t = rng.integers(-1, 2, size=(n_out, n_in)).astype(np.float32)
        if cfg.scale_tensors:
            return [(name + ".weight", t), (name + ".scale", np.array([s], np.float32))]
        return [(name + ".weight", t * s)]

    embd = rng.standard_normal((cfg.vocab, d), dtype=np.float32)
    embd *= np.float32(cfg.embd_std)
    out = [("token_embd.weight", embd)]
    for i in range(cfg.layers):
        b = "blk.%d." % i
        out.append((b + "attn_norm.weight", norm(d)))
        out += ternary(b + "attn_q", cfg.heads * hd, d)
        out += ternary(b + "attn_k", cfg.kv_heads * hd, d)
        out += ternary(b + "attn_v", cfg.kv_heads * hd, d)
        out.append((b + "attn_sub_norm.weight", norm(cfg.heads * hd)))
        out += ternary(b + "attn_output", d, cfg.heads * hd)
        out.append((b + "ffn_norm.weight", norm(d)))
        out += ternary(b + "ffn_gate", cfg.ffn, d)
        out += ternary(b + "ffn_up", cfg.ffn, d)
        out.append((b + "ffn_sub_norm.weight", norm(cfg.ffn)))
        out += ternary(b + "ffn_down", d, cfg.ffn)
    out.append(("output_norm.weight", norm(d)))
    return out


def gemma4_rope_factors(n_pairs, n_rot_pairs):
    """rope_freqs.weight of a synthetic gemma4 file (n_pairs = full head
    size / 2): 1 on the first half of the rotated pairs, then 2, 4, 8
    repeating (lower frequencies, as proportional RoPE does), and 1e30 on the
    last rotated pair (angle ~0: a pair left unrotated, as in real files)."""
    f = np.ones(n_pairs, np.float32)
    half = n_rot_pairs // 2
    for j in range(half, n_rot_pairs):
        f[j] = 2.0 ** (1 + (j - half) % 3)
    if n_rot_pairs >= 2:
        f[n_rot_pairs - 1] = 1e30
    return f


def _gemma4_weights(cfg, rng):
    """gemma4 (dense): see the module docstring for the tensor list."""
    d, P, L = cfg.dim, cfg.per_layer_dim, cfg.layers
    lay = gemma4_layout(cfg)

    def mat(n_out, n_in):
        w = rng.standard_normal((n_out, n_in), dtype=np.float32)
        w *= np.float32(1.0 / np.sqrt(n_in))
        return w

    def norm(n):
        return (1.0 + 0.1 * rng.standard_normal(n, dtype=np.float32)).astype(np.float32)

    embd = rng.standard_normal((cfg.vocab, d), dtype=np.float32)
    embd *= np.float32(cfg.embd_std)
    out = [("token_embd.weight", embd)]
    if P > 0:
        ple = rng.standard_normal((cfg.vocab, P * L), dtype=np.float32)
        ple *= np.float32(1.0 / np.sqrt(P))
        out.append(("per_layer_token_embd.weight", ple))
        out.append(("per_layer_model_proj.weight", mat(P * L, d)))
        out.append(("per_layer_proj_norm.weight", norm(P)))
    if not all(lay["swa"]):
        out.append(("rope_freqs.weight",
                    gemma4_rope_factors(cfg.head_dim // 2, cfg.rope_dims // 2)))
    for i in range(L):
        b = "blk.%d." % i
        hd, kvh, ff = lay["head_dim"][i], lay["kv_heads"][i], lay["ffn"][i]
        own = lay["owner"][i] == i
        out.append((b + "attn_norm.weight", norm(d)))
        out.append((b + "attn_q.weight", mat(cfg.heads * hd, d)))
        if own:
            out.append((b + "attn_k.weight", mat(kvh * hd, d)))
            if not cfg.no_attn_v:
                out.append((b + "attn_v.weight", mat(kvh * hd, d)))
        out.append((b + "attn_q_norm.weight", norm(hd)))
        if own:
            out.append((b + "attn_k_norm.weight", norm(hd)))
        out.append((b + "attn_output.weight", mat(d, cfg.heads * hd)))
        out.append((b + "post_attention_norm.weight", norm(d)))
        out.append((b + "ffn_norm.weight", norm(d)))
        out.append((b + "ffn_gate.weight", mat(ff, d)))
        out.append((b + "ffn_up.weight", mat(ff, d)))
        out.append((b + "ffn_down.weight", mat(d, ff)))
        out.append((b + "post_ffw_norm.weight", norm(d)))
        if P > 0:
            out.append((b + "inp_gate.weight", mat(P, d)))
            out.append((b + "proj.weight", mat(d, P)))
            out.append((b + "post_norm.weight", norm(d)))
        if cfg.layer_output_scale:
            s = 0.5 + 0.5 * rng.random()
            out.append((b + "layer_output_scale.weight", np.array([s], np.float32)))
        if cfg.experts and i in cfg.moe_layers:
            out += _gemma4_experts(cfg, rng, i, norm)
    out.append(("output_norm.weight", norm(d)))
    if not cfg.tied:
        out.append(("output.weight", mat(cfg.vocab, d)))
    return out


def _gemma4_experts(cfg, rng, layer, norm):
    """A gemma4 MoE layer's tensors beside its dense FFN: the router
    ffn_gate_inp [dim, E] and its input scale ffn_gate_inp.scale [dim],
    pre_ffw_norm_2 / post_ffw_norm_1 / post_ffw_norm_2 [dim], the experts
    (ffn_gate_exps and ffn_up_exps [dim, F, E], or one ffn_gate_up_exps
    [dim, 2F, E] with each expert's gate rows before its up rows) and
    ffn_down_exps [F, dim, E], and ffn_down_exps.scale [E]."""
    E, d = cfg.experts, cfg.dim
    b = "blk.%d." % layer
    router, gate, up, down = _router_and_experts(cfg, rng, layer)
    # The router reads rms_norm(x) / sqrt(dim) * scale: scale ~ sqrt(dim)
    # keeps its logits O(1).
    scale = (np.sqrt(d) * (1.0 + 0.1 * rng.standard_normal(d))).astype(np.float32)
    out_scale = (0.5 + rng.random(E)).astype(np.float32)
    out = [(b + "ffn_gate_inp.weight", router), (b + "ffn_gate_inp.scale", scale),
           (b + "pre_ffw_norm_2.weight", norm(d)),
           (b + "post_ffw_norm_1.weight", norm(d)),
           (b + "post_ffw_norm_2.weight", norm(d))]
    if cfg.merged_gate_up:
        out.append((b + "ffn_gate_up_exps.weight", np.concatenate([gate, up], axis=1)))
    else:
        out += [(b + "ffn_gate_exps.weight", gate), (b + "ffn_up_exps.weight", up)]
    out += [(b + "ffn_down_exps.weight", down), (b + "ffn_down_exps.scale", out_scale)]
    return out


def is_bitnet_projection(name):
    """blk.N.<proj>.weight for one of BITNET_PROJ."""
    parts = name.split(".")
    return (len(parts) == 4 and parts[0] == "blk" and parts[2] in BITNET_PROJ
            and parts[3] == "weight")


def storage_types(name, arr, type_name, overrides=()):
    """(intended, actual) storage type of a tensor: 1-D tensors are f32; a
    matrix whose name matches an override's glob takes its type (the first
    match); with a ternary type only the bitnet projections are ternary and
    every other matrix (token_embd) is f16, as in llama.cpp's BitNet files;
    a row length that is not a multiple of the block size falls back to
    f32."""
    if arr.ndim < 2:
        return "f32", "f32"
    for pattern, tname in overrides:
        if fnmatch.fnmatchcase(name, pattern):
            return tname, tensor_type_for(arr, tname)
    if type_name in TERNARY_TYPES and not is_bitnet_projection(name):
        return "f16", "f16"
    return type_name, tensor_type_for(arr, type_name)


def tensor_type_for(arr, type_name):
    """Storage type actually used for a tensor (1-D and misfits -> f32)."""
    if arr.ndim < 2:
        return "f32"
    block = TYPES[type_name][1]
    if arr.shape[-1] % block:
        return "f32"
    return type_name


def build_metadata(cfg, tok):
    a = cfg.arch
    kv = [
        ("general.architecture", MT_STRING, a),
        ("general.name", MT_STRING, cfg.name),
        ("general.alignment", MT_UINT32, GGUF_DEFAULT_ALIGNMENT),
        ("general.file_type", MT_UINT32, TYPES[cfg.type][3]),
        ("general.quantization_version", MT_UINT32, 2),
        (a + ".vocab_size", MT_UINT32, cfg.vocab),
        (a + ".context_length", MT_UINT32, cfg.ctx),
        (a + ".embedding_length", MT_UINT32, cfg.dim),
        (a + ".block_count", MT_UINT32, cfg.layers),
        (a + ".feed_forward_length", MT_UINT32, cfg.ffn),
        (a + ".attention.head_count", MT_UINT32, cfg.heads),
        (a + ".attention.head_count_kv", MT_UINT32, cfg.kv_heads),
        (a + ".attention.layer_norm_rms_epsilon", MT_FLOAT32, cfg.eps),
        (a + ".rope.freq_base", MT_FLOAT32, cfg.rope_base),
        (a + ".rope.dimension_count", MT_UINT32, cfg.rope_dims),
    ]
    if cfg.head_dim * cfg.heads != cfg.dim:
        kv.append((a + ".attention.key_length", MT_UINT32, cfg.head_dim))
        kv.append((a + ".attention.value_length", MT_UINT32, cfg.head_dim))
    rope_scale = cfg.rope_scale
    if rope_scale is None and a == "bitnet":
        rope_scale = 1.0        # llama.cpp's converter writes linear / 1.0
    if rope_scale is not None:
        kv.append((a + ".rope.scaling.type", MT_STRING, "linear"))
        kv.append((a + ".rope.scaling.factor", MT_FLOAT32, rope_scale))
    if getattr(cfg, "hidden_act", None) not in (None, "none"):
        kv.append((a + ".hidden_activation", MT_STRING, cfg.hidden_act))
    if a == "gemma4":
        _gemma4_metadata(cfg, kv)
    else:
        _gemma_extras(cfg, kv)
    if getattr(cfg, "experts", None):
        kv.append((a + ".expert_count", MT_UINT32, cfg.experts))
        kv.append((a + ".expert_used_count", MT_UINT32, cfg.experts_used))
        if a in ("qwen3moe", "gemma4"):
            kv.append((a + ".expert_feed_forward_length", MT_UINT32, cfg.expert_ffn))
        if cfg.expert_weights_scale is not None:
            kv.append((a + ".expert_weights_scale", MT_FLOAT32,
                       cfg.expert_weights_scale))
    if a == "phi3" and cfg.long_rope is not None:
        kv.append((a + ".rope.scaling.attn_factor", MT_FLOAT32,
                   phi3_attn_factor(cfg.ctx, cfg.long_rope)))
        kv.append((a + ".rope.scaling.original_context_length", MT_UINT32,
                   cfg.long_rope))
    kv.append(("tokenizer.ggml.model", MT_STRING, tok["model"]))
    if tok["model"] == "gpt2":
        kv.append(("tokenizer.ggml.pre", MT_STRING, cfg.pre))
    kv.append(("tokenizer.ggml.tokens", MT_ARRAY, (MT_STRING, tok["tokens"])))
    if tok["scores"] is not None:
        kv.append(("tokenizer.ggml.scores", MT_ARRAY, (MT_FLOAT32, tok["scores"])))
    kv.append(("tokenizer.ggml.token_type", MT_ARRAY, (MT_INT32, tok["types"])))
    if tok["merges"] is not None:
        kv.append(("tokenizer.ggml.merges", MT_ARRAY, (MT_STRING, tok["merges"])))
    kv.append(("tokenizer.ggml.bos_token_id", MT_UINT32, tok["bos"]))
    kv.append(("tokenizer.ggml.eos_token_id", MT_UINT32, tok["eos"]))
    if tok["unk"] is not None:
        kv.append(("tokenizer.ggml.unknown_token_id", MT_UINT32, tok["unk"]))
    kv.append(("tokenizer.ggml.padding_token_id", MT_UINT32, tok["pad"]))
    kv.append(("tokenizer.ggml.add_bos_token", MT_BOOL, tok["add_bos"]))
    kv.append(("tokenizer.ggml.add_eos_token", MT_BOOL, False))
    if a.startswith("gemma") and tok["model"] == "llama":
        # Gemma's files say so: no space before the text that follows BOS
        # or a turn marker.
        kv.append(("tokenizer.ggml.add_space_prefix", MT_BOOL, False))
    if getattr(cfg, "chat_template", None):
        kv.append(("tokenizer.chat_template", MT_STRING,
                   CHAT_TEMPLATES[cfg.chat_template][0]))
    return kv


def _gemma_extras(cfg, kv):
    """gemma2/gemma3 keys; parse_args leaves these None for archs without
    them."""
    a = cfg.arch
    if getattr(cfg, "rope_base_swa", None) is not None:
        kv.append((a + ".rope.freq_base_swa", MT_FLOAT32, cfg.rope_base_swa))
    if getattr(cfg, "sliding_window", None) is not None:
        kv.append((a + ".attention.sliding_window", MT_UINT32, cfg.sliding_window))
    if getattr(cfg, "swa_pattern", None) is not None:
        kv.append((a + ".attention.sliding_window_pattern", MT_UINT32,
                   cfg.swa_pattern))
    if getattr(cfg, "attn_softcap", None) is not None:
        kv.append((a + ".attn_logit_softcapping", MT_FLOAT32, cfg.attn_softcap))
    if getattr(cfg, "final_softcap", None) is not None:
        kv.append((a + ".final_logit_softcapping", MT_FLOAT32, cfg.final_softcap))


def _gemma4_metadata(cfg, kv):
    """gemma4 keys (llama-arch.cpp's names): per-layer arrays replace the
    scalar head_count_kv / feed_forward_length when given; the SWA pattern is
    a bool array (true = sliding-window layer)."""
    a = cfg.arch
    lay = gemma4_layout(cfg)
    arrays = {}
    if cfg.kv_heads_per_layer is not None:
        arrays[a + ".attention.head_count_kv"] = lay["kv_heads"]
    if cfg.ffn_per_layer is not None:
        arrays[a + ".feed_forward_length"] = lay["ffn"]
    for i, (key, vt, val) in enumerate(kv):
        if key in arrays:
            kv[i] = (key, MT_ARRAY, (MT_UINT32, arrays[key]))
    have = set(k for k, _, _ in kv)
    for key, val in ((".attention.key_length", cfg.head_dim),
                     (".attention.value_length", cfg.head_dim)):
        if a + key not in have:
            kv.append((a + key, MT_UINT32, val))
    kv += [
        (a + ".attention.key_length_swa", MT_UINT32, cfg.head_dim_swa),
        (a + ".attention.value_length_swa", MT_UINT32, cfg.head_dim_swa),
        (a + ".rope.dimension_count_swa", MT_UINT32, cfg.rope_dims_swa),
        (a + ".rope.freq_base_swa", MT_FLOAT32, cfg.rope_base_swa),
        (a + ".attention.sliding_window", MT_UINT32, cfg.sliding_window),
        (a + ".attention.sliding_window_pattern", MT_ARRAY, (MT_BOOL, lay["swa"])),
        (a + ".attention.shared_kv_layers", MT_UINT32, cfg.shared_kv_layers),
        (a + ".embedding_length_per_layer_input", MT_UINT32, cfg.per_layer_dim),
        (a + ".final_logit_softcapping", MT_FLOAT32, cfg.final_softcap),
    ]


def write_model(cfg, log=None):
    """Generate and write the model described by cfg.  Returns a summary."""
    t0 = time.time()
    if log is None:
        log = (lambda msg: None) if cfg.quiet else (lambda msg: print(msg, file=sys.stderr))
    if cfg.rope_dims != cfg.head_dim and cfg.arch not in ("gemma4", "phi3"):
        log("warning: rope.dimension_count %d != head dim %d; llama.cpp itself "
            "rejects partial rotary for %s" % (cfg.rope_dims, cfg.head_dim, cfg.arch))
    tok = build_spm_vocab(cfg.vocab) if cfg.tokenizer == "llama" else build_gpt2_vocab(cfg.vocab)
    if getattr(cfg, "chat_template", None):
        add_control_tokens(tok, CHAT_TEMPLATES[cfg.chat_template][1])
    weights = make_weights(cfg)
    tensors = []
    n_params = 0
    fallbacks = []
    for name, arr in weights:
        want, tname = storage_types(name, arr, cfg.type,
                                    getattr(cfg, "tensor_types", ()))
        if tname != want:
            fallbacks.append(name)
            log("note: %s row length %d is not a multiple of the %s block size %d;"
                " stored as f32" % (name, arr.shape[-1], want, TYPES[want][1]))
        tensors.append((name, list(arr.shape[::-1]), TYPES[tname][0],
                        encode_tensor(arr, tname)))
        n_params += arr.size
    write_gguf(cfg.out, build_metadata(cfg, tok), tensors)
    info = dict(path=cfg.out, params=n_params, tensors=len(tensors),
                fallbacks=fallbacks, seconds=time.time() - t0)
    log("wrote %s: %s %s, %d tensors, %.2fM params, %.2fs" % (
        cfg.out, cfg.arch, cfg.type, len(tensors), n_params / 1e6, info["seconds"]))
    return info


def main(argv=None):
    write_model(parse_args(argv))
    return 0


if __name__ == "__main__":
    sys.exit(main())
