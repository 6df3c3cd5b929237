"""hesper.Llama against hesper-run on generated models (pytest).

Run by test/Python/pytest.test with PYTHONPATH=<build>/python, the build's
tools on PATH and HESPER_GGUF_TOOLS naming utils/gguf.
"""

import os
import re
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import hesper
from support import iterations_while, rss_kib

GGUF_TOOLS = os.environ.get(
    "HESPER_GGUF_TOOLS",
    os.path.join(os.path.dirname(__file__), "..", "..", "utils", "gguf"))


def make_model(path, *args):
    subprocess.run([sys.executable, os.path.join(GGUF_TOOLS, "make_model.py"),
                    str(path), "--quiet", *args], check=True)
    return str(path)


@pytest.fixture(scope="module")
def model_path(tmp_path_factory):
    return make_model(tmp_path_factory.mktemp("m") / "chat.gguf",
                      "--arch", "qwen2", "--chat-template", "chatml",
                      "--seed", "23")


@pytest.fixture(scope="module")
def llm(model_path):
    return hesper.Llama(model_path, n_ctx=256, device="cpu", n_threads=1)


def hesper_run(model_path, *args):
    out = subprocess.run(
        ["hesper-run", model_path, "--backend=cpu", "-t", "1", "-c", "256",
         "--temp", "0", "--print-token-ids", *args],
        capture_output=True, text=True, check=True).stdout
    return [int(t) for t in
            re.search(r"generated ids: (.*)$", out, re.M).group(1).split(",")]


def test_module_basics():
    assert re.match(r"^\d+\.\d+\.\d+$", hesper.__version__)
    found = hesper.devices()
    assert any(d.backend == "cpu" for d in found)
    assert all(isinstance(d.name, str) and d.name for d in found)


def test_completion_equals_hesper_run(llm, model_path):
    prompt = "Once upon a time"
    out = llm(prompt, max_tokens=12, temperature=0)
    assert out["object"] == "text_completion"
    choice = out["choices"][0]
    assert choice["finish_reason"] == "length"
    expected = hesper_run(model_path, "-p", prompt, "-n", "12")
    assert llm.last_tokens == expected
    assert choice["text"] == llm.detokenize(expected).decode(
        "utf-8", errors="replace")
    prompt_ids = llm.tokenize(prompt.encode())
    assert out["usage"] == {"prompt_tokens": len(prompt_ids),
                            "completion_tokens": 12,
                            "total_tokens": len(prompt_ids) + 12}
    # The same from token ids.
    again = llm(prompt_ids, max_tokens=12, temperature=0)
    assert llm.last_tokens == expected
    assert again["choices"][0]["text"] == choice["text"]


def test_streaming_gives_the_same_text(llm):
    whole = llm("The compiler", max_tokens=16, temperature=0)
    chunks = list(llm("The compiler", max_tokens=16, temperature=0,
                      stream=True))
    assert len(chunks) >= 2
    assert "".join(c["choices"][0]["text"] for c in chunks) == \
        whole["choices"][0]["text"]
    assert chunks[-1]["choices"][0]["finish_reason"] == "length"
    assert all(c["choices"][0]["finish_reason"] is None
               for c in chunks[:-1])


def test_stop_strings(llm):
    full = llm("Call me", max_tokens=12, temperature=0)["choices"][0]["text"]
    stop = full[4:6]
    assert stop
    cut = llm("Call me", max_tokens=12, temperature=0, stop=[stop])
    assert cut["choices"][0]["text"] == full[:full.index(stop)]
    assert cut["choices"][0]["finish_reason"] == "stop"
    streamed = "".join(c["choices"][0]["text"] for c in
                       llm("Call me", max_tokens=12, temperature=0,
                           stop=stop, stream=True))
    assert streamed == cut["choices"][0]["text"]


def test_seeds_reproduce(llm):
    a = llm("Many years later", max_tokens=16, temperature=0.9, seed=7)
    b = llm("Many years later", max_tokens=16, temperature=0.9, seed=7)
    assert a["choices"][0]["text"] == b["choices"][0]["text"]
    # hesper-run's sampler: the same seed, the same tokens.
    tokens = llm.last_tokens
    out = subprocess.run(
        ["hesper-run", llm.model_path, "--backend=cpu", "-t", "1", "-c",
         "256", "-p", "Many years later", "-n", "16", "--temp", "0.9",
         "--seed", "7", "--print-token-ids"],
        capture_output=True, text=True, check=True).stdout
    assert tokens == [int(t) for t in re.search(
        r"generated ids: (.*)$", out, re.M).group(1).split(",")]
    others = {llm("Many years later", max_tokens=16, temperature=0.9,
                  seed=s)["choices"][0]["text"] for s in range(4)}
    assert len(others) > 1


