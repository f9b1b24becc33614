/**
 * gatehouse against Restate, the durable-execution server a user would pick instead of it: the same
 * agent workload on both, each persisting every step before the next (`npm run bench:restate`, and a
 * section of `npm run bench`; bench/README.md "Against Restate").
 *
 * Restate: a private `restate-server` (bench/package.json pins it; stock configuration, so its logs and
 * its RocksDB write-ahead logs fsync as shipped; its own temp base dir, free loopback ports for ingress,
 * admin and node-to-node), the benchmark agent as a virtual object served by the TypeScript SDK in a
 * child process (bench/restate-endpoint.ts: one `ctx.run` per model step and per tool call, five per
 * turn), registered with `POST /deployments` on the admin port. Per agent its turns are sent at once to
 * `/BenchAgent/<agent>/turn/send` (Restate queues them on the object, as gatehouse's are queued in its
 * store) and the driver attaches to the last (`GET /restate/invocation/<id>/attach`: the object runs its
 * turns in order); `concurrency` agents are in flight at any moment, as gatehouse runs `concurrency`
 * worker loops. Task to done: one turn at a time, a request-response call to `/BenchAgent/<agent>/turn`,
 * from the start of the request to its answer.
 *
 * gatehouse: the same workload as the throughput rows of bench/run.ts (bench/throughput.ts, TCP adapter)
 * on a private redis-server with the AOF on (`--appendonly yes`), once with `--appendfsync always` (an
 * fsync before every reply, so before every commit is acknowledged: persisted per step, as Restate) and
 * once with `--appendfsync everysec`; task to done is bench/latency.ts with one client.
 *
 * CPU per step, from /proc/<pid>/stat (user + system of every thread): worker = the SDK endpoint's
 * process for Restate, the bench process (process.cpuUsage) for gatehouse; store = restate-server,
 * redis-server. The driver's own CPU (HTTP calls to the ingress) is in neither.
 *
 * When restate-server cannot start (binary missing, no free port, an error at start) the comparison
 * answers `{ measured: false, reason }` and the rest of the benchmark runs on.
 */
import { type ChildProcess, fork, spawn, spawnSync } from "node:child_process";
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import { dirname, join } from "node:path";
import { performance } from "node:perf_hooks";
import process from "node:process";
import { fileURLToPath, pathToFileURL } from "node:url";
import { Redis } from "ioredis";
import { redisStore } from "../redis.ts";
import { freePort, startRedisServer } from "../tests/helpers/redis-server.ts";
import { STEPS_PER_TURN } from "./agent.ts";
import { measureLatency } from "./latency.ts";
import { runGatehouse, TURNS_PER_AGENT, workload } from "./throughput.ts";

const BENCH_DIR = fileURLToPath(new URL("./", import.meta.url));
const QUICK = process.env.BENCH_QUICK === "1";
/** Repetitions of the throughput rows (each row's cell is the median; ratios are taken per repetition). */
const REPEAT = QUICK ? 1 : Math.max(1, Number(process.env.BENCH_RESTATE_REPEAT ?? 1));
/** Agents in flight (BENCH_RESTATE_CONCURRENCY=1,10 runs a subset; the targets need all three). */
const CONCURRENCY = (process.env.BENCH_RESTATE_CONCURRENCY ?? "1,10,100").split(",").map(Number);
/** The two models: instant, and one that waits 50 ms per step as a model call over the network does (BENCH_RESTATE_MODELS=0 runs the instant one only). */
const MODELS = [{ label: "instant", delayMs: 0 }, { label: "50 ms", delayMs: 50 }]
  .filter((m) => (process.env.BENCH_RESTATE_MODELS ?? "0,50").split(",").map(Number).includes(m.delayMs));
