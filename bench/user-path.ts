/**
 * The user's path, gatehouse beside Restate in one run (`npm run bench:path`, and the Restate section of
 * `npm run bench`; bench/README.md "The user's path against Restate").
 *
 * Every task is sent inside the measured window by the client of bench/path-client.ts, the same code for
 * both systems: `concurrency` lanes, each sending an agent's five turns and waiting for the last one's
 * answer (gatehouse: `POST /v1/agents/:id/tasks`, the last with `Prefer: wait=60`; Restate: `/send`, the
 * last a request-response call). gatehouse is reached two ways: over a real socket (@hono/node-server in
 * this process, the client in a child process) and with in-process `fetch` of the Hono app (the client in
 * this process). Two workloads: a turn of 3 model steps and 2 in-process tool calls, and one of 5 and 4
 * (bench/agent.ts benchScript; bench/restate-endpoint.ts runs the same script, one `ctx.run` per model
 * step and per tool call). An instant model and one that waits 50 ms per step. 1, 10 and 100 agents in
 * flight (gatehouse: `concurrency` = agents). For reference, gatehouse with every task queued before the
 * clock starts (bench/throughput.ts, as the main throughput rows) at the instant model.
 *
 * Durability: gatehouse on a private redis-server with the AOF on and `appendfsync always` (every commit
 * fsynced before its reply); BENCH_PATH_EVERYSEC=1 adds rows labelled `everysec` on a second server.
 * Restate: a private restate-server, stock configuration (bench/restate.ts startRestateServer).
 *
 * CPU per step, of every process involved, user + system of all its threads: gatehouse's whole process
 * (process.cpuUsage of this process: routes, pool, host, store client, and for `fetch` rows the client
 * too), redis-server (/proc/<pid>/stat), the client child (its own process.cpuUsage); Restate's SDK
 * endpoint, restate-server and the client child. Store calls per step are counted on gatehouse's side
 * (bench/counting-store.ts: every call is one round trip).
 *
 * Task to done at one agent: one turn at a time (closed loop), a new agent every five turns, from the
 * request's start to its answer (gatehouse: the `Prefer: wait` POST answered 200; Restate: the
 * request-response call), per workload and way in.
 *
 * Cells run interleaved (per repetition, each cell's Restate, gatehouse socket and gatehouse fetch rows
 * one after the other), so ratios compare runs minutes apart at most. Options: BENCH_PATH_FAST=1 (or
 * BENCH_QUICK=1) a fifth of the turns and one repetition; BENCH_PATH_REPEAT=n (default 2);
 * BENCH_PATH_CONCURRENCY=1,10,100; BENCH_PATH_MODELS=0,50; BENCH_PATH_STEPS=5,3; BENCH_PATH_EVERYSEC=1;
 * BENCH_PATH_OUT=<name> (bench/results/<name>.md and .json; default path, path-fast in fast mode);
 * BENCH_PATH_REPORT=<file.json> renders the report of an earlier run again.
 */
import { type ChildProcess, fork } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { monitorEventLoopDelay, performance } from "node:perf_hooks";
import process from "node:process";
import { fileURLToPath, pathToFileURL } from "node:url";
import { serve } from "@hono/node-server";
import { Redis } from "ioredis";
import { createGatehouse } from "../mod.ts";
import { redisStore } from "../redis.ts";
import { startRedisServer } from "../tests/helpers/redis-server.ts";
import { benchAgent } from "./agent.ts";
import { countingStore, workCalls } from "./counting-store.ts";
import { closedLoop, drive, type DriveOptions, type Send } from "./path-client.ts";
import { ensureBenchDeps, type Endpoint, post, procCpuSeconds, type RestateServer, startEndpoint, startRestateServer } from "./restate.ts";
import { runGatehouse, TURNS_PER_AGENT } from "./throughput.ts";

