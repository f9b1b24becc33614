/**
 * Worker loops per process against HTTP clients: `npm run bench:concurrency`.
 *
 * One gatehouse process (`startWorker()`, TCP Redis on a private
 * redis-server, the benchmark agent of bench/agent.ts: 3 model steps per
 * turn) serves its routes over real HTTP (node:http and @hono/node-server,
 * as entry/node-server.ts does). `CLIENTS` (default 50) clients each own
 * an agent and, in a loop, POST a task and wait
 * until the commit that ends its turn is applied (seen in-process by a
 * wrapping store, so nothing polls). Latency is POST sent to turn end
 * persisted. Each `concurrency` value (`CONCURRENCY_VALUES`, default
 * 4,16,32,64) runs `SECONDS` (default 8) after a 1 s warm-up, `ROUNDS`
 * (default 2) times, the values interleaved so a load change on the machine
 * falls on all of them; a first, unrecorded 3 s run warms the process up.
 *
 * `MODEL_DELAY_MS=n` makes each model step wait n ms first, as a model call
 * over the network does (default 0: the run is CPU-bound); `CONCURRENCY_OUT`
 * names the results file.
 *
 * Prints a table and writes bench/results/concurrency.md. The default
 * `concurrency` (DEFAULT_CONCURRENCY in gatehouse.ts) is chosen from it;
 * see docs/operations.md, "Worker loops".
 */
import { mkdirSync, writeFileSync } from "node:fs";
import type { AddressInfo } from "node:net";
import os from "node:os";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { createGatehouse, consoleLogger } from "../mod.ts";
import type { CommitRequest, Store } from "../store/port.ts";
import { redisStore } from "../redis.ts";
import { createServer } from "node:http";
import { getRequestListener } from "@hono/node-server";
import { startRedisServer } from "../tests/helpers/redis-server.ts";
import { benchAgent } from "./agent.ts";

const CLIENTS = Number(process.env.CLIENTS ?? 50);
const SECONDS = Number(process.env.SECONDS ?? 8);
const ROUNDS = Number(process.env.ROUNDS ?? 2);
const VALUES = (process.env.CONCURRENCY_VALUES ?? "4,16,32,64").split(",").map(Number);
/** Each model step waits this long first, as a model call over the network does (default 0: CPU only). */
const MODEL_DELAY_MS = Number(process.env.MODEL_DELAY_MS ?? 0);
const OUT = process.env.CONCURRENCY_OUT ?? "concurrency.md";

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s[Math.min(s.length - 1, Math.floor(p * (s.length - 1) + 0.5))];
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Resolves a turn's waiter when the commit that ends it is applied. */
function turnEnds(inner: Store) {
  const ended = new Map<string, number>();
  const waiting = new Map<string, (at: number) => void>();
  const store = new Proxy(inner, {
    get(target, prop, receiver) {
      const v = Reflect.get(target, prop, receiver);
      if (prop !== "commit") return typeof v === "function" ? v.bind(target) : v;
      return async (req: CommitRequest) => {
        const r = await inner.commit(req);
        if (r.status === "applied" && req.turnId !== null && req.activeTurnId === null) {
          const at = performance.now();
          const w = waiting.get(req.turnId);
          if (w) {
            waiting.delete(req.turnId);
            w(at);
          } else ended.set(req.turnId, at);
        }
        return r;
      };
    },
  }) as Store;
  const end = (turnId: string) =>
    new Promise<number>((resolve) => {
      const at = ended.get(turnId);
      if (at !== undefined) {
        ended.delete(turnId);
        resolve(at);
      } else waiting.set(turnId, resolve);
    });
  return { store, end };
}

interface Row {
  concurrency: number;
  round: number;
  turns: number;
  turnsPerSecond: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
}

