// Bad requests get their status and OpenAI's error object, and the server
// keeps serving: a table of malformed requests, then a few thousand random
// bodies; afterwards /health is 200, a greedy request gives the same tokens
// as before, and the resident memory has not grown past a bound.
//   node bad-input.mjs MODEL.gguf [random bodies]
import { assert, post, get, withServer, metric } from "./server.mjs";
import { readFileSync } from "node:fs";

const model = process.argv[2];
const randomBodies = Number(process.argv[3] ?? 3000);
const key = { Authorization: "Bearer k3y" };

function rssKiB(pid) {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  return Number(/^VmRSS:\s+(\d+) kB$/m.exec(status)[1]);
}

/// [what, method, path, body (string or object), headers, status, message]
const table = [
  ["invalid JSON", "POST", "/v1/chat/completions", "{\"messages\": [", key,
   400, /not valid JSON/],
  ["not an object", "POST", "/v1/completions", "[1, 2]", key, 400,
   /must be a JSON object/],
  ["missing messages", "POST", "/v1/chat/completions", { max_tokens: 2 }, key,
   400, /'messages' is required/],
  ["empty messages", "POST", "/v1/chat/completions", { messages: [] }, key,
   400, /non-empty array/],
  ["messages of the wrong type", "POST", "/v1/chat/completions",
   { messages: "hi" }, key, 400, /'messages' must be/],
  ["a message without content", "POST", "/v1/chat/completions",
   { messages: [{ role: "user" }] }, key, 400, /messages\[0\]\.content/],
  ["an unknown role", "POST", "/v1/chat/completions",
   { messages: [{ role: "wizard", content: "x" }] }, key, 400,
   /messages\[0\]\.role/],
  ["an image part", "POST", "/v1/chat/completions",
   { messages: [{ role: "user", content: [{ type: "image_url" }] }] }, key,
   400, /only text/],
  ["missing prompt", "POST", "/v1/completions", { max_tokens: 2 }, key, 400,
   /'prompt' is required/],
  ["a prompt of the wrong type", "POST", "/v1/completions", { prompt: 7 },
   key, 400, /'prompt' must be/],
  ["token ids outside the vocabulary", "POST", "/v1/completions",
   { prompt: [1, 99999999] }, key, 400, /outside the vocabulary/],
  ["negative token ids", "POST", "/v1/completions", { prompt: [-1] }, key,
   400, /outside the vocabulary/],
  ["max_tokens -1", "POST", "/v1/completions", { prompt: "a", max_tokens: -1 },
   key, 400, /'max_tokens' must be an integer >= 1/],
  ["max_tokens as a string", "POST", "/v1/completions",
   { prompt: "a", max_tokens: "7" }, key, 400, /'max_tokens' must be an integer/],
  ["max_tokens 1.5", "POST", "/v1/completions",
   { prompt: "a", max_tokens: 1.5 }, key, 400, /'max_tokens'/],
  ["temperature -1", "POST", "/v1/completions",
   { prompt: "a", temperature: -1 }, key, 400, /'temperature'/],
  ["temperature as a string", "POST", "/v1/completions",
   { prompt: "a", temperature: "hot" }, key, 400, /'temperature' must be a number/],
  ["top_p 2", "POST", "/v1/completions", { prompt: "a", top_p: 2 }, key, 400,
   /'top_p'/],
  ["top_k -3", "POST", "/v1/completions", { prompt: "a", top_k: -3 }, key,
   400, /'top_k'/],
  ["min_p 1.5", "POST", "/v1/completions", { prompt: "a", min_p: 1.5 }, key,
   400, /'min_p'/],
  ["repeat_penalty 0", "POST", "/v1/completions",
   { prompt: "a", repeat_penalty: 0 }, key, 400, /'repeat_penalty'/],
  ["stream as a string", "POST", "/v1/completions",
   { prompt: "a", stream: "yes" }, key, 400, /'stream'/],
  ["stop as a number", "POST", "/v1/completions", { prompt: "a", stop: 3 },
   key, 400, /'stop'/],
  ["n 2", "POST", "/v1/completions", { prompt: "a", n: 2 }, key, 400, /'n'/],
  ["seed as a string", "POST", "/v1/completions", { prompt: "a", seed: "x" },
   key, 400, /'seed'/],
  ["logprobs 99", "POST", "/v1/completions", { prompt: "a", logprobs: 99 },
   key, 400, /'logprobs'/],
  ["a prompt longer than the context", "POST", "/v1/completions",
   { prompt: Array(300).fill(5) }, key, 400, /context of a slot has 256/],
  ["deep nesting", "POST", "/v1/completions",
   "[".repeat(100000) + "]".repeat(100000), key, 400, /nested more than/],
  ["unknown model", "POST", "/v1/chat/completions",
   { model: "gpt-4", messages: [{ role: "user", content: "x" }] }, key, 404,
   /does not exist/],
  ["tokenize without content", "POST", "/tokenize", {}, key, 400,
   /'content'/],
  ["detokenize of a bad id", "POST", "/detokenize", { tokens: [1e12] }, key,
   400, /'tokens'/],
  ["unknown route", "GET", "/v2/nothing", null, key, 404, /no route/],
  ["wrong method", "GET", "/v1/completions", null, key, 404,
   /not supported/],
  ["no key", "POST", "/v1/completions", { prompt: "a" }, {}, 401, /API key/],
  ["wrong key", "GET", "/v1/models", null, { Authorization: "Bearer no" },
   401, /API key/],
  ["huge body", "POST", "/v1/completions",
   JSON.stringify({ prompt: "a".repeat(300 * 1024) }), key, 413,
   /larger than the limit/],
];

