/**
 * The gatehouse benchmark: `npm run bench` (see bench/README.md).
 *
 * Starts its own redis-server (tests/helpers/redis-server.ts) and an
 * Upstash-compatible REST bridge in front of it (tests/upstash-bridge.ts),
 * then measures, for the TCP adapter (redisStore) and the REST adapter
 * (upstashStore through the bridge), at 1, 10 and 100 concurrent agents:
 *
 * - steps per second of one gatehouse instance (concurrency = agents) running
 *   the benchmark agent (bench/agent.ts: three scripted model steps per turn);
 * - store round trips per step (every store call is one script call, checked
 *   against Redis' own count of EVALSHA/EVAL), split by operation;
 * - Redis commands per step (scripts plus the commands they run), commands
 *   billed per step (Upstash bills each script call once), bytes sent to
 *   Redis per step (INFO stats total_net_input_bytes);
 * - memory of one idle agent after a finished turn (MEMORY USAGE of its keys);
 * - BullMQ's jobs per second at the same concurrency, on the same server, in
 *   the same run (bench/bullmq.ts), and the ratio steps/s ÷ jobs/s.
 *
 * Prints a markdown table and writes it to bench/results/<date>.md and
 * bench/results/latest.md. BullMQ is installed into bench/node_modules on
 * first use (`npm install --prefix bench`).
 *
 * Every configuration runs BENCH_REPEAT times (default 3); the table shows
 * the run with the median steps/s (jobs/s) and the range over all runs.
 *
 * Options (environment): BENCH_QUICK=1 runs a tenth of the work once (a
 * smoke run, nothing written); BENCH_REPEAT=n.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import os from "node:os";
import { performance } from "node:perf_hooks";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { Redis } from "ioredis";
import { createGatehouse } from "../mod.ts";
import type { Store } from "../store/port.ts";
import { redisStore } from "../redis.ts";
import { upstashStore } from "../store/upstash.ts";
import { startRedisServer } from "../tests/helpers/redis-server.ts";
import { startUpstashBridge, type UpstashBridge } from "../tests/upstash-bridge.ts";
import { benchAgent, STEPS_PER_TURN } from "./agent.ts";
import { benchBullMQ, type BullResult } from "./bullmq.ts";
import { countingStore } from "./counting-store.ts";
import { commandStats, diffStats, redisCpuSeconds } from "./redis-info.ts";

const BENCH_DIR = fileURLToPath(new URL("./", import.meta.url));
const QUICK = process.env.BENCH_QUICK === "1";
const REPEAT = QUICK ? 1 : Math.max(1, Number(process.env.BENCH_REPEAT ?? 3));
const CONCURRENCY = [1, 10, 100];
/** Turns per agent: agents stay short-lived, so no conversation grows long (see README). */
const TURNS_PER_AGENT = 5;

type Adapter = "tcp" | "upstash";

interface GhResult {
  adapter: Adapter;
  concurrency: number;
  agents: number;
  turns: number;
  steps: number;
  seconds: number;
  stepsPerSecond: number;
  /** Store calls per step; each is one script call, so one round trip. */
  roundTripsPerStep: number;
  /** The same for work only: claims that claimed, commits, reads and renewals (no polls of idle loops). */
  workRoundTripsPerStep: number;
  /** CPU of this process per step (gatehouse; with upstash also the REST bridge), in µs. */
  nodeCpuUsPerStep: number;
  /** CPU of the Redis server per step, in µs. */
  redisCpuUsPerStep: number;
  /** Script calls per step as Redis counted them (EVALSHA + EVAL). */
  scriptCallsPerStep: number;
  /** Store calls per step by operation. */
  byOp: Record<string, number>;
  /** Answers per turn by operation and status (commit:applied, claimNext:empty, ...). */
  answersPerTurn: Record<string, number>;
  /** Commands Redis ran per step: script calls plus the commands inside them. */
  redisCommandsPerStep: number;
  /** Commands billed per step (Upstash counts a script call once). */
  billedPerStep: number;
  bytesInPerStep: number;
  bytesOutPerStep: number;
}

function ensureBullMQ(): void {
  if (existsSync(`${BENCH_DIR}node_modules/bullmq/package.json`)) return;
  console.log("installing the benchmark's dependencies (npm install --prefix bench) ...");
  const r = spawnSync("npm", ["install", "--prefix", BENCH_DIR, "--no-audit", "--no-fund"], { stdio: "inherit" });
  if (r.status !== 0) throw new Error("npm install --prefix bench failed");
}