const FAST = process.env.BENCH_PATH_FAST === "1" || process.env.BENCH_QUICK === "1";
const REPEAT = FAST ? 1 : Math.max(1, Number(process.env.BENCH_PATH_REPEAT ?? 2));
const list = (name: string, dflt: string) => (process.env[name] ?? dflt).split(",").map(Number);
export const PATH_CONCURRENCY = list("BENCH_PATH_CONCURRENCY", "1,10,100");
export const PATH_MODELS = list("BENCH_PATH_MODELS", "0,50");
export const PATH_STEPS = list("BENCH_PATH_STEPS", "5,3");
const EVERYSEC = process.env.BENCH_PATH_EVERYSEC === "1";
/** Turns per row by model delay and agents (a fifth with FAST, at least five per agent in flight). */
const TURNS: Record<number, Record<number, number>> = { 0: { 1: 60, 10: 300, 100: 1000 }, 50: { 1: 10, 10: 50, 100: 1000 } };
/** Task to done at one agent: turns measured after the warm-up turns. */
const LATENCY = { turns: FAST ? 40 : 200, warmup: 5 };

export type Way = "restate" | "socket" | "fetch" | "queued";
export type Fsync = "always" | "everysec";

export interface PathRun {
  way: Way;
  fsync: Fsync | null;
  rep: number;
  steps: number;
  modelDelayMs: number;
  concurrency: number;
  agents: number;
  turns: number;
  totalSteps: number;
  seconds: number;
  stepsPerSecond: number;
  /** µs per step: gatehouse's process or Restate's endpoint; redis-server or restate-server; the client child (null: inside main). */
  cpu: { main: number; store: number; client: number | null };
  /** gatehouse only: store calls per step (all, and work only: no polls of idle loops), commits per turn. */
  storeCallsPerStep?: number;
  workCallsPerStep?: number;
  commitsPerTurn?: number;
  /** Cores the processes above kept busy during the row, and the machine's 1-minute load average at its end (/proc/loadavg). */
  ourCores?: number;
  loadAvg?: number;
  /** gatehouse rows: this process's event-loop delay over the row (perf_hooks monitorEventLoopDelay at 5 ms, less the 5 ms), mean and p99, ms. */
  loopDelayMs?: { mean: number; p99: number };
  /** gatehouse only: store calls per step by operation. */
  byOp?: Record<string, number>;
}

export interface PathLatency {
  way: Way;
  fsync: Fsync | null;
  steps: number;
  turns: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
}

export type PathComparison =
  | { measured: true; runs: PathRun[]; latency: PathLatency[]; versions: { restate: string }; seconds: number; fast: boolean }
  | { measured: false; reason: string };

function turnsFor(delayMs: number, c: number): { agents: number; turns: number } {
  const target = TURNS[delayMs]?.[c] ?? 1000;
  const turns = Math.max(c * TURNS_PER_AGENT, Math.round((FAST ? target / 5 : target) / TURNS_PER_AGENT) * TURNS_PER_AGENT);
  return { agents: Math.max(c, turns / TURNS_PER_AGENT), turns };
}

/** The client child process (bench/path-client.ts), reused by every socket row of both systems. */
interface Client {
  pid: number;
  run(type: "drive" | "closedLoop", o: DriveOptions): Promise<{ seconds: number; latencies: number[]; cpuUs: number }>;
  stop(): Promise<void>;
}

