/**
 * gatehouse's throughput rows (bench/run.ts, bench/restate.ts): one gatehouse instance runs the benchmark
 * agent (bench/agent.ts) at a given concurrency on a store, and the run is counted on both sides: store
 * calls (bench/counting-store.ts), Redis' own counts (bench/redis-info.ts), CPU of this process (the
 * worker) and of the store server.
 */
import { performance } from "node:perf_hooks";
import process from "node:process";
import type { Redis } from "ioredis";
import { createGatehouse } from "../mod.ts";
import type { ConcurrencyLimits, Store } from "../store/port.ts";
import type { UpstashBridge } from "../tests/helpers/upstash-bridge.ts";
import { benchAgent, STEPS_PER_TURN } from "./agent.ts";
import { countingStore, workCalls } from "./counting-store.ts";
import { commandStats, diffStats, redisCpuSeconds } from "./redis-info.ts";

const QUICK = process.env.BENCH_QUICK === "1";
/** Turns per agent: agents stay short-lived, so no conversation grows long (see README). */
export const TURNS_PER_AGENT = 5;

/** The adapters; `tcp-unsafe` is the TCP adapter with the workload's tool not declared retry-safe (bench/agent.ts). */
export type Adapter = "tcp" | "upstash" | "tcp-unsafe";
export const LABEL: Record<Adapter, string> = { tcp: "tcp", upstash: "upstash", "tcp-unsafe": "tcp, `work` not retry-safe" };
/** The configurations run at a concurrency: the not-retry-safe variant at 100 agents only. */
export const adaptersAt = (c: number): Adapter[] => (c === 100 ? ["tcp", "upstash", "tcp-unsafe"] : ["tcp", "upstash"]);

export interface GhResult {
  adapter: Adapter;
  concurrency: number;
  agents: number;
  turns: number;
  steps: number;
  seconds: number;
  stepsPerSecond: number;
  /** Redis commands per step by name (INFO commandstats; script calls and the commands inside them). */
  commandsPerStep: Record<string, number>;
  /** Store calls per step; each is one script call, so one round trip. */
  roundTripsPerStep: number;
  /** The same for work only: every call but the polls of idle loops (bench/counting-store.ts workCalls). */
  workRoundTripsPerStep: number;
  /** Store calls per turn (all), and commits per turn (one per step: the claim stores the turn's `running` state, store/port.ts invariant `turn-start`). */
  roundTripsPerTurn: number;
  commitsPerTurn: number;
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
  /** Commands billed per step (Upstash counts a script call once; on TCP the script calls). */
  billedPerStep: number;
  bytesInPerStep: number;
  bytesOutPerStep: number;
}

/**
 * Agents and turns of a throughput run at `concurrency`: enough turns for a measurable run, five per agent.
 * `targetTurns` overrides the default sizes (the 50 ms model's rows run fewer turns: bench/restate.ts).
 */
export function workload(concurrency: number, targetTurns?: number): { agents: number; turns: number } {
  targetTurns ??= { 1: 300, 10: 1000, 100: 2000 }[concurrency] ?? 1000;
  const turns = Math.max(concurrency * TURNS_PER_AGENT, Math.round((QUICK ? targetTurns / 10 : targetTurns) / TURNS_PER_AGENT) * TURNS_PER_AGENT);
  return { agents: Math.max(concurrency, turns / TURNS_PER_AGENT), turns };
}

/** A turn id shaped like the runtime's (`turn_` + 16 hex digits, actors/runtime.ts), for turn `t` of agent `i`. */
export const runtimeTurnId = (t: number, i: number): string => `turn_${(t * 1_000_000 + i).toString(16).padStart(16, "0")}`;

/**
 * `keyOf`: the concurrency key of agent i's tasks (store/port.ts invariant `concurrency-keys`); absent: none.
 * `turnIdOf`: turn t of agent i's id (default `turn_<t>_<i>`).
 */
export async function enqueueAll(
  store: Store, prefix: string, agents: number, turnsPerAgent: number, keyOf?: (i: number) => string,
  turnIdOf: (t: number, i: number) => string = (t, i) => `turn_${t}_${i}`,
): Promise<string[]> {
  const ids = Array.from({ length: agents }, (_, i) => `${prefix}-a${i}`);
  // Round-robin over agents, so the ready queue offers every agent's first turn before anyone's second.
  for (let t = 0; t < turnsPerAgent; t++) {
    await Promise.all(ids.map((agentId, i) =>
      store.enqueueTask({
        agentId, agentName: "bench", workerTarget: "default", input: `task ${t} of agent ${i}`, options: {},
        turnId: turnIdOf(t, i), now: Date.now(), ...(keyOf ? { concurrencyKey: keyOf(i) } : {}),
      })
    ));
  }
  return ids;
}

/**
 * One throughput run of one gatehouse instance (`concurrency` worker loops) on `makeStore`'s store: a
 * warm-up turn per loop, then every turn queued before the clock starts and run to the last turn's end.
 * `bridge`: the Upstash bridge whose billed commands are counted (the upstash adapter only);
 * `modelDelayMs`: each model step waits that long first (bench/agent.ts); `targetTurns`: see `workload`;
 * `storeCpuSeconds`: how the store server's CPU is read (default `INFO cpu` of `info`).
 */