/** Turns per run (a tenth with BENCH_QUICK, at least five per agent): fewer with the 50 ms model, whose steps are slow. */
const TURNS: Record<number, Record<number, number>> = { 0: { 1: 100, 10: 500, 100: 1000 }, 50: { 1: 20, 10: 100, 100: 1000 } };
/** Task to done at one agent: turns measured, after the warm-up turns. */
const LATENCY = { turns: QUICK ? 20 : 200, warmup: 5 };

export type System = "restate" | "gatehouse, fsync always" | "gatehouse, fsync everysec";
export const SYSTEMS: System[] = ["restate", "gatehouse, fsync always", "gatehouse, fsync everysec"];

export interface PeerRun {
  system: System;
  modelDelayMs: number;
  concurrency: number;
  agents: number;
  turns: number;
  steps: number;
  seconds: number;
  stepsPerSecond: number;
  /** CPU per step of the worker (Restate: the SDK endpoint's process; gatehouse: the bench process), µs. */
  workerCpuUs: number;
  /** CPU per step of the store server (restate-server, redis-server), µs. */
  storeCpuUs: number;
}

export interface PeerLatency {
  system: System;
  turns: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
}

export type RestateComparison =
  | {
    measured: true;
    /** Every repetition of every row. */
    runs: PeerRun[];
    latency: PeerLatency[];
    versions: { server: string; sdk: string; redis: string };
    seconds: number;
  }
  | { measured: false; reason: string };

const CLK_TCK = Number(spawnSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).stdout?.trim()) || 100;

/** CPU seconds (user + system, all threads) a process has used so far, from /proc/<pid>/stat. */
export function procCpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  // Fields after the command name (which may hold spaces): state is the 3rd field, utime the 14th, stime the 15th.
  const rest = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(rest[11]) + Number(rest[12])) / CLK_TCK;
}

/** Installs bench/package.json's dependencies into bench/node_modules when one of them is missing. */
export function ensureBenchDeps(): void {
  const need = ["bullmq", "@restatedev/restate-sdk", "@restatedev/restate-server"];
  if (need.every((p) => existsSync(`${BENCH_DIR}node_modules/${p}/package.json`))) return;
  console.log("installing the benchmark's dependencies (npm install --prefix bench) ...");
  const r = spawnSync("npm", ["install", "--prefix", BENCH_DIR, "--no-audit", "--no-fund"], { stdio: "inherit" });
  if (r.status !== 0) throw new Error("npm install --prefix bench failed");
}

export interface RestateServer {
  pid: number;
  ingress: string;
  admin: string;
  version: string;
  stop(): Promise<void>;
}

/** The platform binary of the pinned server package (an optional dependency per platform), or why there is none. */
function restateBinary(): string {
  const pkg = `@restatedev/restate-server-${process.platform}-${process.arch}`;
  try {
    return join(dirname(createRequire(import.meta.url).resolve(`${pkg}/package.json`)), "bin", "restate-server");
  } catch {
    throw new Error(`${pkg} is not installed in bench/node_modules (npm install --prefix bench; no binary for this platform?)`);
  }
}