function workload(concurrency: number): { agents: number; turns: number } {
  const targetTurns = { 1: 300, 10: 1000, 100: 2000 }[concurrency] ?? 1000;
  const turns = Math.max(concurrency * TURNS_PER_AGENT, Math.round((QUICK ? targetTurns / 10 : targetTurns) / TURNS_PER_AGENT) * TURNS_PER_AGENT);
  return { agents: Math.max(concurrency, turns / TURNS_PER_AGENT), turns };
}

async function enqueueAll(store: Store, prefix: string, agents: number, turnsPerAgent: number): Promise<string[]> {
  const ids = Array.from({ length: agents }, (_, i) => `${prefix}-a${i}`);
  // Round-robin over agents, so the ready queue offers every agent's first turn before anyone's second.
  for (let t = 0; t < turnsPerAgent; t++) {
    await Promise.all(ids.map((agentId, i) =>
      store.enqueueTask({
        agentId, agentName: "bench", workerTarget: "default", input: `task ${t} of agent ${i}`, options: {},
        turnId: `turn_${t}_${i}`, now: Date.now(),
      })
    ));
  }
  return ids;
}

async function runGatehouse(opts: {
  adapter: Adapter;
  concurrency: number;
  makeStore: (prefix: string) => Store;
  info: Redis;
  bridge: UpstashBridge;
  rep: number;
}): Promise<GhResult> {
  const { adapter, concurrency, info, bridge } = opts;
  const { agents, turns } = workload(concurrency);
  const prefix = `b${adapter}${concurrency}r${opts.rep}`;
  const counted = countingStore(opts.makeStore(prefix));
  const { agent, modelSteps } = benchAgent();
  const gh = createGatehouse({ agents: [agent], store: counted.store, concurrency, leaseMs: 30_000, pollMs: 100 });

  // Warm-up (scripts loaded, code paths compiled), not measured.
  await enqueueAll(counted.store, `${prefix}w`, concurrency, 1);
  gh.startWorker();
  await counted.whenTurnsEnded(concurrency);
  await gh.stopWorker();

  await enqueueAll(counted.store, prefix, agents, turns / agents);
  counted.reset();
  const stepsBefore = modelSteps();
  bridge.resetStats();
  const before = await commandStats(info);
  const redisCpu0 = await redisCpuSeconds(info);
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  gh.startWorker();
  await counted.whenTurnsEnded(turns);
  const seconds = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const redisCpu = await redisCpuSeconds(info) - redisCpu0;
  const after = await commandStats(info);
  const billedUpstash = bridge.stats.commands;
  const steps = modelSteps() - stepsBefore;
  // Counted after the stop: it writes the tool registry's batched calls (actors/registry-writer.ts), work of this run.
  await gh.stopWorker();
  const counts = structuredClone(counted.counts);
  await counted.store.close();
  if (steps !== turns * STEPS_PER_TURN) throw new Error(`expected ${turns * STEPS_PER_TURN} model steps, counted ${steps}`);

  const d = diffStats(before, after);
  const calls = Object.values(counts.calls).reduce((a, b) => a + b, 0);
  const byOp: Record<string, number> = {};
  for (const [k, v] of Object.entries(counts.calls)) byOp[k] = v / steps;
  const answersPerTurn: Record<string, number> = {};
  for (const [k, v] of Object.entries(counts.answers)) answersPerTurn[k] = v / turns;
  // Work: claims that claimed, commits, reads, renewals of running claims and tool registry writes. The rest are
  // polls of idle loops (claimNext answered empty or still in flight when the last turn ended, nextReadyAt, the watchdog).
  const work = (counts.answers["claimNext:claimed"] ?? 0) +
    ["commit", "readMessages", "renewLease", "getAgent", "recordToolMethod"].reduce((a, k) => a + (counts.calls[k] ?? 0), 0);
  return {
    adapter, concurrency, agents, turns, steps, seconds,
    stepsPerSecond: steps / seconds,
    roundTripsPerStep: calls / steps,
    workRoundTripsPerStep: work / steps,
    nodeCpuUsPerStep: (cpu.user + cpu.system) / steps,
    redisCpuUsPerStep: (redisCpu * 1e6) / steps,
    scriptCallsPerStep: d.scriptCalls / steps,
    byOp, answersPerTurn,
    redisCommandsPerStep: d.totalCalls / steps,
    billedPerStep: (adapter === "upstash" ? billedUpstash : d.scriptCalls) / steps,
    bytesInPerStep: d.netInputBytes / steps,
    bytesOutPerStep: d.netOutputBytes / steps,
  };
}