async function startClient(): Promise<Client> {
  const child: ChildProcess = fork(fileURLToPath(new URL("./path-client.ts", import.meta.url)), [], {
    execArgv: ["--import", "tsx"],
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  await new Promise<void>((resolve, reject) => {
    child.once("message", () => resolve());
    child.once("exit", (code) => reject(new Error(`the client exited (${code})`)));
  });
  return {
    pid: child.pid!,
    run: (type, o) =>
      new Promise((resolve, reject) => {
        child.once("message", (m: { type: string; error?: string; seconds: number; latencies: number[]; cpuUs: number }) =>
          m.type === "result" ? resolve(m) : reject(new Error(`client: ${m.error}`))
        );
        child.send({ type, ...o });
      }),
    async stop() {
      const gone = new Promise((r) => child.once("exit", r));
      child.disconnect();
      await gone;
    },
  };
}

interface Setup {
  client: Client;
  restate: { server: RestateServer; endpoint: Endpoint };
  redis: Record<Fsync, { url: string; pid: number; info: Redis; stop(): Promise<void> } | null>;
}

interface Cell {
  steps: number;
  modelDelayMs: number;
  concurrency: number;
}

/** The machine's 1-minute load average (/proc/loadavg): other work on the same cores. */
const loadAvg = () => Number(readFileSync("/proc/loadavg", "utf8").split(" ")[0]);

/** `r` with the cores its own processes kept busy over its window and the load average at its end. */
function withCores(r: PathRun): PathRun {
  const ours = ((r.cpu.main + r.cpu.store + (r.cpu.client ?? 0)) * r.totalSteps) / 1e6 / r.seconds;
  return { ...r, ourCores: ours, loadAvg: loadAvg() };
}

const keysOf = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}-a${i}`);

async function restateRow(s: Setup, cell: Cell, rep: number): Promise<PathRun> {
  const { server, endpoint } = s.restate;
  const { agents, turns } = turnsFor(cell.modelDelayMs, cell.concurrency);
  const prefix = `r${rep}s${cell.steps}d${cell.modelDelayMs}c${cell.concurrency}`;
  const o = { system: "restate" as const, base: server.ingress, ...cell };
  await s.client.run("drive", { ...o, keys: keysOf(`${prefix}w`, cell.concurrency), turnsPerAgent: 1 });
  const steps0 = await endpoint.steps();
  const [w0, s0] = [procCpuSeconds(endpoint.pid), procCpuSeconds(server.pid)];
  const r = await s.client.run("drive", { ...o, keys: keysOf(prefix, agents), turnsPerAgent: turns / agents });
  const [w, st] = [procCpuSeconds(endpoint.pid) - w0, procCpuSeconds(server.pid) - s0];
  const totalSteps = await endpoint.steps() - steps0;
  if (totalSteps !== turns * cell.steps) throw new Error(`Restate: expected ${turns * cell.steps} model steps, counted ${totalSteps}`);
  return {
    way: "restate", fsync: null, rep, ...cell, agents, turns, totalSteps, seconds: r.seconds, stepsPerSecond: totalSteps / r.seconds,
    cpu: { main: (w * 1e6) / totalSteps, store: (st * 1e6) / totalSteps, client: r.cpuUs / totalSteps },
  };
}

/** One gatehouse instance reached over a socket or with in-process fetch; `run` drives it through `client` or in this process. */
async function gatehouseApp(s: Setup, fsync: Fsync, way: "socket" | "fetch", cell: Cell, prefix: string, concurrency?: number) {
  const redis = s.redis[fsync]!;
  const counted = countingStore(redisStore({ url: redis.url, prefix }));
  const { agent, modelSteps } = benchAgent({}, { steps: cell.steps, modelDelayMs: cell.modelDelayMs });
  const gh = createGatehouse({ agents: [agent], store: counted.store, ...(concurrency ? { concurrency } : {}) });
  gh.startWorker();
  let base = "http://gatehouse.local";
  const server = way === "socket" ? serve({ fetch: gh.fetch, port: 0, hostname: "127.0.0.1" }) : null;
  if (server) {
    await new Promise<void>((resolve) => server.once("listening", () => resolve()));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }
  const send: Send = (url, init) => gh.fetch(new Request(url, init));
  return {
    counted, modelSteps, base,
    run: async (type: "drive" | "closedLoop", o: DriveOptions) =>
      server ? await s.client.run(type, o) : type === "drive"
        ? { seconds: await drive(send, o), latencies: [], cpuUs: 0 }
        : { seconds: 0, latencies: await closedLoop(send, o), cpuUs: 0 },
    async close() {
      await gh.stopWorker();
      if (server) await new Promise<void>((r) => server.close(() => r()));
      await counted.store.close();
    },
  };
}

async function gatehouseRow(s: Setup, fsync: Fsync, way: "socket" | "fetch", cell: Cell, rep: number): Promise<PathRun> {
  const { agents, turns } = turnsFor(cell.modelDelayMs, cell.concurrency);
  const prefix = `g${rep}${fsync[0]}${way[0]}s${cell.steps}d${cell.modelDelayMs}c${cell.concurrency}`;
  const app = await gatehouseApp(s, fsync, way, cell, prefix, cell.concurrency);
  try {
    const o = { system: "gatehouse" as const, base: app.base, ...cell };
    await app.run("drive", { ...o, keys: keysOf(`${prefix}w`, cell.concurrency), turnsPerAgent: 1 });
    app.counted.reset();
    const steps0 = app.modelSteps();
    const pid = s.redis[fsync]!.pid;
    const [cpu0, r0] = [process.cpuUsage(), procCpuSeconds(pid)];
    const r = await app.run("drive", { ...o, keys: keysOf(prefix, agents), turnsPerAgent: turns / agents });
    const [cpu, rc] = [process.cpuUsage(cpu0), procCpuSeconds(pid) - r0];
    const totalSteps = app.modelSteps() - steps0;
    if (totalSteps !== turns * cell.steps) throw new Error(`gatehouse: expected ${turns * cell.steps} model steps, counted ${totalSteps}`);
    const counts = app.counted.counts;
    const calls = Object.values(counts.calls).reduce((a, b) => a + b, 0);
    return {
      way, fsync, rep, ...cell, agents, turns, totalSteps, seconds: r.seconds, stepsPerSecond: totalSteps / r.seconds,
      cpu: { main: (cpu.user + cpu.system) / totalSteps, store: (rc * 1e6) / totalSteps, client: way === "socket" ? r.cpuUs / totalSteps : null },
      storeCallsPerStep: calls / totalSteps, workCallsPerStep: workCalls(counts) / totalSteps, commitsPerTurn: (counts.calls.commit ?? 0) / turns,
      byOp: Object.fromEntries(Object.entries(counts.calls).map(([k, v]) => [k, v / totalSteps])),
    };
  } finally {
    await app.close();
  }
}

/** The reference row: every task queued before the clock starts (bench/throughput.ts), the same instance settings as the main bench. */
async function queuedRow(s: Setup, cell: Cell, rep: number): Promise<PathRun> {
  const redis = s.redis.always!;
  await redis.info.flushall();
  const r = await runGatehouse({
    adapter: "tcp", concurrency: cell.concurrency, makeStore: (prefix) => redisStore({ url: redis.url, prefix }), info: redis.info, rep,
    modelDelayMs: cell.modelDelayMs, targetTurns: TURNS[cell.modelDelayMs][cell.concurrency] / (FAST ? 5 : 1),
    storeCpuSeconds: async () => procCpuSeconds(redis.pid), steps: cell.steps,
  });
  return {
    way: "queued", fsync: "always", rep, ...cell, agents: r.agents, turns: r.turns, totalSteps: r.steps, seconds: r.seconds,
    stepsPerSecond: r.stepsPerSecond, cpu: { main: r.nodeCpuUsPerStep, store: r.redisCpuUsPerStep, client: null },
    storeCallsPerStep: r.roundTripsPerStep, workCallsPerStep: r.workRoundTripsPerStep, commitsPerTurn: r.commitsPerTurn, byOp: r.byOp,
  };
}

const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];

function latencyOf(way: Way, fsync: Fsync | null, steps: number, all: number[]): PathLatency {
  const ms = all.slice(LATENCY.warmup).sort((a, b) => a - b);
  return { way, fsync, steps, turns: ms.length, p50Ms: quantile(ms, 0.5), p99Ms: quantile(ms, 0.99), maxMs: ms[ms.length - 1] };
}

/** Task to done at one agent for one workload: Restate, gatehouse over a socket, gatehouse with in-process fetch. */
async function latencyRows(s: Setup, steps: number): Promise<PathLatency[]> {
  const n = LATENCY.warmup + LATENCY.turns;
  const agents = Math.ceil(n / TURNS_PER_AGENT);
  const cell = { steps, modelDelayMs: 0, concurrency: 1 };
  const opts = (system: "gatehouse" | "restate", base: string, prefix: string): DriveOptions => ({ system, base, ...cell, keys: keysOf(prefix, agents), turnsPerAgent: TURNS_PER_AGENT });
  const out: PathLatency[] = [];
  const r = await s.client.run("closedLoop", opts("restate", s.restate.server.ingress, `lat-r${steps}`));
  out.push(latencyOf("restate", null, steps, r.latencies));
  for (const fsync of (["always", "everysec"] as const).filter((f) => s.redis[f])) {
    for (const way of ["socket", "fetch"] as const) {
      if (fsync === "everysec" && way === "fetch") continue;
      // Default settings: what createGatehouse({ agents, store }) gives.
      const app = await gatehouseApp(s, fsync, way, cell, `lat${fsync[0]}${way[0]}${steps}`);
      try {
        const l = await app.run("closedLoop", opts("gatehouse", app.base, `lat${fsync[0]}${way[0]}${steps}`));
        out.push(latencyOf(way, fsync, steps, l.latencies));
      } finally {
        await app.close();
      }
    }
  }
  return out;
}

const f = (n: number, d = 1) => n.toLocaleString("en-US", { minimumFractionDigits: d, maximumFractionDigits: d });

function logRun(r: PathRun): void {
  const cpu = `${f(r.cpu.main, 0)} + ${f(r.cpu.store, 0)}${r.cpu.client === null ? "" : ` + ${f(r.cpu.client, 0)}`}`;
  const calls = r.storeCallsPerStep === undefined ? "" : `, ${f(r.storeCallsPerStep, 2)} store calls/step (work ${f(r.workCallsPerStep!, 2)})`;
  const lag = r.loopDelayMs ? `, event-loop delay mean ${f(r.loopDelayMs.mean, 1)} ms, p99 ${f(r.loopDelayMs.p99, 1)} ms` : "";
  const cores = r.ourCores === undefined ? "" : `; cores busy ${f(r.ourCores, 2)}, load average ${f(r.loadAvg!, 1)}${lag}`;
  console.log(`${r.way}${r.fsync === "everysec" ? " everysec" : ""} ${r.steps}/${r.steps - 1} ${r.modelDelayMs} ms x${r.concurrency} #${r.rep + 1}: ${f(r.stepsPerSecond, 0)} steps/s, CPU ${cpu} µs/step${calls}${cores}`);
}

