// Shared by hesper-server's tests: start a server on a free loopback port,
// talk to it, stop it. The npm packages (the official OpenAI client,
// puppeteer-core) live in the build folder: $HESPER_NPM_DIR (lit sets it).
import { spawn, execFileSync } from "node:child_process";
import { createRequire } from "node:module";
import assert from "node:assert/strict";

export { assert };

const npmDir = process.env.HESPER_NPM_DIR;
export const requireNpm = createRequire((npmDir || ".") + "/package.json");

/// Starts `hesper-server -m model --port 0 ...args` and resolves when it
/// prints where it listens. The log (stderr) is kept in `server.log`.
export function startServer(model, args = [], env = {}) {
  return new Promise((resolve, reject) => {
    const proc = spawn("hesper-server",
                       ["-m", model, "--port", "0", "--backend=cpu", ...args],
                       { env: { ...process.env, ...env },
                         stdio: ["ignore", "ignore", "pipe"] });
    const server = { proc, log: "", url: null, exited: null };
    const timer = setTimeout(
        () => reject(new Error("server did not start:\n" + server.log)),
        120000);
    proc.stderr.setEncoding("utf8");
    proc.stderr.on("data", (text) => {
      server.log += text;
      // The whole line: the address may arrive in pieces.
      const m = /listening on (http:\/\/[^\s]+)\n/.exec(server.log);
      if (m && !server.url) {
        server.url = m[1];
        clearTimeout(timer);
        resolve(server);
      }
    });
    proc.on("exit", (code, signal) => {
      server.exited = { code, signal };
      if (!server.url) {
        clearTimeout(timer);
        reject(new Error(`server exited (${code ?? signal}):\n${server.log}`));
      }
    });
  });
}

/// Sends SIGTERM and resolves with the exit status.
export function stopServer(server, signal = "SIGTERM") {
  return new Promise((resolve) => {
    if (server.exited) return resolve(server.exited);
    server.proc.on("exit", (code, sig) => resolve({ code, signal: sig }));
    server.proc.kill(signal);
  });
}

/// fetch() with a JSON body; resolves to {status, json, text, headers}.
export async function post(server, path, body, headers = {}) {
  const res = await fetch(server.url + path, {
    method: "POST",
    headers: { "Content-Type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let json = null;
  try { json = JSON.parse(text); } catch { /* not JSON */ }
  return { status: res.status, json, text, headers: res.headers };
}

export async function get(server, path, headers = {}) {
  const res = await fetch(server.url + path, { headers });
  const text = await res.text();
  let json = null;
  try { json = JSON.parse(text); } catch { /* not JSON */ }
  return { status: res.status, json, text, headers: res.headers };
}

/// The value of a Prometheus metric of /metrics.
export async function metric(server, name, headers = {}) {
  const { text } = await get(server, "/metrics", headers);
  const m = new RegExp("^hesper_" + name + " (\\S+)$", "m").exec(text);
  assert.ok(m, "no metric " + name + " in:\n" + text);
  return Number(m[1]);
}

/// Token ids that `hesper-run --temp 0` generates for `prompt` (text, or
/// ids as an array); past end-of-generation tokens with `ignoreEos`.
export function hesperRunIds(model, prompt, n, extra = [], ignoreEos = false) {
  const args = [model, "--backend=cpu", "-n", String(n), "--temp", "0",
                "--print-token-ids", "-c", "256", ...extra];
  if (ignoreEos) args.push("--ignore-eos");
  if (Array.isArray(prompt)) args.push("--tokens", prompt.join(","));
  else args.push("-p", prompt);
  const out = execFileSync("hesper-run", args, {
    encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] });
  const m = /generated ids: (.*)$/m.exec(out);
  assert.ok(m, "hesper-run printed no generated ids:\n" + out);
  return m[1].split(",").filter((s) => s.length).map(Number);
}

/// Runs `body` against a fresh server and always stops it; a failure
/// prints the server's log.
export async function withServer(model, args, body, env = {}) {
  const server = await startServer(model, args, env);
  try {
    await body(server);
  } catch (e) {
    console.error("--- server log ---\n" + server.log);
    throw e;
  } finally {
    await stopServer(server);
  }
  return server;
}

export function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
