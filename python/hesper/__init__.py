"""Hesper from Python: run GGUF models as llama-cpp-python does, and build,
compile and run Circuit graphs on NumPy arrays.

    import hesper
    llm = hesper.Llama("model.gguf", n_ctx=512, device="cpu")
    out = llm("Once upon a time", max_tokens=32, temperature=0)
    print(out["choices"][0]["text"])

    g = hesper.Graph("k")
    x, y = g.external("x", (1024,)), g.external("y", (1024,))
    g.output(g.map(lambda a, b: a * 2 + hesper.exp.silu(b), [x, y]))
    z = hesper.compile(g, device="cpu").run(x=xs, y=ys)

The work is done by Hesper's C++ libraries (the extension module
`hesper._hesper`): the same tokenizer, chat templates, sessions and
sampler chain as `hesper-run`, so the same seed gives the same tokens.
docs/Python.md describes the API.
"""

import codecs
import time

from . import _hesper
from . import exp
from ._hesper import Graph, Lane, Program, Tensor, interpret, parse

__version__ = "0.1.0"

__all__ = ["Llama", "Device", "devices", "__version__", "Graph", "Tensor",
           "Lane", "Program", "compile", "interpret", "parse", "exp"]


def compile(graph, device="auto", fuse=True, threads=0):
    """Compiles a Graph for a device and returns its Program.

    `device` is "auto" (a GPU, else the CPU target, else lavapipe), "cpu",
    "vulkan" or "cuda", optionally with ":INDEX" (`hesper.devices()`).
    `fuse` runs the fusion passes first (`Program.kernels` lists the
    launches that remain; `Program.mlir` is the IR after fusion).
    `threads` is the CPU target's thread count (0: every core). The graph
    is finished by this call (verified; no more ops can be added). Raises
    ValueError for a graph that does not verify or a bad argument,
    RuntimeError when no such device opens or compilation fails.
    """
    return Program(graph, device=device, fuse=fuse, threads=threads)


class Device:
    """A device the runtime found (as `hesper-run --list-devices` lists)."""

    def __init__(self, backend, index, name, type, subgroup_size,
                 shared_memory_bytes, threads):
        self.backend = backend
        self.index = index
        self.name = name
        self.type = type
        self.subgroup_size = subgroup_size
        self.shared_memory_bytes = shared_memory_bytes
        self.threads = threads

    def __repr__(self):
        return (f"Device({self.backend} {self.index}: {self.name}, "
                f"{self.type})")


def devices():
    """The devices the runtime finds: a list of `Device`."""
    return [Device(**d) for d in _hesper.devices()]


