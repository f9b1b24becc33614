/**
 * Live latency across processes: `npm run bench:live`.
 *
 * A private redis-server; a worker process (this file with the argument
 * `worker`: one gatehouse instance running its worker pool on redisStore,
 * with a model that streams tokens) and this process, the reader: another
 * gatehouse instance on its own Redis connection, with no worker, serving
 * the SSE stream and the task POSTs. Both processes stamp times with
 * `performance.timeOrigin + performance.now()` (one machine, one clock).
 *
 * 1. First delta: for each of LIVE_TURNS turns (default 200, one after the
 *    other), the worker's model emits its first token and stamps it (the
 *    worker prints `{ turnId, at }`); the reader stamps the arrival of the
 *    turn's first `event: delta` frame on its SSE stream. Latency = reader
 *    stamp - worker stamp: onChunk -> delta batch (5 ms) -> PUBLISH ->
 *    the reader's subscription -> the stream's frame.
 * 2. `Prefer: wait`: for each of LIVE_WAITS tasks (default 100), the time
 *    from the POST with `Prefer: wait=30` to its 200 (the turn ran in the
 *    worker process, one model step that answers at once); and, for
 *    comparison, the same turn as a 202 followed by reading the log until its
 *    `task` event every 250 ms (the poll interval streams used before).
 *
 * Prints the table and writes bench/results/live.md and live.json.
 */
import { spawn } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import os from "node:os";
import { performance } from "node:perf_hooks";
import process from "node:process";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { createGatehouse, defineAgent, type Gatehouse, type Model } from "../mod.ts";
import { redisStore } from "../redis.ts";
import { startRedisServer } from "../tests/helpers/redis-server.ts";

const stamp = () => performance.timeOrigin + performance.now();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const PREFIX = "livebench";

/** The model: input "stream" emits 20 tokens 2 ms apart (the first stamped), anything else answers at once. */
function benchModel(onFirst: (turnId: string, at: number) => void): Model {
  return {
    name: "bench-stream",
    async generate(req) {
      const last = req.messages[req.messages.length - 1];
      const input = typeof last?.content === "string" ? last.content : "";
      if (!input.includes("stream")) return { text: "ok", usage: { inputTokens: 1, outputTokens: 1 } };
      let text = "";
      for (let i = 0; i < 20; i++) {
        const piece = `tok${i} `;
        text += piece;
        if (i === 0) onFirst(req.turnId, stamp());
        req.onChunk?.(piece);
        await sleep(2);
      }
      return { text, usage: { inputTokens: 1, outputTokens: 20 } };
    },
  };
}

const agentOf = (model: Model) => defineAgent({ name: "bench", instructions: "stream", model });

async function worker(): Promise<void> {
  const url = process.env.LIVE_REDIS_URL!;
  const gh = createGatehouse({
    agents: [agentOf(benchModel((turnId, at) => process.stdout.write(`${JSON.stringify({ turnId, at })}\n`)))],
    store: redisStore({ url, prefix: PREFIX }),
  });
  gh.startWorker();
  process.stdout.write(`${JSON.stringify({ ready: true })}\n`);
  process.on("SIGTERM", () => {
    setTimeout(() => process.exit(0), 2_000).unref();
    gh.close().finally(() => process.exit(0));
  });
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(p * (s.length - 1) + 0.5))];
};
const round = (x: number) => Math.round(x * 10) / 10;

/** Reads an SSE response, calling `onFrame(event, data)` per frame, until `signal` aborts. */
async function readSse(res: Response, onFrame: (event: string, data: string) => void): Promise<void> {
  const reader = res.body!.getReader();
  const dec = new TextDecoder();
  let buf = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += dec.decode(value, { stream: true });
    let i: number;
    while ((i = buf.indexOf("\n\n")) >= 0) {
      const block = buf.slice(0, i);
      buf = buf.slice(i + 2);
      let event = "";
      let data = "";
      for (const line of block.split("\n")) {
        if (line.startsWith("event: ")) event = line.slice(7);
        else if (line.startsWith("data: ")) data = line.slice(6);
      }
      if (event) onFrame(event, data);
    }
  }
}

const post = (gh: Gatehouse, agentId: string, input: string, headers: Record<string, string> = {}) =>
  gh.fetch(new Request(`http://x/v1/agents/${agentId}/tasks`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify({ agent: "bench", input }),
  }));

async function waitFor(pred: () => boolean, ms = 30_000): Promise<void> {
  const t0 = Date.now();
  while (!pred()) {
    if (Date.now() - t0 > ms) throw new Error("timed out");
    await sleep(1);
  }
}