/** Bytes Redis holds for one agent after `turns` finished turns (MEMORY USAGE of each of its keys, exact). */
async function idleAgentBytes(info: Redis, makeStore: (prefix: string) => Store, turns: number): Promise<{ bytes: number; keys: Record<string, number> }> {
  const prefix = `idle${turns}`;
  const counted = countingStore(makeStore(prefix));
  const { agent } = benchAgent();
  const gh = createGatehouse({ agents: [agent], store: counted.store, concurrency: 1 });
  const [agentId] = await enqueueAll(counted.store, prefix, 1, turns);
  gh.startWorker();
  await counted.whenTurnsEnded(turns);
  await gh.stopWorker();
  await counted.store.close();
  const keys: Record<string, number> = {};
  let bytes = 0;
  let cursor = "0";
  do {
    const [next, found] = await info.scan(cursor, "MATCH", `${prefix}:{a:${agentId}}:*`, "COUNT", 1000);
    cursor = next;
    for (const k of found) {
      const b = Number(await info.call("MEMORY", "USAGE", k, "SAMPLES", "0"));
      keys[k.slice(`${prefix}:{a:${agentId}}:`.length).replace(/^calls:.*/, "calls:<turn>")] =
        (keys[k.slice(`${prefix}:{a:${agentId}}:`.length).replace(/^calls:.*/, "calls:<turn>")] ?? 0) + b;
      bytes += b;
    }
  } while (cursor !== "0");
  return { bytes, keys };
}

const f = (n: number, d = 1) => n.toLocaleString("en-US", { minimumFractionDigits: d, maximumFractionDigits: d });

interface Runs<T> {
  median: T;
  min: number;
  max: number;
}

/** The run with the median of `key`, and the range of `key` over all runs. */
function medianOf<T>(runs: T[], key: (r: T) => number): Runs<T> {
  const sorted = [...runs].sort((x, y) => key(x) - key(y));
  return { median: sorted[Math.floor((sorted.length - 1) / 2)], min: key(sorted[0]), max: key(sorted[sorted.length - 1]) };
}

