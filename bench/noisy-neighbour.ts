/**
 * The noisy neighbour: `npm run bench:noisy` (and a section of `npm run bench`).
 *
 * One gatehouse instance (NN_LOOPS worker loops, default 8) on a private
 * redis-server over TCP, a model that answers at once (one step a turn).
 * Tenant A enqueues 5,000 tasks on 500 agents (10 each, round-robin) before
 * the workers start; while A's backlog drains, tenant B posts one task every
 * 200 ms, each on an agent of its own (`POST …/tasks`). Two modes, run
 * alternately NN_REPEAT times each (default 2):
 * - `keys`: A's tasks carry `concurrencyKey: "tenant:A"`, B's `"tenant:B"`
 *   (fair lanes, store/port.ts invariant `fair-lanes`; no limits);
 * - `fcfs`: no keys (every task in the default lane: first come, first served).
 * Figures per mode (medians over the repetitions):
 * - B's queue wait: the task's enqueue (just before its POST) to its model
 *   call, p50 and p99 over B's tasks posted while A's backlog was not drained;
 * - steps/s: A's 5,000 steps over the time from the workers' start to A's
 *   last step; the ratio keys ÷ fcfs is the cost of the keys (target: at
 *   least 0.95, i.e. keys cost at most 5 %).
 * A small warm-up run of each mode comes first and is not counted.
 * `BENCH_QUICK=1`: a tenth of the work, one repetition, nothing written.
 * Prints the table and writes bench/results/noisy-neighbour.md and .json.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import os from "node:os";
import { performance } from "node:perf_hooks";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { createGatehouse, defineAgent, type Model } from "../mod.ts";
import { redisStore } from "../redis.ts";
import { startRedisServer } from "../tests/helpers/redis-server.ts";

const QUICK = process.env.BENCH_QUICK === "1";
const REPEAT = QUICK ? 1 : Number(process.env.NN_REPEAT ?? 2);
const LOOPS = Number(process.env.NN_LOOPS ?? 8);
const A_AGENTS = QUICK ? 50 : 500;
const A_PER_AGENT = 10;
const B_EVERY_MS = 200;
const stamp = () => performance.timeOrigin + performance.now();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export type Mode = "keys" | "fcfs";

export interface NoisyRun {
  mode: Mode;
  stepsPerSecond: number;
  bWaitsMs: number[];
  seconds: number;
}

export interface NoisyRow {
  mode: Mode;
  runs: number;
  bTasks: number;
  bP50Ms: number;
  bP99Ms: number;
  stepsPerSecond: number;
  stepsPerSecondRange: [number, number];
}

const quantile = (xs: readonly number[], q: number) => {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))];
};
const median = (xs: readonly number[]) => quantile(xs, 0.5);

/** The model: answers at once; stamps the first call of each of B's agents, counts A's steps. */
function model(onStep: (agentId: string) => void): Model {
  return {
    name: "noisy-instant",
    async generate(req) {
      onStep(req.agentId);
      return { text: "ok", usage: { inputTokens: 1, outputTokens: 1 } };
    },
  };
}

async function oneRun(redisUrl: string, mode: Mode, rep: number | "warmup", aAgents = A_AGENTS): Promise<NoisyRun> {
  const prefix = `nn_${mode}_${rep}`;
  const store = redisStore({ url: redisUrl, prefix });
  const total = aAgents * A_PER_AGENT;
  let aSteps = 0;
  let aDoneAt = 0;
  const bStarted = new Map<string, number>();
  const agent = defineAgent({
    name: "nn", instructions: "x",
    model: model((agentId) => {
      if (agentId.startsWith("B")) {
        if (!bStarted.has(agentId)) bStarted.set(agentId, stamp());
      } else if (++aSteps === total) aDoneAt = stamp();
    }),
  });
  const gh = createGatehouse({ agents: [agent], store, concurrency: LOOPS });
  const key = (k: string) => (mode === "keys" ? { concurrencyKey: k } : {});
  // A's backlog, round-robin over its agents, before the workers start.
  for (let t = 0; t < A_PER_AGENT; t++) {
    await Promise.all(Array.from({ length: aAgents }, (_, i) =>
      store.enqueueTask({
        agentId: `A${i}`, agentName: "nn", workerTarget: "default", input: `task ${t}`, options: {},
        turnId: `turn_${t}_${i}`, now: Date.now(), ...key("tenant:A"),
      })
    ));
  }
  const posted = new Map<string, number>();
  let b = 0;
  const t0 = stamp();
  gh.startWorker();
  while (aDoneAt === 0) {
    const id = `B${b++}`;
    posted.set(id, stamp());
    const res = await gh.fetch(new Request(`http://gh.bench/v1/agents/${id}/tasks`, {
      method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ agent: "nn", input: "b", ...key("tenant:B") }),
    }));
    if (res.status !== 202) throw new Error(`B's POST answered ${res.status}: ${await res.text()}`);
    await sleep(B_EVERY_MS);
  }
  // B's tasks posted before A's backlog drained, once each has started.
  const counted = [...posted].filter(([, at]) => at < aDoneAt);
  const until = stamp() + 30_000;
  while (counted.some(([id]) => !bStarted.has(id)) && stamp() < until) await sleep(20);
  await gh.close();
  const bWaitsMs = counted.map(([id, at]) => (bStarted.get(id) ?? NaN) - at);
  return { mode, stepsPerSecond: total / ((aDoneAt - t0) / 1000), bWaitsMs, seconds: (aDoneAt - t0) / 1000 };
}