await withServer(model, ["-np", "2", "-c", "256", "-t", "1",
                         "--api-key", "k3y", "--max-body-kib", "256"],
                 async (server) => {
  const good = { prompt: "Hello", max_tokens: 6, temperature: 0,
                 return_tokens: true };
  const before = await post(server, "/v1/completions", good, key);
  assert.equal(before.status, 200, before.text);

  for (const [what, method, path, body, headers, status, message] of table) {
    const res = await fetch(server.url + path, {
      method, headers: { "Content-Type": "application/json", ...headers },
      body: body === null ? undefined
                          : typeof body === "string" ? body
                                                     : JSON.stringify(body) });
    const text = await res.text();
    assert.equal(res.status, status, what + ": " + text);
    const json = JSON.parse(text);
    assert.equal(typeof json.error, "object", what);
    assert.equal(json.error.code, status, what);
    assert.equal(typeof json.error.type, "string", what);
    assert.match(json.error.message, message, what);
    console.log(`${status} ${what}: ${json.error.message}`);
  }

  // Random bodies: JSON-ish noise, valid JSON of random shapes, and
  // requests with random field values. None may crash the server or get a
  // 5xx.
  const rssStart = rssKiB(server.proc.pid);
  let seed = 12345;
  const rand = () => (seed = (seed * 1103515245 + 12345) % 2147483648) /
                     2147483648;
  const pick = (a) => a[Math.floor(rand() * a.length)];
  const values = [null, true, false, 0, -1, 1, 2.5, -1e308, 1e308, 2 ** 53,
                  "", "x", "\u0000", "\ud800", [], {}, [1, "a"],
                  { role: "user", content: "hi" }];
  const fields = ["prompt", "messages", "max_tokens", "temperature", "top_p",
                  "top_k", "min_p", "seed", "stop", "stream", "logprobs",
                  "top_logprobs", "n", "model", "repeat_penalty",
                  "stream_options", "n_probs", "return_tokens"];
  const counts = {};
  for (let i = 0; i < randomBodies; ++i) {
    let body;
    const kind = i % 3;
    if (kind === 0) {
      const chars = "{}[]\",:0123456789.-+eEtruefalsn \\u\n";
      body = "";
      const len = Math.floor(rand() * 64);
      for (let c = 0; c < len; ++c) body += pick(chars);
    } else {
      const obj = {};
      const nFields = Math.floor(rand() * 5);
      for (let f = 0; f < nFields; ++f) obj[pick(fields)] = pick(values);
      if (kind === 2) {
        obj.prompt = pick(["Hi", [1, 2, 3], "", []]);
        obj.max_tokens = pick([1, 2, 3]);
      }
      body = JSON.stringify(obj);
    }
    const path = pick(["/v1/completions", "/v1/chat/completions",
                       "/tokenize", "/detokenize"]);
    const res = await fetch(server.url + path, {
      method: "POST", headers: { "Content-Type": "application/json", ...key },
      body });
    const text = await res.text();
    counts[res.status] = (counts[res.status] ?? 0) + 1;
    assert.ok(res.status < 500, `body ${JSON.stringify(body)} -> ${res.status} ${text}`);
    if (res.status >= 400) {
      const json = JSON.parse(text);
      assert.equal(json.error.code, res.status);
    } else if (!res.headers.get("content-type").startsWith("text/event-stream")) {
      JSON.parse(text); // a 200 is JSON too
    }
  }
  const rssEnd = rssKiB(server.proc.pid);
  console.log(`random bodies: ${randomBodies}, statuses ${JSON.stringify(counts)}`);
  const health = await get(server, "/health");
  assert.equal(health.status, 200);
  assert.deepEqual(health.json, { status: "ok" });
  const after = await post(server, "/v1/completions", good, key);
  assert.deepEqual(after.json.choices[0].tokens, before.json.choices[0].tokens);
  assert.equal(await metric(server, "slots_busy", key), 0);
  // Memory: the random requests may warm allocator caches, not grow
  // without bound (64 MiB of slack; sanitizer builds keep a quarantine).
  assert.ok(rssEnd - rssStart < 64 * 1024,
            `resident memory grew from ${rssStart} to ${rssEnd} KiB`);
  console.log("after the noise: /health 200, the same greedy tokens");
});
console.log("bad-input: ok");