function report(
  gh: Array<Runs<GhResult>>,
  bull: Map<number, Runs<BullResult>>,
  idle1: { bytes: number; keys: Record<string, number> },
  idle5: { bytes: number },
  meta: Record<string, string>,
): string {
  const range = (r: { min: number; max: number }) => (REPEAT > 1 ? ` (${f(r.min, 0)}–${f(r.max, 0)})` : "");
  const lines: string[] = [];
  lines.push(`# gatehouse benchmark — ${meta.date}`, "");
  lines.push(
    `Machine: ${meta.cpu}, ${meta.cores} cores, Node ${meta.node}, Redis ${meta.redis}, BullMQ ${meta.bullmq}; ` +
      `load average at start ${meta.load}. Median of ${REPEAT} run(s), range in parentheses.${QUICK ? " QUICK run (a tenth of the work)." : ""}`,
    "",
  );
  lines.push("| adapter | agents | gatehouse steps/s | BullMQ jobs/s | ratio | round trips/step (work only) | commits/step | Redis cmds/step | billed cmds/step | bytes to Redis/step | CPU µs/step node + Redis |");
  lines.push("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
  for (const g of gh) {
    const r = g.median;
    const b = bull.get(r.concurrency)!;
    lines.push(
      `| ${r.adapter} | ${r.concurrency} | ${f(r.stepsPerSecond, 0)}${range(g)} | ${f(b.median.jobsPerSecond, 0)}${range(b)} | ` +
        `${f(r.stepsPerSecond / b.median.jobsPerSecond, 2)} | ${f(r.roundTripsPerStep, 2)} (${f(r.workRoundTripsPerStep, 2)}) | ${f(r.byOp.commit ?? 0, 2)} | ` +
        `${f(r.redisCommandsPerStep, 1)} | ${f(r.billedPerStep, 2)} | ${f(r.bytesInPerStep, 0)} | ${f(r.nodeCpuUsPerStep, 0)} + ${f(r.redisCpuUsPerStep, 0)} |`,
    );
  }
  lines.push("");
  lines.push("BullMQ, same server, same run (trivial processor, removeOnComplete):", "");
  lines.push("| concurrency | jobs | jobs/s | Redis cmds/job | script calls/job | CPU µs/job node + Redis |");
  lines.push("| ---: | ---: | ---: | ---: | ---: | ---: |");
  for (const { median: b, ...r } of bull.values()) {
    lines.push(`| ${b.concurrency} | ${b.jobs} | ${f(b.jobsPerSecond, 0)}${range(r)} | ${f(b.commandsPerJob, 1)} | ${f(b.scriptCallsPerJob, 2)} | ${f(b.nodeCpuUsPerJob, 0)} + ${f(b.redisCpuUsPerJob, 0)} |`);
  }
  lines.push("");
  lines.push(
    `Idle agent after one finished turn: ${f(idle1.bytes, 0)} bytes in Redis (${Object.entries(idle1.keys).map(([k, v]) => `${k} ${v}`).join(", ")}); ` +
      `after five turns ${f(idle5.bytes, 0)} bytes (${f((idle5.bytes - idle1.bytes) / 4, 0)} bytes per further turn: messages and events are kept).`,
    "",
  );
  const ops = ["claimNext", "commit", "readMessages", "renewLease", "getAgent", "recordToolMethod", "nextReadyAt", "dueToolCalls"];
  lines.push("Store calls per step, by operation (each is one script call; the last column is Redis' own count):", "");
  lines.push(`| adapter | agents | ${ops.join(" | ")} | claimNext empty/turn | EVALSHA+EVAL/step |`);
  lines.push("| --- | ---: |" + " ---: |".repeat(ops.length + 2));
  for (const { median: r } of gh) {
    lines.push(
      `| ${r.adapter} | ${r.concurrency} | ${ops.map((k) => f(r.byOp[k] ?? 0, 3)).join(" | ")} | ` +
        `${f(r.answersPerTurn["claimNext:empty"] ?? 0, 2)} | ${f(r.scriptCallsPerStep, 3)} |`,
    );
  }
  lines.push("");
  lines.push(`Runs (median): ${gh.map(({ median: r }) => `${r.adapter}/${r.concurrency}: ${r.agents} agents × ${r.turns / r.agents} turns = ${r.steps} steps in ${f(r.seconds, 2)} s`).join("; ")}.`);
  return lines.join("\n") + "\n";
}

async function main() {
  ensureBullMQ();
  const redis = await startRedisServer();
  const bridge = await startUpstashBridge({ redisUrl: redis.url });
  const info = new Redis(redis.url);
  const makers: Record<Adapter, (prefix: string) => Store> = {
    tcp: (prefix) => redisStore({ url: redis.url, prefix }),
    upstash: (prefix) => upstashStore({ url: bridge.url, token: bridge.token, prefix }),
  };
  try {
    const meta = {
      date: new Date().toISOString().slice(0, 10),
      cpu: os.cpus()[0]?.model.trim() ?? "unknown CPU",
      cores: String(os.cpus().length),
      node: process.versions.node,
      redis: /redis_version:(\S+)/.exec(await info.info("server"))?.[1] ?? "?",
      bullmq: (await import("node:module")).createRequire(import.meta.url)("bullmq/package.json").version as string,
      load: os.loadavg().map((x) => x.toFixed(2)).join(" "),
    };
    const gh: Array<Runs<GhResult>> = [];
    const bull = new Map<number, Runs<BullResult>>();
    for (const c of CONCURRENCY) {
      for (const adapter of ["tcp", "upstash"] as Adapter[]) {
        const runs: GhResult[] = [];
        for (let rep = 0; rep < REPEAT; rep++) {
          await info.flushall();
          const r = await runGatehouse({ adapter, concurrency: c, makeStore: makers[adapter], info, bridge, rep });
          runs.push(r);
          console.log(
            `${adapter} x${c} #${rep + 1}: ${f(r.stepsPerSecond, 0)} steps/s, ${f(r.roundTripsPerStep, 2)} round trips/step, ` +
              `CPU ${f(r.nodeCpuUsPerStep, 0)} + ${f(r.redisCpuUsPerStep, 0)} µs/step; per turn ${JSON.stringify(r.answersPerTurn)}`,
          );
        }
        gh.push(medianOf(runs, (r) => r.stepsPerSecond));
      }
      const runs: BullResult[] = [];
      for (let rep = 0; rep < REPEAT; rep++) {
        await info.flushall();
        const jobs = Math.round((c === 1 ? 3_000 : 15_000) / (QUICK ? 10 : 1));
        const b = await benchBullMQ({ host: "127.0.0.1", port: redis.port, concurrency: c, jobs, info });
        runs.push(b);
        console.log(`bullmq x${c} #${rep + 1}: ${f(b.jobsPerSecond, 0)} jobs/s, CPU ${f(b.nodeCpuUsPerJob, 0)} + ${f(b.redisCpuUsPerJob, 0)} µs/job`);
      }
      bull.set(c, medianOf(runs, (b) => b.jobsPerSecond));
    }
    await info.flushall();
    const idle1 = await idleAgentBytes(info, makers.tcp, 1);
    const idle5 = await idleAgentBytes(info, makers.tcp, 5);
    const md = report(gh, bull, idle1, idle5, meta);
    console.log("\n" + md);
    if (!QUICK) {
      mkdirSync(`${BENCH_DIR}results`, { recursive: true });
      writeFileSync(`${BENCH_DIR}results/${meta.date}.md`, md);
      writeFileSync(`${BENCH_DIR}results/latest.md`, md);
    }
  } finally {
    info.disconnect();
    await bridge.close();
    await redis.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