async function waitFor(what: string, ok: () => Promise<boolean>, exited: () => string | null, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const gone = exited();
    if (gone !== null) throw new Error(`${what}: ${gone}`);
    if (await ok().catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`${what}: not ready within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** A private restate-server: stock configuration, its own base dir, free loopback ports; resolves when ingress and admin answer. */
export async function startRestateServer(): Promise<RestateServer> {
  const bin = restateBinary();
  const version = spawnSync(bin, ["--version"], { encoding: "utf8" }).stdout?.trim().replace(/^restate-server\s*/, "") || "?";
  const [ingressPort, adminPort, nodePort] = [await freePort(), await freePort(), await freePort()];
  const dir = mkdtempSync(join(os.tmpdir(), "gatehouse-restate-"));
  const logFile = join(dir, "server.log");
  const log = openSync(logFile, "a");
  const proc = spawn(bin, ["--base-dir", join(dir, "data"), "--node-name", "bench", "--no-logo"], {
    stdio: ["ignore", log, log],
    env: {
      ...process.env,
      RESTATE_INGRESS__BIND_ADDRESS: `127.0.0.1:${ingressPort}`,
      RESTATE_ADMIN__BIND_ADDRESS: `127.0.0.1:${adminPort}`,
      RESTATE_BIND_ADDRESS: `127.0.0.1:${nodePort}`,
      RESTATE_LISTEN_MODE: "tcp",
      RESTATE_DISABLE_TELEMETRY: "true",
    },
  });
  closeSync(log);
  let exit: string | null = null;
  const exited = new Promise<void>((resolve) => proc.once("exit", (code, signal) => {
    exit = `restate-server exited (${code ?? signal}): ${readFileSync(logFile, "utf8").trim().split("\n").slice(-5).join(" | ")}`;
    resolve();
  }));
  proc.once("error", (err) => (exit = `restate-server did not start: ${err.message}`));
  const stop = async () => {
    if (exit === null) {
      proc.kill("SIGTERM");
      const t = setTimeout(() => proc.kill("SIGKILL"), 10_000);
      await exited;
      clearTimeout(t);
    }
    rmSync(dir, { recursive: true, force: true });
  };
  const ingress = `http://127.0.0.1:${ingressPort}`;
  const admin = `http://127.0.0.1:${adminPort}`;
  try {
    await waitFor("restate-server", async () => (await fetch(`${admin}/health`)).ok && (await fetch(`${ingress}/restate/health`)).ok, () => exit, 60_000);
  } catch (err) {
    await stop();
    throw err;
  }
  return { pid: proc.pid!, ingress, admin, version, stop };
}

export interface Endpoint {
  pid: number;
  url: string;
  steps(): Promise<number>;
  stop(): Promise<void>;
}

/** bench/restate-endpoint.ts in a child process (its CPU is its own), listening on a free port. */
export async function startEndpoint(): Promise<Endpoint> {
  const port = await freePort();
  const child: ChildProcess = fork(fileURLToPath(new URL("./restate-endpoint.ts", import.meta.url)), [], {
    execArgv: ["--import", "tsx"],
    // The SDK logs every invocation at INFO; WARN keeps console output out of the worker's CPU.
    env: { ...process.env, PORT: String(port), RESTATE_LOGGING: "WARN" },
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  let exit: string | null = null;
  child.once("exit", (code, signal) => (exit = `the SDK endpoint exited (${code ?? signal})`));
  let listening = false;
  child.on("message", (m: { type?: string }) => {
    if (m.type === "listening") listening = true;
  });
  await waitFor("the SDK endpoint", async () => listening, () => exit, 60_000);
  return {
    pid: child.pid!,
    url: `http://127.0.0.1:${port}`,
    steps: () =>
      new Promise<number>((resolve, reject) => {
        if (exit !== null) return reject(new Error(exit));
        const gone = () => reject(new Error(exit ?? "the SDK endpoint exited"));
        const on = (m: { type?: string; steps?: number }) => {
          if (m.type !== "steps") return;
          child.off("message", on);
          child.off("exit", gone);
          resolve(m.steps!);
        };
        child.on("message", on);
        child.once("exit", gone);
        child.send({ type: "steps" });
      }),
    async stop() {
      if (exit !== null) return;
      const gone = new Promise((r) => child.once("exit", r));
      child.kill("SIGTERM");
      await gone;
    },
  };
}

export async function post(url: string, body: unknown): Promise<unknown> {
  const res = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  const text = await res.text();
  if (!res.ok) throw new Error(`POST ${url}: ${res.status} ${text.slice(0, 300)}`);
  return JSON.parse(text);
}

async function get(url: string): Promise<unknown> {
  const res = await fetch(url);
  const text = await res.text();
  if (!res.ok) throw new Error(`GET ${url}: ${res.status} ${text.slice(0, 300)}`);
  return JSON.parse(text);
}

/** `concurrency` agents in flight: each lane takes the next agent, sends its turns, and attaches to the last. */
async function driveRestate(ingress: string, keys: string[], turnsPerAgent: number, concurrency: number, modelDelayMs: number): Promise<void> {
  let next = 0;
  const lane = async () => {
    for (let i = next++; i < keys.length; i = next++) {
      let last = "";
      // One send at a time, so Restate queues the object's turns in this order.
      for (let t = 0; t < turnsPerAgent; t++) {
        const sent = await post(`${ingress}/BenchAgent/${keys[i]}/turn/send`, { input: `task ${t} of agent ${i}`, modelDelayMs }) as { invocationId: string };
        last = sent.invocationId;
      }
      const out = await get(`${ingress}/restate/invocation/${last}/attach`) as { result?: string };
      if (out.result !== "ok") throw new Error(`agent ${keys[i]}: last turn answered ${JSON.stringify(out)}`);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, keys.length) }, lane));
}

async function runRestate(server: RestateServer, endpoint: Endpoint, opts: { concurrency: number; modelDelayMs: number; rep: number }): Promise<PeerRun> {
  const { concurrency, modelDelayMs, rep } = opts;
  const { agents, turns } = workload(concurrency, TURNS[modelDelayMs][concurrency]);
  const prefix = `r${rep}d${modelDelayMs}c${concurrency}`;
  // Warm-up (connections open, code paths compiled), not measured: one turn per lane.
  await driveRestate(server.ingress, Array.from({ length: concurrency }, (_, i) => `${prefix}w-a${i}`), 1, concurrency, modelDelayMs);
  const keys = Array.from({ length: agents }, (_, i) => `${prefix}-a${i}`);
  const steps0 = await endpoint.steps();
  const worker0 = procCpuSeconds(endpoint.pid);
  const store0 = procCpuSeconds(server.pid);
  const t0 = performance.now();
  await driveRestate(server.ingress, keys, turns / agents, concurrency, modelDelayMs);
  const seconds = (performance.now() - t0) / 1000;
  const worker = procCpuSeconds(endpoint.pid) - worker0;
  const store = procCpuSeconds(server.pid) - store0;
  const steps = await endpoint.steps() - steps0;
  if (steps !== turns * STEPS_PER_TURN) throw new Error(`Restate: expected ${turns * STEPS_PER_TURN} model steps, counted ${steps}`);
  return {
    system: "restate", modelDelayMs, concurrency, agents, turns, steps, seconds,
    stepsPerSecond: steps / seconds,
    workerCpuUs: (worker * 1e6) / steps,
    storeCpuUs: (store * 1e6) / steps,
  };
}

const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];