async function measure(url: string, concurrency: number, round: number, prefix: string, seconds = SECONDS): Promise<Row> {
  const { agent } = benchAgent({}, { modelDelayMs: MODEL_DELAY_MS });
  const inner = redisStore({ url, prefix });
  const t = turnEnds(inner);
  const logger = consoleLogger("error");
  const g = createGatehouse({ agents: [agent], store: t.store, concurrency, logger });
  const server = createServer(getRequestListener(g.app.fetch));
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  g.startWorker();
  const latencies: number[] = [];
  let measuring = false;
  let stop = false;
  const client = async (i: number) => {
    let k = 0;
    while (!stop) {
      const t0 = performance.now();
      const res = await fetch(`${base}/v1/agents/c${i}/tasks`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ agent: "bench", input: { k: k++ } }),
      });
      const { turnId } = (await res.json()) as { turnId: string };
      if (res.status !== 202) throw new Error(`POST answered ${res.status}`);
      const at = await t.end(turnId);
      if (measuring) latencies.push(at - t0);
    }
  };
  const clients = Array.from({ length: CLIENTS }, (_, i) => client(i));
  await sleep(1_000);
  measuring = true;
  const m0 = performance.now();
  await sleep(seconds * 1_000);
  measuring = false;
  const elapsed = (performance.now() - m0) / 1_000;
  stop = true;
  await Promise.all(clients);
  await g.stopWorker();
  await new Promise<void>((r) => server.close(() => r()));
  await inner.close();
  return {
    concurrency,
    round,
    turns: latencies.length,
    turnsPerSecond: latencies.length / elapsed,
    p50: pct(latencies, 0.5),
    p90: pct(latencies, 0.9),
    p99: pct(latencies, 0.99),
    max: Math.max(...latencies),
  };
}

async function main() {
  const redis = await startRedisServer();
  const rows: Row[] = [];
  let n = 0;
  try {
    // Not recorded: the first run of a process pays for JIT warm-up, whichever value it measures.
    await measure(redis.url, VALUES[0], 0, `conc${++n}`, 3);
    for (let round = 1; round <= ROUNDS; round++) {
      for (const c of VALUES) {
        const row = await measure(redis.url, c, round, `conc${++n}`);
        rows.push(row);
        console.log(JSON.stringify(row));
      }
    }
  } finally {
    await redis.stop();
  }
  const f = (x: number) => (x >= 100 ? x.toFixed(0) : x.toFixed(1));
  const byC = VALUES.map((c) => {
    const rs = rows.filter((r) => r.concurrency === c);
    const mean = rs.reduce((a, r) => a + r.turnsPerSecond, 0) / rs.length;
    return `| ${c} | ${rs.map((r) => f(r.p50)).join(" / ")} | ${rs.map((r) => f(r.p99)).join(" / ")} | ${f(mean)} |`;
  });
  const lines = [
    "# Worker loops per process against 50 HTTP clients",
    "",
    `\`npm run bench:concurrency\` (bench/concurrency.ts), ${new Date().toISOString().slice(0, 10)}, ${os.cpus()[0]?.model.trim() ?? "?"} × ${os.cpus().length}, Node ${process.versions.node}, load ${os.loadavg().map((x) => x.toFixed(2)).join(" ")}; one process (HTTP server, worker pool and ${CLIENTS} clients), TCP Redis on a private redis-server, the benchmark agent (3 model steps per turn, scripted model${MODEL_DELAY_MS > 0 ? `, each step waiting ${MODEL_DELAY_MS} ms as a network model call would` : ", no wait: CPU only"}), ${SECONDS} s measured per run after 1 s warm-up, ${ROUNDS} rounds interleaved after an unrecorded warm-up run.`,
    "",
    "Latency: POST sent to the commit that ends the turn applied, in ms; one figure per round.",
    "",
    "| concurrency | p50 (ms) | p99 (ms) | turns/s (mean of rounds) |",
    "| --- | --- | --- | --- |",
    ...byC,
    "",
    "Every run:",
    "",
    "| concurrency | round | turns | turns/s | p50 | p90 | p99 | max |",
    "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ...rows.map((r) => `| ${r.concurrency} | ${r.round} | ${r.turns} | ${f(r.turnsPerSecond)} | ${f(r.p50)} | ${f(r.p90)} | ${f(r.p99)} | ${f(r.max)} |`),
    "",
  ];
  const out = lines.join("\n");
  console.log(out);
  const dir = fileURLToPath(new URL("./results/", import.meta.url));
  mkdirSync(dir, { recursive: true });
  writeFileSync(`${dir}${OUT}`, out);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