def test_chat_completion(llm, model_path):
    messages = [{"role": "system", "content": "Be brief."},
                {"role": "user", "content": "Hello there"}]
    out = llm.create_chat_completion(messages, max_tokens=8, temperature=0)
    assert out["object"] == "chat.completion"
    message = out["choices"][0]["message"]
    assert message["role"] == "assistant"
    text = ("<|im_start|>system\nBe brief.<|im_end|>\n"
            "<|im_start|>user\nHello there<|im_end|>\n"
            "<|im_start|>assistant\n")
    ids = llm.tokenize(text.encode(), add_bos=True, special=True)
    assert out["usage"]["prompt_tokens"] == len(ids)
    expected = hesper_run(model_path, "--tokens", ",".join(map(str, ids)),
                          "-n", "8")
    n = len(llm.last_tokens)
    assert llm.last_tokens == expected[:n]
    chunks = list(llm.create_chat_completion(messages, max_tokens=8,
                                             temperature=0, stream=True))
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant"}
    assert "".join(c["choices"][0]["delta"].get("content", "")
                   for c in chunks) == message["content"]


def test_eval_logits_equal_dump_logits(llm, model_path, tmp_path):
    ids = llm.tokenize(b"It was a bright cold day")
    llm.reset()
    llm.eval(ids)
    logits = llm.logits
    assert logits.dtype == np.float32 and logits.shape == (llm.n_vocab(),)
    dump = tmp_path / "logits.npy"
    subprocess.run(
        ["hesper-run", model_path, "--backend=cpu", "-t", "1", "-c", "256",
         "--tokens", ",".join(map(str, ids)), "-n", "1", "--temp", "0",
         "--dump-logits", str(dump)],
        capture_output=True, check=True)
    reference = np.load(dump)[len(ids) - 1]
    np.testing.assert_allclose(logits, reference, rtol=1e-5, atol=1e-5)
    # The array is the session's: the next eval changes it.
    kept = logits.copy()
    llm.eval([5])
    assert not np.array_equal(llm.logits, kept)


def test_f16_kv_cache_equals_hesper_run(model_path, tmp_path):
    f16 = hesper.Llama(model_path, device="cpu", n_ctx=256, n_threads=1,
                       type_k="f16", type_v="f16")
    ids = f16.tokenize(b"It was a bright cold day")
    f16.eval(ids)
    dump = tmp_path / "logits16.npy"
    subprocess.run(
        ["hesper-run", model_path, "--backend=cpu", "-t", "1", "-c", "256",
         "-ctk", "f16", "-ctv", "f16", "--tokens", ",".join(map(str, ids)),
         "-n", "1", "--temp", "0", "--dump-logits", str(dump)],
        capture_output=True, check=True)
    np.testing.assert_allclose(f16.logits, np.load(dump)[len(ids) - 1],
                               rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="q4_0"):
        hesper.Llama(model_path, device="cpu", type_k="q4_0")


def test_quantized_activations_equal_hesper_run(tmp_path):
    # Q4_0 weights, token by token (n_batch=1: single-token evals quantize
    # their activations), against hesper-run --quantize-activations -b 1;
    # the exact products give other logits.
    path = make_model(tmp_path / "q4.gguf", "--arch", "llama", "--seed", "41",
                      "--type", "q4_0")
    ids = [1, 17, 33, 49, 65, 81]
    runs = {}
    for quantized in (True, False):
        llm = hesper.Llama(path, device="cpu", n_ctx=64, n_batch=1,
                           n_threads=1, quantize_activations=quantized)
        llm.eval(ids)
        runs[quantized] = llm.logits.copy()
    dump = tmp_path / "q.npy"
    subprocess.run(
        ["hesper-run", path, "--backend=cpu", "-t", "1", "-c", "64", "-b", "1",
         "--quantize-activations", "--tokens", ",".join(map(str, ids)),
         "-n", "1", "--temp", "0", "--dump-logits", str(dump)],
        capture_output=True, check=True)
    np.testing.assert_allclose(runs[True], np.load(dump)[len(ids) - 1],
                               rtol=1e-5, atol=1e-5)
    assert np.abs(runs[True] - runs[False]).max() > 1e-3


