/**
 * The Redis Cluster benchmark: `npm run bench:cluster` (see bench/README.md,
 * "Redis Cluster").
 *
 * Runs the benchmark agent (bench/agent.ts) on the TCP adapter at 100
 * concurrent agents in three layouts, each on its own private servers:
 *
 * - `standalone`: one redis-server, the unsharded layout (the main bench's
 *   configuration);
 * - `cluster-1`: a one-master Redis Cluster, the sharded layout (16 shards);
 * - `cluster-3`: a three-master Redis Cluster, the same layout.
 *
 * and reports steps/s, store calls per step (what the host asks for),
 * script calls per step (EVALSHA + EVAL summed over every master: a
 * sharded claimNext is several), Redis commands per step, bytes to Redis per
 * step, and CPU per step of this process and of all Redis servers together.
 *
 * Every configuration runs BENCH_REPEAT times (default 3); the table shows
 * the run with the median steps/s and the range. BENCH_QUICK=1 runs a tenth
 * of the work once and writes nothing; otherwise the table goes to
 * bench/results/cluster-<date>.md and bench/results/cluster-latest.md.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import os from "node:os";
import { performance } from "node:perf_hooks";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { Cluster, Redis } from "ioredis";
import { createGatehouse } from "../mod.ts";
import type { Store } from "../store/port.ts";
import { redisStore } from "../redis.ts";
import { startRedisServer } from "../tests/helpers/redis-server.ts";
import { startRedisCluster } from "../tests/helpers/redis-cluster.ts";
import { benchAgent, STEPS_PER_TURN } from "./agent.ts";
import { countingStore } from "./counting-store.ts";
import { commandStats, type CommandStats, diffStats, redisCpuSeconds } from "./redis-info.ts";

const BENCH_DIR = fileURLToPath(new URL("./", import.meta.url));
const QUICK = process.env.BENCH_QUICK === "1";
const REPEAT = QUICK ? 1 : Math.max(1, Number(process.env.BENCH_REPEAT ?? 3));
const CONCURRENCY = 100;
const TURNS_PER_AGENT = 5;
const TURNS = QUICK ? 200 : 2000;

interface Setup {
  name: string;
  /** One connection per server, for INFO. */
  servers: Redis[];
  makeStore(prefix: string): Store;
  flush(): Promise<void>;
  stop(): Promise<void>;
}

interface Result {
  name: string;
  steps: number;
  seconds: number;
  stepsPerSecond: number;
  storeCallsPerStep: number;
  scriptCallsPerStep: number;
  redisCommandsPerStep: number;
  bytesInPerStep: number;
  nodeCpuUsPerStep: number;
  redisCpuUsPerStep: number;
  claimNextPerStep: number;
}

async function standalone(): Promise<Setup> {
  const server = await startRedisServer();
  const info = new Redis(server.url);
  return {
    name: "standalone (unsharded)",
    servers: [info],
    makeStore: (prefix) => redisStore({ url: server.url, prefix }),
    flush: async () => void (await info.flushall()),
    stop: async () => {
      info.disconnect();
      await server.stop();
    },
  };
}

async function cluster(masters: number): Promise<Setup> {
  const c = await startRedisCluster({ masters });
  const infos = c.servers.map((s) => new Redis(s.url));
  const client = new Cluster(c.nodes, { enableAutoPipelining: false });
  return {
    name: `cluster, ${masters} master${masters > 1 ? "s" : ""} (16 shards)`,
    servers: infos,
    makeStore: (prefix) => redisStore({ client, prefix }),
    flush: async () => void (await Promise.all(infos.map((i) => i.flushall()))),
    stop: async () => {
      client.disconnect();
      for (const i of infos) i.disconnect();
      await c.stop();
    },
  };
}

async function statsOf(servers: Redis[]): Promise<{ stats: CommandStats[]; cpu: number }> {
  const stats = await Promise.all(servers.map((s) => commandStats(s)));
  const cpu = (await Promise.all(servers.map((s) => redisCpuSeconds(s)))).reduce((a, b) => a + b, 0);
  return { stats, cpu };
}

async function enqueueAll(store: Store, prefix: string, agents: number, turnsPerAgent: number): Promise<void> {
  const ids = Array.from({ length: agents }, (_, i) => `${prefix}-a${i}`);
  for (let t = 0; t < turnsPerAgent; t++) {
    await Promise.all(ids.map((agentId, i) =>
      store.enqueueTask({ agentId, agentName: "bench", workerTarget: "default", input: `task ${t} of agent ${i}`, options: {}, turnId: `turn_${t}_${i}`, now: Date.now() })
    ));
  }
}

