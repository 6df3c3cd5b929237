// The official OpenAI client (npm "openai") against hesper-server: chat and
// completions, streamed and not, max_tokens, stop strings, usage, logprobs;
// the greedy token ids equal hesper-run's on the same prompt.
//   node openai-client.mjs MODEL.gguf
import { assert, requireNpm, withServer, hesperRunIds } from "./server.mjs";

const OpenAI = requireNpm("openai").default ?? requireNpm("openai");
const model = process.argv[2];

await withServer(model, ["-np", "2", "-c", "256", "-t", "1",
                         "--api-key", "sekret"], async (server) => {
  const client = new OpenAI({ baseURL: server.url + "/v1", apiKey: "sekret",
                              maxRetries: 0 });

  // The model list names the file.
  const models = await client.models.list();
  assert.equal(models.data.length, 1);
  const id = models.data[0].id;
  assert.equal(id, "model");
  console.log("model id:", id);

  // Completions, not streamed: ids (llama-server's return_tokens) equal
  // hesper-run's greedy ids; usage counts the prompt's tokens (BOS added)
  // and the generated ones.
  const prompt = "Once upon a time";
  const reference = hesperRunIds(model, prompt, 12);
  const c = await client.completions.create({
    model: id, prompt, max_tokens: 12, temperature: 0, return_tokens: true,
  });
  assert.equal(c.object, "text_completion");
  assert.match(c.id, /^cmpl-/);
  assert.equal(c.model, id);
  assert.equal(typeof c.created, "number");
  assert.deepEqual(c.choices[0].tokens, reference);
  assert.equal(c.choices[0].finish_reason, "length");
  assert.equal(c.usage.completion_tokens, 12);
  const tokenized = await client.post("/../tokenize",
                                      { body: { content: prompt,
                                                add_special: true } });
  assert.equal(c.usage.prompt_tokens, tokenized.tokens.length);
  assert.equal(c.usage.total_tokens, c.usage.prompt_tokens + 12);
  // The text is the tokens' text.
  const detok = await client.post("/../detokenize",
                                  { body: { tokens: reference } });
  assert.equal(c.choices[0].text, detok.content);
  console.log("completion ids:", c.choices[0].tokens.join(","));

  // The same, streamed: the chunks' text and ids add up to the same reply.
  const stream = await client.completions.create({
    model: id, prompt, max_tokens: 12, temperature: 0, stream: true,
    return_tokens: true, stream_options: { include_usage: true },
  });
  let text = "", ids = [], finish = null, usage = null, chunks = 0;
  for await (const chunk of stream) {
    ++chunks;
    if (chunk.usage) usage = chunk.usage;
    for (const choice of chunk.choices) {
      text += choice.text;
      ids.push(...(choice.tokens ?? []));
      if (choice.finish_reason) finish = choice.finish_reason;
    }
  }
  assert.equal(text, c.choices[0].text);
  assert.deepEqual(ids, reference);
  assert.equal(finish, "length");
  assert.deepEqual(usage, c.usage);
  assert.ok(chunks >= 3, "the reply came in " + chunks + " chunks");
  console.log("streamed completion: " + chunks + " chunks, same text");

  // Token ids as the prompt.
  const byIds = await client.completions.create({
    model: id, prompt: tokenized.tokens, max_tokens: 12, temperature: 0,
    return_tokens: true });
  assert.deepEqual(byIds.choices[0].tokens, reference);

  // A stop string: the reply ends before it, finish_reason "stop".
  const full = c.choices[0].text;
  const cut = full.length > 4 ? full.slice(3, 5) : null;
  if (cut) {
    const s = await client.completions.create({
      model: id, prompt, max_tokens: 12, temperature: 0, stop: [cut] });
    assert.equal(s.choices[0].text, full.slice(0, full.indexOf(cut)));
    assert.equal(s.choices[0].finish_reason, "stop");
    console.log("stop string:", JSON.stringify(cut), "->",
                JSON.stringify(s.choices[0].text));
  }

  // Chat, not streamed and streamed: the same reply; usage as above.
  const messages = [{ role: "system", content: "Be brief." },
                    { role: "user", content: "Hello there" }];
  const chat = await client.chat.completions.create({
    model: id, messages, max_tokens: 10, temperature: 0, return_tokens: true,
    logprobs: true, top_logprobs: 3 });
  assert.equal(chat.object, "chat.completion");
  assert.match(chat.id, /^chatcmpl-/);
  const msg = chat.choices[0].message;
  assert.equal(msg.role, "assistant");
  assert.equal(typeof msg.content, "string");
  assert.equal(chat.usage.completion_tokens, chat.choices[0].tokens.length);
  const lp = chat.choices[0].logprobs.content;
  assert.equal(lp.length, chat.usage.completion_tokens);
  for (const entry of lp) {
    assert.ok(entry.logprob <= 0);
    assert.equal(entry.top_logprobs.length, 3);
    // Greedy: the chosen token is the most likely one.
    assert.equal(entry.top_logprobs[0].logprob, entry.logprob);
  }
  // The chat template's prompt: hesper-run on the same ids agrees.
  const chatRef = hesperRunIds(model, chat.choices[0].prompt_ids ??
                               (await chatPromptIds(client, messages)),
                               chat.choices[0].tokens.length);
  if (chat.choices[0].finish_reason === "length")
    assert.deepEqual(chat.choices[0].tokens, chatRef);
  else
    assert.deepEqual(chat.choices[0].tokens,
                     chatRef.slice(0, chat.choices[0].tokens.length));
  const chatStream = await client.chat.completions.create({
    model: id, messages, max_tokens: 10, temperature: 0, stream: true });
  let reply = "", role = null;
  for await (const chunk of chatStream) {
    const delta = chunk.choices[0]?.delta;
    if (delta?.role) role = delta.role;
    if (delta?.content) reply += delta.content;
  }
  assert.equal(role, "assistant");
  assert.equal(reply, msg.content);
  console.log("chat reply:", JSON.stringify(msg.content));

  // A wrong key is refused by the client's own error class.
  const wrong = new OpenAI({ baseURL: server.url + "/v1", apiKey: "nope",
                             maxRetries: 0 });
  await assert.rejects(wrong.models.list(), (e) => {
    assert.equal(e.status, 401);
    assert.equal(e.type, "authentication_error");
    return true;
  });
  // Bad input through the client: a 400 with the field named.
  await assert.rejects(
      client.completions.create({ model: id, prompt, max_tokens: -1 }),
      (e) => e.status === 400 && e.param === "max_tokens");
  await assert.rejects(
      client.chat.completions.create({ model: "gpt-4", messages }),
      (e) => e.status === 404);
  console.log("errors: 401, 400, 404 as OpenAI's error objects");
});

/// The chat prompt's token ids, from /tokenize of the template's text as
/// the server formats it (ChatML here).
async function chatPromptIds(client, messages) {
  let text = "";
  for (const m of messages)
    text += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
  text += "<|im_start|>assistant\n";
  const r = await client.post("/../tokenize",
                              { body: { content: text, add_special: true } });
  return r.tokens;
}
console.log("openai-client: ok");
