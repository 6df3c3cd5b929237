// The chat page at "/" in a real browser (Debian's chromium, headless,
// driven by puppeteer-core): a message typed into the page gets a streamed
// reply rendered in the page, equal to the API's own greedy reply; a second
// turn carries the conversation; Stop ends a long reply early.
//   node chat-page.mjs MODEL.gguf
import { assert, requireNpm, post, withServer, metric, sleep }
  from "./server.mjs";

const puppeteer = requireNpm("puppeteer-core");
const model = process.argv[2];

await withServer(model, ["-np", "2", "-c", "512", "-t", "1"],
                 async (server) => {
  const browser = await puppeteer.launch({
    executablePath: process.env.HESPER_CHROMIUM,
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--no-first-run",
           "--disable-dev-shm-usage"],
  });
  try {
    const page = await browser.newPage();
    const errors = [];
    page.on("pageerror", (e) => errors.push(String(e)));
    await page.goto(server.url + "/", { waitUntil: "load" });
    assert.equal(await page.title(), "Hesper chat");
    // The header shows the model once /v1/models answered.
    await page.waitForFunction(
        () => document.getElementById("model").textContent.includes("context"),
        { timeout: 10000 });
    const header = await page.$eval("#model", (e) => e.textContent);
    assert.match(header, /^model · context 512$/);

    // Greedy, 12 tokens: the page's reply is the API's.
    await page.$eval("#temperature", (e) => { e.value = "0"; });
    await page.$eval("#maxTokens", (e) => { e.value = "12"; });
    const sayAndWait = async (text, n) => {
      await page.type("#input", text);
      await page.keyboard.press("Enter");
      await page.waitForFunction(
          (n) => document.querySelectorAll(".msg.assistant").length === n &&
                 document.querySelectorAll(".msg.assistant")[n - 1]
                     .dataset.state !== "streaming",
          { timeout: 30000 }, n);
      return page.$$eval(".msg.assistant .content",
                         (els) => els.map((e) => e.textContent));
    };
    const replies = await sayAndWait("Hello there", 1);
    const api = await post(server, "/v1/chat/completions", {
      messages: [{ role: "user", content: "Hello there" }],
      temperature: 0, max_tokens: 12 });
    assert.equal(api.status, 200);
    assert.equal(replies[0], api.json.choices[0].message.content);
    const state = await page.$eval(".msg.assistant", (e) => e.dataset.state);
    assert.equal(state, "done");
    console.log("page reply equals the API's:", JSON.stringify(replies[0]));

    // A second turn: the page sends the whole conversation.
    const second = await sayAndWait("And then?", 2);
    const api2 = await post(server, "/v1/chat/completions", {
      messages: [{ role: "user", content: "Hello there" },
                 { role: "assistant", content: replies[0] },
                 { role: "user", content: "And then?" }],
      temperature: 0, max_tokens: 12 });
    assert.equal(second[1], api2.json.choices[0].message.content);
    const users = await page.$$eval(".msg.user .content",
                                    (els) => els.map((e) => e.textContent));
    assert.deepEqual(users, ["Hello there", "And then?"]);
    console.log("second turn: the conversation is kept in the page");

    // Stop: a long reply, stopped after its first text arrives.
    await page.$eval("#maxTokens", (e) => { e.value = "400"; });
    await page.type("#input", "Tell me everything");
    await page.keyboard.press("Enter");
    await page.waitForFunction(
        () => { const m = document.querySelectorAll(".msg.assistant");
                return m.length === 3 && m[2].textContent.length > 12; },
        { timeout: 30000 });
    await page.click("#stop");
    await page.waitForFunction(
        () => document.querySelectorAll(".msg.assistant")[2].dataset.state ===
              "stopped", { timeout: 10000 });
    assert.equal(await page.$eval("#send", (e) => e.disabled), false);
    let busy = 1;
    for (let i = 0; i < 100 && busy; ++i) {
      await sleep(50);
      busy = await metric(server, "slots_busy");
    }
    assert.equal(busy, 0);
    console.log("stop: the reply ended early and the slot is free");
    assert.deepEqual(errors, []);
  } finally {
    await browser.close();
  }
});
console.log("chat-page: ok");
