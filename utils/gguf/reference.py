#!/usr/bin/env python3
"""NumPy reference forward pass for Llama-, Gemma- (1 to 4), BitNet- and Phi-3-family GGUF models.

This file deliberately shares no code with make_model.py: it has its own
GGUF reader and its own dequantizers, so it can serve as an oracle for both
the writer and the C++ runtime.

GGUF reader: versions 2 and 3 (little-endian), every metadata value type
(u8..u64, i8..i64, f32, f64, bool, string, nested arrays), general.alignment.
Dequantizers for F32, F16, BF16, Q8_0, Q4_0, IQ4_NL, IQ4_XS, Q4_K, Q5_K, Q6_K
reproduce
ggml's dequantize_row_* bit for bit (float32 arithmetic in the same order,
no fused multiply-add); so do those of the ternary TQ1_0 (34), TQ2_0 (35)
and the BitNet fork's I2_S (36: n/4 packed bytes, then the per-tensor f32
scale padded to 32 bytes), layouts in docs/BitNet-formats.md.

Forward pass (float64 throughout, weights dequantized to float32 first),
following llama.cpp's graphs for LLM_ARCH_LLAMA, LLM_ARCH_QWEN2,
LLM_ARCH_QWEN3, LLM_ARCH_GEMMA, LLM_ARCH_GEMMA2, LLM_ARCH_GEMMA3 and
LLM_ARCH_BITNET (src/models/*.cpp, llama_model::load_hparams,
llama_model_rope_type); bitnet's differences are listed after this one:

    x = token_embd[token]                        llama, qwen*: no embedding scale
        gemma*: x = token_embd[token] * sqrt(n_embd)
    for each layer il:
        h = rmsnorm(x) * attn_norm               rmsnorm(v) = v / sqrt(mean(v^2) + eps)
        q = Wq h, k = Wk h, v = Wv h             (+ attn_{q,k,v}.bias for qwen2)
        qwen3, gemma3: q, k <- per-head rmsnorm(.) * attn_{q,k}_norm (same eps),
            before RoPE
        RoPE on q and k, per head, first n_rot = rope.dimension_count dims only
            (the rest pass through unchanged):
            llama -> "normal" rope: pairs (2i, 2i+1)
            qwen2, qwen3, gemma* -> NeoX rope: pairs (i, i + n_rot/2)
            angle_i = (pos / scale) * base^(-2i/n_rot), i < n_rot/2,
            scale = rope.scaling.factor when rope.scaling.type is linear, else 1
            (x0, x1) -> (x0 cos - x1 sin, x0 sin + x1 cos)
            base = rope.freq_base, except on sliding-window layers (below):
                gemma2: rope.freq_base_swa if present (same scale)
                gemma3: rope.freq_base_swa if present, else 10000; scale 1
        GQA: query head h reads kv head h // (n_head / n_head_kv)
        scores = q.k / sqrt(head_dim_k); the 27B checkpoints (gemma2 with
            block_count 46, gemma3 with 62) use sqrt(n_embd / n_head) instead,
            integer division as in llama.cpp
        gemma2: scores = c tanh(scores / c), c = attn_logit_softcapping (50)
        causal mask (position p sees 0..p), softmax
        sliding-window layers see only positions t with p - t < W as well:
            gemma2: W = attention.sliding_window (4096 when absent)
            gemma3: W = attention.sliding_window; absent or 0: no such layers
            layer il slides iff il % P < P - 1 (P = 0: every layer), P =
            attention.sliding_window_pattern if present, else 2 (gemma2),
            6 (gemma3); gemma has none
        attn = sum_j p_j v_j ; a = Wo attn
        gemma2, gemma3: a = rmsnorm(a) * post_attention_norm
        x = x + a
        h = rmsnorm(x) * ffn_norm
        f = Wdown (act(Wgate h) * (Wup h))
            llama, qwen*: act = silu(z) = z / (1 + e^-z)
            gemma*: act = gelu_tanh(z) = 0.5 z (1 + tanh(sqrt(2/pi) (z + 0.044715 z^3)))
        gemma2, gemma3: f = rmsnorm(f) * post_ffw_norm
        x = x + f
    logits = Wout (rmsnorm(x) * output_norm)     Wout = token_embd if no output.weight
        (gemma, gemma2: always token_embd, as llama.cpp ignores output.weight)
    gemma2: logits = c tanh(logits / c), c = final_logit_softcapping (30)
    gemma3: the same when final_logit_softcapping is given (default: none);
    a cap of 0 means none

bitnet (llama.cpp's "bitnet", src/models/bitnet.cpp): NEOX RoPE, head always
token_embd, scores / sqrt(head_dim), and per layer
    q, k, v = (W h) * s       s = blk.N.attn_{q,k,v}.scale [1] when present
    a = (Wo (rmsnorm(attn) * attn_sub_norm)) * s_o
    f = act(Wgate h * s_g) * (Wup h * s_u)
        act by bitnet.hidden_activation: absent / silu -> silu, relu2 ->
        relu(z)^2 (bitnet-b1.58-2B-4T), relu -> relu; others refused
    f = (Wdown (rmsnorm(f) * ffn_sub_norm)) * s_d
--quantize-activations (bitnet only) multiplies the projections stored as
TQ1_0 / TQ2_0 with Q8_K activations (per 256 values: m = the value of
largest |x|, iscale = -127/m, q = round-half-even(iscale x), d = 1/iscale;
an exact integer sum per block times float32(d_w * d_y), blocks summed in
float32) and those stored
as I2_S with I8_S activations (per token: s = 127 / max|x|, q =
round-half-even(x s) in [-128, 127], float32(sum t q) / s * scale), as
llama.cpp's / BitNet's CPU kernels do; --quantize-activations=q8_1 instead
rounds the input of the I2_S and TQ2_0 projections (those of a multiple of
16 rows) to q8_1 blocks (below),
as hesper-run's integer kernels read it (the CPU target's default), and
keeps the other products exact.  Everything else (attention, the
f16 head) stays float64: llama.cpp's f16 head also rounds the activations
to f16, which is not mimicked.  In the other llama-family models (not
phi3, not the MoE FFNs) --quantize-activations rounds the input of every
Q8_0 or Q4_0 attention, FFN and output projection (rows of at most 7168;
Q4_K too, rows of a multiple of 256, Q2_K with rows of a multiple of 256 in
projections of a multiple of 16 rows, and Q6_K so in one-token steps) to
q8_1 blocks: per 32 values of
the row, in f32, d = max|x| / 127 and q = round-half-away(x / d) in
[-127, 127], read back as q * f16(d) -- what hesper-run
--quantize-activations feeds its integer kernels.

phi3 (llama.cpp's "phi3", src/models/phi3.cpp; Phi-3, Phi-3.5, Phi-4-mini):
the llama layer with NEOX RoPE, no biases, scores / sqrt(head_dim), and
    q, k, v = the row blocks [n_head*hd | n_head_kv*hd | n_head_kv*hd] of
        blk.N.attn_qkv.weight (or separate attn_q/k/v when it is absent)
    f = Wdown (silu(G h) * (U h)), G and U the first and second n_ff rows
        of blk.N.ffn_up.weight (no ffn_gate)
    RoPE angles divided by rope_factors_long.weight when the session's
        context (--ctx) exceeds rope.scaling.original_context_length (default
        context_length), else by rope_factors_short.weight (each optional)
    attention.sliding_window is ignored (llama.cpp disables phi3's window)
Any arch: rope.scaling.attn_factor (default 1) multiplies the cos and sin
of the rotated dimensions of q and k, as ggml_rope_ext's attn_factor does.

gemma4 (Gemma4Model, which Model(path) returns for such files;
docs/Gemma4-notes.md): x = token_embd[tok] * sqrt(n_embd); with P =
embedding_length_per_layer_input > 0 the per-layer inputs are
    pl[il] = (rmsnorm(chunk_il(per_layer_model_proj x / sqrt(n_embd)))
              * per_layer_proj_norm + chunk_il(per_layer_token_embd[tok]) * sqrt(P))
             / sqrt(2)
per layer: head count, KV head count and FFN width may be per-layer arrays;
sliding_window_pattern is a bool array (true = SWA); SWA layers use
key_length_swa, rope.dimension_count_swa, rope.freq_base_swa; full layers
key_length, rope.dimension_count, rope.freq_base with angles divided by
rope_freqs.weight.  q = rope(rmsnorm_head(Wq h) * attn_q_norm); layers
il < n_kv = n_layer - shared_kv_layers own a cache: k = rope(rmsnorm_head(Wk h)
* attn_k_norm), v = rmsnorm_head(Wv h) without weight (Wv h := Wk h without
attn_v); later layers read the cache of layer n_kv - 2 (SWA) / n_kv - 1
(full).  Scores unscaled (1.0), causal, window on SWA layers, no soft-cap;
x += rmsnorm(Wo a) * post_attention_norm; x += rmsnorm(GeGLU FFN) *
post_ffw_norm; x += rmsnorm(proj (gelu(inp_gate x) * pl[il])) * post_norm;
x *= layer_output_scale when present.  Head output.weight if present, else
token_embd; final soft-cap final_logit_softcapping (default 30, 0: none).  A
layer with ffn_gate_inp (the 26B-A4B-style MoE variant) adds experts beside
its dense FFN: with a = the residual after attention, the FFN's result is
post_ffw_norm(post_ffw_norm_1(dense) + post_ffw_norm_2(moe)), moe routed by
softmax(ffn_gate_inp (rmsnorm(a) / sqrt(n_embd) * ffn_gate_inp.scale)), top
expert_used_count renormalized, experts' GeGLU FFNs (ffn_gate_exps and
ffn_up_exps, or ffn_gate_up_exps split in halves) of pre_ffw_norm_2(a), each
times ffn_down_exps.scale[e] (Gemma4Model._experts).

Head sizes come from {arch}.attention.key_length / value_length when present,
else embedding_length / head_count.  llama.cpp requires n_rot == head dim for
these archs; partial rotary is implemented here the way ggml_rope does it.
The KV cache keeps every position, so incremental decoding applies the
sliding window over absolute positions exactly as a full-prompt pass does.

CLI
    reference.py MODEL.gguf --tokens 1,2,3 --dump-logits OUT.npy
        writes float32 logits [len(tokens), vocab], row p computed causally
    reference.py MODEL.gguf --tokens 1,2,3 --greedy 8
        additionally continues greedily (argmax, lowest id on ties) and prints
        "ids: a,b,c" (generated ids only; --stop-at-eos stops after eos)
    --ignore-window, --ignore-softcap
        compute a deliberately wrong model (no sliding-window masks; no
        soft-capping), so that a test can show the real one differs
    --quantize-activations
        bitnet: 8-bit activations for the ternary projections (above)
    reference.py MODEL.gguf --info                  header / tensor listing
    reference.py MODEL.gguf --dump-tensor NAME OUT.npy
        dequantized tensor as float32, numpy shape = reversed ggml dims
"""