/** Task to done at one agent on Restate: one request-response call per turn, a new agent every TURNS_PER_AGENT turns. */
async function restateLatency(server: RestateServer): Promise<PeerLatency> {
  const ms: number[] = [];
  for (let k = 0; k < LATENCY.warmup + LATENCY.turns; k++) {
    const t0 = performance.now();
    const out = await post(`${server.ingress}/BenchAgent/lat-a${Math.floor(k / TURNS_PER_AGENT)}/turn`, { input: `task ${k}`, modelDelayMs: 0 }) as { result?: string };
    const dt = performance.now() - t0;
    if (out.result !== "ok") throw new Error(`Restate latency turn ${k}: ${JSON.stringify(out)}`);
    if (k >= LATENCY.warmup) ms.push(dt);
  }
  ms.sort((a, b) => a - b);
  return { system: "restate", turns: ms.length, p50Ms: quantile(ms, 0.5), p99Ms: quantile(ms, 0.99), maxMs: ms[ms.length - 1] };
}

/** The gatehouse rows and latency on a redis-server with the AOF on and the given fsync policy. */
async function runGatehouseSide(appendfsync: "always" | "everysec", reps: number): Promise<{ runs: PeerRun[]; latency: PeerLatency; redis: string }> {
  const system: System = appendfsync === "always" ? "gatehouse, fsync always" : "gatehouse, fsync everysec";
  const redis = await startRedisServer({ appendonly: true, appendfsync });
  const info = new Redis(redis.url);
  try {
    const server = await info.info("server");
    const pid = Number(/process_id:(\d+)/.exec(server)?.[1]);
    const runs: PeerRun[] = [];
    for (let rep = 0; rep < reps; rep++) {
      for (const { delayMs } of MODELS) {
        for (const c of CONCURRENCY) {
          await info.flushall();
          const r = await runGatehouse({
            adapter: "tcp", concurrency: c, makeStore: (prefix) => redisStore({ url: redis.url, prefix }), info, rep,
            modelDelayMs: delayMs, targetTurns: TURNS[delayMs][c], storeCpuSeconds: async () => procCpuSeconds(pid),
          });
          runs.push({
            system, modelDelayMs: delayMs, concurrency: c, agents: r.agents, turns: r.turns, steps: r.steps, seconds: r.seconds,
            stepsPerSecond: r.stepsPerSecond, workerCpuUs: r.nodeCpuUsPerStep, storeCpuUs: r.redisCpuUsPerStep,
          });
          logRun(runs[runs.length - 1], rep);
        }
      }
    }
    await info.flushall();
    const l = await measureLatency({ redisUrl: redis.url, prefix: `lat${appendfsync}`, clients: 1, turnsPerClient: LATENCY.warmup + LATENCY.turns, warmupTurnsPerClient: LATENCY.warmup });
    const latency: PeerLatency = { system, turns: l.turns, p50Ms: l.p50Ms, p99Ms: l.p99Ms, maxMs: l.maxMs };
    console.log(`${system}: task to done p50 ${f(l.p50Ms, 1)} ms, p99 ${f(l.p99Ms, 1)} ms`);
    return { runs, latency, redis: /redis_version:(\S+)/.exec(server)?.[1] ?? "?" };
  } finally {
    info.disconnect();
    await redis.stop();
  }
}