async function startSetup(): Promise<Setup | { reason: string }> {
  let server: RestateServer;
  try {
    server = await startRestateServer();
  } catch (err) {
    return { reason: (err as Error).message };
  }
  const endpoint = await startEndpoint();
  await post(`${server.admin}/deployments`, { uri: endpoint.url });
  const redis: Setup["redis"] = { always: null, everysec: null };
  for (const fsync of EVERYSEC ? (["always", "everysec"] as const) : (["always"] as const)) {
    const r = await startRedisServer({ appendonly: true, appendfsync: fsync });
    const info = new Redis(r.url);
    const pid = Number(/process_id:(\d+)/.exec(await info.info("server"))?.[1]);
    redis[fsync] = { url: r.url, pid, info, stop: () => r.stop() };
  }
  return { client: await startClient(), restate: { server, endpoint }, redis };
}

async function stopSetup(s: Setup): Promise<void> {
  await s.client.stop();
  await s.restate.endpoint.stop();
  await s.restate.server.stop();
  for (const r of Object.values(s.redis)) {
    if (!r) continue;
    r.info.disconnect();
    await r.stop();
  }
}

/** Every row, cells interleaved per repetition; `{ measured: false }` when restate-server cannot start. */
export async function runUserPath(opts: { repeat?: number } = {}): Promise<PathComparison> {
  const repeat = opts.repeat ?? REPEAT;
  const t0 = performance.now();
  const setup = await startSetup();
  if ("reason" in setup) return { measured: false, reason: setup.reason };
  try {
    const runs: PathRun[] = [];
    const latency: PathLatency[] = [];
    for (let rep = 0; rep < repeat; rep++) {
      for (const modelDelayMs of PATH_MODELS) {
        for (const steps of PATH_STEPS) {
          for (const concurrency of PATH_CONCURRENCY) {
            const cell = { steps, modelDelayMs, concurrency };
            const rows = [() => restateRow(setup, cell, rep), () => gatehouseRow(setup, "always", "socket", cell, rep), () => gatehouseRow(setup, "always", "fetch", cell, rep)];
            if (EVERYSEC) rows.push(() => gatehouseRow(setup, "everysec", "socket", cell, rep));
            if (modelDelayMs === 0 || concurrency === 100) rows.push(() => queuedRow(setup, cell, rep));
            // Alternate the order between repetitions, so neither system always runs first.
            for (const row of rep % 2 === 0 ? rows : [...rows].reverse()) {
              const lag = monitorEventLoopDelay({ resolution: 5 });
              lag.enable();
              const r = withCores(await row());
              lag.disable();
              // The histogram holds whole intervals (5 ms when the loop is free): what is above that is delay.
              runs.push(r.way === "restate" ? r : { ...r, loopDelayMs: { mean: lag.mean / 1e6 - 5, p99: lag.percentile(99) / 1e6 - 5 } });
              logRun(runs[runs.length - 1]);
            }
          }
        }
      }
    }
    for (const steps of PATH_STEPS) {
      const rows = await latencyRows(setup, steps);
      for (const l of rows) console.log(`task to done, ${l.way}${l.fsync === "everysec" ? " everysec" : ""} ${steps}/${steps - 1}: p50 ${f(l.p50Ms, 1)} ms, p99 ${f(l.p99Ms, 1)} ms`);
      latency.push(...rows);
    }
    return { measured: true, runs, latency, versions: { restate: setup.restate.server.version }, seconds: (performance.now() - t0) / 1000, fast: FAST };
  } finally {
    await stopSetup(setup);
  }
}

