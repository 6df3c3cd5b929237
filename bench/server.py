#!/usr/bin/env python3
# ===- server.py - hesper-server under concurrent streams ------------------=== #
#
# Part of the Hesper project.
#
# ===----------------------------------------------------------------------=== #
#
# Starts hesper-server (and, with --llama-server, an existing llama-server
# build, side by side in the same run) on a model, then for 1, 4 and 8
# concurrent clients streams greedy completions of --tokens tokens each
# (ignore_eos, so every request generates exactly that many) and prints,
# per server and stream count:
#
#   aggregate decode tok/s  all generated tokens over the wall time of the
#                           round (prompt processing included),
#   per-stream tok/s        a stream's tokens after its first, over the time
#                           from its first token to its last,
#   TTFT p50/p99            time from sending a request to its first token,
#
# then the ratios hesper/llama-server and hesper's 8-stream aggregate over
# its own 1-stream rate. The server overhead per token at one stream is
# hesper-run's decode time per token on the same prompt (no HTTP, JSON or
# SSE) against the server's. Standard library only; never fails on time.
#
#   bench/server.py --model build/demo-model.gguf
#       [--hesper-server build/bin/hesper-server]
#       [--hesper-run build/bin/hesper-run]
#       [--llama-server PATH] [--streams 1,4,8] [--tokens 64]
#       [--requests 2] [--threads 2] [--ctx 512]
#
# llama-server runs with -np = the largest stream count and -c = that many
# times --ctx (it splits its context over the slots); hesper-server with
# -np and -c --ctx per slot. Build llama-server by hand, outside this
# repository.
#
# ===----------------------------------------------------------------------=== #

import argparse
import http.client
import json
import os
import re
import statistics
import subprocess
import sys
import threading
import time
import urllib.parse

PROMPTS = [
    "Once upon a time", "The compiler", "In a hole in the ground",
    "It was a bright cold day", "Call me", "Many years later",
    "All happy families", "A screaming comes across the sky",
]


def free_port():
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Server:
    def __init__(self, name, argv, port):
        self.name = name
        self.port = port
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True)
        self.log = []
        threading.Thread(target=self._drain, daemon=True).start()
        deadline = time.time() + 300
        while time.time() < deadline:
            if self.proc.poll() is not None:
                sys.exit(f"{name} exited:\n" + "".join(self.log))
            try:
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
                c.request("GET", "/health")
                if c.getresponse().status == 200:
                    return
            except OSError:
                pass
            time.sleep(0.2)
        sys.exit(f"{name} did not start")

    def _drain(self):
        for line in self.proc.stderr:
            self.log.append(line)

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def stream_once(port, prompt, tokens):
    """One streamed completion: (ttft s, first-to-last s, tokens seen)."""
    body = json.dumps({"prompt": prompt, "max_tokens": tokens,
                       "temperature": 0, "ignore_eos": True, "stream": True,
                       "n_predict": tokens, "cache_prompt": False})
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    start = time.perf_counter()
    c.request("POST", "/v1/completions", body,
              {"Content-Type": "application/json"})
    r = c.getresponse()
    if r.status != 200:
        sys.exit(f"HTTP {r.status}: {r.read()[:300]}")
    first = last = None
    seen = 0
    buffer = b""
    while True:
        chunk = r.read1(65536)
        if not chunk:
            break
        buffer += chunk
        while b"\n\n" in buffer:
            event, buffer = buffer.split(b"\n\n", 1)
            if not event.startswith(b"data: ") or event == b"data: [DONE]":
                continue
            data = json.loads(event[6:])
            choices = data.get("choices") or []
            if choices and (choices[0].get("text") or
                            choices[0].get("finish_reason") is None):
                now = time.perf_counter()
                if choices[0].get("text"):
                    seen += 1
                if first is None:
                    first = now
                last = now
    c.close()
    first = first or time.perf_counter()
    return first - start, (last or first) - first, seen


