// A client that goes away mid-stream frees its slot: on a server with one
// slot, a stream of up to 3000 tokens is dropped after its first events;
// the slot frees without generating the rest, and the next request is
// served. Then SIGTERM during a stream: the stream gets a final error
// event and [DONE], and the server exits 0.
//   node disconnect.mjs MODEL.gguf
import { assert, post, startServer, stopServer, metric, sleep }
  from "./server.mjs";

const model = process.argv[2];
const long = { prompt: "Once upon a time", max_tokens: 3000, temperature: 0,
               ignore_eos: true, stream: true };

/// Opens a stream and returns its reader after the first data event.
async function openStream(server, controller) {
  const res = await fetch(server.url + "/v1/completions", {
    method: "POST", headers: { "Content-Type": "application/json" },
    body: JSON.stringify(long), signal: controller?.signal });
  assert.equal(res.status, 200);
  const reader = res.body.getReader();
  const first = await reader.read();
  assert.match(new TextDecoder().decode(first.value), /^data: \{/);
  return reader;
}

const server = await startServer(model, ["-np", "1", "-c", "4096", "-t", "1"]);
try {
  const controller = new AbortController();
  await openStream(server, controller);
  controller.abort();
  // The slot is freed at the engine's next step after a write fails.
  let busy = 1;
  for (let i = 0; i < 200 && busy; ++i) {
    await sleep(50);
    busy = await metric(server, "slots_busy");
  }
  assert.equal(busy, 0, "the slot is still busy after the client left");
  const generated = await metric(server, "generated_tokens_total");
  assert.ok(generated < 3000, `the dropped stream ran on (${generated} tokens)`);
  assert.match(server.log, /POST \/v1\/completions 200 stream \(client gone\) slot 0: .* cancelled/);
  console.log("dropped stream: slot free, generation stopped early");

  // The one slot serves the next request.
  const next = await post(server, "/v1/completions",
                          { prompt: "Hi", max_tokens: 4, temperature: 0 });
  assert.equal(next.status, 200, next.text);
  assert.equal(next.json.usage.completion_tokens, 4);
  console.log("next request served: 4 tokens");

  // SIGTERM with a stream in flight: it ends with an error event, [DONE].
  const reader = await openStream(server);
  const killed = Date.now();
  server.proc.kill("SIGTERM");
  let rest = "";
  const decoder = new TextDecoder();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    rest += decoder.decode(value, { stream: true });
  }
  const events = rest.split("\n\n").filter((e) => e.length);
  assert.equal(events.at(-1), "data: [DONE]");
  const last = JSON.parse(events.at(-2).slice(6));
  assert.equal(last.error.code, 503);
  assert.match(last.error.message, /shutting down/);
  const status = await stopServer(server);
  assert.equal(status.code, 0);
  assert.match(server.log, /received SIGTERM, shutting down/);
  console.log("SIGTERM: the stream ended with", JSON.stringify(last.error.message),
              "and [DONE]; exit 0");
  // The earlier requests' keep-alive connections are idle, not closed: the
  // server closes them as it stops instead of waiting out their 60 s
  // keep-alive timeout (it took 58 s to exit before).
  const seconds = (Date.now() - killed) / 1000;
  assert.ok(seconds < 20, `the server took ${seconds} s to exit`);
  console.log("exited with idle keep-alive connections open: within 20 s");
} catch (e) {
  console.error("--- server log ---\n" + server.log);
  throw e;
} finally {
  await stopServer(server);
}
console.log("disconnect: ok");