/** A figure over repetitions: median, min, max. */
export interface PathSpread {
  median: number;
  min: number;
  max: number;
}

function spreadOf(xs: number[]): PathSpread {
  const s = [...xs].sort((a, b) => a - b);
  const mid = (s.length - 1) / 2;
  return { median: (s[Math.floor(mid)] + s[Math.ceil(mid)]) / 2, min: s[0], max: s[s.length - 1] };
}

type Measured = PathComparison & { measured: true };

const rowsOf = (c: Measured, way: Way, fsync: Fsync | null, steps: number, delay: number, n: number) =>
  c.runs.filter((r) => r.way === way && r.fsync === fsync && r.steps === steps && r.modelDelayMs === delay && r.concurrency === n)
    .sort((a, b) => a.rep - b.rep);

/** gatehouse steps/s ÷ Restate's, runs of the same repetition paired. */
export function pathRatio(c: Measured, way: Way, fsync: Fsync, steps: number, delay: number, n: number): PathSpread | null {
  const r = rowsOf(c, "restate", null, steps, delay, n);
  const g = rowsOf(c, way, fsync, steps, delay, n);
  if (r.length === 0 || g.length === 0) return null;
  return spreadOf(g.map((x, i) => x.stepsPerSecond / r[i].stepsPerSecond));
}