def test_errors_are_python_exceptions(llm, tmp_path):
    with pytest.raises(FileNotFoundError):
        hesper.Llama(str(tmp_path / "missing.gguf"))
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"GGUF not really")
    with pytest.raises(ValueError):
        hesper.Llama(str(bad))
    with pytest.raises(ValueError, match="device"):
        hesper.Llama(llm.model_path, device="tpu")
    with pytest.raises(ValueError, match="temperature"):
        llm("x", temperature=-1)
    with pytest.raises(ValueError, match="top_p"):
        llm("x", top_p=2)
    with pytest.raises(ValueError, match="context"):
        llm(list(range(5)) * 60)
    with pytest.raises(ValueError, match="vocabulary"):
        llm.eval([10 ** 6])
    with pytest.raises(ValueError, match="vocabulary"):
        llm.detokenize([-1])
    with pytest.raises(ValueError, match="empty"):
        llm([])
    # Still usable afterwards.
    assert llm("Hi", max_tokens=2, temperature=0)["usage"][
        "completion_tokens"] == 2


def test_generation_releases_the_gil(llm):
    # The main thread ran Python while the other generated: many loop
    # iterations, not a handful between GIL switches. A generation that
    # held the GIL would give ~0 every time; on a machine busy with other
    # work the OS may not run this thread at all during one short
    # generation, so the best of three attempts counts.
    counters = []
    for _ in range(3):
        counters.append(iterations_while(
            lambda: llm("In a hole in the ground", max_tokens=200,
                        temperature=0)))
        if counters[-1] > 10000:
            break
    assert max(counters) > 10000, counters


def test_create_and_destroy_keeps_memory_steady(model_path):
    import gc
    for _ in range(5):  # warm up the allocators
        hesper.Llama(model_path, n_ctx=64, device="cpu", n_threads=1)
    gc.collect()
    start = rss_kib()
    for _ in range(100):
        llm = hesper.Llama(model_path, n_ctx=64, device="cpu", n_threads=1)
        llm("Hi", max_tokens=2, temperature=0)
        del llm
    gc.collect()
    grown = rss_kib() - start
    assert grown < 64 * 1024, f"resident memory grew by {grown} KiB"


def test_ctrl_c_interrupts_a_generation_between_tokens(model_path):
    import _thread
    import signal
    # Python's own SIGINT handler (a test runner may have SIGINT ignored,
    # and then interrupt_main does nothing).
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    # A long generation (about 1,400 tokens before the end token at
    # temperature 0), timed whole, then interrupted by SIGINT's handler
    # shortly after it starts: the handler runs between tokens, so it stops
    # early with KeyboardInterrupt and the model stays usable.
    llm = hesper.Llama(model_path, n_ctx=4096, device="cpu", n_threads=1)
    full = time.perf_counter()
    out = llm("Once upon a time", max_tokens=4000, temperature=0)
    full = time.perf_counter() - full
    assert out["usage"]["completion_tokens"] > 1000
    timer = threading.Timer(full / 10, _thread.interrupt_main)
    start = time.perf_counter()
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        llm("Once upon a time", max_tokens=4000, temperature=0)
        time.sleep(10)  # finished first: wait for the signal (a failure)
    elapsed = time.perf_counter() - start
    timer.join()
    signal.signal(signal.SIGINT, previous)
    assert elapsed < full * 0.6, (elapsed, full)
    llm.reset()
    assert llm("Hi", max_tokens=2, temperature=0)["usage"][
        "completion_tokens"] == 2


def test_program_cache_is_shared_with_hesper_run(model_path, tmp_path,
                                                 monkeypatch):
    # The second Llama loads the programs the first compiled (the same
    # folder and key as hesper-run's), and generates the same tokens.
    monkeypatch.setenv("HESPER_CACHE_DIR", str(tmp_path))
    tokens = []
    for _ in range(2):
        llm = hesper.Llama(model_path, n_ctx=256, device="cpu", n_threads=1)
        llm("Once upon a time", max_tokens=12, temperature=0)
        tokens.append(llm.last_tokens)
        del llm
    assert tokens[0] == tokens[1]
    info = subprocess.run(["hesper-run", "--cache-info"], capture_output=True,
                          text=True, check=True).stdout
    assert "entries: 1 " in info and "hits: 1, misses: 1" in info, info
    # hesper-run with the same context and chunk size hits the same entry.
    out = subprocess.run(
        ["hesper-run", model_path, "--backend=cpu", "-t", "1", "-c", "256",
         "-p", "Once upon a time", "-n", "12", "--temp", "0",
         "--print-token-ids"], capture_output=True, check=True)
    stderr = out.stderr.decode(errors="replace")
    assert "program cache: hit" in stderr, stderr
    ids = re.search(rb"generated ids: (.*)$", out.stdout, re.M).group(1)
    assert [int(t) for t in ids.split(b",")] == tokens[0]
