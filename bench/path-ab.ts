/**
 * Worker CPU per step of two builds, alternated in one process (bench/README.md "CPU on the user's path"):
 *
 *   npx tsx bench/path-ab.ts <root A> <root B>    # e.g. a worktree of the base commit and this one
 *
 * Both builds' modules are loaded side by side (each root's mod.ts, redis.ts and bench helpers; the
 * packages are shared), so their runs share the process's warm-up and the machine's load at the moment:
 * on a shared machine the runs of separate processes minutes apart differ by more than a cut's effect.
 * One redis-server (AOF, `appendfsync always`); per run the workload of bench/path-profile.ts: 100
 * worker loops, PATH_AB_TURNS turns (default 1,000) of the bench agent, `queued3` (3/2 turns queued
 * before the clock) or `fetch5` (5/4 turns POSTed with in-process fetch, the last of each agent with
 * `Prefer: wait`). A warm-up run of each way on each build first (not counted), then PATH_AB_PAIRS pairs
 * (default 8) per way, in the order A B, B A, A B, ...; prints each pair, each build's median and the
 * median of the pairs' ratios B / A. PATH_AB_WAYS: default `queued3,fetch5`.
 */
import { loadavg } from "node:os";
import process from "node:process";
import { pathToFileURL } from "node:url";
import { resolve } from "node:path";

const [rootA, rootB] = process.argv.slice(2).map((r) => pathToFileURL(resolve(r)).href);
if (!rootA || !rootB) throw new Error("usage: npx tsx bench/path-ab.ts <root A> <root B>");
const PAIRS = Number(process.env.PATH_AB_PAIRS ?? 8);
const TURNS = Number(process.env.PATH_AB_TURNS ?? 1000);
const WAYS = (process.env.PATH_AB_WAYS ?? "queued3,fetch5").split(",");
const CONCURRENCY = 100;
const PER_AGENT = 5;

/** One build's entry points (typed loosely: the two builds may differ in their types). */
type Build = Record<"createGatehouse" | "redisStore" | "benchAgent" | "countingStore" | "drive" | "enqueueAll", any>;

async function load(root: string): Promise<Build> {
  const m = (p: string) => import(`${root}/${p}`);
  return {
    createGatehouse: (await m("mod.ts")).createGatehouse,
    redisStore: (await m("redis.ts")).redisStore,
    benchAgent: (await m("bench/agent.ts")).benchAgent,
    countingStore: (await m("bench/counting-store.ts")).countingStore,
    drive: (await m("bench/path-client.ts")).drive,
    enqueueAll: (await m("bench/throughput.ts")).enqueueAll,
  };
}

const builds = { A: await load(rootA), B: await load(rootB) };
const { startRedisServer } = await import(`${rootB}/tests/helpers/redis-server.ts`);
const redis = await startRedisServer({ appendonly: true, appendfsync: "always" });
let runs = 0;

/** One run of `way` on build `b`: µs of this process's CPU per model step in the measured window. */
async function once(b: Build, way: string): Promise<number> {
  const steps = Number(way.replace(/\D/g, ""));
  const queued = way.startsWith("queued");
  const prefix = `ab${runs++}`;
  const counted = b.countingStore(b.redisStore({ url: redis.url, prefix }));
  const { agent, modelSteps } = b.benchAgent({}, { steps });
  const gh = b.createGatehouse({ agents: [agent], store: counted.store, concurrency: CONCURRENCY });
  const send = (u: string, init: RequestInit) => gh.fetch(new Request(u, init));
  const keys = (p: string, n: number) => Array.from({ length: n }, (_, i) => `${p}-a${i}`);
  const o = { system: "gatehouse", base: "http://gatehouse.local", steps, modelDelayMs: 0, concurrency: CONCURRENCY };
  gh.startWorker();
  await b.drive(send, { ...o, keys: keys(`${prefix}w`, CONCURRENCY), turnsPerAgent: 1 });
  if (queued) {
    await gh.stopWorker();
    await b.enqueueAll(counted.store, prefix, TURNS / PER_AGENT, PER_AGENT);
  }
  counted.reset();
  const s0 = modelSteps();
  const cpu0 = process.cpuUsage();
  if (queued) {
    gh.startWorker();
    await counted.whenTurnsEnded(TURNS);
  } else await b.drive(send, { ...o, keys: keys(prefix, TURNS / PER_AGENT), turnsPerAgent: PER_AGENT });
  const cpu = process.cpuUsage(cpu0);
  const n = modelSteps() - s0;
  await gh.stopWorker();
  await counted.store.close();
  if (n !== TURNS * steps) throw new Error(`expected ${TURNS * steps} steps, counted ${n}`);
  return (cpu.user + cpu.system) / n;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((x, y) => x - y);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const f0 = (xs: number[]) => xs.map((x) => x.toFixed(0)).join(", ");

try {
  for (const w of WAYS) {
    await once(builds.A, w);
    await once(builds.B, w);
  }
  for (const w of WAYS) {
    const a: number[] = [];
    const b: number[] = [];
    for (let i = 0; i < PAIRS; i++) {
      let x: number, y: number;
      if (i % 2 === 0) {
        x = await once(builds.A, w);
        y = await once(builds.B, w);
      } else {
        y = await once(builds.B, w);
        x = await once(builds.A, w);
      }
      a.push(x);
      b.push(y);
      console.log(`${w} pair ${i + 1}: A ${x.toFixed(0)}, B ${y.toFixed(0)} µs/step (B/A ${(y / x).toFixed(2)}), load ${loadavg()[0].toFixed(1)}`);
    }
    console.log(`${w}: A median ${median(a).toFixed(0)} (${f0(a)}); B median ${median(b).toFixed(0)} (${f0(b)}); B/A median of pairs ${median(a.map((x, i) => b[i] / x)).toFixed(2)}`);
  }
} finally {
  await redis.stop();
}
process.exit(0);