const f = (n: number, d = 1) => n.toLocaleString("en-US", { minimumFractionDigits: d, maximumFractionDigits: d });

function logRun(r: PeerRun, rep: number): void {
  console.log(
    `${r.system}, ${r.modelDelayMs ? `${r.modelDelayMs} ms model` : "instant model"}, x${r.concurrency} #${rep + 1}: ${f(r.stepsPerSecond, 0)} steps/s, ` +
      `CPU ${f(r.workerCpuUs, 0)} + ${f(r.storeCpuUs, 0)} µs/step (worker + store)`,
  );
}

/** The Restate side: server, endpoint, registration, every row and the latency; `{ measured: false }` when the server cannot start. */
async function runRestateSide(reps: number): Promise<{ runs: PeerRun[]; latency: PeerLatency; server: string } | { reason: string }> {
  let server: RestateServer;
  try {
    server = await startRestateServer();
  } catch (err) {
    return { reason: (err as Error).message };
  }
  let endpoint: Endpoint | null = null;
  try {
    endpoint = await startEndpoint();
    await post(`${server.admin}/deployments`, { uri: endpoint.url });
    const runs: PeerRun[] = [];
    for (let rep = 0; rep < reps; rep++) {
      for (const { delayMs } of MODELS) {
        for (const c of CONCURRENCY) {
          runs.push(await runRestate(server, endpoint, { concurrency: c, modelDelayMs: delayMs, rep }));
          logRun(runs[runs.length - 1], rep);
        }
      }
    }
    const latency = await restateLatency(server);
    console.log(`restate: task to done p50 ${f(latency.p50Ms, 1)} ms, p99 ${f(latency.p99Ms, 1)} ms`);
    return { runs, latency, server: server.version };
  } finally {
    await endpoint?.stop();
    await server.stop();
  }
}