async function firstDeltas(reader: Gatehouse, workerFirst: Map<string, number>, turns: number): Promise<number[]> {
  const agentId = "stream1";
  const firstSeen = new Map<string, number>();
  const ended = new Set<string>();
  const ac = new AbortController();
  const res = await reader.fetch(new Request(`http://x/v1/agents/${agentId}/events?format=sse`, { signal: ac.signal }));
  const reading = readSse(res, (event, data) => {
    if (event === "delta") {
      const { turnId } = JSON.parse(data) as { turnId: string };
      if (!firstSeen.has(turnId)) firstSeen.set(turnId, stamp());
    } else if (event === "task") ended.add((JSON.parse(data) as { data: { turnId: string } }).data.turnId);
  }).catch(() => {});
  await sleep(300); // the reader's subscription is in place
  const out: number[] = [];
  try {
  for (let i = 0; i < turns; i++) {
    const { turnId } = await (await post(reader, agentId, `stream ${i}`)).json() as { turnId: string };
    try {
      await waitFor(() => ended.has(turnId) && workerFirst.has(turnId) && firstSeen.has(turnId));
    } catch {
      throw new Error(`turn ${i} (${turnId}): ended ${ended.has(turnId)}, worker stamp ${workerFirst.has(turnId)}, reader delta ${firstSeen.has(turnId)}`);
    }
    out.push(firstSeen.get(turnId)! - workerFirst.get(turnId)!);
    if ((i + 1) % 50 === 0) process.stderr.write(`first delta: ${i + 1} turns\n`);
  }
  } finally {
    // The request's abort ends the stream; it is not waited for (nothing more is read from it).
    ac.abort();
    await Promise.race([reading, sleep(1_000)]);
  }
  return out;
}

async function waits(reader: Gatehouse, n: number): Promise<{ wait: number[]; poll: number[] }> {
  const wait: number[] = [];
  const poll: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = stamp();
    const res = await post(reader, `wait${i}`, "answer", { prefer: "wait=30" });
    if ((i + 1) % 25 === 0) process.stderr.write(`waits: ${i + 1}\n`);
    if (res.status !== 200) throw new Error(`expected 200, got ${res.status}`);
    await res.json();
    wait.push(stamp() - t0);
    // The same turn without the preference: 202, then the log read every 250 ms until its end.
    const t1 = stamp();
    const { turnId } = await (await post(reader, `poll${i}`, "answer")).json() as { turnId: string };
    for (;;) {
      const events = await reader.store.readEvents(`poll${i}`, 0, 500);
      if (events.some((e) => e.type === "task" && (e.data as { turnId?: string }).turnId === turnId)) break;
      await sleep(250);
    }
    poll.push(stamp() - t1);
  }
  return { wait, poll };
}

async function main(): Promise<void> {
  const turns = Number(process.env.LIVE_TURNS ?? 200);
  const nWaits = Number(process.env.LIVE_WAITS ?? 100);
  const redis = await startRedisServer();
  const child = spawn(process.execPath, ["--import", "tsx", fileURLToPath(import.meta.url), "worker"], {
    env: { ...process.env, LIVE_REDIS_URL: redis.url },
    stdio: ["ignore", "pipe", "inherit"],
  });
  child.on("exit", (code, sig) => process.stderr.write(`worker exited: ${code ?? sig}\n`));
  const workerFirst = new Map<string, number>();
  let ready = false;
  createInterface({ input: child.stdout! }).on("line", (line) => {
    const m = JSON.parse(line) as { ready?: boolean; turnId?: string; at?: number };
    if (m.ready) ready = true;
    else if (m.turnId && m.at) workerFirst.set(m.turnId, m.at);
  });
  const reader = createGatehouse({ agents: [agentOf(benchModel(() => {}))], store: redisStore({ url: redis.url, prefix: PREFIX }) });
  try {
    await waitFor(() => ready, 60_000);
    const first = await firstDeltas(reader, workerFirst, turns);
    const { wait, poll } = await waits(reader, nWaits);
    const rows = [
      { figure: "first delta, worker onChunk -> reader SSE frame (other process, TCP Redis)", n: first.length, xs: first },
      { figure: "POST with Prefer: wait=30 -> 200 (turn run by the worker process)", n: wait.length, xs: wait },
      { figure: "POST (202) -> turn end seen by reading the log every 250 ms (comparison)", n: poll.length, xs: poll },
    ].map((r) => ({ figure: r.figure, n: r.n, p50: round(pct(r.xs, 0.5)), p99: round(pct(r.xs, 0.99)), max: round(Math.max(...r.xs)) }));
    const table = [
      "| figure | n | p50 ms | p99 ms | max ms |",
      "| --- | --- | --- | --- | --- |",
      ...rows.map((r) => `| ${r.figure} | ${r.n} | ${r.p50} | ${r.p99} | ${r.max} |`),
    ].join("\n");
    console.log(`\n${table}\n`);
    const target = rows[0].p99 <= 50 ? "met" : "not met";
    console.log(`target first delta p99 <= 50 ms: ${target}`);
    const dir = fileURLToPath(new URL("./results/", import.meta.url));
    mkdirSync(dir, { recursive: true });
    const when = new Date().toISOString();
    const machine = `${os.cpus().length} × ${os.cpus()[0]?.model ?? "cpu"}, Node ${process.version}`;
    writeFileSync(`${dir}live.json`, JSON.stringify({ when, machine, turns, waits: nWaits, rows }, null, 2) + "\n");
    writeFileSync(
      `${dir}live.md`,
      `# Live deltas and Prefer: wait across processes\n\n${when}, ${machine}. A worker process and a reader ` +
        `process on one redis-server (\`npm run bench:live\`, bench/live.ts); times from one clock ` +
        `(\`performance.timeOrigin + performance.now()\` in both processes).\n\n${table}\n\n` +
        `Target: first delta p99 <= 50 ms on one machine: ${target}.\n`,
    );
    console.log(`wrote ${dir}live.md and live.json`);
  } finally {
    child.kill("SIGTERM");
    await reader.close();
    await redis.stop();
  }
}

if (process.argv[2] === "worker") await worker();
else await main();
