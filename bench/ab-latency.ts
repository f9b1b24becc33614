/**
 * Task to done at one agent, two builds of gatehouse side by side in one process (A/B on a noisy
 * machine): `npx tsx bench/ab-latency.ts <other checkout>` loads `createGatehouse` from this checkout
 * and from the other one (a `git archive` of the commit to compare, with node_modules linked), serves
 * each over real HTTP on its own port against one private redis-server (AOF on, `appendfsync always`
 * unless BENCH_FSYNC says otherwise), and runs one client that alternates between them in blocks of
 * BENCH_BLOCK turns (default 10) for BENCH_ROUNDS rounds (default 20), so both see the same disk and
 * load. Each turn: from the POST's start to the reply of the commit that ends it (bench/latency.ts's
 * figure). Restate (bench/restate.ts's server and endpoint, this checkout's pin) runs its blocks in the
 * same rotation: one request-response call per turn, as bench/restate.ts's task-to-done row measures
 * it (a new object every five turns). Prints p50/p90 of each and the ratios of the p50s.
 */
import type { AddressInfo } from "node:net";
import { performance } from "node:perf_hooks";
import process from "node:process";
import { pathToFileURL } from "node:url";
import { serve } from "@hono/node-server";
import type { CommitRequest, Store } from "../store/port.ts";
import { startRedisServer } from "../tests/helpers/redis-server.ts";
import { ensureBenchDeps, post, startEndpoint, startRestateServer } from "./restate.ts";

const other = process.argv[2];
if (!other) throw new Error("usage: tsx bench/ab-latency.ts <other checkout>");
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 20);
const BLOCK = Number(process.env.BENCH_BLOCK ?? 10);
const fsync = (process.env.BENCH_FSYNC ?? "always") as "always" | "everysec";

const redis = await startRedisServer({ appendonly: true, appendfsync: fsync });
let onEnd: ((turnId: string) => void) | null = null;

async function side(label: string, root: string) {
  const { createGatehouse } = await import(pathToFileURL(`${root}/mod.ts`).href);
  const { redisStore } = await import(pathToFileURL(`${root}/redis.ts`).href);
  const { benchAgent } = await import(pathToFileURL(`${root}/bench/agent.ts`).href);
  const inner: Store = redisStore({ url: redis.url, prefix: `ab-${label}` });
  const store = new Proxy(inner, {
    get(target, prop, receiver) {
      const v = Reflect.get(target, prop, receiver);
      if (prop !== "commit") return typeof v === "function" ? v.bind(target) : v;
      return async (req: CommitRequest) => {
        const res = await (v as Store["commit"]).call(target, req);
        if (res.status === "applied" && req.turnId !== null && req.activeTurnId === null) onEnd?.(req.turnId);
        return res;
      };
    },
  });
  const gh = createGatehouse({ agents: [benchAgent().agent], store });
  const server = serve({ fetch: gh.fetch, port: 0, hostname: "127.0.0.1" });
  await new Promise<void>((r) => server.once("listening", () => r()));
  gh.startWorker();
  return { label, gh, server, store, base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, ms: [] as number[], k: 0 };
}

ensureBenchDeps();
const restate = await startRestateServer();
const endpoint = await startEndpoint();
await post(`${restate.admin}/deployments`, { uri: endpoint.url });
const peer = { label: "restate", ms: [] as number[], k: 0 };
async function restateTurn(record: boolean) {
  const t0 = performance.now();
  const k = peer.k++;
  const out = await post(`${restate.ingress}/BenchAgent/ab-a${Math.floor(k / 5)}/turn`, { input: `task ${k}`, modelDelayMs: 0 }) as { result?: string };
  if (out.result !== "ok") throw new Error(`Restate turn ${k}: ${JSON.stringify(out)}`);
  if (record) peer.ms.push(performance.now() - t0);
}

const sides = [await side("this", process.cwd()), await side("other", other)];
async function turn(s: (typeof sides)[number] | typeof peer, record: boolean) {
  if (s === peer) return restateTurn(record);
  if (!("base" in s)) throw new Error("unreachable");
  const t0 = performance.now();
  let ended = "";
  const done = new Promise<void>((r) => (onEnd = (id) => ((ended = id), r())));
  const res = await fetch(`${s.base}/v1/agents/ab-${s.label}/tasks`, {
    method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ agent: "bench", input: `task ${s.k++}` }),
  });
  const body = await res.json() as { turnId: string };
  await done;
  if (ended !== body.turnId) throw new Error(`turn ${body.turnId} ended as ${ended}`);
  if (record) s.ms.push(performance.now() - t0);
}
const all = [...sides, peer];
for (const s of all) for (let i = 0; i < 5; i++) await turn(s, false);
for (let r = 0; r < ROUNDS; r++) for (const s of r % 2 ? [...all].reverse() : all) for (let i = 0; i < BLOCK; i++) await turn(s, true);
await endpoint.stop();
await restate.stop();
for (const s of sides) {
  await s.gh.stopWorker();
  await new Promise<void>((r) => s.server.close(() => r()));
  await s.store.close();
}
await redis.stop();
const q = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.ceil(p * xs.length) - 1)];
for (const s of all) console.log(`${s.label}: ${s.ms.length} turns, p50 ${q(s.ms, 0.5).toFixed(2)} ms, p90 ${q(s.ms, 0.9).toFixed(2)} ms`);
const p50 = (s: { ms: number[] }) => q(s.ms, 0.5);
console.log(`appendfsync ${fsync}: p50 this ÷ other ${(p50(sides[0]) / p50(sides[1])).toFixed(3)}; ÷ Restate's: this ${(p50(sides[0]) / p50(peer)).toFixed(3)}, other ${(p50(sides[1]) / p50(peer)).toFixed(3)}`);
