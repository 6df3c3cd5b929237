// 8 clients at once with greedy sampling get exactly the tokens each gets
// alone (on a server with 4 slots: 4 run, 4 wait in the queue and join as
// slots free), and each equals hesper-run --temp 0 on its prompt.
//   node concurrency.mjs MODEL.gguf
import { assert, post, withServer, hesperRunIds, metric } from "./server.mjs";

const model = process.argv[2];
const prompts = [
  "Once upon a time", "The compiler", "In a hole in the ground",
  "It was a bright cold day", "Call me", "Many years later",
  "All happy families", "A screaming comes across the sky",
];
const n = 16;

function request(prompt, stream) {
  return { prompt, max_tokens: n, temperature: 0, return_tokens: true,
           stream, ignore_eos: true };
}

/// The ids of a streamed completion, read as server-sent events.
async function streamedIds(server, prompt) {
  const res = await fetch(server.url + "/v1/completions", {
    method: "POST", headers: { "Content-Type": "application/json" },
    body: JSON.stringify(request(prompt, true)) });
  assert.equal(res.status, 200);
  assert.match(res.headers.get("content-type"), /^text\/event-stream/);
  const text = await res.text();
  const events = text.split("\n\n").filter((e) => e.length);
  assert.equal(events.at(-1), "data: [DONE]");
  const ids = [];
  let finish = null;
  for (const e of events.slice(0, -1)) {
    assert.ok(e.startsWith("data: "), e);
    const chunk = JSON.parse(e.slice(6));
    ids.push(...chunk.choices[0].tokens);
    finish = chunk.choices[0].finish_reason ?? finish;
  }
  assert.equal(finish, "length");
  return ids;
}

await withServer(model, ["-np", "4", "-c", "256", "-t", "1"],
                 async (server) => {
  // One at a time.
  const alone = [];
  for (const p of prompts) {
    const r = await post(server, "/v1/completions", request(p, false));
    assert.equal(r.status, 200, r.text);
    alone.push(r.json.choices[0].tokens);
  }
  // Eight at once, half of them streamed, twice.
  for (let round = 0; round < 2; ++round) {
    const together = await Promise.all(prompts.map((p, i) =>
      i % 2 ? streamedIds(server, p)
            : post(server, "/v1/completions", request(p, false))
                  .then((r) => { assert.equal(r.status, 200, r.text);
                                 return r.json.choices[0].tokens; })));
    for (let i = 0; i < prompts.length; ++i)
      assert.deepEqual(together[i], alone[i], "prompt " + i + " round " + round);
  }
  // And hesper-run agrees on each prompt.
  for (let i = 0; i < prompts.length; ++i)
    assert.deepEqual(alone[i], hesperRunIds(model, prompts[i], n, [], true));
  assert.equal(await metric(server, "requests_total"), 24);
  assert.equal(await metric(server, "generated_tokens_total"), 24 * n);
  assert.equal(await metric(server, "slots_busy"), 0);
  assert.equal(await metric(server, "queue_length"), 0);
  console.log("8 concurrent clients: the tokens of one at a time, twice; " +
              "hesper-run agrees");
});
console.log("concurrency: ok");
