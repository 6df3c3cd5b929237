"""The compiler from Python: graphs traced from Python bodies, compiled for
the CPU target and for Vulkan (lavapipe here), checked against the
reference interpreter and against NumPy expressions of the same math.

Run by test/Python/pytest.test (make test); by hand:
    PYTHONPATH=build/python python3 -m pytest python/tests
"""

import gc

import numpy as np
import pytest

import hesper
from hesper import exp
from support import iterations_while, rss_kib

DEVICES = ["cpu", "vulkan"]


def rng(seed=0):
    return np.random.default_rng(seed)


def silu(v):
    return v / (1 + np.exp(-v))


def close(a, b, rtol=1e-5, atol=1e-5):
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


def traced_graph():
    """map -> reduce -> matmul with an epilogue, as the issue asks."""
    g = hesper.Graph("traced")
    x = g.external("x", (4, 64))
    y = g.external("y", (64,))
    w = g.external("w", (32, 64))
    h = g.map(lambda a, b: a * 2 + exp.silu(b), [x, y])
    s = g.reduce("sum", h)
    m = g.matmul(h, w, epilogue=lambda lane, acc, total: acc - total * 0.5,
                 extra=[s])
    g.output(m, s)
    return g


def traced_inputs():
    r = rng(1)
    return dict(x=r.standard_normal((4, 64), dtype=np.float32),
                y=r.standard_normal(64, dtype=np.float32),
                w=r.standard_normal((32, 64), dtype=np.float32))


def traced_numpy(x, y, w):
    h = x * 2 + silu(y)
    s = h.sum(-1, keepdims=True)
    return h @ w.T - s * 0.5, s


@pytest.mark.parametrize("device", DEVICES)
def test_traced_graph_equals_interpreter_and_numpy(device):
    inputs = traced_inputs()
    want_m, want_s = traced_numpy(**inputs)
    ref_m, ref_s = hesper.interpret(traced_graph(), **inputs)
    close(ref_m, want_m, rtol=1e-4, atol=1e-4)
    close(ref_s, want_s, rtol=1e-4, atol=1e-4)

    program = hesper.compile(traced_graph(), device=device)
    assert program.device.startswith(device + ":")
    m, s = program.run(**inputs)
    assert m.dtype == np.float32 and m.shape == (4, 32)
    assert s.shape == (4, 1)
    close(m, ref_m)
    close(s, ref_s)
    # The same inputs give bit-identical results run after run.
    m2, s2 = program.run(**inputs)
    assert np.array_equal(m, m2) and np.array_equal(s, s2)
    t = program.timings
    assert t["compile_ms"] > 0 and t["run_ms"] > 0
    assert len(t["kernels_us"]) in (0, len(program.kernels))