def run_round(port, streams, tokens, requests):
    results = []
    lock = threading.Lock()

    def client(i):
        for k in range(requests):
            prompt = PROMPTS[(i + k) % len(PROMPTS)] + f" ({i}.{k})"
            r = stream_once(port, prompt, tokens)
            with lock:
                results.append(r)

    start = time.perf_counter()
    threads = [threading.Thread(target=client, args=(i,))
               for i in range(streams)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - start
    total = streams * requests * tokens
    ttft = sorted(r[0] for r in results)
    per_stream = [(tokens - 1) / r[1] for r in results if r[1] > 0]
    p99 = ttft[min(len(ttft) - 1, int(round(0.99 * (len(ttft) - 1))))]
    return {"aggregate": total / wall,
            "per_stream": statistics.median(per_stream) if per_stream else 0,
            "ttft_p50": statistics.median(ttft), "ttft_p99": p99}


def hesper_run_decode(hesper_run, model, tokens, threads, ctx):
    out = subprocess.run(
        [hesper_run, model, "--backend=cpu", "-t", str(threads), "-c",
         str(ctx), "-n", str(tokens), "--temp", "0", "-p", PROMPTS[0]],
        capture_output=True, text=True, check=True)
    m = re.search(r"decode: \d+ tokens in [\d.]+ ms \(([\d.]+) tok/s\)",
                  out.stderr + out.stdout)
    return float(m.group(1)) if m else None


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    build = os.path.join(os.path.dirname(here), "build", "bin")
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--model", required=True)
    p.add_argument("--hesper-server",
                   default=os.path.join(build, "hesper-server"))
    p.add_argument("--hesper-run", default=os.path.join(build, "hesper-run"))
    p.add_argument("--llama-server")
    p.add_argument("--streams", default="1,4,8")
    p.add_argument("--tokens", type=int, default=64)
    p.add_argument("--requests", type=int, default=2)
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--ctx", type=int, default=512)
    a = p.parse_args()
    counts = [int(s) for s in a.streams.split(",")]
    slots = max(counts)

    servers = []
    port = free_port()
    servers.append(Server("hesper", [
        a.hesper_server, "-m", a.model, "--port", str(port), "--backend=cpu",
        "-t", str(a.threads), "-np", str(slots), "-c", str(a.ctx)], port))
    if a.llama_server:
        port = free_port()
        servers.append(Server("llama-server", [
            a.llama_server, "-m", a.model, "--port", str(port), "-t",
            str(a.threads), "-np", str(slots), "-c", str(a.ctx * slots),
            "--no-webui"], port))

    table = {}
    try:
        for s in servers:
            run_round(s.port, 1, 8, 1)  # warm up
            for n in counts:
                table[(s.name, n)] = run_round(s.port, n, a.tokens,
                                               a.requests)
    finally:
        for s in servers:
            s.stop()

    print(f"model {a.model}, {a.tokens} tokens per request, "
          f"{a.requests} requests per client, {a.threads} threads, "
          f"{slots} slots")
    print(f"{'server':<14}{'streams':>8}{'aggregate tok/s':>17}"
          f"{'per-stream tok/s':>18}{'TTFT p50 ms':>13}{'TTFT p99 ms':>13}")
    for (name, n), r in table.items():
        print(f"{name:<14}{n:>8}{r['aggregate']:>17.1f}"
              f"{r['per_stream']:>18.1f}{r['ttft_p50'] * 1000:>13.1f}"
              f"{r['ttft_p99'] * 1000:>13.1f}")
    if a.llama_server:
        for n in counts:
            h, l = table[("hesper", n)], table[("llama-server", n)]
            print(f"hesper/llama-server at {n} streams: aggregate "
                  f"{h['aggregate'] / l['aggregate']:.2f}x, TTFT p50 "
                  f"{h['ttft_p50'] / l['ttft_p50']:.2f}x")
    one, most = table[("hesper", counts[0])], table[("hesper", counts[-1])]
    print(f"hesper aggregate at {counts[-1]} streams over {counts[0]}: "
          f"{most['aggregate'] / one['aggregate']:.2f}x")
    run = hesper_run_decode(a.hesper_run, a.model, a.tokens, a.threads, a.ctx)
    if run and counts[0] == 1:
        print(f"server overhead per token at 1 stream: hesper-run decodes "
              f"{run:.1f} tok/s, the server's stream {one['per_stream']:.1f} "
              f"tok/s: {100 * (1 - one['per_stream'] / run):.1f}%")


if __name__ == "__main__":
    main()
