/**
 * Worker CPU per step on the user's path, alone, for profiles and before/after comparisons
 * (bench/README.md "CPU on the user's path"):
 *
 *   npx tsx bench/path-profile.ts                     # 5/4 and 3/2, tasks POSTed (in-process fetch) and queued
 *   PATH_PROFILE_DIR=/tmp/prof npx tsx bench/path-profile.ts   # + a CPU profile of each measured window,
 *                                                              #   and its top self-time functions printed
 *
 * One gatehouse instance at 100 worker loops (PATH_PROFILE_CONCURRENCY) on a private redis-server with the
 * AOF on and `appendfsync always`; the workload of bench/user-path.ts: per lane an agent's five turns POSTed
 * with in-process `fetch` of the app (the last with `Prefer: wait`), PATH_PROFILE_TURNS turns (default 1,000)
 * after a warm-up turn per lane; `queued`: the same turns queued before the clock (bench/throughput.ts's
 * way). CPU is this process's (process.cpuUsage: routes, client, pool, host, store client). Options:
 * PATH_PROFILE_RUNS (default 3, alternating the ways), PATH_PROFILE_STEPS (default 5,3), PATH_PROFILE_WAYS
 * (default fetch,queued), PATH_PROFILE_TOP (functions printed, default 25).
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { Session } from "node:inspector/promises";
import { performance } from "node:perf_hooks";
import process from "node:process";
import { createGatehouse } from "../mod.ts";
import { redisStore } from "../redis.ts";
import { startRedisServer } from "../tests/helpers/redis-server.ts";
import { benchAgent } from "./agent.ts";
import { countingStore } from "./counting-store.ts";
import { drive, type Send } from "./path-client.ts";
import { enqueueAll } from "./throughput.ts";

const RUNS = Math.max(1, Number(process.env.PATH_PROFILE_RUNS ?? 3));
const CONCURRENCY = Number(process.env.PATH_PROFILE_CONCURRENCY ?? 100);
const TURNS = Number(process.env.PATH_PROFILE_TURNS ?? 1000);
const STEPS = (process.env.PATH_PROFILE_STEPS ?? "5,3").split(",").map(Number);
const WAYS = (process.env.PATH_PROFILE_WAYS ?? "fetch,queued").split(",") as Array<"fetch" | "queued">;
const DIR = process.env.PATH_PROFILE_DIR;
const TOP = Number(process.env.PATH_PROFILE_TOP ?? 25);
const PER_AGENT = 5;

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
}

/** Self time by function (name, file, line) of a V8 CPU profile, highest first. */
function topSelf(profile: { nodes: ProfileNode[]; samples: number[] }, n: number): string[] {
  const byId = new Map(profile.nodes.map((x) => [x.id, x]));
  const self = new Map<string, number>();
  for (const id of profile.samples) {
    const cf = byId.get(id)!.callFrame;
    const key = `${cf.functionName || "(anonymous)"} ${cf.url.replace(/^.*\/(node_modules\/|wt\/[^/]+\/)/, "")}:${cf.lineNumber + 1}`;
    self.set(key, (self.get(key) ?? 0) + 1);
  }
  const total = profile.samples.length;
  return [...self.entries()].sort((a, b) => b[1] - a[1]).slice(0, n).map(([k, v]) => `${(100 * v / total).toFixed(1).padStart(5)} %  ${k}`);
}

async function once(url: string, way: "fetch" | "queued", steps: number, run: number): Promise<number> {
  const prefix = `pp${run}${way[0]}${steps}`;
  const counted = countingStore(redisStore({ url, prefix }));
  const { agent, modelSteps } = benchAgent({}, { steps });
  const gh = createGatehouse({ agents: [agent], store: counted.store, concurrency: CONCURRENCY });
  const send: Send = (u, init) => gh.fetch(new Request(u, init));
  const keys = (p: string, n: number) => Array.from({ length: n }, (_, i) => `${p}-a${i}`);
  const o = { system: "gatehouse" as const, base: "http://gatehouse.local", steps, modelDelayMs: 0, concurrency: CONCURRENCY };
  gh.startWorker();
  await drive(send, { ...o, keys: keys(`${prefix}w`, CONCURRENCY), turnsPerAgent: 1 });
  if (way === "queued") {
    await gh.stopWorker();
    await enqueueAll(counted.store, prefix, TURNS / PER_AGENT, PER_AGENT);
  }
  counted.reset();
  const session = DIR ? new Session() : undefined;
  if (session) {
    session.connect();
    await session.post("HeapProfiler.enable");
    await session.post("HeapProfiler.startSampling", { samplingInterval: 2048, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
  }
  const s0 = modelSteps();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  if (way === "queued") {
    gh.startWorker();
    await counted.whenTurnsEnded(TURNS);
  } else {
    await drive(send, { ...o, keys: keys(prefix, TURNS / PER_AGENT), turnsPerAgent: PER_AGENT });
  }
  const seconds = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const n = modelSteps() - s0;
  if (session) {
    const { profile } = await session.post("HeapProfiler.stopSampling") as never;
    mkdirSync(DIR!, { recursive: true });
    writeFileSync(`${DIR}/${way}-${steps}-${run + 1}.heapprofile`, JSON.stringify(profile));
    session.disconnect();
    ;
  }
  await gh.stopWorker();
  await counted.store.close();
  if (n !== TURNS * steps) throw new Error(`expected ${TURNS * steps} steps, counted ${n}`);
  const us = (cpu.user + cpu.system) / n;
  console.log(`${way} ${steps}/${steps - 1} run ${run + 1}: ${(n / seconds).toFixed(0)} steps/s, ${us.toFixed(0)} µs CPU/step (user ${(cpu.user / n).toFixed(0)}, system ${(cpu.system / n).toFixed(0)})`);
  return us;
}

const redis = await startRedisServer({ appendonly: true, appendfsync: "always" });
try {
  const all = new Map<string, number[]>();
  for (let run = 0; run < RUNS; run++) {
    for (const steps of STEPS) {
      for (const way of run % 2 === 0 ? WAYS : [...WAYS].reverse()) {
        const k = `${way} ${steps}/${steps - 1}`;
        all.set(k, [...(all.get(k) ?? []), await once(redis.url, way, steps, run)]);
      }
    }
  }
  for (const [k, xs] of all) {
    const s = [...xs].sort((a, b) => a - b);
    console.log(`${k}: median ${s[Math.floor((s.length - 1) / 2)].toFixed(0)} µs/step (${s.map((x) => x.toFixed(0)).join(", ")})`);
  }
} finally {
  await redis.stop();
}
process.exit(0);