class Llama:
    """A GGUF model compiled for one device, in llama-cpp-python's shape.

    Llama(model_path, n_ctx=512, n_batch=0, device="auto", n_threads=0,
          seed=-1, chat_format=None, program_cache=True, type_k="f16",
          type_v="f16", quantize_activations=None)

    `device` is "auto" (a GPU, else the CPU target), "cpu", "vulkan",
    "cuda" or "interp" (the reference interpreter). `n_ctx` 0 takes the
    model's training context (at most 4096). `seed` is the default seed of
    completions (-1: a fresh one each time). `chat_format` names the chat
    template (chatml, llama3, gemma, phi3) when the file's is not
    recognized. `n_batch` is the prompt chunk (0: 512 on a GPU, 64 on the
    CPU target, 32 on lavapipe).
    `program_cache` loads the compiled programs from the cache `hesper-run`
    keeps (docs/Models.md, "Program cache") and stores them there.
    `type_k` and `type_v` store the KV cache in "f16" (the default, as
    llama.cpp's), "f32" or "q8_0", as hesper-run's -ctk/-ctv
    (llama-cpp-python takes ggml type numbers). `quantize_activations`
    quantizes the input of Q8_0/Q4_0/Q4_K projections to q8_1 and multiplies
    bytes in integers, as hesper-run's --quantize-activations (and
    llama.cpp's CPU backend); None (the default) does so on the CPU target
    only, False keeps f32 activations and exact products everywhere.

    Raises FileNotFoundError for a missing file, ValueError for a file or
    argument Hesper refuses, RuntimeError when the device fails.
    """

    def __init__(self, model_path, n_ctx=512, n_batch=0, device="auto",
                 n_threads=0, seed=-1, chat_format=None, verbose=False,
                 program_cache=True, type_k="f16", type_v="f16",
                 quantize_activations=None):
        self.model_path = model_path
        self._model = _hesper.Model(str(model_path))
        self._session = _hesper.Session(self._model, device, n_ctx, n_batch,
                                        n_threads, program_cache, type_k,
                                        type_v, quantize_activations)
        self._seed = seed
        self._tokens = []  # what the KV cache holds, position by position
        self._chat_format = self._model.chat_format(chat_format or "")
        self.verbose = verbose

    # -- Model facts --------------------------------------------------------

    def n_vocab(self):
        """Tokens in the vocabulary."""
        return self._model.n_vocab

    def n_ctx(self):
        """Positions of the KV cache."""
        return self._session.n_ctx

    @property
    def metadata(self):
        """The GGUF file's metadata (strings and numbers) as strings."""
        return self._model.metadata

    @property
    def device(self):
        """The device the model runs on, as text."""
        return self._session.device

    # -- Tokens -------------------------------------------------------------

    def tokenize(self, text, add_bos=True, special=False):
        """Token ids of `text` (bytes or str); `add_bos` adds BOS as the
        vocabulary asks; `special` parses control-token texts."""
        if isinstance(text, str):
            text = text.encode("utf-8")
        return self._model.tokenize(text, add_bos, special)

    def detokenize(self, tokens):
        """The bytes of the tokens' pieces."""
        return self._model.detokenize(list(tokens))

    # -- Low level ----------------------------------------------------------

    def eval(self, tokens):
        """Feeds `tokens` after the ones already evaluated; `logits` then
        holds the last one's."""
        tokens = list(tokens)
        self._session.eval(tokens)
        self._tokens.extend(tokens)

    @property
    def logits(self):
        """The last evaluated token's logits, a float32 NumPy array of
        n_vocab values that shares the session's memory: valid until the
        next eval (copy it to keep it)."""
        return self._session.logits(self._session)

    def reset(self):
        """Forgets every evaluated token (position 0)."""
        self._session.reset()
        self._tokens = []

    # -- Generation ---------------------------------------------------------

    def _prepare(self, prompt_ids):
        """Feeds `prompt_ids`, keeping the cached prefix it shares."""
        if not prompt_ids:
            raise ValueError("the prompt is empty (no tokens to start from)")
        if len(prompt_ids) >= self.n_ctx():
            raise ValueError(
                f"the prompt has {len(prompt_ids)} tokens; the context has "
                f"{self.n_ctx()} positions (n_ctx), and at least one must be "
                f"left to generate")
        common = _hesper.reusable_prefix(self._tokens, prompt_ids)
        self._session.rewind(common)
        self._tokens = self._tokens[:common]
        self.eval(prompt_ids[common:])

    def generate_ids(self, prompt_ids, max_tokens=16, temperature=0.8,
                     top_k=40, top_p=0.95, min_p=0.05, repeat_penalty=1.0,
                     seed=None, stop_at_eog=True):
        """Yields generated token ids (llama-cpp-python's `generate`, with
        the sampling in C++): the end-of-generation token ends it (not
        yielded), as do `max_tokens` (< 0: until the context is full) and
        the context's end."""
        self._prepare(list(prompt_ids))
        generator = _hesper.Generator(
            self._session, temperature, top_k, top_p, min_p, repeat_penalty,
            64, self._seed if seed is None else seed, list(prompt_ids),
            stop_at_eog)
        n = 0
        self.finish_reason = "length"
        while max_tokens < 0 or n < max_tokens:
            token, end = generator.sample()
            if end:
                self.finish_reason = "stop"
                return
            n += 1
            yield token
            if (max_tokens >= 0 and n >= max_tokens) or \
                    self._session.position >= self.n_ctx():
                return
            self.eval([token])

    def _completion_pieces(self, prompt_ids, max_tokens, stop, sampling):
        """Yields (text, token or None, finish_reason or None): the reply
        split into text pieces, held back while it could be the start of a
        stop string or of a UTF-8 character."""
        stops = [s for s in ([stop] if isinstance(stop, str) else stop or [])
                 if s]
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        text, sent = "", 0
        finish = "stop"
        limit = max_tokens if max_tokens is not None and max_tokens > 0 \
            else -1
        for token in self.generate_ids(prompt_ids, limit, **sampling):
            text += decoder.decode(self.detokenize([token]))
            hit = min((i for i in (text.find(s, max(0, sent - len(s) + 1))
                                   for s in stops) if i >= 0), default=-1)
            if hit >= 0:
                yield text[sent:hit], token, None
                finish = "stop"
                break
            hold = 0
            for s in stops:
                for k in range(min(len(s) - 1, len(text) - sent), hold, -1):
                    if text.endswith(s[:k]):
                        hold = k
                        break
            yield text[sent:len(text) - hold], token, None
            sent = len(text) - hold
        else:
            finish = self.finish_reason
            tail = decoder.decode(b"", final=True)
            yield text[sent:] + tail, None, None
        yield "", None, finish

    def _collect(self, pieces):
        """The whole text, the generated ids (kept as `last_tokens`) and
        the finish reason of `_completion_pieces`."""
        text, tokens, finish = "", [], None
        for piece, token, reason in pieces:
            text += piece
            if token is not None:
                tokens.append(token)
            finish = reason or finish
        self.last_tokens = tokens
        return text, tokens, finish

    def _sampling(self, temperature, top_p, top_k, min_p, repeat_penalty,
                  seed):
        return dict(temperature=temperature, top_p=top_p, top_k=top_k,
                    min_p=min_p, repeat_penalty=repeat_penalty, seed=seed)

    def create_completion(self, prompt, max_tokens=16, temperature=0.8,
                          top_p=0.95, top_k=40, min_p=0.05,
                          repeat_penalty=1.0, stop=None, stream=False,
                          seed=None):
        """A completion of `prompt` (text, or token ids) as OpenAI's
        text_completion dict, or an iterator of its chunks with stream."""
        if isinstance(prompt, (list, tuple)):
            prompt_ids = [int(t) for t in prompt]
        else:
            prompt_ids = self.tokenize(prompt, add_bos=True)
        sampling = self._sampling(temperature, top_p, top_k, min_p,
                                  repeat_penalty, seed)
        cid = f"cmpl-{time.time_ns()}"
        created = int(time.time())
        model = str(self.model_path)
        pieces = self._completion_pieces(prompt_ids, max_tokens, stop,
                                         sampling)

        def usage(n):
            return {"prompt_tokens": len(prompt_ids), "completion_tokens": n,
                    "total_tokens": len(prompt_ids) + n}

        if stream:
            def chunks():
                for text, _, finish in pieces:
                    if not text and finish is None:
                        continue
                    yield {"id": cid, "object": "text_completion",
                           "created": created, "model": model,
                           "choices": [{"text": text, "index": 0,
                                        "logprobs": None,
                                        "finish_reason": finish}]}
            return chunks()
        text, tokens, finish = self._collect(pieces)
        return {"id": cid, "object": "text_completion", "created": created,
                "model": model,
                "choices": [{"text": text, "index": 0, "logprobs": None,
                             "finish_reason": finish}],
                "usage": usage(len(tokens))}

    __call__ = create_completion

    def create_chat_completion(self, messages, max_tokens=None,
                               temperature=0.8, top_p=0.95, top_k=40,
                               min_p=0.05, repeat_penalty=1.0, stop=None,
                               stream=False, seed=None):
        """A reply to `messages` (dicts of role and content) formatted with
        the model's chat template, as OpenAI's chat.completion dict, or an
        iterator of chat.completion.chunk dicts with stream."""
        if self._chat_format is None:
            raise ValueError("the model has no chat template Hesper knows; "
                             "pass chat_format='chatml'|'llama3'|'gemma'|"
                             "'phi3'")
        pairs = []
        for m in messages:
            if not isinstance(m, dict) or "role" not in m or \
                    not isinstance(m.get("content"), str):
                raise ValueError("a message is a dict with 'role' and a "
                                 "string 'content'")
            pairs.append((m["role"], m["content"]))
        text = self._model.format_chat(self._chat_format, pairs)
        prompt_ids = self.tokenize(text, add_bos=True, special=True)
        sampling = self._sampling(temperature, top_p, top_k, min_p,
                                  repeat_penalty, seed)
        cid = f"chatcmpl-{time.time_ns()}"
        created = int(time.time())
        model = str(self.model_path)
        limit = -1 if max_tokens is None else max_tokens
        pieces = self._completion_pieces(prompt_ids, limit, stop, sampling)
        if stream:
            def chunks():
                yield {"id": cid, "object": "chat.completion.chunk",
                       "created": created, "model": model,
                       "choices": [{"index": 0,
                                    "delta": {"role": "assistant"},
                                    "logprobs": None, "finish_reason": None}]}
                for piece, _, finish in pieces:
                    if not piece and finish is None:
                        continue
                    delta = {"content": piece} if piece else {}
                    yield {"id": cid, "object": "chat.completion.chunk",
                           "created": created, "model": model,
                           "choices": [{"index": 0, "delta": delta,
                                        "logprobs": None,
                                        "finish_reason": finish}]}
            return chunks()
        reply, tokens, finish = self._collect(pieces)
        return {"id": cid, "object": "chat.completion", "created": created,
                "model": model,
                "choices": [{"index": 0,
                             "message": {"role": "assistant",
                                         "content": reply},
                             "logprobs": None, "finish_reason": finish}],
                "usage": {"prompt_tokens": len(prompt_ids),
                          "completion_tokens": len(tokens),
                          "total_tokens": len(prompt_ids) + len(tokens)}}