function rowOf(mode: Mode, runs: NoisyRun[]): NoisyRow {
  const mine = runs.filter((r) => r.mode === mode);
  const waits = mine.flatMap((r) => r.bWaitsMs);
  const sps = mine.map((r) => r.stepsPerSecond);
  return {
    mode, runs: mine.length, bTasks: waits.length, bP50Ms: quantile(waits, 0.5), bP99Ms: quantile(waits, 0.99),
    stepsPerSecond: median(sps), stepsPerSecondRange: [Math.min(...sps), Math.max(...sps)],
  };
}

/** The markdown of the rows (also a section of bench/run.ts's report). */
export function noisyReport(rows: readonly NoisyRow[]): string[] {
  const f = (x: number, d = 0) => x.toLocaleString("en-US", { minimumFractionDigits: d, maximumFractionDigits: d });
  const keys = rows.find((r) => r.mode === "keys")!;
  const fcfs = rows.find((r) => r.mode === "fcfs")!;
  const ratio = keys.stepsPerSecond / fcfs.stepsPerSecond;
  return [
    "| mode | runs | B tasks | B queue wait p50 ms | B queue wait p99 ms | A steps/s (range) |",
    "| --- | ---: | ---: | ---: | ---: | ---: |",
    ...rows.map((r) =>
      `| ${r.mode === "keys" ? "keys (fair lanes)" : "no keys (first come, first served)"} | ${r.runs} | ${r.bTasks} | ${f(r.bP50Ms, 1)} | ${f(r.bP99Ms, 1)} | ` +
      `${f(r.stepsPerSecond)} (${f(r.stepsPerSecondRange[0])}–${f(r.stepsPerSecondRange[1])}) |`
    ),
    "",
    `Steps/s with keys ÷ without: **${ratio.toFixed(3)}** (target ≥ 0.95: ${ratio >= 0.95 ? "met" : "not met"}); ` +
    `B's p50 wait without keys ÷ with keys: ${(fcfs.bP50Ms / keys.bP50Ms).toFixed(1)}x.`,
  ];
}

async function main() {
  const redis = await startRedisServer();
  const runs: NoisyRun[] = [];
  const started = performance.now();
  try {
    // A warm-up of each mode (not counted): script loading and JIT.
    for (const mode of ["keys", "fcfs"] as Mode[]) await oneRun(redis.url, mode, "warmup", 20);
    for (let rep = 0; rep < REPEAT; rep++) {
      // Alternate the order, so a machine that slows down over the run does not favour one mode.
      for (const mode of (rep % 2 === 0 ? ["keys", "fcfs"] : ["fcfs", "keys"]) as Mode[]) {
        const r = await oneRun(redis.url, mode, rep);
        runs.push(r);
        console.log(
          `${mode} #${rep + 1}: ${r.stepsPerSecond.toFixed(0)} steps/s over ${r.seconds.toFixed(1)} s; ` +
            `B waits p50 ${quantile(r.bWaitsMs, 0.5).toFixed(1)} ms, p99 ${quantile(r.bWaitsMs, 0.99).toFixed(1)} ms (${r.bWaitsMs.length} tasks)`,
        );
      }
    }
  } finally {
    await redis.stop();
  }
  const rows = [rowOf("keys", runs), rowOf("fcfs", runs)];
  const date = new Date().toISOString();
  const md = [
    "# Noisy neighbour: fair lanes against first come, first served",
    "",
    `${date}; ${os.cpus().length} cores (${os.cpus()[0]?.model ?? "?"}), load ${os.loadavg().map((x) => x.toFixed(2)).join(" ")}, ` +
    `Node ${process.version}; ${LOOPS} worker loops, TCP Redis; tenant A ${A_AGENTS * A_PER_AGENT} tasks on ${A_AGENTS} agents, ` +
    `tenant B one task every ${B_EVERY_MS} ms on its own agents; ${REPEAT} run(s) per mode, alternating; ${((performance.now() - started) / 1000).toFixed(0)} s in all.`,
    "",
    ...noisyReport(rows),
    "",
  ].join("\n");
  console.log("\n" + md);
  if (!QUICK) {
    const dir = fileURLToPath(new URL("./results/", import.meta.url));
    mkdirSync(dir, { recursive: true });
    writeFileSync(`${dir}noisy-neighbour.md`, md);
    writeFileSync(`${dir}noisy-neighbour.json`, JSON.stringify({ date, rows }, null, 2) + "\n");
    console.log("wrote bench/results/noisy-neighbour.md and noisy-neighbour.json");
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
