/**
 * HTTP latency from a task's POST to its persisted turn end.
 *
 * One gatehouse with default settings (no `concurrency`, lease or poll
 * options: what `createGatehouse({ agents, store })` gives) on the TCP adapter,
 * served over real HTTP by @hono/node-server on a free loopback port, its
 * worker pool started. `clients` closed-loop clients run in a worker thread
 * (their own event loop, so the load they put on the server is not also
 * charged to its event loop): each has its own agent and, one at a time,
 * POSTs `/v1/agents/:id/tasks` (the benchmark agent, bench/agent.ts: three
 * scripted model steps), then waits until that turn's end is persisted before
 * posting the next.
 *
 * The latency runs from the moment a client starts its POST to the moment the
 * commit that ends the turn has applied in Redis: the counting wrapper
 * (bench/counting-store.ts) sees that commit's reply, so no polling of
 * `GET /v1/agents/:id` adds its interval to the figure. Both instants are read
 * as `performance.timeOrigin + performance.now()` (the thread's own clock
 * origin plus a monotonic offset). The first turns of every client warm up and
 * are not counted. At the end every client's agent is read back over HTTP and
 * must be `done` with all its turns ended.
 *
 * It also reports the most claims the pool held at once (the worker loops
 * busy together: with 50 clients, the default concurrency), as counted by the
 * wrapper.
 */
import type { AddressInfo } from "node:net";
import { performance } from "node:perf_hooks";
import { Worker } from "node:worker_threads";
import { serve } from "@hono/node-server";
import { createGatehouse } from "../mod.ts";
import { redisStore } from "../redis.ts";
import { benchAgent } from "./agent.ts";
import { countingStore } from "./counting-store.ts";

export interface LatencyResult {
  clients: number;
  /** Turns measured (warm-up left out). */
  turns: number;
  p50Ms: number;
  p99Ms: number;
  meanMs: number;
  maxMs: number;
  /** Turns ended per second over the measured part. */
  turnsPerSecond: number;
  /** Most claims held at once during the run. */
  maxClaimsInFlight: number;
}

/** The clients, as plain JavaScript for a worker thread (global fetch, no loader needed). */
const CLIENT_SOURCE = `
const { parentPort, workerData } = require("node:worker_threads");
const { performance } = require("node:perf_hooks");
const { base, clients, turns, prefix } = workerData;
const waiting = new Map();
parentPort.on("message", (m) => { const w = waiting.get(m.turnId); if (w) { waiting.delete(m.turnId); w(); } });
async function client(c) {
  const agentId = prefix + "-c" + c;
  for (let k = 0; k < turns; k++) {
    const t0 = performance.timeOrigin + performance.now();
    const res = await fetch(base + "/v1/agents/" + agentId + "/tasks", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ agent: "bench", input: "task " + k + " of client " + c }),
    });
    const body = await res.json();
    if (res.status !== 202) throw new Error("POST answered " + res.status + ": " + JSON.stringify(body));
    const ended = new Promise((r) => waiting.set(body.turnId, r));
    parentPort.postMessage({ type: "posted", client: c, k, turnId: body.turnId, t0 });
    await ended;
  }
}
Promise.all(Array.from({ length: clients }, (_, c) => client(c))).then(
  () => parentPort.postMessage({ type: "done" }),
  (err) => parentPort.postMessage({ type: "error", error: String(err && err.stack || err) }),
);
`;

const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];

export async function measureLatency(opts: {
  redisUrl: string;
  prefix: string;
  clients: number;
  /** Turns per client, warm-up included. */
  turnsPerClient: number;
  /** The first turns of each client, not counted. */
  warmupTurnsPerClient: number;
}): Promise<LatencyResult> {
  const counted = countingStore(redisStore({ url: opts.redisUrl, prefix: opts.prefix }));
  const { agent } = benchAgent();
  // Default settings: the store and the agent only.
  const gh = createGatehouse({ agents: [agent], store: counted.store });
  const server = serve({ fetch: gh.fetch, port: 0, hostname: "127.0.0.1" });
  await new Promise<void>((resolve) => server.once("listening", () => resolve()));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  gh.startWorker();

  const endedAt = new Map<string, number>();
  const posted = new Map<string, { t0: number; k: number }>();
  const latencies: number[] = [];
  let firstMeasured = Infinity;
  let lastMeasured = 0;
  const worker = new Worker(CLIENT_SOURCE, {
    eval: true,
    workerData: { base, clients: opts.clients, turns: opts.turnsPerClient, prefix: opts.prefix },
  });
  const settle = (turnId: string) => {
    const p = posted.get(turnId);
    const end = endedAt.get(turnId);
    if (!p || end === undefined) return;
    posted.delete(turnId);
    endedAt.delete(turnId);
    if (p.k >= opts.warmupTurnsPerClient) {
      latencies.push(end - p.t0);
      firstMeasured = Math.min(firstMeasured, p.t0);
      lastMeasured = Math.max(lastMeasured, end);
    }
    worker.postMessage({ turnId });
  };
  counted.onTurnEnded = (turnId) => {
    endedAt.set(turnId, performance.timeOrigin + performance.now());
    settle(turnId);
  };
  try {
    await new Promise<void>((resolve, reject) => {
      worker.on("message", (m: { type: string; turnId: string; t0: number; k: number; error?: string }) => {
        if (m.type === "posted") {
          posted.set(m.turnId, { t0: m.t0, k: m.k });
          settle(m.turnId);
        } else if (m.type === "done") resolve();
        else if (m.type === "error") reject(new Error(`latency client: ${m.error}`));
      });
      worker.on("error", reject);
    });
    // Read back over HTTP: every client's agent is done, with all its turns ended.
    for (let c = 0; c < opts.clients; c++) {
      const res = await fetch(`${base}/v1/agents/${opts.prefix}-c${c}`);
      const view = await res.json() as { state?: string };
      if (res.status !== 200 || view.state !== "done") throw new Error(`agent ${opts.prefix}-c${c}: ${res.status} ${JSON.stringify(view).slice(0, 200)}`);
    }
  } finally {
    await worker.terminate();
    await gh.stopWorker();
    await new Promise<void>((r) => server.close(() => r()));
    await counted.store.close();
  }
  const expected = opts.clients * (opts.turnsPerClient - opts.warmupTurnsPerClient);
  if (latencies.length !== expected) throw new Error(`measured ${latencies.length} turns, expected ${expected}`);
  const sorted = [...latencies].sort((a, b) => a - b);
  return {
    clients: opts.clients,
    turns: sorted.length,
    p50Ms: quantile(sorted, 0.5),
    p99Ms: quantile(sorted, 0.99),
    meanMs: sorted.reduce((a, b) => a + b, 0) / sorted.length,
    maxMs: sorted[sorted.length - 1],
    turnsPerSecond: sorted.length / ((lastMeasured - firstMeasured) / 1000),
    maxClaimsInFlight: counted.counts.maxInFlight,
  };
}