/**
 * Steps/s at `n` agents with the 50 ms model ÷ the limit the model sets, agents ÷ (50 ms + the time a step
 * cannot overlap), per repetition; the time a step cannot overlap is measured as a lone agent's time per
 * step with the instant model on the same way in (its turns' sends, claims, commits and answers included).
 */
export function modelBound(c: Measured, way: Way, fsync: Fsync | null, steps: number, n = 100): { ratio: PathSpread; serialMs: PathSpread; limit: PathSpread; sps: PathSpread } | null {
  const lone = rowsOf(c, way, fsync, steps, 0, 1);
  const slow = rowsOf(c, way, fsync, steps, 50, n);
  if (lone.length === 0 || slow.length === 0) return null;
  const serial = slow.map((_, i) => 1 / lone[Math.min(i, lone.length - 1)].stepsPerSecond);
  const limit = serial.map((s) => n / (0.05 + s));
  return {
    ratio: spreadOf(slow.map((r, i) => r.stepsPerSecond / limit[i])),
    serialMs: spreadOf(serial.map((s) => s * 1000)),
    limit: spreadOf(limit),
    sps: spreadOf(slow.map((r) => r.stepsPerSecond)),
  };
}

const latencyOfWay = (c: Measured, way: Way, fsync: Fsync | null, steps: number) =>
  c.latency.find((l) => l.way === way && l.fsync === fsync && l.steps === steps) ?? null;