import argparse
import mmap
import struct
import sys

import numpy as np

# ---------------------------------------------------------------------------
# GGUF parsing
# ---------------------------------------------------------------------------

VALUE_TYPE_NAMES = {
    0: "uint8", 1: "int8", 2: "uint16", 3: "int16", 4: "uint32", 5: "int32",
    6: "float32", 7: "bool", 8: "string", 9: "array", 10: "uint64",
    11: "int64", 12: "float64",
}
# numpy dtypes of the fixed-size value types
_FIXED = {
    0: np.dtype("<u1"), 1: np.dtype("<i1"), 2: np.dtype("<u2"),
    3: np.dtype("<i2"), 4: np.dtype("<u4"), 5: np.dtype("<i4"),
    6: np.dtype("<f4"), 7: np.dtype("<u1"), 10: np.dtype("<u8"),
    11: np.dtype("<i8"), 12: np.dtype("<f8"),
}

# ggml type id -> (name, elements per block, bytes per block)
GGML_TYPES = {
    0: ("F32", 1, 4), 1: ("F16", 1, 2), 2: ("Q4_0", 32, 18),
    3: ("Q4_1", 32, 20), 6: ("Q5_0", 32, 22), 7: ("Q5_1", 32, 24),
    8: ("Q8_0", 32, 34), 9: ("Q8_1", 32, 36), 10: ("Q2_K", 256, 84),
    11: ("Q3_K", 256, 110), 12: ("Q4_K", 256, 144), 13: ("Q5_K", 256, 176),
    14: ("Q6_K", 256, 210), 15: ("Q8_K", 256, 292), 24: ("I8", 1, 1),
    25: ("I16", 1, 2), 26: ("I32", 1, 4), 27: ("I64", 1, 8),
    28: ("F64", 1, 8), 30: ("BF16", 1, 2), 20: ("IQ4_NL", 32, 18),
    23: ("IQ4_XS", 256, 136),
    34: ("TQ1_0", 256, 54), 35: ("TQ2_0", 256, 66),
    # microsoft/BitNet's ggml fork: 128 values in 32 bytes, plus 32 bytes per
    # tensor (its f32 scale, then padding); see TensorInfo.n_bytes
    36: ("I2_S", 128, 32),
}
GGML_TQ1_0, GGML_TQ2_0, GGML_I2_S = 34, 35, 36
TERNARY_TYPES = (GGML_TQ1_0, GGML_TQ2_0, GGML_I2_S)


class GGUFError(Exception):
    pass


class _Cursor:
    def __init__(self, buf):
        self.buf = buf
        self.pos = 0

    def take(self, n):
        if self.pos + n > len(self.buf):
            raise GGUFError("truncated file at offset %d" % self.pos)
        chunk = self.buf[self.pos:self.pos + n]
        self.pos += n
        return chunk

    def scalar(self, dt):
        return np.frombuffer(self.take(dt.itemsize), dt)[0].item()

    def u32(self):
        return struct.unpack("<I", self.take(4))[0]

    def u64(self):
        return struct.unpack("<Q", self.take(8))[0]

    def string(self):
        n = self.u64()
        return bytes(self.take(n)).decode("utf-8", errors="surrogateescape")

    def value(self, vtype):
        if vtype == 8:
            return self.string()
        if vtype == 9:
            etype = self.u32()
            count = self.u64()
            if etype in _FIXED:
                dt = _FIXED[etype]
                arr = np.frombuffer(self.take(dt.itemsize * count), dt)
                return arr.astype(bool).tolist() if etype == 7 else arr.tolist()
            return [self.value(etype) for _ in range(count)]
        if vtype in _FIXED:
            v = self.scalar(_FIXED[vtype])
            return bool(v) if vtype == 7 else v
        raise GGUFError("unknown metadata value type %d" % vtype)


class TensorInfo:
    def __init__(self, name, dims, ggml_type, offset):
        self.name = name
        self.dims = dims                   # ggml order: ne0 first
        self.type = ggml_type
        self.offset = offset               # relative to the data section

    @property
    def n_elements(self):
        n = 1
        for d in self.dims:
            n *= d
        return n

    @property
    def type_name(self):
        return GGML_TYPES.get(self.type, ("type%d" % self.type,))[0]

    @property
    def n_bytes(self):
        if self.type not in GGML_TYPES:
            raise GGUFError("unknown ggml type %d for %s" % (self.type, self.name))
        _, blk, size = GGML_TYPES[self.type]
        if self.dims and self.dims[0] % blk:
            raise GGUFError("%s: row length %d not a multiple of block %d"
                            % (self.name, self.dims[0], blk))
        if self.type == GGML_I2_S:
            # ggml_nbytes of the BitNet fork: n/4 packed bytes + 32
            return self.n_elements // 4 + 32
        return self.n_elements // blk * size


class GGUFReader:
    def __init__(self, path):
        self.path = path
        with open(path, "rb") as f:
            try:
                self._map = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
                buf = memoryview(self._map)
            except ValueError:                 # empty file
                buf = memoryview(f.read())
        cur = _Cursor(buf)
        if bytes(cur.take(4)) != b"GGUF":
            raise GGUFError("not a GGUF file (bad magic)")
        self.version = cur.u32()
        if self.version not in (2, 3):
            raise GGUFError("unsupported GGUF version %d" % self.version)
        n_tensors = cur.u64()
        n_kv = cur.u64()
        self.metadata = {}
        self.metadata_types = {}
        for _ in range(n_kv):
            key = cur.string()
            vtype = cur.u32()
            self.metadata[key] = cur.value(vtype)
            self.metadata_types[key] = vtype
        self.tensors = {}
        self.tensor_order = []
        for _ in range(n_tensors):
            name = cur.string()
            nd = cur.u32()
            dims = [cur.u64() for _ in range(nd)]
            ttype = cur.u32()
            off = cur.u64()
            self.tensors[name] = TensorInfo(name, dims, ttype, off)
            self.tensor_order.append(name)
        self.alignment = int(self.metadata.get("general.alignment", 32))
        if self.alignment <= 0 or self.alignment & (self.alignment - 1):
            raise GGUFError("bad alignment %d" % self.alignment)
        a = self.alignment
        self.data_offset = (cur.pos + a - 1) // a * a
        self._buf = buf
        for t in self.tensors.values():
            if t.offset % a:
                raise GGUFError("tensor %s offset %d not aligned" % (t.name, t.offset))
            end = self.data_offset + t.offset + t.n_bytes
            if end > len(buf):
                raise GGUFError("tensor %s extends past end of file" % t.name)

    def raw(self, name):
        t = self.tensors[name]
        start = self.data_offset + t.offset
        return np.frombuffer(self._buf[start:start + t.n_bytes], np.uint8)

    def tensor(self, name):
        """Dequantized float32 array, numpy shape = reversed ggml dims."""
        t = self.tensors[name]
        flat = dequantize(self.raw(name), t.type, t.n_elements)
        return flat.reshape(tuple(reversed(t.dims)) if t.dims else ())


# ---------------------------------------------------------------------------
# Dequantization (bit-exact with ggml's reference C code)
# ---------------------------------------------------------------------------

def _blocks(raw, dtype):
    return np.frombuffer(raw.tobytes() if not raw.flags.c_contiguous else raw, dtype)


_Q8_0 = np.dtype([("d", "<f2"), ("qs", "i1", (32,))])
_Q4_0 = np.dtype([("d", "<f2"), ("qs", "u1", (16,))])
_Q4_K = np.dtype([("d", "<f2"), ("dmin", "<f2"), ("scales", "u1", (12,)),
                  ("qs", "u1", (128,))])
_Q5_K = np.dtype([("d", "<f2"), ("dmin", "<f2"), ("scales", "u1", (12,)),
                  ("qh", "u1", (32,)), ("qs", "u1", (128,))])
_Q6_K = np.dtype([("ql", "u1", (128,)), ("qh", "u1", (64,)),
                  ("scales", "i1", (16,)), ("d", "<f2")])
assert (_Q8_0.itemsize, _Q4_0.itemsize, _Q4_K.itemsize, _Q5_K.itemsize,
        _Q6_K.itemsize) == (34, 18, 144, 176, 210)


def _deq_q8_0(raw):
    b = _blocks(raw, _Q8_0)
    d = b["d"].astype(np.float32)[:, None]
    return (b["qs"].astype(np.float32) * d).reshape(-1)


def _deq_q4_0(raw):
    b = _blocks(raw, _Q4_0)
    d = b["d"].astype(np.float32)[:, None]
    qs = b["qs"].astype(np.int32)
    first = (qs & 0x0F) - 8            # elements 0..15
    second = (qs >> 4) - 8             # elements 16..31
    q = np.concatenate([first, second], axis=1).astype(np.float32)
    return (q * d).reshape(-1)


_Q4_1 = np.dtype([("d", "<f2"), ("m", "<f2"), ("qs", "u1", (16,))])
_Q5_0 = np.dtype([("d", "<f2"), ("qh", "<u4"), ("qs", "u1", (16,))])
_Q5_1 = np.dtype([("d", "<f2"), ("m", "<f2"), ("qh", "<u4"),
                  ("qs", "u1", (16,))])
assert (_Q4_1.itemsize, _Q5_0.itemsize, _Q5_1.itemsize) == (20, 22, 24)


def _nibbles(b, fifth_bits):
    """The 32 codes of each block: Q4_0's nibbles (element j low, j + 16
    high), with bit j of qh as element j's fifth bit when asked."""
    qs = b["qs"].astype(np.int32)
    q = np.concatenate([qs & 0x0F, qs >> 4], axis=1)
    if fifth_bits:
        qh = b["qh"].astype(np.int64)[:, None]
        q = q | (((qh >> np.arange(32)) & 1) << 4).astype(np.int32)
    return q.astype(np.float32)


def _deq_q4_1(raw):
    """Q4_1: value = d * q + m."""
    b = _blocks(raw, _Q4_1)
    d = b["d"].astype(np.float32)[:, None]
    m = b["m"].astype(np.float32)[:, None]
    return (_nibbles(b, False) * d + m).reshape(-1)


def _deq_q5_0(raw):
    """Q5_0: value = d * (q - 16), q five bits."""
    b = _blocks(raw, _Q5_0)
    d = b["d"].astype(np.float32)[:, None]
    return ((_nibbles(b, True) - 16.0) * d).reshape(-1)


def _deq_q5_1(raw):
    """Q5_1: value = d * q + m, q five bits."""
    b = _blocks(raw, _Q5_1)
    d = b["d"].astype(np.float32)[:, None]
    m = b["m"].astype(np.float32)[:, None]
    return (_nibbles(b, True) * d + m).reshape(-1)


_Q2_K = np.dtype([("scales", "u1", (16,)), ("qs", "u1", (64,)), ("d", "<f2"),
                  ("dmin", "<f2")])
_Q3_K = np.dtype([("hmask", "u1", (32,)), ("qs", "u1", (64,)),
                  ("scales", "u1", (12,)), ("d", "<f2")])