def test_fusion_merges_kernels_and_keeps_the_result():
    def build():
        g = hesper.Graph("block")
        x = g.external("x", (8, 128))
        nw = g.external("nw", (128,))
        w = g.external("w", (64, 128))
        n = g.rms_norm(x, nw, eps=1e-5)
        g.output(g.map(lambda v: exp.gelu(v), g.matmul(n, w)))
        return g

    r = rng(2)
    inputs = dict(x=r.standard_normal((8, 128), dtype=np.float32),
                  nw=r.standard_normal(128, dtype=np.float32),
                  w=r.standard_normal((64, 128), dtype=np.float32))
    fused = hesper.compile(build(), device="cpu")
    unfused = hesper.compile(build(), device="cpu", fuse=False)
    assert len(fused.kernels) < len(unfused.kernels)
    assert "circuit.reduce" in unfused.mlir and "circuit.matmul" in fused.mlir
    # rms_norm is five ops unfused; fused, the gelu is the matmul's epilogue.
    assert fused.mlir.count("exp.gelu") == 1
    assert "circuit.map" not in fused.mlir.split("circuit.matmul")[1]
    x, nw, w = inputs["x"], inputs["nw"], inputs["w"]
    n = x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-5) * nw
    z = n @ w.T
    want = 0.5 * z * (1 + np.tanh(0.7978845608 * (z + 0.044715 * z ** 3)))
    close(fused.run(**inputs), want, rtol=1e-4, atol=1e-4)
    close(fused.run(**inputs), unfused.run(**inputs), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("device", DEVICES)
def test_composites_equal_numpy(device):
    g = hesper.Graph("composites")
    x = g.external("x", (4, 32))
    gamma = g.external("gamma", (32,))
    beta = g.external("beta", (32,))
    g.output(g.softmax(x), g.layer_norm(x, gamma, beta, eps=1e-5),
             g.rms_norm(x))
    r = rng(3)
    inputs = dict(x=r.standard_normal((4, 32), dtype=np.float32),
                  gamma=r.standard_normal(32, dtype=np.float32),
                  beta=r.standard_normal(32, dtype=np.float32))
    sm, ln, rms = hesper.compile(g, device=device).run(**inputs)
    xs = inputs["x"]
    e = np.exp(xs - xs.max(-1, keepdims=True))
    close(sm, e / e.sum(-1, keepdims=True))
    mu = xs.mean(-1, keepdims=True)
    var = ((xs - mu) ** 2).mean(-1, keepdims=True)
    close(ln, (xs - mu) / np.sqrt(var + 1e-5) * inputs["gamma"] +
          inputs["beta"], rtol=1e-4, atol=1e-4)
    close(rms, xs / np.sqrt((xs * xs).mean(-1, keepdims=True) + 1e-6),
          rtol=1e-4, atol=1e-4)


def test_rope_and_attention_equal_numpy():
    heads, kv_heads, hd, seq = 4, 2, 16, 8
    g = hesper.Graph("attn")
    q = g.external("q", (heads * hd,))
    k = g.external("k", (seq, kv_heads, hd))
    v = g.external("v", (seq, kv_heads, hd))
    pos = g.external("pos", (1,), "i32")
    rq = g.rope(q, pos, head_dim=hd, base=10000.0, style="neox")
    g.output(rq, g.attention(rq, k, v, pos, heads=heads, kv_heads=kv_heads,
                             head_dim=hd))
    r = rng(4)
    inputs = dict(q=r.standard_normal(heads * hd, dtype=np.float32),
                  k=r.standard_normal((seq, kv_heads, hd), dtype=np.float32),
                  v=r.standard_normal((seq, kv_heads, hd), dtype=np.float32),
                  pos=np.array([5], np.int32))
    got_q, got_o = hesper.compile(g, device="cpu").run(**inputs)
    # NeoX rotary: element d pairs with d + hd/2.
    p = 5
    qh = inputs["q"].reshape(heads, hd).astype(np.float64)
    theta = p * 10000.0 ** (-np.arange(hd // 2) * 2.0 / hd)
    c, s = np.cos(theta), np.sin(theta)
    a, b = qh[:, :hd // 2], qh[:, hd // 2:]
    want_q = np.concatenate([a * c - b * s, a * s + b * c], axis=1)
    close(got_q.reshape(heads, hd), want_q, rtol=1e-4, atol=1e-4)
    out = []
    for h in range(heads):
        kh = inputs["k"][:p + 1, h // (heads // kv_heads)]
        vh = inputs["v"][:p + 1, h // (heads // kv_heads)]
        sc = kh @ want_q[h] / np.sqrt(hd)
        w = np.exp(sc - sc.max())
        out.append((w / w.sum()) @ vh)
    close(got_o, np.concatenate(out), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("device", DEVICES)
def test_gather_scatter_and_integer_lanes(device):
    g = hesper.Graph("moves")
    x = g.external("x", (16,))
    idx = g.external("idx", (3,), "i32", role="tokens", bound=4)
    table = g.external("table", (4, 8))
    # Reverse x with a gather; every other element negated by lane parity.
    rev = g.gather(x, lambda lane: 15 - lane, [], shape=(16,))
    signs = g.map(lambda lane, v: exp.select(lane % 2 == 0, v, -v), rev,
                  lane=True)
    # Scatter x's lanes to a rotated position in a fresh buffer.
    rot = g.scatter(g.zeros((16,)), 16, lambda lane, v: ((lane + 3) % 16, v),
                    [x])
    # A body reading a whole tensor at a computed index.
    pairs = g.map(lambda lane, t: t[lane // 2] + exp.f32(lane), [x],
                  shape=(8,), whole=[True], lane=True)
    rows = g.gather_rows(table, idx)
    g.output(signs, rot, pairs, rows)
    r = rng(5)
    xs = r.standard_normal(16, dtype=np.float32)
    ts = r.standard_normal((4, 8), dtype=np.float32)
    ids = np.array([3, 0, 2], np.int32)
    got = hesper.compile(g, device=device).run(x=xs, idx=ids, table=ts)
    want_signs = xs[::-1] * np.where(np.arange(16) % 2 == 0, 1, -1)
    assert np.array_equal(got[0], want_signs.astype(np.float32))
    assert np.array_equal(got[1], np.roll(xs, 3))
    assert np.array_equal(got[2], xs[np.arange(8) // 2] +
                          np.arange(8, dtype=np.float32))
    assert np.array_equal(got[3], ts[ids])
    ref = hesper.interpret(g, x=xs, idx=ids, table=ts)
    for a, b in zip(got, ref):
        assert np.array_equal(a, b)
    # An index past its declared bound is refused before anything runs.
    with pytest.raises(ValueError, match="idx"):
        hesper.interpret(g, x=xs, idx=np.array([3, 4, 0], np.int32),
                         table=ts)


def test_f16_and_i32_tensors():
    g = hesper.Graph("types")
    h = g.external("h", (8,), np.float16)
    i = g.external("i", (8,), "i32")
    g.output(g.map(lambda a, b: exp.f16(exp.f32(a) * exp.f32(b)), [h, i]),
             g.map(lambda b: (b * 3) // 2 - (b & 1), i))
    hs = np.linspace(-2, 2, 8).astype(np.float16)
    ids = np.arange(8, dtype=np.int32)
    prod, ints = hesper.compile(g, device="cpu").run(h=hs, i=ids)
    assert prod.dtype == np.float16 and ints.dtype == np.int32
    assert np.array_equal(prod, (hs.astype(np.float32) * ids).astype(
        np.float16))
    assert np.array_equal(ints, (ids * 3) // 2 - (ids & 1))


def test_bad_arrays_raise_value_error():
    g = traced_graph()
    program = hesper.compile(g, device="cpu")
    good = traced_inputs()
    for run in (program.run, lambda **a: hesper.interpret(g, **a)):
        with pytest.raises(ValueError, match="dtype float64"):
            run(**dict(good, x=good["x"].astype(np.float64)))
        with pytest.raises(ValueError, match=r"shape \(64, 4\)"):
            run(**dict(good, x=good["x"].T.copy()))
        with pytest.raises(ValueError, match="missing input 'w'"):
            run(x=good["x"], y=good["y"])
        with pytest.raises(ValueError, match="no argument 'z'"):
            run(**dict(good, z=good["y"]))
    # A non-contiguous view of the right dtype and shape is fine.
    x = np.repeat(good["x"], 2, axis=1)[:, ::2]
    assert not x.flags.c_contiguous
    assert np.array_equal(program.run(**dict(good, x=x))[0],
                          program.run(**good)[0])


def test_bad_graphs_raise_and_leave_the_graph_usable():
    g = hesper.Graph("bad")
    x = g.external("x", (8,))
    i = g.external("i", (8,), "i32")
    with pytest.raises(ValueError, match="i32, f32 is expected"):
        g.map(lambda a, b: a + b, [x, i])
    with pytest.raises(ValueError, match="no truth value"):
        g.map(lambda a: a if a > 0 else -a, [x])
    with pytest.raises(ZeroDivisionError):
        g.map(lambda a: a / (1 // 0), [x])
    kept = []
    g.map(lambda a: kept.append(a) or a, [x])
    with pytest.raises(ValueError, match="outside the body"):
        g.map(lambda a: kept[0] + a, [x])
    with pytest.raises(ValueError, match="f32, i32 is expected"):
        g.map(lambda a: a, [x], dtype="i32")
    with pytest.raises(ValueError, match="weight must be"):
        g.matmul(x, x)
    with pytest.raises(ValueError, match="'sum', 'sum_sq' or 'max'"):
        g.reduce("mean", x)
    with pytest.raises(ValueError, match="already has an external"):
        g.external("x", (4,))
    with pytest.raises(ValueError, match="positive"):
        g.external("y", (0,))
    with pytest.raises(ValueError, match="unknown dtype"):
        g.external("y", (4,), "f64")
    with pytest.raises(ValueError, match="another graph"):
        g.map(lambda a: a, hesper.Graph("other").external("o", (8,)))
    # A verifier error names the op, and the op is not left behind.
    w = g.external("w", (4, 5))
    with pytest.raises(ValueError, match="circuit.matmul"):
        g.matmul(x, w)
    assert "circuit.matmul" not in g.mlir
    # After all that the graph still builds and runs.
    g.output(g.map(lambda a: a * 3, x))
    out = hesper.interpret(g, x=np.arange(8, dtype=np.float32),
                           i=np.zeros(8, np.int32),
                           w=np.zeros((4, 5), np.float32))
    assert np.array_equal(out, np.arange(8, dtype=np.float32) * 3)
    with pytest.raises(ValueError, match="finished"):
        g.map(lambda a: a, x)
    with pytest.raises(ValueError, match="device must be"):
        hesper.compile(g, device="tpu")


def test_parse_mlir_text():
    text = """
    circuit.graph @axpy(%a: tensor<1xf32> {circuit.name = "a"},
                        %x: tensor<6xf32> {circuit.name = "x"},
                        %y: tensor<6xf32> {circuit.name = "y"})
        -> tensor<6xf32> {
      %r = circuit.map ins(%a, %x, %y : tensor<1xf32>, tensor<6xf32>,
                           tensor<6xf32>) -> tensor<6xf32> {
      ^bb0(%lane: i32, %s: f32, %u: f32, %v: f32):
        %p = exp.fma %s, %u, %v : f32
        circuit.yield %p : f32
      }
      circuit.output %r : tensor<6xf32>
    }
    """
    g = hesper.parse(text)
    assert g.name == "axpy" and g.finished
    a = np.array([2.0], np.float32)
    x = np.arange(6, dtype=np.float32)
    y = np.ones(6, np.float32)
    assert np.array_equal(hesper.interpret(g, a=a, x=x, y=y), 2 * x + 1)
    assert np.array_equal(hesper.compile(g, device="cpu").run(a=a, x=x, y=y),
                          2 * x + 1)
    with pytest.raises(ValueError, match="no graph @nope: @axpy"):
        hesper.parse(text, "nope")
    with pytest.raises(ValueError, match="line 12:7: custom op "
                       "'circuit.outptu' is unknown"):
        hesper.parse(text.replace("circuit.output", "circuit.outptu"))
    with pytest.raises(ValueError, match="no circuit.graph"):
        hesper.parse("module {}")


def test_compiling_and_running_release_the_gil():
    def work():
        for _ in range(3):
            program = hesper.compile(traced_graph(), device="cpu")
            program.run(**traced_inputs())

    # Holding the GIL through a compile would stop the counting loop for
    # its whole duration: it ran many iterations meanwhile.
    assert iterations_while(work) > 10000


def test_graphs_and_programs_free_their_memory():
    inputs = traced_inputs()
    for _ in range(3):  # warm up the allocators
        hesper.compile(traced_graph(), device="cpu").run(**inputs)
    gc.collect()
    start = rss_kib()
    for _ in range(20):
        g = traced_graph()
        program = hesper.compile(g, device="cpu", threads=1)
        program.run(**inputs)
        hesper.interpret(g, **inputs)
        del program, g
    gc.collect()
    grown = rss_kib() - start
    assert grown < 32 * 1024, f"resident memory grew by {grown} KiB"