/** The inputs of the user's-path targets (bench/targets.ts): 5/4 workload, over a socket, `appendfsync always`; a string says why not measured. */
export function pathTargetInputs(c: PathComparison): Record<string, PathSpread | number | string> {
  if (!c.measured) return { reason: c.reason };
  const out: Record<string, PathSpread | number | string> = {};
  for (const n of [1, 10, 100]) out[`ratio5x${n}`] = pathRatio(c, "socket", "always", 5, 0, n) ?? "not run";
  out.ratio5x100slow = pathRatio(c, "socket", "always", 5, 50, 100) ?? "not run";
  const r = latencyOfWay(c, "restate", null, 5);
  const g = latencyOfWay(c, "socket", "always", 5);
  out.latency5 = r && g ? g.p50Ms / r.p50Ms : "not run";
  const rt = rowsOf(c, "socket", "always", 5, 0, 100);
  out.roundTrips5x100 = rt.length ? spreadOf(rt.map((x) => x.storeCallsPerStep!)) : "not run";
  out.modelBound5 = modelBound(c, "socket", "always", 5)?.ratio ?? "not run";
  const q = rowsOf(c, "queued", "always", 3, 0, 100);
  out.queuedCpu3x100 = q.length ? spreadOf(q.map((x) => x.cpu.main)) : "not run";
  return out;
}

const rng = (s: PathSpread, d: number) => `${f(s.median, d)}${s.min !== s.max ? ` (${f(s.min, d)}–${f(s.max, d)})` : ""}`;
const WAY_LABEL: Record<Way, string> = { restate: "Restate", socket: "gatehouse, socket", fetch: "gatehouse, in-process fetch", queued: "gatehouse, queued before the clock" };
const wayLabel = (way: Way, fsync: Fsync | null) => `${WAY_LABEL[way]}${fsync === "everysec" ? ", `appendfsync everysec`" : ""}`;

function throughputTable(c: Measured): string[] {
  const lines = [
    "| turn | model | agents | way in | steps/s | ÷ Restate | CPU µs/step: main + store + client | store calls/step (work) | commits/turn |",
    "| --- | --- | ---: | --- | ---: | ---: | ---: | ---: | ---: |",
  ];
  const ways: Array<[Way, Fsync | null]> = [["restate", null], ["socket", "always"], ["fetch", "always"], ["socket", "everysec"], ["queued", "always"]];
  for (const delay of PATH_MODELS) {
    for (const steps of PATH_STEPS) {
      for (const n of PATH_CONCURRENCY) {
        for (const [way, fsync] of ways) {
          const rs = rowsOf(c, way, fsync, steps, delay, n);
          if (rs.length === 0) continue;
          const ratio = way === "restate" ? null : pathRatio(c, way, fsync!, steps, delay, n);
          const cpu = (k: "main" | "store") => f(spreadOf(rs.map((r) => r.cpu[k])).median, 0);
          const client = rs[0].cpu.client === null ? "in main" : f(spreadOf(rs.map((r) => r.cpu.client!)).median, 0);
          const calls = rs[0].storeCallsPerStep === undefined ? "" : `${f(spreadOf(rs.map((r) => r.storeCallsPerStep!)).median, 2)} (${f(spreadOf(rs.map((r) => r.workCallsPerStep!)).median, 2)})`;
          const commits = rs[0].commitsPerTurn === undefined ? "" : f(spreadOf(rs.map((r) => r.commitsPerTurn!)).median, 2);
          lines.push(
            `| ${steps}/${steps - 1} | ${delay ? `${delay} ms` : "instant"} | ${n} | ${wayLabel(way, fsync)} | ${rng(spreadOf(rs.map((r) => r.stepsPerSecond)), 0)} | ` +
              `${ratio ? rng(ratio, 2) : ""} | ${cpu("main")} + ${cpu("store")} + ${client} | ${calls} | ${commits} |`,
          );
        }
      }
    }
  }
  return lines;
}