assert (_Q2_K.itemsize, _Q3_K.itemsize) == (84, 110)


def _k_two_bit_codes(qs):
    """The 64 code bytes of Q2_K/Q3_K -> [blocks, 256]: value
    128 n + 32 j + l (l < 32) is bits 2 j, 2 j + 1 of byte 32 n + l."""
    q = qs.astype(np.int32).reshape(-1, 2, 1, 32)
    shifts = (2 * np.arange(4)).reshape(1, 1, 4, 1)
    return ((q >> shifts) & 3).reshape(-1, 256)


def _deq_q2_k(raw):
    """Q2_K: value = d * sc * q - dmin * m per 16-value sub-block (sc the low
    nibble of its scale byte, m the high one)."""
    b = _blocks(raw, _Q2_K)
    d = b["d"].astype(np.float32)[:, None]
    dmin = b["dmin"].astype(np.float32)[:, None]
    sc = (b["scales"] & 0xF).astype(np.float32)
    mn = (b["scales"] >> 4).astype(np.float32)
    q = _k_two_bit_codes(b["qs"]).reshape(-1, 16, 16).astype(np.float32)
    y = (d * sc)[:, :, None] * q - (dmin * mn)[:, :, None]
    return y.reshape(-1)


def _q3_k_scales(packed):
    """Sixteen 6-bit scales from 12 bytes: scale i's low four bits in
    byte i % 8 (low nibble for i < 8, high for i >= 8), its top two bits
    in byte 8 + i % 4 at bits 2 (i // 4)."""
    p = packed.astype(np.int32)
    i = np.arange(16)
    low = (p[:, i % 8] >> (4 * (i // 8))) & 0xF
    high = (p[:, 8 + i % 4] >> (2 * (i // 4))) & 3
    return low | (high << 4)


def _deq_q3_k(raw):
    """Q3_K: value = d * (sc - 32) * (q - 4), q the 2-bit code with the
    third bit from hmask (bit 4 n + j of byte l for value 128 n + 32 j + l)."""
    b = _blocks(raw, _Q3_K)
    d = b["d"].astype(np.float32)[:, None]
    low = _k_two_bit_codes(b["qs"]).reshape(-1, 2, 4, 32)
    hm = b["hmask"].astype(np.int32).reshape(-1, 1, 1, 32)
    bit = (4 * np.arange(2).reshape(1, 2, 1, 1) +
           np.arange(4).reshape(1, 1, 4, 1))
    q = low + 4 * ((hm >> bit) & 1) - 4
    sc = (_q3_k_scales(b["scales"]) - 32).astype(np.float32)
    y = (d * sc)[:, :, None] * q.reshape(-1, 16, 16).astype(np.float32)
    return y.reshape(-1)


# IQ4_NL's value of each nibble, as ggml defines it.
IQ4NL_VALUES = np.array([-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25,
                         38, 53, 69, 89, 113], np.float32)


def _deq_iq4_nl(raw):
    """IQ4_NL: Q4_0's layout; a nibble q stands for IQ4NL_VALUES[q]."""
    b = _blocks(raw, _Q4_0)
    d = b["d"].astype(np.float32)[:, None]
    qs = b["qs"].astype(np.int32)
    q = np.concatenate([qs & 0x0F, qs >> 4], axis=1)
    return (IQ4NL_VALUES[q] * d).reshape(-1)


_IQ4_XS = np.dtype([("d", "<f2"), ("scales_h", "<u2"), ("scales_l", "u1", (4,)),
                    ("qs", "u1", (128,))])
assert _IQ4_XS.itemsize == 136


def _deq_iq4_xs(raw):
    """IQ4_XS: super-blocks of 256; sub-block ib (32 values, 16 bytes of
    IQ4_NL nibbles) has the 6-bit scale ls = low nibble ib % 2 of
    scales_l[ib // 2] | bits 2 ib, 2 ib + 1 of scales_h << 4, and
    value = d * (ls - 32) * IQ4NL_VALUES[q]."""
    b = _blocks(raw, _IQ4_XS)
    nb = b.shape[0]
    ib = np.arange(8)
    low = (b["scales_l"][:, ib // 2].astype(np.int32) >> (4 * (ib % 2))) & 0xF
    high = (b["scales_h"].astype(np.int32)[:, None] >> (2 * ib)) & 3
    ls = low | (high << 4)                                   # (nb, 8)
    dl = b["d"].astype(np.float32)[:, None] * (ls - 32).astype(np.float32)
    qs = b["qs"].reshape(nb, 8, 16).astype(np.int32)
    q = np.concatenate([qs & 0x0F, qs >> 4], axis=2)          # (nb, 8, 32)
    return (IQ4NL_VALUES[q] * dl[:, :, None]).reshape(-1)


def _scale_min_k4(scales):
    """Unpack ggml's 12-byte scale/min block into two (nb, 8) uint8 arrays."""
    s = scales.astype(np.uint8)
    sc = np.empty((s.shape[0], 8), np.uint8)
    mn = np.empty((s.shape[0], 8), np.uint8)
    for j in range(8):
        if j < 4:
            sc[:, j] = s[:, j] & 63
            mn[:, j] = s[:, j + 4] & 63
        else:
            sc[:, j] = (s[:, j + 4] & 0x0F) | ((s[:, j - 4] >> 6) << 4)
            mn[:, j] = (s[:, j + 4] >> 4) | ((s[:, j] >> 6) << 4)
    return sc, mn


def _deq_k_affine(b, levels):
    """levels: (nb, 8, 32) integer values of the 8 sub-blocks."""
    d = b["d"].astype(np.float32)[:, None]
    dmin = b["dmin"].astype(np.float32)[:, None]
    sc, mn = _scale_min_k4(b["scales"])
    dl = d * sc.astype(np.float32)                 # float: d * sc
    ml = dmin * mn.astype(np.float32)              # float: min * m
    y = dl[:, :, None] * levels.astype(np.float32) - ml[:, :, None]
    return y.reshape(-1)


def _deq_q4_k(raw):
    b = _blocks(raw, _Q4_K)
    nb = b.shape[0]
    qs = b["qs"].reshape(nb, 4, 32)                # 4 chunks of 64 values
    lev = np.empty((nb, 4, 2, 32), np.uint8)
    lev[:, :, 0, :] = qs & 0x0F
    lev[:, :, 1, :] = qs >> 4
    return _deq_k_affine(b, lev.reshape(nb, 8, 32))


def _deq_q5_k(raw):
    b = _blocks(raw, _Q5_K)
    nb = b.shape[0]
    qs = b["qs"].reshape(nb, 4, 32)
    qh = b["qh"]                                   # (nb, 32)
    lev = np.empty((nb, 4, 2, 32), np.uint8)
    for chunk in range(4):
        lo_bit = (qh >> (2 * chunk)) & 1
        hi_bit = (qh >> (2 * chunk + 1)) & 1
        lev[:, chunk, 0, :] = (qs[:, chunk, :] & 0x0F) + 16 * lo_bit
        lev[:, chunk, 1, :] = (qs[:, chunk, :] >> 4) + 16 * hi_bit
    return _deq_k_affine(b, lev.reshape(nb, 8, 32))


def _deq_q6_k(raw):
    b = _blocks(raw, _Q6_K)
    nb = b.shape[0]
    d = b["d"].astype(np.float32)
    out = np.empty((nb, 256), np.float32)
    for half in range(2):
        ql = b["ql"][:, 64 * half:64 * half + 64].astype(np.int32)
        qh = b["qh"][:, 32 * half:32 * half + 32].astype(np.int32)
        parts = (
            (ql[:, 0:32] & 0x0F) | (((qh >> 0) & 3) << 4),     # +0
            (ql[:, 32:64] & 0x0F) | (((qh >> 2) & 3) << 4),    # +32
            (ql[:, 0:32] >> 4) | (((qh >> 4) & 3) << 4),       # +64
            (ql[:, 32:64] >> 4) | (((qh >> 6) & 3) << 4),      # +96
        )
        for k, q in enumerate(parts):
            base = 128 * half + 32 * k
            for g in range(2):                     # 16-value scale groups
                s = b["scales"][:, (base + 16 * g) // 16].astype(np.float32)
                ds = d * s                          # float: d * sc
                vals = (q[:, 16 * g:16 * g + 16] - 32).astype(np.float32)
                out[:, base + 16 * g:base + 16 * g + 16] = ds[:, None] * vals
    return out.reshape(-1)


def _deq_bf16(raw):
    bits = _blocks(raw, np.dtype("<u2")).astype(np.uint32) << 16
    return bits.view(np.float32)


# -- ternary types: value = t * scale, t in {-1, 0, +1} ----------------------

_TQ1_0 = np.dtype([("qs", "u1", (48,)), ("qh", "u1", (4,)), ("d", "<f2")])
_TQ2_0 = np.dtype([("qs", "u1", (64,)), ("d", "<f2")])
assert (_TQ1_0.itemsize, _TQ2_0.itemsize) == (54, 66)


def _base3_digit(byte, n):
    """Digit n (0 = most significant of 5) of a TQ1_0 byte, extracted the way
    ggml does: q = byte * 3^n modulo 256, digit = (q * 3) >> 8."""
    q = (byte.astype(np.uint16) * (3 ** n)) & 0xFF
    return ((q * 3) >> 8).astype(np.int8)


def _tq1_0_codes(raw):
    b = _blocks(raw, _TQ1_0)
    t = np.empty((b.shape[0], 256), np.int8)
    for n in range(5):
        t[:, 32 * n:32 * n + 32] = _base3_digit(b["qs"][:, 0:32], n) - 1
        t[:, 160 + 16 * n:176 + 16 * n] = _base3_digit(b["qs"][:, 32:48], n) - 1
    for n in range(4):
        t[:, 240 + 4 * n:244 + 4 * n] = _base3_digit(b["qh"], n) - 1
    return t, b["d"].astype(np.float32)


def _tq2_0_codes(raw):
    b = _blocks(raw, _TQ2_0)
    qs = b["qs"].reshape(-1, 2, 32)               # two halves of 128 values
    t = np.empty((qs.shape[0], 2, 4, 32), np.int8)
    for l in range(4):
        t[:, :, l, :] = ((qs >> (2 * l)) & 3).astype(np.int8) - 1
    return t.reshape(-1, 256), b["d"].astype(np.float32)


def _i2_s_codes(raw, n):
    raw = np.asarray(raw, np.uint8)
    if raw.size != n // 4 + 32 or n % 128:
        raise GGUFError("I2_S: %d bytes for %d values" % (raw.size, n))
    packed = raw[:n // 4].reshape(-1, 32)
    t = np.empty((packed.shape[0], 4, 32), np.int8)
    for k in range(4):
        t[:, k, :] = ((packed >> (6 - 2 * k)) & 3).astype(np.int8) - 1
    scale = np.frombuffer(raw[n // 4:n // 4 + 4].tobytes(), "<f4")[0]
    return t.reshape(-1), np.float32(scale)


def ternary_codes(raw, ggml_type, n_elements):
    """The ternary digits and scales of a TQ1_0 / TQ2_0 / I2_S tensor:
    TQ*: (t int8 (n/256, 256), d float32 (n/256,)), value = t * d per block;
    I2_S: (t int8 (n,), s float32), value = t * s.  A code ggml's quantizers
    never write (TQ2_0 / I2_S bit pair 3) decodes as +2, as the dot-product
    kernels read it."""
    if ggml_type == GGML_TQ1_0:
        return _tq1_0_codes(raw)
    if ggml_type == GGML_TQ2_0:
        return _tq2_0_codes(raw)
    if ggml_type == GGML_I2_S:
        return _i2_s_codes(raw, n_elements)
    raise GGUFError("type %d is not ternary" % ggml_type)


def _deq_ternary(raw, ggml_type, n):
    t, d = ternary_codes(raw, ggml_type, n)
    if ggml_type == GGML_I2_S:
        return t.astype(np.float32) * d
    return (t.astype(np.float32) * d[:, None]).reshape(-1)


def dequantize(raw, ggml_type, n_elements):
    """Raw bytes of a tensor -> flat float32 array of n_elements."""
    if ggml_type == 0:
        y = _blocks(raw, np.dtype("<f4")).astype(np.float32)
    elif ggml_type == 1:
        y = _blocks(raw, np.dtype("<f2")).astype(np.float32)
    elif ggml_type == 30:
        y = _deq_bf16(raw)
    elif ggml_type == 8:
        y = _deq_q8_0(raw)
    elif ggml_type == 2:
        y = _deq_q4_0(raw)
    elif ggml_type == 3:
        y = _deq_q4_1(raw)
    elif ggml_type == 6:
        y = _deq_q5_0(raw)
    elif ggml_type == 7:
        y = _deq_q5_1(raw)
    elif ggml_type == 20:
        y = _deq_iq4_nl(raw)
    elif ggml_type == 23:
        y = _deq_iq4_xs(raw)
    elif ggml_type == 10:
        y = _deq_q2_k(raw)
    elif ggml_type == 11:
        y = _deq_q3_k(raw)
    elif ggml_type == 12:
        y = _deq_q4_k(raw)
    elif ggml_type == 13:
        y = _deq_q5_k(raw)
    elif ggml_type == 14:
        y = _deq_q6_k(raw)
    elif ggml_type in TERNARY_TYPES:
        y = _deq_ternary(raw, ggml_type, n_elements)
    else:
        name = GGML_TYPES.get(ggml_type, ("type %d" % ggml_type,))[0]
        raise GGUFError("dequantization of %s is not supported" % name)
    if y.size != n_elements:
        raise GGUFError("expected %d elements, decoded %d" % (n_elements, y.size))
    return y


# ---------------------------------------------------------------------------
# Model
# ---------------------------------------------------------------------------

ROPE_STYLE = {"llama": "normal", "qwen2": "neox", "qwen3": "neox",
              "gemma": "neox", "gemma2": "neox", "gemma3": "neox",
              "bitnet": "neox", "phi3": "neox", "qwen3moe": "neox"}
GEMMA = ("gemma", "gemma2", "gemma3")
# bitnet's projections: layer dict key -> tensor name stem (blk.N.<stem>)
BITNET_PROJ = (("wq", "attn_q"), ("wk", "attn_k"), ("wv", "attn_v"),
               ("wo", "attn_output"), ("w_gate", "ffn_gate"),
               ("w_up", "ffn_up"), ("w_down", "ffn_down"))

# block_count of the 27B checkpoints, whose attention scale llama.cpp takes
# from n_embd / n_head instead of the head size
GEMMA_27B_LAYERS = {"gemma2": 46, "gemma3": 62}


def gelu_tanh(z):
    """GELU, tanh form (ggml_gelu): 0.5 z (1 + tanh(sqrt(2/pi) (z + 0.044715 z^3)))."""
    z = np.asarray(z, dtype=np.float64)
    inner = np.sqrt(2.0 / np.pi) * (z + 0.044715 * z * z * z)
    return 0.5 * z * (1.0 + np.tanh(inner))


def silu(z):
    return z / (1.0 + np.exp(-z))


def relu(z):
    return np.maximum(z, 0.0)


def relu_sqr(z):
    """relu(z)^2: BitNet b1.58's FFN activation ("relu2")."""
    r = np.maximum(z, 0.0)
    return r * r


# bitnet.hidden_activation -> gate activation, as llama.cpp maps the string
# (absent: silu); anything else is refused rather than guessed
BITNET_ACTS = {"silu": silu, "swish": silu, "swiglu": silu,
               "relu2": relu_sqr, "relu": relu, "reglu": relu}


def checked_cache_types(cache_types):
    """(K type, V type) as a tuple, each one cache_round takes."""
    for t in cache_types:
        if t not in ("f32", "f16", "q8_0"):
            raise GGUFError("cache type %r is not supported" % t)
    return tuple(cache_types)


def cache_round(x, cache_type):
    """x (n, kv_heads, head_dim) as a KV cache of cache_type stores it:
    f32 as computed (float64 here), f16 rounded to nearest even, q8_0 each
    token's row quantized in blocks of 32 as Hesper's cache writes (and
    circuit.quantize) do: the values in f32, d = max|v| / 127 in f32,
    q = v / d rounded half away from zero (0 when d is 0), read back as
    q * f16(d)."""
    if cache_type == "f32":
        return x
    if cache_type == "f16":
        return x.astype(np.float16).astype(np.float64)
    blk = x.astype(np.float32).reshape(-1, 32)
    d = np.abs(blk).max(axis=1) / np.float32(127.0)
    safe = np.where(d != 0, d, np.float32(1.0))
    s = blk / safe[:, None]
    q = np.clip(np.sign(s) * np.floor(np.abs(s) + np.float32(0.5)), -127, 127)
    q = np.where(d[:, None] != 0, q, 0)
    scale = d.astype(np.float16).astype(np.float64)
    return (q.astype(np.float64) * scale[:, None]).reshape(x.shape)


# The llama-family projections hesper-run --quantize-activations feeds
# q8_1 activations when their weights are Q8_0, Q4_0, Q4_K, Q6_K or Q2_K
# (layer key, GGUF name; _q8_activations).
Q8_ACTIVATION_PROJ = (("wq", "attn_q"), ("wk", "attn_k"), ("wv", "attn_v"),
                      ("wo", "attn_output"), ("w_gate", "ffn_gate"),
                      ("w_up", "ffn_up"), ("w_down", "ffn_down"))


def _q8_activations(g, name):
    """When the weight `name` reads q8_1 activations: "any" step for Q8_0
    or Q4_0, rows of a multiple of 32 values, or Q4_K, rows of a multiple
    of 256, or Q2_K, rows of a multiple of 256 and a multiple of 16 rows;
    "token" (one-token steps only) for Q6_K, rows of a multiple of
    256; None otherwise. Rows are at most 7168 values (what
    circuit.quantize's lowering stages)."""
    info = g.tensors.get(name)
    if info is None:
        return None
    kind = info.type_name.lower()
    k = info.dims[0]
    if k > 7168:
        return None
    if kind in ("q8_0", "q4_0"):
        return "any" if k % 32 == 0 else None
    if k % 256 != 0:
        return None
    if kind == "q2_k":  # where hesper-run's integer tile takes it
        return "any" if info.dims[1] % 16 == 0 else None
    return {"q4_k": "any", "q6_k": "token"}.get(kind)


def _reads_q8(mode, x):
    """Whether activations x (rows, K) go through q8_1 for a weight whose
    _q8_activations is `mode`."""
    return mode == "any" or (mode == "token" and x.shape[0] == 1)


def activations_q8(x):
    """Rows of x as circuit.quantize's q8_1 blocks hold them: the same
    rounding as a q8_0 KV cache row (cache_round)."""
    return cache_round(x, "q8_0")


def route(p, n_used, tie_high=False):
    """llama.cpp's build_moe_ffn choice for one token's router
    probabilities p (E,): the n_used most probable experts (exact ties to
    the lower index; tie_high, for negative tests: to the higher) and their
    probabilities renormalized over them (the sum at least 2^-14)."""
    key = -p
    order = (np.argsort(key, kind="stable") if not tie_high else
             (p.size - 1 - np.argsort(key[::-1], kind="stable")))
    chosen = order[:n_used]
    return chosen, p[chosen] / max(p[chosen].sum(), 6.103515625e-5)


def quantize_q8_k(x):
    """ggml's quantize_row_q8_K_ref on each row of x (n, k), k % 256 == 0:
    per 256 values, m = the value of largest |x| (first one on ties),
    iscale = -127/m, q = round-half-even(iscale * x) capped at 127,
    d = 1/iscale; all in float32.  Returns q int32 (n, k/256, 256) and
    d float32 (n, k/256); an all-zero block has d = 0, q = 0."""
    xb = np.asarray(x, np.float32).reshape(x.shape[0], -1, 256)
    pick = np.abs(xb).argmax(axis=2)
    m = np.take_along_axis(xb, pick[..., None], axis=2)[..., 0]
    zero = m == 0
    iscale = np.float32(-127.0) / np.where(zero, np.float32(1), m)
    q = np.minimum(np.rint(iscale[..., None] * xb), 127).astype(np.int32)
    d = (np.float32(1) / iscale).astype(np.float32)
    q[zero] = 0
    d[zero] = 0
    return q, d


def quantize_i8_s(x):
    """The BitNet fork's quantize_row_i8_s on each row (token) of x (n, k):
    s = 127 / max(max|x|, 1e-5) (division in double, stored as float),
    q = round-half-even(x * s) (float32 product) clamped to [-128, 127].
    Returns q int32 (n, k) and s float32 (n,)."""
    x32 = np.asarray(x, np.float32)
    mx = np.maximum(np.abs(x32.astype(np.float64)).max(axis=1), 1e-5)
    s = (127.0 / mx).astype(np.float32)
    q = np.clip(np.rint(x32 * s[:, None]), -128, 127).astype(np.int32)
    return q, s


def ternary_matmul_quantized(x, codes):
    """x (n, k) @ W.T for a ternary W, the way llama.cpp's CPU kernels do it
    with 8-bit activations.  codes from Model: ("tq", t (o, k/256, 256),
    d (o, k/256)) for TQ1_0/TQ2_0: activations as Q8_K, per block an exact
    integer sum times float32(d_w * d_y), accumulated over the blocks in
    float32 (ggml_vec_dot_tq*_q8_K, generic C); ("i2s", t (o, k), s) for
    I2_S: activations as I8_S per token, float32(sum) / s_act * s_w
    (ggml_compute_forward_mul_mat of the BitNet fork)."""
    kind, t, dw = codes
    if kind == "tq":
        q, dy = quantize_q8_k(x)                              # (n, nb, 256)
        sumi = np.einsum("nbk,obk->nob", q.astype(np.float64), t.astype(np.float64))
        sumi = sumi.astype(np.float32)
        fac = (dw[None, :, :] * dy[:, None, :]).astype(np.float32)
        acc = np.zeros(sumi.shape[:2], np.float32)
        for b in range(sumi.shape[2]):
            acc = (acc + sumi[:, :, b] * fac[:, :, b]).astype(np.float32)
        return acc.astype(np.float64)
    q, sx = quantize_i8_s(x)
    sumi = (q.astype(np.float64) @ t.astype(np.float64).T).astype(np.float32)
    y = (sumi / sx[:, None]).astype(np.float32) * dw
    return y.astype(np.float32).astype(np.float64)


def softcap(v, cap):
    """cap * tanh(v / cap): squashes v smoothly into (-cap, cap)."""
    return cap * np.tanh(v / cap)


class Model:
    def __new__(cls, path, *args, **kwargs):
        # Model(path) of a gemma4 file builds a Gemma4Model (its own graph)
        if cls is Model:
            arch = GGUFReader(path).metadata.get("general.architecture")
            if arch == "gemma4":
                cls = Gemma4Model
        return super().__new__(cls)

    def __init__(self, path, ignore_window=False, ignore_softcap=False,
                 quantize_activations=False, n_ctx=None, tie_high=False,
                 cache_types=("f32", "f32")):
        """cache_types: how the KV cache stores K and V ("f32", "f16" or
        "q8_0", llama.cpp's -ctk/-ctv): with f16, k (after RoPE) and v are
        rounded to float16 as they enter the cache, with q8_0 each token's
        row is quantized in 32-value blocks (cache_round), and attention
        reads them so.
        tie_high: negative tests, the router's ties go to the higher
        expert index (llama.cpp and Hesper: the lower).
        n_ctx: the context a session has (default: context_length capped
        at 4096, hesper-run's default); phi3 picks its LongRoPE factors by it.
        ignore_window / ignore_softcap compute a deliberately wrong model
        (every layer masked as a global one / no soft-capping at all), for
        tests that must show the real features change the logits.
        quantize_activations: projections stored as TQ1_0 / TQ2_0 / I2_S
        (bitnet) multiply 8-bit activations as llama.cpp's CPU kernels do
        (ternary_matmul_quantized), or with "q8_1" the I2_S and TQ2_0 ones read
        their input rounded as q8_1 blocks, as hesper-run's integer
        kernels do (activations_q8); the attention, FFN and output
        projections stored as Q8_0 or Q4_0 of the dense llama-family
        layers read their input rounded as q8_1 blocks, as hesper-run
        --quantize-activations does token by token (activations_q8, for
        rows of at most 7168 values); every other product stays float64."""
        g = GGUFReader(path)
        self.gguf = g
        md = g.metadata
        arch = md["general.architecture"]
        if arch not in ROPE_STYLE:
            raise GGUFError("unsupported architecture %r" % arch)
        self.arch = arch

        def hp(key, default=None):
            full = arch + "." + key
            if full in md:
                return md[full]
            if default is None:
                raise GGUFError("missing metadata key %s" % full)
            return default

        self.n_embd = int(hp("embedding_length"))
        self.n_layer = int(hp("block_count"))
        self.n_head = int(hp("attention.head_count"))
        self.n_head_kv = int(hp("attention.head_count_kv", self.n_head))
        self.n_ff = int(hp("feed_forward_length"))
        self.eps = float(hp("attention.layer_norm_rms_epsilon"))
        self.hd_k = int(hp("attention.key_length", self.n_embd // self.n_head))
        self.hd_v = int(hp("attention.value_length", self.n_embd // self.n_head))
        self.n_rot = int(hp("rope.dimension_count", self.hd_k))
        self.rope_base = float(hp("rope.freq_base", 10000.0))
        scaling = hp("rope.scaling.type", "linear")
        factor = float(hp("rope.scaling.factor", 0.0))
        if scaling in ("linear",):
            self.pos_scale = 1.0 / factor if factor else 1.0
        elif scaling == "none":
            self.pos_scale = 1.0
        else:
            raise GGUFError("rope scaling %r is not supported" % scaling)
        self.rope_style = ROPE_STYLE[arch]
        # mixture of experts (qwen3moe; llama with expert_count)
        self.n_expert = int(hp("expert_count", 0))
        self.n_expert_used = int(hp("expert_used_count", 0))
        self.tie_high = tie_high
        self.cache_types = checked_cache_types(cache_types)
        if self.n_expert:
            if not 1 <= self.n_expert_used <= self.n_expert:
                raise GGUFError("expert_used_count out of range")
            self.expert_scale = float(hp("expert_weights_scale", 0.0))
        elif arch == "qwen3moe":
            raise GGUFError("qwen3moe needs expert_count")
        # ggml_rope_ext's attn_factor (any arch, as llama.cpp reads it):
        # multiplies the cos and sin of the rotated dimensions
        self.rope_mscale = float(hp("rope.scaling.attn_factor", 1.0))
        if n_ctx is None:
            n_ctx = min(int(hp("context_length", 2048)), 4096)
        self.n_ctx = int(n_ctx)
        if self.n_head % self.n_head_kv:
            raise GGUFError("head_count not a multiple of head_count_kv")

        def opt_hp(key):
            return md.get(arch + "." + key)

        # scores = (q . k) / kq_div
        self.kq_div = np.sqrt(self.hd_k)
        if GEMMA_27B_LAYERS.get(arch) == self.n_layer:
            # llama.cpp: 1/sqrt(float(n_embd / n_head)), an integer division
            self.kq_div = np.sqrt(float(self.n_embd // self.n_head))
        self.embd_scale = np.sqrt(float(self.n_embd)) if arch in GEMMA else None
        self.ffn_act = gelu_tanh if arch in GEMMA else silu
        self.post_norms = arch in ("gemma2", "gemma3")

        # sliding-window ("SWA") layers, their window and their RoPE
        self.window = None
        pattern = None
        if arch == "gemma2":
            self.window = int(hp("attention.sliding_window", 4096))
            pattern = 2
            if self.window <= 0:
                raise GGUFError("gemma2.attention.sliding_window must be > 0")
        elif arch == "gemma3":
            w = opt_hp("attention.sliding_window")
            if w:                               # absent or 0: no SWA layers
                self.window = int(w)
                pattern = 6
        if self.window is not None:
            given = opt_hp("attention.sliding_window_pattern")
            if given is not None:
                if isinstance(given, bool) or not isinstance(given, int):
                    raise GGUFError("%s.attention.sliding_window_pattern must be "
                                    "an integer" % arch)
                pattern = given
            # llama_hparams::set_swa_pattern: a period of 0 makes every layer SWA
            self.swa_layers = [pattern == 0 or il % pattern < pattern - 1
                               for il in range(self.n_layer)]
        else:
            self.swa_layers = [False] * self.n_layer
        self.swa_base = self.rope_base
        self.swa_pos_scale = self.pos_scale
        if arch == "gemma2":
            self.swa_base = float(hp("rope.freq_base_swa", self.rope_base))
        elif arch == "gemma3":
            self.swa_base = float(hp("rope.freq_base_swa", 10000.0))
            self.swa_pos_scale = 1.0

        # soft-capping: None = off
        self.attn_softcap = None
        self.final_softcap = None
        if arch == "gemma2":
            self.attn_softcap = float(hp("attn_logit_softcapping", 50.0))
            self.final_softcap = float(hp("final_logit_softcapping", 30.0)) or None
        elif arch == "gemma3":
            # llama.cpp's gemma3 loader: 0 unless the file gives a cap
            self.final_softcap = float(md.get(arch + ".final_logit_softcapping", 0.0)) or None
        self.ignore_window = ignore_window
        if ignore_softcap:
            self.attn_softcap = None
            self.final_softcap = None

        # bitnet: sub-norms before attn_output and ffn_down, optional
        # per-tensor .scale after each projection, FFN activation by key
        self.bitnet = arch == "bitnet"
        self.quantize_activations = bool(quantize_activations)
        # bitnet: hesper-run's q8_1 blocks for I2_S, not llama.cpp's kinds
        self.q8_1_ternary = quantize_activations == "q8_1"
        self.hidden_act = None
        if self.bitnet:
            act = opt_hp("hidden_activation")
            self.hidden_act = "silu" if act is None else act
            if self.hidden_act not in BITNET_ACTS:
                raise GGUFError("bitnet.hidden_activation %r is not supported"
                                % self.hidden_act)
            self.ffn_act = BITNET_ACTS[self.hidden_act]
            if self.hd_k * self.n_head != self.n_embd or self.hd_v != self.hd_k:
                raise GGUFError("bitnet needs head size n_embd / n_head")

        def W(name):
            return g.tensor(name).astype(np.float64)

        def opt(name):
            return W(name) if name in g.tensors else None

        def experts(p, stem):
            # the merged tensor, or (older files) one per expert
            if p + stem + "_exps.weight" in g.tensors:
                return W(p + stem + "_exps.weight")
            return np.stack([W("%s%s.%d.weight" % (p, stem, e))
                             for e in range(self.n_expert)])

        self.tok_embd = W("token_embd.weight")                # (vocab, n_embd)
        self.n_vocab = self.tok_embd.shape[0]
        self.layers = []
        for i in range(self.n_layer):
            p = "blk.%d." % i
            post = arch in ("gemma2", "gemma3")
            if arch == "phi3":
                self.layers.append(self._phi3_layer(p))
                continue
            dense = not self.n_expert
            self.layers.append(dict(
                attn_norm=W(p + "attn_norm.weight"),
                post_attn_norm=W(p + "post_attention_norm.weight") if post else None,
                post_ffn_norm=W(p + "post_ffw_norm.weight") if post else None,
                wq=W(p + "attn_q.weight"), wk=W(p + "attn_k.weight"),
                wv=W(p + "attn_v.weight"), wo=W(p + "attn_output.weight"),
                bq=opt(p + "attn_q.bias"), bk=opt(p + "attn_k.bias"),
                bv=opt(p + "attn_v.bias"),
                q_norm=opt(p + "attn_q_norm.weight"),
                k_norm=opt(p + "attn_k_norm.weight"),
                ffn_norm=W(p + "ffn_norm.weight"),
                w_gate=W(p + "ffn_gate.weight") if dense else None,
                w_up=W(p + "ffn_up.weight") if dense else None,
                w_down=W(p + "ffn_down.weight") if dense else None,
            ))
            if not dense:
                self.layers[-1].update(
                    router=W(p + "ffn_gate_inp.weight"),          # (E, n_embd)
                    gate_exps=experts(p, "ffn_gate"),             # (E, F, n_embd)
                    up_exps=experts(p, "ffn_up"),
                    down_exps=experts(p, "ffn_down"))             # (E, n_embd, F)
            if self.bitnet:
                self.layers[-1].update(self._bitnet_layer(p))
        if self.quantize_activations:
            for i, L in enumerate(self.layers):
                if "wq" in L and not self.bitnet and arch != "phi3":
                    L["act_q8"] = {key: _q8_activations(
                                       g, "blk.%d.%s.weight" % (i, stem))
                                   for key, stem in Q8_ACTIVATION_PROJ}
        self.out_norm = W("output_norm.weight")
        # llama.cpp ties gemma, gemma2 and bitnet unconditionally (an
        # output.weight would be ignored); everything else uses output.weight
        # when present
        tied = arch in ("gemma", "gemma2", "bitnet")
        self.w_out = None if tied else opt("output.weight")
        if self.w_out is None:
            self.w_out = self.tok_embd
        self.out_q8 = self.quantize_activations and _q8_activations(
            g, "token_embd.weight" if self.w_out is self.tok_embd
            else "output.weight")
        # rope frequencies, one per rotated pair
        self.inv_freq = self._inv_freq(self.rope_base)
        if arch == "phi3":
            # LongRoPE: the long factors when the context exceeds the
            # original one, else the short ones (either may be absent)
            orig = int(hp("rope.scaling.original_context_length",
                          int(hp("context_length", 2048))))
            name = ("rope_factors_long.weight" if self.n_ctx > orig
                    else "rope_factors_short.weight")
            if name in g.tensors:
                self.inv_freq = self.inv_freq / W(name).reshape(-1)
        swa_inv_freq = self._inv_freq(self.swa_base)
        self.layer_rope = [(swa_inv_freq, self.swa_pos_scale) if swa
                           else (self.inv_freq, self.pos_scale)
                           for swa in self.swa_layers]
        self.reset()

    def _phi3_layer(self, p):
        """phi3: Q, K, V are the row blocks of attn_qkv (or separate
        tensors), gate and up the two halves of ffn_up; no biases, no
        Q/K norms.  attention.sliding_window is ignored, as llama.cpp's
        phi3 loader does."""
        g = self.gguf

        def W(name):
            return g.tensor(name).astype(np.float64)

        nq, nkv = self.n_head * self.hd_k, self.n_head_kv * self.hd_k
        if p + "attn_qkv.weight" in g.tensors:
            qkv = W(p + "attn_qkv.weight")
            wq, wk, wv = qkv[:nq], qkv[nq:nq + nkv], qkv[nq + nkv:]
        else:
            wq, wk, wv = (W(p + "attn_q.weight"), W(p + "attn_k.weight"),
                          W(p + "attn_v.weight"))
        gate_up = W(p + "ffn_up.weight")
        return dict(attn_norm=W(p + "attn_norm.weight"), post_attn_norm=None,
                    post_ffn_norm=None, wq=wq, wk=wk, wv=wv,
                    wo=W(p + "attn_output.weight"), bq=None, bk=None, bv=None,
                    q_norm=None, k_norm=None, ffn_norm=W(p + "ffn_norm.weight"),
                    w_gate=gate_up[:self.n_ff], w_up=gate_up[self.n_ff:],
                    w_down=W(p + "ffn_down.weight"))

    def _bitnet_layer(self, p):
        """attn_sub_norm / ffn_sub_norm, the .scale of each projection (None
        when absent) and, with quantize_activations, the ternary codes."""
        g = self.gguf
        out = dict(attn_sub_norm=g.tensor(p + "attn_sub_norm.weight").astype(np.float64),
                   ffn_sub_norm=g.tensor(p + "ffn_sub_norm.weight").astype(np.float64),
                   scale={}, codes={}, act_q8={})
        for key, stem in BITNET_PROJ:
            sname = p + stem + ".scale"
            if sname in g.tensors:
                sv = g.tensor(sname).reshape(-1)
                if sv.size != 1:
                    raise GGUFError("%s must hold one value" % sname)
                out["scale"][key] = float(sv[0])
            info = g.tensors[p + stem + ".weight"]
            if self.q8_1_ternary:
                # where hesper-run's integer tile takes them: weight rows
                # a multiple of 16
                if info.dims[1] % 16 == 0 and info.type in (GGML_I2_S,
                                                            GGML_TQ2_0):
                    out["act_q8"][key] = "any"
                continue
            if self.quantize_activations and info.type in TERNARY_TYPES:
                n_in, n_out = info.dims[0], info.dims[1]
                t, d = ternary_codes(g.raw(info.name), info.type, info.n_elements)
                if info.type == GGML_I2_S:
                    out["codes"][key] = ("i2s", t.reshape(n_out, n_in), d)
                else:
                    nb = n_in // 256
                    out["codes"][key] = ("tq", t.reshape(n_out, nb, 256),
                                         d.reshape(n_out, nb))
        return out

    def _mm(self, x, L, key):
        """x @ W.T for the layer's weight `key`, then bitnet's optional
        per-tensor scale (llama.cpp: ggml_mul after the matmul)."""
        codes = L.get("codes", {}).get(key)
        if codes is not None:
            y = ternary_matmul_quantized(x, codes)
        else:
            if _reads_q8(L.get("act_q8", {}).get(key), x):
                x = activations_q8(x)
            y = x @ L[key].T
        scale = L.get("scale", {}).get(key)
        if scale is not None:
            y = y * scale
        return y

    def _inv_freq(self, base):
        i = np.arange(self.n_rot // 2, dtype=np.float64)
        return base ** (-2.0 * i / self.n_rot)

    def _moe(self, h, L, li):
        """llama.cpp's build_moe_ffn with softmax gating and normalized
        weights: per token, the expert_used_count most probable experts
        (ties to the lower index), their probabilities renormalized to sum 1
        (times expert_weights_scale when given), their SwiGLU FFNs weighted
        and added in slot order.  Counts each choice in expert_usage."""
        logits = h @ L["router"].T                              # (n, E)
        p = np.exp(logits - logits.max(axis=-1, keepdims=True))
        p = p / p.sum(axis=-1, keepdims=True)
        out = np.zeros_like(h)
        for t in range(h.shape[0]):
            chosen, w = route(p[t], self.n_expert_used, self.tie_high)
            if self.expert_scale:
                w = w * self.expert_scale
            for s, e in enumerate(chosen):
                self.expert_usage[li][e] += 1
                g = L["gate_exps"][e] @ h[t]
                u = L["up_exps"][e] @ h[t]
                out[t] += w[s] * (L["down_exps"][e] @ (silu(g) * u))
        return out

    def reset(self):
        self.expert_usage = [[0] * self.n_expert for _ in range(self.n_layer)]
        self.cache_k = [np.zeros((0, self.n_head_kv, self.hd_k)) for _ in range(self.n_layer)]
        self.cache_v = [np.zeros((0, self.n_head_kv, self.hd_v)) for _ in range(self.n_layer)]
        self.n_past = 0

    def _rmsnorm(self, x, w):
        ms = np.mean(x * x, axis=-1, keepdims=True)
        return x / np.sqrt(ms + self.eps) * w

    def _rope(self, x, pos, inv_freq=None, pos_scale=None):
        """x: (n, heads, head_dim); pos: (n,) absolute positions.  The
        frequencies and position scale default to the global layers' ones."""
        if inv_freq is None:
            inv_freq = self.inv_freq
        if pos_scale is None:
            pos_scale = self.pos_scale
        ang = (pos.astype(np.float64) * pos_scale)[:, None] * inv_freq[None, :]
        mscale = getattr(self, "rope_mscale", 1.0)
        cos = np.cos(ang)[:, None, :] * mscale
        sin = np.sin(ang)[:, None, :] * mscale
        y = x.copy()
        r = self.n_rot
        if self.rope_style == "normal":
            a = x[:, :, 0:r:2]
            b = x[:, :, 1:r:2]
            y[:, :, 0:r:2] = a * cos - b * sin
            y[:, :, 1:r:2] = a * sin + b * cos
        else:
            a = x[:, :, 0:r // 2]
            b = x[:, :, r // 2:r]
            y[:, :, 0:r // 2] = a * cos - b * sin
            y[:, :, r // 2:r] = a * sin + b * cos
        return y

    def forward(self, tokens):
        """Run tokens after the cached prefix; return logits (n, vocab)."""
        tokens = np.asarray(tokens, dtype=np.int64)
        if tokens.size and (tokens.min() < 0 or tokens.max() >= self.n_vocab):
            raise ValueError("token id out of range [0, %d)" % self.n_vocab)
        n = tokens.size
        pos = np.arange(self.n_past, self.n_past + n)
        x = self.tok_embd[tokens]
        if self.embd_scale is not None:
            x = x * self.embd_scale
        group = self.n_head // self.n_head_kv
        kv_of_head = np.arange(self.n_head) // group
        for li, L in enumerate(self.layers):
            h = self._rmsnorm(x, L["attn_norm"])
            q = self._mm(h, L, "wq")
            k = self._mm(h, L, "wk")
            v = self._mm(h, L, "wv")
            if L["bq"] is not None:
                q = q + L["bq"]
            if L["bk"] is not None:
                k = k + L["bk"]
            if L["bv"] is not None:
                v = v + L["bv"]
            q = q.reshape(n, self.n_head, self.hd_k)
            k = k.reshape(n, self.n_head_kv, self.hd_k)
            v = v.reshape(n, self.n_head_kv, self.hd_v)
            if L["q_norm"] is not None:
                q = self._rmsnorm(q, L["q_norm"])
            if L["k_norm"] is not None:
                k = self._rmsnorm(k, L["k_norm"])
            inv_freq, pos_scale = self.layer_rope[li]
            q = self._rope(q, pos, inv_freq, pos_scale)
            k = self._rope(k, pos, inv_freq, pos_scale)
            k = cache_round(k, self.cache_types[0])
            v = cache_round(v, self.cache_types[1])
            K = np.concatenate([self.cache_k[li], k], axis=0)    # (T, kvh, hd)
            V = np.concatenate([self.cache_v[li], v], axis=0)
            self.cache_k[li] = K
            self.cache_v[li] = V
            T = K.shape[0]
            Kh = K[:, kv_of_head, :]                               # (T, H, hd)
            Vh = V[:, kv_of_head, :]
            scores = np.einsum("nhd,thd->hnt", q, Kh) / self.kq_div
            if self.attn_softcap is not None:
                scores = softcap(scores, self.attn_softcap)
            # cache row t holds absolute position t
            back = pos[:, None] - np.arange(T)[None, :]             # (n, T)
            visible = back >= 0
            if self.swa_layers[li] and not self.ignore_window:
                visible &= back < self.window
            scores = np.where(visible[None, :, :], scores, -np.inf)
            scores = scores - scores.max(axis=-1, keepdims=True)
            p = np.exp(scores)
            p = p / p.sum(axis=-1, keepdims=True)
            attn = np.einsum("hnt,thd->nhd", p, Vh).reshape(n, self.n_head * self.hd_v)
            if self.bitnet:
                attn = self._rmsnorm(attn, L["attn_sub_norm"])
            a = self._mm(attn, L, "wo")
            if self.post_norms:
                a = self._rmsnorm(a, L["post_attn_norm"])
            x = x + a
            h = self._rmsnorm(x, L["ffn_norm"])
            if self.n_expert:
                x = x + self._moe(h, L, li)
                continue
            gte = self._mm(h, L, "w_gate")
            up = self._mm(h, L, "w_up")
            f = self.ffn_act(gte) * up
            if self.bitnet:
                f = self._rmsnorm(f, L["ffn_sub_norm"])
            f = self._mm(f, L, "w_down")
            if self.post_norms:
                f = self._rmsnorm(f, L["post_ffn_norm"])
            x = x + f
        self.n_past += n
        head_in = self._rmsnorm(x, self.out_norm)
        if _reads_q8(self.out_q8, head_in):
            head_in = activations_q8(head_in)
        logits = head_in @ self.w_out.T
        if self.final_softcap is not None:
            logits = softcap(logits, self.final_softcap)
        return logits

    def logits(self, tokens):
        self.reset()
        return self.forward(tokens)

    def greedy(self, tokens, n_new, stop_at=None):
        """Logits of the prompt and n_new greedily generated ids."""
        self.reset()
        prompt_logits = self.forward(tokens)
        last = prompt_logits[-1]
        out = []
        for _ in range(n_new):
            nxt = int(np.argmax(last))
            out.append(nxt)
            if stop_at is not None and nxt == stop_at:
                break
            last = self.forward([nxt])[-1]
        return prompt_logits, out


class Gemma4Model(Model):
    """llama.cpp's gemma4 graph, dense models only (E2B/E4B style); see the
    module docstring.  Per-layer head counts, head sizes, RoPE sizes and FFN
    widths; layers at or past n_layer - shared_kv_layers own no KV cache and
    attend over the cache of layer owner[il]."""

    def __init__(self, path, ignore_window=False, ignore_softcap=False,
                 quantize_activations=False, n_ctx=None, tie_high=False,
                 cache_types=("f32", "f32")):
        # n_ctx: no gemma4 feature depends on the session's context;
        # tie_high and cache_types as Model's
        self.cache_types = checked_cache_types(cache_types)
        self.tie_high = tie_high
        g = GGUFReader(path)
        self.gguf = g
        md = g.metadata
        arch = md["general.architecture"]
        if arch != "gemma4":
            raise GGUFError("Gemma4Model needs a gemma4 file, not %r" % arch)
        self.arch = arch
        if quantize_activations:
            raise GGUFError("--quantize-activations does not apply to gemma4")

        def hp(key, default=None):
            full = arch + "." + key
            if full in md:
                return md[full]
            if default is None:
                raise GGUFError("missing metadata key %s" % full)
            return default

        L = self.n_layer = int(hp("block_count"))
        self.n_embd = int(hp("embedding_length"))
        self.eps = float(hp("attention.layer_norm_rms_epsilon"))

        def per_layer(key, default=None):
            v = hp(key, default)
            if isinstance(v, list):
                if len(v) != L:
                    raise GGUFError("%s.%s: %d values for %d layers" % (arch, key, len(v), L))
                return [int(x) for x in v]
            return [int(v)] * L

        # MoE (26B-A4B style): layers with a router run experts beside
        # their dense FFN
        self.n_expert = int(hp("expert_count", 0))
        self.n_expert_used = int(hp("expert_used_count", 0))
        if self.n_expert and not 1 <= self.n_expert_used <= self.n_expert:
            raise GGUFError("expert_used_count must be in [1, expert_count]")
        if not self.n_expert and any(
                n.endswith(".ffn_gate_inp.weight") for n in g.tensors):
            raise GGUFError("gemma4: ffn_gate_inp without expert_count")
        self.n_head = per_layer("attention.head_count")
        self.n_head_kv = per_layer("attention.head_count_kv", self.n_head)
        self.n_ff = per_layer("feed_forward_length")
        hd_full = int(hp("attention.key_length", self.n_embd // self.n_head[0]))
        hd_swa = int(hp("attention.key_length_swa", hd_full))
        if (int(hp("attention.value_length", hd_full)) != hd_full or
                int(hp("attention.value_length_swa", hd_swa)) != hd_swa):
            raise GGUFError("gemma4 needs value_length == key_length (both kinds)")
        rot_full = int(hp("rope.dimension_count", hd_full))
        rot_swa = int(hp("rope.dimension_count_swa", rot_full))
        base_full = float(hp("rope.freq_base", 10000.0))
        base_swa = float(hp("rope.freq_base_swa", 10000.0))
        factor = float(hp("rope.scaling.factor", 0.0))
        if factor not in (0.0, 1.0) or hp("rope.scaling.type", "linear") not in ("linear", "none"):
            raise GGUFError("gemma4: rope scaling is not supported here")
        self.window = int(hp("attention.sliding_window"))
        pattern = hp("attention.sliding_window_pattern")
        if isinstance(pattern, list):
            if len(pattern) != L:
                raise GGUFError("sliding_window_pattern: %d values for %d layers"
                                % (len(pattern), L))
            self.swa_layers = [bool(b) for b in pattern]
        elif isinstance(pattern, bool):
            self.swa_layers = [pattern] * L
        else:
            raise GGUFError("gemma4.attention.sliding_window_pattern must be a "
                            "bool array (true = sliding-window layer)")
        self.ignore_window = ignore_window
        shared = int(hp("attention.shared_kv_layers", 0))
        n_kv = L - shared
        # llama.cpp's KV-reuse rule (create_memory's layer_reuse_cb)
        self.owner = [il if il < n_kv else n_kv - (2 if self.swa_layers[il] else 1)
                      for il in range(L)]
        self.hd = [hd_swa if s else hd_full for s in self.swa_layers]
        self.n_rot = [rot_swa if s else rot_full for s in self.swa_layers]
        for il in range(L):
            o = self.owner[il]
            if not 0 <= o < n_kv or self.swa_layers[o] != self.swa_layers[il]:
                raise GGUFError("gemma4: layer %d would reuse the KV cache of layer "
                                "%d, not a layer of its own kind" % (il, o))
            if self.n_head[il] % self.n_head_kv[o]:
                raise GGUFError("gemma4: layer %d: head_count not a multiple of "
                                "head_count_kv" % il)
            if self.n_rot[il] % 2 or not 0 < self.n_rot[il] <= self.hd[il]:
                raise GGUFError("gemma4: bad rope dimension count on layer %d" % il)
        self.n_per_layer = int(hp("embedding_length_per_layer_input"))
        # llama.cpp's default cap is 30; 0 in the file means none
        cap = float(md.get(arch + ".final_logit_softcapping", 30.0))
        self.final_softcap = cap if cap and not ignore_softcap else None
        self.attn_softcap = None

        def W(name):
            return g.tensor(name).astype(np.float64)

        def opt(name):
            return W(name) if name in g.tensors else None

        self.tok_embd = W("token_embd.weight")
        self.n_vocab = self.tok_embd.shape[0]
        w_out = opt("output.weight")
        self.w_out = self.tok_embd if w_out is None else w_out
        self.out_norm = W("output_norm.weight")
        P = self.n_per_layer
        if P > 0:
            self.ple = W("per_layer_token_embd.weight")            # (vocab, L*P)
            self.ple_proj = W("per_layer_model_proj.weight")       # (L*P, n_embd)
            self.ple_norm = W("per_layer_proj_norm.weight")        # (P,)
        # one angle per rotated pair: pos * base^(-2i/n_rot) / factor_i; the
        # factors (rope_freqs.weight, proportional RoPE) on full layers only
        ff = None
        if not all(self.swa_layers):
            ff = W("rope_freqs.weight").reshape(-1)
            if ff.size != hd_full // 2:
                raise GGUFError("rope_freqs.weight must hold key_length / 2 values")
        self.layer_freq = []
        for il in range(L):
            r = self.n_rot[il]
            i = np.arange(r // 2, dtype=np.float64)
            base = base_swa if self.swa_layers[il] else base_full
            f = base ** (-2.0 * i / r)
            if not self.swa_layers[il]:
                f = f / ff[:r // 2]
            self.layer_freq.append(f)
        self.layers = []
        for il in range(L):
            p = "blk.%d." % il
            own = self.owner[il] == il
            Ld = dict(
                attn_norm=W(p + "attn_norm.weight"), wq=W(p + "attn_q.weight"),
                q_norm=W(p + "attn_q_norm.weight"), wo=W(p + "attn_output.weight"),
                post_attn_norm=W(p + "post_attention_norm.weight"),
                ffn_norm=W(p + "ffn_norm.weight"), w_gate=W(p + "ffn_gate.weight"),
                w_up=W(p + "ffn_up.weight"), w_down=W(p + "ffn_down.weight"),
                post_ffn_norm=W(p + "post_ffw_norm.weight"),
                # a shared layer's own attn_k / attn_v (if any) are never read
                wk=W(p + "attn_k.weight") if own else None,
                wv=opt(p + "attn_v.weight") if own else None,
                k_norm=W(p + "attn_k_norm.weight") if own else None,
                out_scale=None)
            s_name = p + "layer_output_scale.weight"
            if s_name in g.tensors:
                sv = g.tensor(s_name).reshape(-1)
                if sv.size != 1:
                    raise GGUFError("%s must hold one value" % s_name)
                Ld["out_scale"] = float(sv[0])
            if P > 0:
                Ld.update(inp_gate=W(p + "inp_gate.weight"), proj=W(p + "proj.weight"),
                          post_norm=W(p + "post_norm.weight"))
            Ld["moe"] = None
            if p + "ffn_gate_inp.weight" in g.tensors:
                if p + "ffn_gate_up_exps.weight" in g.tensors:
                    gu = W(p + "ffn_gate_up_exps.weight")          # (E, 2F, n_embd)
                    F = gu.shape[1] // 2
                    gate, up = gu[:, :F, :], gu[:, F:, :]
                else:
                    gate, up = W(p + "ffn_gate_exps.weight"), W(p + "ffn_up_exps.weight")
                Ld["moe"] = dict(
                    router=W(p + "ffn_gate_inp.weight"),               # (E, n_embd)
                    router_scale=W(p + "ffn_gate_inp.scale"),
                    pre_norm_2=W(p + "pre_ffw_norm_2.weight"),
                    post_norm_1=W(p + "post_ffw_norm_1.weight"),
                    post_norm_2=W(p + "post_ffw_norm_2.weight"),
                    gate_exps=gate, up_exps=up,
                    down_exps=W(p + "ffn_down_exps.weight"),           # (E, n_embd, F)
                    down_scale=opt(p + "ffn_down_exps.scale"))
            self.layers.append(Ld)
        self.reset()

    def reset(self):
        self.expert_usage = [[0] * self.n_expert for _ in range(self.n_layer)]
        self.cache_k = {}
        self.cache_v = {}
        for il in range(self.n_layer):
            if self.owner[il] == il:
                self.cache_k[il] = np.zeros((0, self.n_head_kv[il], self.hd[il]))
                self.cache_v[il] = np.zeros((0, self.n_head_kv[il], self.hd[il]))
        self.n_past = 0

    def _rope_layer(self, x, pos, il):
        """NeoX RoPE of x (n, heads, hd) on the first n_rot dims of layer il."""
        r = self.n_rot[il]
        ang = pos.astype(np.float64)[:, None] * self.layer_freq[il][None, :]
        cos = np.cos(ang)[:, None, :]
        sin = np.sin(ang)[:, None, :]
        y = x.copy()
        a = x[:, :, 0:r // 2]
        b = x[:, :, r // 2:r]
        y[:, :, 0:r // 2] = a * cos - b * sin
        y[:, :, r // 2:r] = a * sin + b * cos
        return y

    def per_layer_inputs(self, tokens, x):
        """(n, n_layer, P): the per-layer embedding inputs of the tokens, x the
        scaled token embeddings."""
        n, L, P = len(tokens), self.n_layer, self.n_per_layer
        from_tok = self.ple[tokens].reshape(n, L, P) * np.sqrt(float(P))
        proj = (x @ self.ple_proj.T) / np.sqrt(float(self.n_embd))
        proj = self._rmsnorm(proj.reshape(n, L, P), self.ple_norm)
        return (proj + from_tok) / np.sqrt(2.0)

    def forward(self, tokens):
        tokens = np.asarray(tokens, dtype=np.int64)
        if tokens.size and (tokens.min() < 0 or tokens.max() >= self.n_vocab):
            raise ValueError("token id out of range [0, %d)" % self.n_vocab)
        n = tokens.size
        pos = np.arange(self.n_past, self.n_past + n)
        x = self.tok_embd[tokens] * np.sqrt(float(self.n_embd))
        pli = self.per_layer_inputs(tokens, x) if self.n_per_layer > 0 else None
        for il, L in enumerate(self.layers):
            H, hd = self.n_head[il], self.hd[il]
            h = self._rmsnorm(x, L["attn_norm"])
            q = (h @ L["wq"].T).reshape(n, H, hd)
            q = self._rope_layer(self._rmsnorm(q, L["q_norm"]), pos, il)
            o = self.owner[il]
            if o == il:
                kvh = self.n_head_kv[il]
                k = (h @ L["wk"].T).reshape(n, kvh, hd)
                # no attn_v: V is the raw K projection (before its norm)
                v = k if L["wv"] is None else (h @ L["wv"].T).reshape(n, kvh, hd)
                k = self._rope_layer(self._rmsnorm(k, L["k_norm"]), pos, il)
                v = self._rmsnorm(v, 1.0)
                k = cache_round(k, self.cache_types[0])
                v = cache_round(v, self.cache_types[1])
                self.cache_k[il] = np.concatenate([self.cache_k[il], k], axis=0)
                self.cache_v[il] = np.concatenate([self.cache_v[il], v], axis=0)
            K, V = self.cache_k[o], self.cache_v[o]
            kv_of_head = np.arange(H) // (H // K.shape[1])
            T = K.shape[0]
            scores = np.einsum("nhd,thd->hnt", q, K[:, kv_of_head, :])   # scale 1
            back = pos[:, None] - np.arange(T)[None, :]
            visible = back >= 0
            if self.swa_layers[il] and not self.ignore_window:
                visible &= back < self.window
            scores = np.where(visible[None, :, :], scores, -np.inf)
            scores = scores - scores.max(axis=-1, keepdims=True)
            pr = np.exp(scores)
            pr = pr / pr.sum(axis=-1, keepdims=True)
            attn = np.einsum("hnt,thd->nhd", pr, V[:, kv_of_head, :]).reshape(n, H * hd)
            x = x + self._rmsnorm(attn @ L["wo"].T, L["post_attn_norm"])
            h = self._rmsnorm(x, L["ffn_norm"])
            f = (gelu_tanh(h @ L["w_gate"].T) * (h @ L["w_up"].T)) @ L["w_down"].T
            if L["moe"] is not None:
                M = L["moe"]
                f = (self._rmsnorm(f, M["post_norm_1"]) +
                     self._rmsnorm(self._experts(x, M, il), M["post_norm_2"]))
            x = x + self._rmsnorm(f, L["post_ffn_norm"])
            if pli is not None:
                gte = gelu_tanh(x @ L["inp_gate"].T) * pli[:, il, :]
                x = x + self._rmsnorm(gte @ L["proj"].T, L["post_norm"])
            if L["out_scale"] is not None:
                x = x * L["out_scale"]
        self.n_past += n
        logits = self._rmsnorm(x, self.out_norm) @ self.w_out.T
        if self.final_softcap is not None:
            logits = softcap(logits, self.final_softcap)
        return logits


    def _experts(self, x, M, il):
        """llama.cpp's gemma4 MoE branch on the residual x: router logits of
        rms_norm(x) / sqrt(n_embd) * router_scale, softmax, the
        expert_used_count most probable experts (ties to the lower index),
        their probabilities renormalized (the sum at least 2^-14), each
        chosen expert's GeGLU FFN of pre_ffw_norm_2(x) times its
        ffn_down_exps.scale, weighted and added in slot order."""
        r = self._rmsnorm(x, 1.0) / np.sqrt(float(self.n_embd)) * M["router_scale"]
        logits = r @ M["router"].T                                # (n, E)
        p = np.exp(logits - logits.max(axis=-1, keepdims=True))
        p = p / p.sum(axis=-1, keepdims=True)
        xe = self._rmsnorm(x, M["pre_norm_2"])
        out = np.zeros_like(x)
        for t in range(x.shape[0]):
            chosen, w = route(p[t], self.n_expert_used, self.tie_high)
            for s, e in enumerate(chosen):
                self.expert_usage[il][e] += 1
                g = M["gate_exps"][e] @ xe[t]
                u = M["up_exps"][e] @ xe[t]
                y = M["down_exps"][e] @ (gelu_tanh(g) * u)
                if M["down_scale"] is not None:
                    y = y * M["down_scale"][e]
                out[t] += w[s] * y
        return out


# ---------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------

def _print_info(g):
    print("GGUF v%d, alignment %d, data at %d, %d tensors, %d keys"
          % (g.version, g.alignment, g.data_offset, len(g.tensors), len(g.metadata)))
    for k, v in g.metadata.items():
        t = VALUE_TYPE_NAMES.get(g.metadata_types[k], "?")
        if isinstance(v, list):
            shown = "[%d items] %s" % (len(v), v[:8])
        else:
            shown = repr(v)
        print("  %-45s %-8s %s" % (k, t, shown))
    for name in g.tensor_order:
        t = g.tensors[name]
        print("  %-32s %-5s %s" % (name, t.type_name, t.dims))


def main(argv=None):
    ap = argparse.ArgumentParser(description="NumPy reference forward pass for GGUF models")
    ap.add_argument("model")
    ap.add_argument("--tokens", help="comma-separated token ids")
    ap.add_argument("--dump-logits", dest="dump_logits", help="write float32 [n, vocab] .npy")
    ap.add_argument("--greedy", type=int, default=0, help="generate N tokens greedily")
    ap.add_argument("--stop-at-eos", dest="stop_at_eos", action="store_true",
                    help="stop greedy generation after tokenizer.ggml.eos_token_id")
    ap.add_argument("--info", action="store_true", help="print metadata and tensors")
    ap.add_argument("--dump-tensor", dest="dump_tensor", nargs=2, metavar=("NAME", "OUT"),
                    help="write one dequantized tensor as float32 .npy")
    ap.add_argument("--ignore-window", dest="ignore_window", action="store_true",
                    help="negative tests: mask every layer as a global layer "
                         "(RoPE bases unchanged)")
    ap.add_argument("--ignore-softcap", dest="ignore_softcap", action="store_true",
                    help="negative tests: skip attention and final soft-capping")
    ap.add_argument("--expert-usage", dest="expert_usage", action="store_true",
                    help="print how often each layer chose each expert, over "
                         "the prompt and the greedy tokens")
    ap.add_argument("--cache-type-k", "-ctk", dest="cache_type_k", default="f16",
                    choices=["f32", "f16", "q8_0"], help="the KV cache's K type (default f16, "
                         "hesper-run's and llama.cpp's)")
    ap.add_argument("--cache-type-v", "-ctv", dest="cache_type_v", default="f16",
                    choices=["f32", "f16", "q8_0"], help="the KV cache's V type")
    ap.add_argument("--tie-high", dest="tie_high", action="store_true",
                    help="negative tests: router ties go to the higher index")
    ap.add_argument("--ctx", type=int,
                    help="the session's context size (default: context_length "
                         "capped at 4096); phi3 picks its LongRoPE factors "
                         "by it")
    ap.add_argument("--quantize-activations", dest="quantize_activations",
                    nargs="?", const="llama.cpp", default=None,
                    choices=["llama.cpp", "q8_1"],
                    help="bitnet: multiply TQ1_0/TQ2_0/I2_S projections with "
                         "8-bit activations as llama.cpp's CPU kernels do "
                         "(Q8_K blocks / I8_S per token), or with =q8_1 "
                         "round the input of the I2_S and TQ2_0 ones to q8_1 "
                         "blocks as hesper-run's integer kernels do; "
                         "llama-family "
                         "Q8_0/Q4_0 projections (either value): input "
                         "rounded as q8_1 blocks, as hesper-run "
                         "--quantize-activations")
    args = ap.parse_args(argv)

    if args.info or args.dump_tensor:
        g = GGUFReader(args.model)
        if args.info:
            _print_info(g)
        if args.dump_tensor:
            np.save(args.dump_tensor[1], g.tensor(args.dump_tensor[0]))
        if not args.tokens:
            return 0
    if not args.tokens:
        ap.error("--tokens is required")
    tokens = [int(t) for t in args.tokens.replace(" ", "").split(",") if t != ""]
    if not tokens:
        ap.error("--tokens is empty")
    extra = {} if args.ctx is None else dict(n_ctx=args.ctx)
    if args.tie_high:
        extra["tie_high"] = True
    if (args.cache_type_k, args.cache_type_v) != ("f32", "f32"):
        extra["cache_types"] = (args.cache_type_k, args.cache_type_v)
    model = Model(args.model, ignore_window=args.ignore_window,
                  ignore_softcap=args.ignore_softcap,
                  quantize_activations=args.quantize_activations, **extra)
    stop = model.gguf.metadata.get("tokenizer.ggml.eos_token_id") if args.stop_at_eos else None
    logits, ids = model.greedy(tokens, args.greedy, stop_at=stop)
    if args.dump_logits:
        np.save(args.dump_logits, logits.astype(np.float32))
    if args.greedy:
        print("ids: " + ",".join(str(i) for i in ids))
    if args.expert_usage:
        for li, counts in enumerate(getattr(model, "expert_usage", [])):
            if counts:
                print("layer %d expert usage: %s" % (li, ",".join(str(c) for c in counts)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