/** Every row: Restate first (or the reason it was not measured), then gatehouse with fsync always and everysec. */
export async function runRestateComparison(): Promise<RestateComparison> {
  const t0 = performance.now();
  const restate = await runRestateSide(REPEAT).catch((err: Error) => ({ reason: `failed during the run: ${err.message}` }));
  if ("reason" in restate) {
    console.error(`Restate not measured: ${restate.reason}`);
    return { measured: false, reason: restate.reason };
  }
  const always = await runGatehouseSide("always", REPEAT);
  const everysec = await runGatehouseSide("everysec", REPEAT);
  const sdk = createRequire(import.meta.url)("@restatedev/restate-sdk/package.json").version as string;
  return {
    measured: true,
    runs: [...restate.runs, ...always.runs, ...everysec.runs],
    latency: [restate.latency, always.latency, everysec.latency],
    versions: { server: restate.server, sdk, redis: always.redis },
    seconds: (performance.now() - t0) / 1000,
  };
}

/** A figure over repetitions: median, min, max. */
export interface PeerSpread {
  median: number;
  min: number;
  max: number;
}

function spreadOf(xs: number[]): PeerSpread {
  const s = [...xs].sort((a, b) => a - b);
  return { median: s[Math.floor((s.length - 1) / 2)], min: s[0], max: s[s.length - 1] };
}

const runsOf = (c: RestateComparison & { measured: true }, system: System, delayMs: number, concurrency: number) =>
  c.runs.filter((r) => r.system === system && r.modelDelayMs === delayMs && r.concurrency === concurrency);

/** gatehouse steps/s ÷ Restate steps/s, per repetition (runs of the same repetition paired), then the spread. */
export function stepsRatio(c: RestateComparison & { measured: true }, system: System, delayMs: number, concurrency: number): PeerSpread {
  const r = runsOf(c, "restate", delayMs, concurrency);
  const g = runsOf(c, system, delayMs, concurrency);
  return spreadOf(g.map((x, i) => x.stepsPerSecond / r[i].stepsPerSecond));
}

/** gatehouse's task-to-done p50 at one agent ÷ Restate's. */
export function latencyRatio(c: RestateComparison & { measured: true }, system: System): number {
  const r = c.latency.find((l) => l.system === "restate")!;
  return c.latency.find((l) => l.system === system)!.p50Ms / r.p50Ms;
}

/**
 * The targets' inputs (bench/targets.ts): gatehouse with `appendfsync always` against Restate, instant
 * model; a string where a figure was not measured, with the reason.
 */
export function restateTargetInputs(c: RestateComparison): { restateSteps: Record<1 | 10 | 100, PeerSpread | string>; restateLatencyP50: number | string } {
  const always: System = "gatehouse, fsync always";
  const steps = (n: 1 | 10 | 100) => (!c.measured ? c.reason : runsOf(c, "restate", 0, n).length === 0 ? "not run (BENCH_RESTATE_CONCURRENCY)" : stepsRatio(c, always, 0, n));
  return {
    restateSteps: { 1: steps(1), 10: steps(10), 100: steps(100) },
    restateLatencyP50: c.measured ? latencyRatio(c, always) : c.reason,
  };
}