/** The report's section (markdown lines). */
export function userPathReport(c: PathComparison): string[] {
  const lines = ["## The user's path against Restate (both persist every step)", ""];
  if (!c.measured) return [...lines, `Not measured: ${c.reason}.`, ""];
  const reps = Math.max(...c.runs.map((r) => r.rep)) + 1;
  lines.push(
    `Restate server ${c.versions.restate} (stock), SDK endpoint in its own Node process; gatehouse on redis-server with the AOF on and ` +
      "`appendfsync always` unless labelled. Every task sent inside the measured window by the same client (bench/path-client.ts): " +
      "lanes = agents in flight, each sending an agent's five turns and waiting for the last one's answer. " +
      `Median of ${reps} repetition(s), range in parentheses; ${f(c.seconds, 0)} s in all${c.fast ? " (fast mode: a fifth of the turns)" : ""}. ` +
      "CPU per step: main = gatehouse's whole process (with in-process fetch, the client too) or Restate's SDK endpoint; store = redis-server or restate-server; " +
      "client = the client's own process. Store calls are gatehouse's (each one round trip), work = without polls of idle loops.",
    "",
    ...throughputTable(c),
    "",
    "| task to done, 1 agent, instant model | turn | turns | p50 ms | p99 ms | max ms | p50 ÷ Restate's |",
    "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
  );
  for (const l of c.latency) {
    const r = latencyOfWay(c, "restate", null, l.steps)!;
    lines.push(`| ${wayLabel(l.way, l.fsync)} | ${l.steps}/${l.steps - 1} | ${l.turns} | ${f(l.p50Ms, 1)} | ${f(l.p99Ms, 1)} | ${f(l.maxMs, 1)} | ${l.way === "restate" ? "" : f(l.p50Ms / r.p50Ms, 2)} |`);
  }
  lines.push(
    "",
    "| model-bound limit, 50 ms model, 100 agents | turn | steps/s | time a step cannot overlap (1 agent, instant) | limit 100 ÷ (50 ms + it) | steps/s ÷ limit | cores its processes kept busy; load average (2 cores) | gatehouse's event-loop delay, mean / p99 ms |",
    "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
  );
  for (const steps of PATH_STEPS) {
    for (const [way, fsync] of [["restate", null], ["socket", "always"], ["fetch", "always"], ["queued", "always"]] as Array<[Way, Fsync | null]>) {
      const m = modelBound(c, way, fsync, steps);
      const rs = rowsOf(c, way, fsync, steps, 50, 100).filter((r) => r.ourCores !== undefined);
      const cores = rs.length && rs[0].loadAvg !== undefined ? `${f(spreadOf(rs.map((r) => r.ourCores!)).median, 2)}; ${f(spreadOf(rs.map((r) => r.loadAvg!)).median, 1)}` : "";
      const lg = rs.filter((r) => r.loopDelayMs);
      const lag = lg.length ? `${f(spreadOf(lg.map((r) => r.loopDelayMs!.mean)).median, 1)} / ${f(spreadOf(lg.map((r) => r.loopDelayMs!.p99)).median, 1)}` : "";
      if (m) lines.push(`| ${wayLabel(way, fsync)} | ${steps}/${steps - 1} | ${rng(m.sps, 0)} | ${rng(m.serialMs, 2)} ms | ${rng(m.limit, 0)} | ${rng(m.ratio, 2)} | ${cores} | ${lag} |`);
    }
  }
  const sizes = PATH_MODELS.flatMap((d) => PATH_CONCURRENCY.map((n) => `${d ? "50 ms" : "instant"}/${n}: ${turnsFor(d, n).turns} turns`)).join("; ");
  lines.push("", `Turns per row (each repetition, both systems): ${sizes}, after a warm-up turn per lane. Task to done: ${LATENCY.turns} turns after ${LATENCY.warmup} of warm-up, a new agent every five turns.`, "");
  return lines;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  // BENCH_PATH_REPORT=<file.json>: the report of a run written before, rendered again (no run).
  const again = process.env.BENCH_PATH_REPORT;
  if (!again) ensureBenchDeps();
  const c = again ? JSON.parse(readFileSync(again, "utf8")) as PathComparison : await runUserPath();
  const md = [`# The user's path, gatehouse against Restate — ${new Date().toISOString().slice(0, 16).replace("T", " ")} UTC`, "", ...userPathReport(c)].join("\n") + "\n";
  console.log("\n" + md);
  const dir = fileURLToPath(new URL("./results/", import.meta.url));
  mkdirSync(dir, { recursive: true });
  const name = process.env.BENCH_PATH_OUT ?? (FAST ? "path-fast" : "path");
  writeFileSync(`${dir}${name}.md`, md);
  writeFileSync(`${dir}${name}.json`, JSON.stringify(c, null, 2) + "\n");
  console.log(`wrote bench/results/${name}.md and .json`);
  process.exit(0);
}