export async function runGatehouse(opts: {
  adapter: Adapter;
  concurrency: number;
  makeStore: (prefix: string) => Store;
  info: Redis;
  bridge?: UpstashBridge;
  rep: number;
  modelDelayMs?: number;
  targetTurns?: number;
  storeCpuSeconds?: () => Promise<number>;
  /** Tasks carry `keyOf(agent index)` as their concurrency key; claims keep `limits` (bench/concurrency-keys.ts). */
  concurrencyKeys?: { keyOf: (i: number) => string; limits?: ConcurrencyLimits };
  /** Turn ids of the measured turns (enqueueAll's `turnIdOf`; default `turn_<t>_<i>`). */
  turnIdOf?: (t: number, i: number) => string;
  /** Model steps per turn (bench/agent.ts benchScript; default 3). */
  steps?: number;
}): Promise<GhResult> {
  const { adapter, concurrency, info, bridge } = opts;
  const storeCpu = opts.storeCpuSeconds ?? (() => redisCpuSeconds(info));
  const { agents, turns } = workload(concurrency, opts.targetTurns);
  const prefix = `b${adapter.replace("-", "")}${concurrency}r${opts.rep}`;
  const made = opts.makeStore(prefix);
  const limits = opts.concurrencyKeys?.limits;
  const counted = countingStore(limits ? withLimits(made, limits) : made);
  const keyOf = opts.concurrencyKeys?.keyOf;
  const { agent, modelSteps } = benchAgent({}, { retrySafe: adapter !== "tcp-unsafe", modelDelayMs: opts.modelDelayMs, steps: opts.steps });
  const gh = createGatehouse({ agents: [agent], store: counted.store, concurrency, leaseMs: 30_000, pollMs: 100 });

  // Warm-up (scripts loaded, code paths compiled), not measured.
  await enqueueAll(counted.store, `${prefix}w`, concurrency, 1);
  gh.startWorker();
  await counted.whenTurnsEnded(concurrency);
  await gh.stopWorker();

  await enqueueAll(counted.store, prefix, agents, turns / agents, keyOf, opts.turnIdOf);
  counted.reset();
  const stepsBefore = modelSteps();
  bridge?.resetStats();
  const before = await commandStats(info);
  const redisCpu0 = await storeCpu();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  gh.startWorker();
  await counted.whenTurnsEnded(turns);
  const seconds = (performance.now() - t0) / 1000;
  const steps = modelSteps() - stepsBefore;
  // Everything else is counted after the stop, on both sides (the store wrapper, Redis, the bridge, CPU): the stop
  // writes what the process still buffers (the tool registry's batched calls, actors/registry/writer.ts), work of this run.
  await gh.stopWorker();
  const cpu = process.cpuUsage(cpu0);
  const redisCpu = await storeCpu() - redisCpu0;
  const after = await commandStats(info);
  const billedUpstash = bridge?.stats.commands ?? 0;
  const counts = structuredClone(counted.counts);
  await counted.store.close();
  const perTurn = opts.steps ?? STEPS_PER_TURN;
  if (steps !== turns * perTurn) throw new Error(`expected ${turns * perTurn} model steps, counted ${steps}`);

  const d = diffStats(before, after);
  const calls = Object.values(counts.calls).reduce((a, b) => a + b, 0);
  const byOp: Record<string, number> = {};
  for (const [k, v] of Object.entries(counts.calls)) byOp[k] = v / steps;
  const answersPerTurn: Record<string, number> = {};
  for (const [k, v] of Object.entries(counts.answers)) answersPerTurn[k] = v / turns;
  return {
    adapter, concurrency, agents, turns, steps, seconds,
    stepsPerSecond: steps / seconds,
    roundTripsPerStep: calls / steps,
    workRoundTripsPerStep: workCalls(counts) / steps,
    roundTripsPerTurn: calls / turns,
    commitsPerTurn: (counts.calls.commit ?? 0) / turns,
    nodeCpuUsPerStep: (cpu.user + cpu.system) / steps,
    redisCpuUsPerStep: (redisCpu * 1e6) / steps,
    scriptCallsPerStep: d.scriptCalls / steps,
    byOp, answersPerTurn,
    redisCommandsPerStep: d.totalCalls / steps,
    commandsPerStep: Object.fromEntries([...d.calls].map(([k, v]) => [k, v / steps])),
    billedPerStep: (adapter === "upstash" ? billedUpstash : d.scriptCalls) / steps,
    bytesInPerStep: d.netInputBytes / steps,
    bytesOutPerStep: d.netOutputBytes / steps,
  };
}

/** The store with `limits` added to every claim and chaining commit (what a pool given `concurrencyLimits` sends). */
export function withLimits(store: Store, limits: ConcurrencyLimits): Store {
  return {
    ...store,
    claim: (req) => store.claim({ ...req, concurrencyLimits: limits }),
    claimNext: (req) => store.claimNext({ ...req, concurrencyLimits: limits }),
    commit: (req) => store.commit(req.chainNextTask ? { ...req, concurrencyLimits: limits } : req),
  };
}