/** The report's section (markdown lines). */
export function restateReport(c: RestateComparison): string[] {
  const lines = ["## Against Restate (both persist every step)", ""];
  if (!c.measured) return [...lines, `Not measured: ${c.reason}.`, ""];
  const range = (s: PeerSpread, d: number) => (s.min !== s.max ? ` (${f(s.min, d)}–${f(s.max, d)})` : "");
  const reps = c.runs.filter((r) => r.system === "restate").length / (MODELS.length * CONCURRENCY.length);
  lines.push(
    `Restate server ${c.versions.server} (stock configuration), TypeScript SDK ${c.versions.sdk} (endpoint in its own Node process); gatehouse on Redis ${c.versions.redis} ` +
      `with the AOF on. Median of ${reps} repetition(s); ${f(c.seconds, 0)} s in all. A step is one model step; a turn is three model steps and two tool calls, ` +
      "on Restate five `ctx.run` (bench/restate.ts, bench/restate-endpoint.ts).",
    "",
    "| model | agents | Restate steps/s | gatehouse steps/s, fsync always | ÷ Restate | gatehouse steps/s, fsync everysec | ÷ Restate | CPU µs/step worker + store: Restate | fsync always | fsync everysec |",
    "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
  );
  for (const { label, delayMs } of MODELS) {
    for (const n of CONCURRENCY) {
      const sps = (s: System) => spreadOf(runsOf(c, s, delayMs, n).map((r) => r.stepsPerSecond));
      const cpu = (s: System) => {
        const rs = runsOf(c, s, delayMs, n);
        return `${f(spreadOf(rs.map((r) => r.workerCpuUs)).median, 0)} + ${f(spreadOf(rs.map((r) => r.storeCpuUs)).median, 0)}`;
      };
      const [r, a, e] = SYSTEMS.map(sps);
      const ra = stepsRatio(c, "gatehouse, fsync always", delayMs, n);
      const re = stepsRatio(c, "gatehouse, fsync everysec", delayMs, n);
      lines.push(
        `| ${label} | ${n} | ${f(r.median, 0)}${range(r, 0)} | ${f(a.median, 0)}${range(a, 0)} | ${f(ra.median, 2)}${range(ra, 2)} | ` +
          `${f(e.median, 0)}${range(e, 0)} | ${f(re.median, 2)}${range(re, 2)} | ${SYSTEMS.map(cpu).join(" | ")} |`,
      );
    }
  }
  lines.push(
    "",
    "| task to done, 1 agent, instant model | turns | p50 ms | p99 ms | max ms | p50 ÷ Restate's |",
    "| --- | ---: | ---: | ---: | ---: | ---: |",
    ...c.latency.map((l) =>
      `| ${l.system} | ${l.turns} | ${f(l.p50Ms, 1)} | ${f(l.p99Ms, 1)} | ${f(l.maxMs, 1)} | ${l.system === "restate" ? "" : f(latencyRatio(c, l.system), 2)} |`
    ),
    "",
    `Runs (each repetition): ${MODELS.map(({ label, delayMs }) =>
      CONCURRENCY.map((n) => {
        const r = runsOf(c, "restate", delayMs, n)[0];
        return `${label}/${n}: ${r.agents} agent${r.agents === 1 ? "" : "s"} × ${r.turns / r.agents} turns = ${r.steps} steps`;
      }).join("; ")
    ).join("; ")}, the same on both, after a warm-up turn per agent in flight. ` +
      "Restate: turns sent per agent (`/send`), then the driver attaches to the agent's last turn; `concurrency` agents in flight. " +
      "gatehouse: every turn queued before the clock starts, `concurrency` worker loops (bench/throughput.ts). " +
      "Task to done: Restate, a request-response call per turn (a new agent every five turns), from the request's start to its answer; " +
      "gatehouse, bench/latency.ts with one client (one agent, default settings), from the POST's start to the reply of the commit that ends the turn. " +
      "CPU from /proc/<pid>/stat: worker = the SDK endpoint's process (Restate) or the bench process (gatehouse); store = restate-server or redis-server.",
    "",
  );
  return lines;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  ensureBenchDeps();
  const c = await runRestateComparison();
  const md = [`# gatehouse against Restate — ${new Date().toISOString().slice(0, 10)}`, "", ...restateReport(c)].join("\n") + "\n";
  console.log("\n" + md);
  if (!QUICK) {
    const dir = fileURLToPath(new URL("./results/", import.meta.url));
    mkdirSync(dir, { recursive: true });
    writeFileSync(`${dir}restate.md`, md);
    writeFileSync(`${dir}restate.json`, JSON.stringify(c, null, 2) + "\n");
    console.log("wrote bench/results/restate.md and bench/results/restate.json");
  }
}