async function run(setup: Setup, rep: number): Promise<Result> {
  const prefix = `cl${rep}`;
  const counted = countingStore(setup.makeStore(prefix));
  const { agent, modelSteps } = benchAgent();
  const gh = createGatehouse({ agents: [agent], store: counted.store, concurrency: CONCURRENCY, leaseMs: 30_000, pollMs: 100 });
  await enqueueAll(counted.store, `${prefix}w`, CONCURRENCY, 1);
  gh.startWorker();
  await counted.whenTurnsEnded(CONCURRENCY);
  await gh.stopWorker();

  const agents = TURNS / TURNS_PER_AGENT;
  await enqueueAll(counted.store, prefix, agents, TURNS_PER_AGENT);
  counted.reset();
  const steps0 = modelSteps();
  const before = await statsOf(setup.servers);
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  gh.startWorker();
  await counted.whenTurnsEnded(TURNS);
  const seconds = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const after = await statsOf(setup.servers);
  const steps = modelSteps() - steps0;
  const counts = structuredClone(counted.counts);
  await gh.stopWorker();
  await counted.store.close();
  if (steps !== TURNS * STEPS_PER_TURN) throw new Error(`expected ${TURNS * STEPS_PER_TURN} model steps, counted ${steps}`);
  const d = before.stats.map((b, i) => diffStats(b, after.stats[i]));
  const sum = (k: "totalCalls" | "scriptCalls" | "netInputBytes") => d.reduce((a, x) => a + x[k], 0);
  return {
    name: setup.name,
    steps,
    seconds,
    stepsPerSecond: steps / seconds,
    storeCallsPerStep: Object.values(counts.calls).reduce((a, b) => a + b, 0) / steps,
    scriptCallsPerStep: sum("scriptCalls") / steps,
    redisCommandsPerStep: sum("totalCalls") / steps,
    bytesInPerStep: sum("netInputBytes") / steps,
    nodeCpuUsPerStep: (cpu.user + cpu.system) / steps,
    redisCpuUsPerStep: ((after.cpu - before.cpu) * 1e6) / steps,
    claimNextPerStep: (counts.calls.claimNext ?? 0) / steps,
  };
}

const f = (n: number, d = 1) => n.toLocaleString("en-US", { minimumFractionDigits: d, maximumFractionDigits: d });

async function main() {
  const results: Array<{ median: Result; min: number; max: number }> = [];
  for (const make of [standalone, () => cluster(1), () => cluster(3)]) {
    const setup = await make();
    try {
      const runs: Result[] = [];
      for (let rep = 0; rep < REPEAT; rep++) {
        await setup.flush();
        const r = await run(setup, rep);
        runs.push(r);
        console.log(`${r.name} #${rep + 1}: ${f(r.stepsPerSecond, 0)} steps/s, ${f(r.scriptCallsPerStep, 2)} script calls/step, CPU ${f(r.nodeCpuUsPerStep, 0)} + ${f(r.redisCpuUsPerStep, 0)} µs/step`);
      }
      const sorted = [...runs].sort((x, y) => x.stepsPerSecond - y.stepsPerSecond);
      results.push({ median: sorted[Math.floor((sorted.length - 1) / 2)], min: sorted[0].stepsPerSecond, max: sorted[sorted.length - 1].stepsPerSecond });
    } finally {
      await setup.stop();
    }
  }
  const date = new Date().toISOString().slice(0, 10);
  const range = (r: { min: number; max: number }) => (REPEAT > 1 ? ` (${f(r.min, 0)}–${f(r.max, 0)})` : "");
  const lines = [
    `# gatehouse on Redis Cluster — ${date}`,
    "",
    `Machine: ${os.cpus()[0]?.model.trim() ?? "unknown CPU"}, ${os.cpus().length} cores, Node ${process.versions.node}; load average at start ${os.loadavg().map((x) => x.toFixed(2)).join(" ")}. ` +
      `TCP adapter, ${CONCURRENCY} concurrent agents, ${TURNS} turns of ${STEPS_PER_TURN} steps. Median of ${REPEAT} run(s), range in parentheses.${QUICK ? " QUICK run." : ""}`,
    "",
    "| layout | steps/s | store calls/step | script calls/step | claimNext/step | Redis cmds/step | bytes to Redis/step | CPU µs/step node + Redis (all servers) |",
    "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ...results.map(({ median: r, ...g }) =>
      `| ${r.name} | ${f(r.stepsPerSecond, 0)}${range(g)} | ${f(r.storeCallsPerStep, 2)} | ${f(r.scriptCallsPerStep, 2)} | ${f(r.claimNextPerStep, 2)} | ${f(r.redisCommandsPerStep, 1)} | ${f(r.bytesInPerStep, 0)} | ${f(r.nodeCpuUsPerStep, 0)} + ${f(r.redisCpuUsPerStep, 0)} |`
    ),
    "",
  ];
  const md = lines.join("\n");
  console.log("\n" + md);
  if (!QUICK) {
    mkdirSync(`${BENCH_DIR}results`, { recursive: true });
    writeFileSync(`${BENCH_DIR}results/cluster-${date}.md`, md);
    writeFileSync(`${BENCH_DIR}results/cluster-latest.md`, md);
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
