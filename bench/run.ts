/**
 * The gatehouse benchmark: `npm run bench` (see bench/README.md).
 *
 * One process, one machine, one run: every figure below is measured here, so
 * the ratios compare like with like. It starts its own redis-server
 * (tests/helpers/redis-server.ts) and an Upstash-compatible REST bridge in
 * front of it (tests/helpers/upstash-bridge.ts), then measures:
 *
 * 1. Throughput and cost per step, TCP adapter (redisStore) and REST adapter
 *    (upstashStore through the bridge), at 1, 10 and 100 concurrent agents:
 *    steps per second of one gatehouse instance (concurrency = agents)
 *    running the benchmark agent (bench/agent.ts: three scripted model steps
 *    per turn); store round trips per step, all and work only (every store
 *    call is one script call, checked against Redis' own count of
 *    EVALSHA/EVAL); Redis commands, billed commands, bytes to Redis, worker
 *    CPU and Redis CPU per step.
 * 2. BullMQ on the same server, at the same concurrency, in the same run
 *    (bench/bullmq.ts): a trivial job (keeps nothing) and a persisting job
 *    that keeps a record of the bytes one gatehouse step sent to Redis in the
 *    same repetition; the ratios steps/s ÷ jobs/s of both.
 * 3. Cost per step against the conversation's length, 7, 350 and 1,400
 *    messages, on TCP Redis (bench/history-cost.ts): worker CPU, round trips,
 *    bytes, Redis CPU; and the same for claims that miss the resident cache.
 * 4. HTTP latency from a task's POST to its persisted turn end, 1 and 50
 *    clients, default settings, TCP Redis (bench/latency.ts).
 * 5. Idle cost of one process with default settings, TCP and Upstash
 *    (bench/idle.ts), in steady state.
 * 6. Memory of one idle agent after one and five finished turns.
 * 7. Against Restate on the user's path (bench/user-path.ts): tasks POSTed
 *    inside the measured window, 3/2 and 5/4 turns, over a socket and with
 *    in-process fetch, a private restate-server and the same workload as a
 *    Restate virtual object (bench/restate.ts starts both), against gatehouse on a Redis
 *    with the AOF fsynced always and every second: steps/s, task to done at
 *    one agent, CPU per step of worker and store. When restate-server cannot
 *    start, its rows say "not measured" and why, and the rest runs on.
 *
 * It prints the targets table first (figure | before | target | measured |
 * met?, "met?" decided below from the measured values), then the detail
 * tables, and writes them to bench/results/<date>.md and bench/results/latest.md.
 * BullMQ and Restate are installed into bench/node_modules on first use (`npm install --prefix bench`).
 *
 * Options (environment): BENCH_QUICK=1 a smoke run (a tenth of the work, one
 * repetition, short idle, nothing written); BENCH_REPEAT=n repetitions of the
 * throughput and history measurements (default 3; tables show the median run
 * and the range).
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
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
import { startUpstashBridge } from "../tests/helpers/upstash-bridge.ts";
import { benchAgent, STEPS_PER_TURN } from "./agent.ts";
import { benchBullMQ, type BullResult } from "./bullmq.ts";
import { countingStore } from "./counting-store.ts";
import { historyAgents, type HistoryWindow, median } from "./history-cost.ts";
import { type IdleMeasure, load, measureIdle } from "./idle.ts";
import { type LatencyResult, measureLatency } from "./latency.ts";
import { evaluateTargets, type TargetInputs, targetsTable } from "./targets.ts";
import { type NoisyRow, noisyReport } from "./noisy-neighbour.ts";
import { ensureBenchDeps } from "./restate.ts";
import { type PathComparison, pathTargetInputs, runUserPath, userPathReport } from "./user-path.ts";
import { type Adapter, adaptersAt, enqueueAll, type GhResult, LABEL, runGatehouse } from "./throughput.ts";

const BENCH_DIR = fileURLToPath(new URL("./", import.meta.url));
const QUICK = process.env.BENCH_QUICK === "1";
const REPEAT = QUICK ? 1 : Math.max(1, Number(process.env.BENCH_REPEAT ?? 3));
const CONCURRENCY = [1, 10, 100];
/** Conversation sizes of the history measurement, agents per size and measured turns per agent per window. */
const HISTORY = { sizes: [7, 350, 1400], agents: QUICK ? 4 : 15, turns: 2, growthCallsPerStep: 1 };
/**
 * The cache-miss row under a memory policy: as many agents, grown turn by turn (about 200 turns
 * each) to the same size, defined with `memory: { keepTurns }` (summarize "truncate").
 */
const HISTORY_MEMORY = { messages: 1400, keepTurns: 10, agents: HISTORY.agents };
/** HTTP latency: closed-loop clients, turns per client (warm-up included) and warm-up turns. */
const LATENCY = [
  { clients: 1, turns: QUICK ? 25 : 250, warmup: 5 },
  { clients: 50, turns: QUICK ? 4 : 24, warmup: 2 },
];
/** Idle: seconds before the measured window (the backoff climbs), and the window (the steady state). */
const IDLE = { warmupSeconds: QUICK ? 2 : 8, seconds: QUICK ? 2 : 10 };

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
      const name = k.slice(`${prefix}:{a:${agentId}}:`.length).replace(/^calls:.*/, "calls:<turn>");
      keys[name] = (keys[name] ?? 0) + b;
      bytes += b;
    }
  } while (cursor !== "0");
  return { bytes, keys };
}

interface HistoryResult {
  /** Per size: the windows with a resident cache (one per repetition) and the one whose claims all miss it. */
  sizes: Array<{ messages: number; stored: number; resident: HistoryWindow[]; miss: HistoryWindow }>;
  /** The same at HISTORY_MEMORY.messages with the agents' memory policy. */
  memory: { messages: number; stored: number; agents: number; keepTurns: number; resident: HistoryWindow[]; miss: HistoryWindow };
  /** Worker CPU per step at 1,400 messages ÷ at 7 (medians of the resident windows). */
  ratio: number;
  seconds: number;
}

/** Cost per step at 7, 350 and 1,400 messages on TCP Redis (bench/history-cost.ts), sizes interleaved per repetition. */
async function runHistory(redisUrl: string, info: Redis): Promise<HistoryResult> {
  const t0 = performance.now();
  const sets = [];
  for (const messages of HISTORY.sizes) {
    sets.push({
      messages,
      agents: await historyAgents({
        messages, agents: HISTORY.agents, store: redisStore({ url: redisUrl, prefix: `hist${messages}` }), info,
        runner: "gatehouse", growthCallsPerStep: HISTORY.growthCallsPerStep,
      }),
      resident: [] as HistoryWindow[],
    });
  }
  for (let rep = 0; rep < REPEAT; rep++) {
    for (const s of rep % 2 === 0 ? sets : [...sets].reverse()) {
      const w = await s.agents.window({ turns: HISTORY.turns });
      s.resident.push(w);
      console.log(`history ~${s.messages} messages #${rep + 1}: ${f(w.shown, 0)} shown, ${f(w.workerCpuUs, 0)} µs worker + ${f(w.redisCpuUs ?? 0, 0)} µs Redis per step, ${f(w.bytesIn ?? 0, 0)} B in`);
    }
  }
  const sizes: HistoryResult["sizes"] = [];
  for (const s of sets) {
    // One turn per agent on a fresh instance: every claim of the window is an agent's first there, a miss.
    const miss = await s.agents.window({ turns: 1, cacheMiss: true });
    console.log(`history ~${s.messages} messages, cache miss: ${f((miss.bytesOut ?? 0) * miss.steps / miss.claims, 0)} B read per claim, ${f(miss.redisCpuUs ?? 0, 0)} µs Redis per step`);
    await s.agents.close();
    sizes.push({ messages: s.messages, stored: s.agents.stored, resident: s.resident, miss });
  }
  // Under a memory policy: grown after the others' windows, so their figures are as without it.
  const { messages, keepTurns, agents: n } = HISTORY_MEMORY;
  const mem = await historyAgents({
    messages, agents: n, store: redisStore({ url: redisUrl, prefix: `hist${messages}mem` }), info,
    runner: "gatehouse", memory: { keepTurns, summarize: "truncate" },
  });
  if (mem.stored < messages * 0.95) throw new Error(`memory agents hold ${mem.stored} messages, expected about ${messages}`);
  const memResident: HistoryWindow[] = [];
  for (let rep = 0; rep < REPEAT; rep++) {
    const w = await mem.window({ turns: HISTORY.turns });
    memResident.push(w);
    console.log(`history ~${messages} messages, keepTurns ${keepTurns} #${rep + 1}: ${f(w.shown, 0)} shown, ${f(w.workerCpuUs, 0)} µs worker + ${f(w.redisCpuUs ?? 0, 0)} µs Redis per step`);
  }
  const memMiss = await mem.window({ turns: 1, cacheMiss: true });
  console.log(`history ~${messages} messages, keepTurns ${keepTurns}, cache miss: ${f((memMiss.bytesOut ?? 0) * memMiss.steps / memMiss.claims, 0)} B read per claim, ${f(memMiss.redisCpuUs ?? 0, 0)} µs Redis per step`);
  await mem.close();
  const memory = { messages, stored: mem.stored, agents: n, keepTurns, resident: memResident, miss: memMiss };
  const cpu = (i: number) => median(sizes[i].resident.map((w) => w.workerCpuUs));
  return { sizes, memory, ratio: cpu(sizes.length - 1) / cpu(0), seconds: (performance.now() - t0) / 1000 };
}

/** Idle rows: default settings, and with 1,000 recurring schedules registered; TCP and Upstash. */
interface IdleRows {
  tcp: IdleMeasure;
  upstash: IdleMeasure;
  tcpSchedules: IdleMeasure;
  upstashSchedules: IdleMeasure;
}

/** Idle cost of one process, TCP and Upstash, without and with 1,000 schedules, all at the same time, each on its own private server. */
async function runIdle(): Promise<IdleRows> {
  const mod = await load(fileURLToPath(new URL("..", import.meta.url)));
  const one = async (kind: "tcp" | "upstash", schedules: number) => {
    const redis = await startRedisServer();
    const bridge = await startUpstashBridge({ redisUrl: redis.url });
    const info = new Redis(redis.url);
    try {
      const mode = schedules > 0 ? `default + ${schedules} schedules` : "default";
      return await measureIdle({ mod, kind, redisUrl: redis.url, info, bridge, ...IDLE, prefix: `idle-${kind}-${schedules}:`, mode, schedules });
    } finally {
      info.disconnect();
      await bridge.close();
      await redis.stop();
    }
  };
  const [tcp, upstash, tcpSchedules, upstashSchedules] = await Promise.all([one("tcp", 0), one("upstash", 0), one("tcp", 1_000), one("upstash", 1_000)]);
  return { tcp, upstash, tcpSchedules, upstashSchedules };
}

const f = (n: number, d = 1) => n.toLocaleString("en-US", { minimumFractionDigits: d, maximumFractionDigits: d });

/** The median of `key` over runs and its range. */
interface Stat {
  median: number;
  min: number;
  max: number;
}

function stat<T>(runs: T[], key: (r: T) => number): Stat {
  const xs = runs.map(key).sort((a, b) => a - b);
  return { median: xs[Math.floor((xs.length - 1) / 2)], min: xs[0], max: xs[xs.length - 1] };
}

/** Every repetition of one configuration. */
interface GhRuns {
  adapter: Adapter;
  concurrency: number;
  runs: GhResult[];
}

interface Measured {
  gh: GhRuns[];
  /** Per concurrency, one BullMQ result per repetition, in the same order as the gatehouse runs. */
  bull: Map<number, BullResult[]>;
  bullPersist: Map<number, BullResult[]>;
  history: HistoryResult;
  latency: LatencyResult[];
  idle: IdleRows;
  idle1: { bytes: number; keys: Record<string, number> };
  idle5: { bytes: number };
  /** bench/live.ts, run as its own processes: first delta across processes, Prefer: wait, polling for comparison. */
  live: LiveRow[] | null;
  /** bench/noisy-neighbour.ts, run as its own process: fair lanes against first come, first served. */
  noisy: NoisyRow[] | null;
  /** bench/user-path.ts: the user's path against Restate, both persisting every step (or why it was not measured). */
  path: PathComparison;
}

interface LiveRow {
  figure: string;
  n: number;
  p50: number;
  p99: number;
  max: number;
}

/**
 * Runs bench/live.ts (a worker process and a reader process on a Redis of its own) and reads the rows it
 * wrote; null when it failed (the failure is printed, the rest of the report stands).
 */
/** Runs bench/noisy-neighbour.ts (its own process and Redis) and reads the rows it wrote (null: it failed). */
function runNoisy(): NoisyRow[] | null {
  const env = { ...process.env };
  const r = spawnSync(process.execPath, ["--import", "tsx", fileURLToPath(new URL("./noisy-neighbour.ts", import.meta.url))], { env, stdio: ["ignore", "inherit", "inherit"] });
  if (r.status !== 0) {
    console.error(`bench/noisy-neighbour.ts failed (exit ${r.status ?? r.signal}); the noisy-neighbour rows are left out`);
    return null;
  }
  if (QUICK) return null;
  return (JSON.parse(readFileSync(fileURLToPath(new URL("./results/noisy-neighbour.json", import.meta.url)), "utf8")) as { rows: NoisyRow[] }).rows;
}

function runLive(): LiveRow[] | null {
  const env = { ...process.env, LIVE_TURNS: QUICK ? "20" : "200", LIVE_WAITS: QUICK ? "10" : "100" };
  const r = spawnSync(process.execPath, ["--import", "tsx", fileURLToPath(new URL("./live.ts", import.meta.url))], { env, stdio: ["ignore", "inherit", "inherit"] });
  if (r.status !== 0) {
    console.error(`bench/live.ts failed (exit ${r.status ?? r.signal}); the live rows are left out`);
    return null;
  }
  return (JSON.parse(readFileSync(fileURLToPath(new URL("./results/live.json", import.meta.url)), "utf8")) as { rows: LiveRow[] }).rows;
}

const ghRuns = (m: Measured, adapter: Adapter, c: number) => m.gh.find((g) => g.adapter === adapter && g.concurrency === c)!.runs;

/**
 * steps/s ÷ jobs/s per repetition (the gatehouse TCP run and the BullMQ run measured right after it, so a
 * change in the machine's load hits both), then the median and range of those ratios.
 */
function ratio(m: Measured, c: number, kind: "trivial" | "persisting"): Stat {
  const tcp = ghRuns(m, "tcp", c);
  const jobs = (kind === "trivial" ? m.bull : m.bullPersist).get(c)!;
  return stat(tcp.map((r, i) => r.stepsPerSecond / jobs[i].jobsPerSecond), (x) => x);
}

function targetInputs(m: Measured): TargetInputs {
  const tcp100 = ghRuns(m, "tcp", 100);
  return {
    workRoundTripsTcp100: stat(tcp100, (r) => r.workRoundTripsPerStep).median,
    billedUpstash100: stat(ghRuns(m, "upstash", 100), (r) => r.billedPerStep).median,
    workerCpuUs100: stat(tcp100, (r) => r.nodeCpuUsPerStep),
    bytesToRedis100: stat(tcp100, (r) => r.bytesInPerStep).median,
    historyRatio: m.history.ratio,
    idleUpstashCalls: m.idle.upstash.callsLate,
    idleTcpCalls: m.idle.tcp.callsLate,
    // Worker-loop polls on TCP in steady state: script calls (each a store call that does not block) but the watchdog's.
    idleTcpLoopPolls: Math.max(0, (m.idle.tcp.scriptsLate ?? 0) - (m.idle.tcp.byMethodLate.dueToolCalls ?? 0)),
    idleTcpBlocking: m.idle.tcp.blockingLate ?? 0,
    idleSchedulesUpstashCalls: m.idle.upstashSchedules.callsLate,
    idleSchedulesTcpCalls: m.idle.tcpSchedules.callsLate,
    idleSchedulesTcpLoopPolls: Math.max(0, (m.idle.tcpSchedules.scriptsLate ?? 0) - (m.idle.tcpSchedules.byMethodLate.dueToolCalls ?? 0)),
    ratioPersisting100: ratio(m, 100, "persisting"),
    ratioTrivial100: ratio(m, 100, "trivial"),
    path: pathTargetInputs(m.path),
  };
}

function report(m: Measured, meta: Record<string, string>): string {
  const range = (r: Stat, d = 0) => (REPEAT > 1 ? ` (${f(r.min, d)}–${f(r.max, d)})` : "");
  const lines: string[] = [];
  const push = (...l: string[]) => lines.push(...l);
  push(`# gatehouse benchmark — ${meta.date}`, "");
  push(
    `\`npm run bench\` (bench/run.ts). Machine: ${meta.cpu}, ${meta.cores} cores, Node ${meta.node}, Redis ${meta.redis}, BullMQ ${meta.bullmq}; ` +
      `load average at start ${meta.load}, at end ${meta.loadEnd}; the run took ${meta.seconds} s. Median of ${REPEAT} run(s), range in parentheses.${QUICK ? " QUICK run (a tenth of the work): a smoke run, not a result." : ""}`,
    "",
  );

  // ---- Targets
  const inputs = targetInputs(m);
  const rows = evaluateTargets(inputs);
  push("## Targets", "");
  push(...targetsTable(rows));
  push("");
  const lat50 = m.latency.find((l) => l.clients === 50);
  push(
    `Concurrency: "100 agents" is one gatehouse instance with \`concurrency: 100\` (100 worker loops) against a BullMQ Worker with \`concurrency: 100\`, ` +
      `same Redis server; steps/s are the TCP adapter's. Idle: \`createGatehouse({ agents, store })\` defaults, ${IDLE.seconds} s steady-state window after ${IDLE.warmupSeconds} s. ` +
      `HTTP latency (below): default settings${lat50 ? `, ${lat50.maxClaimsInFlight} claims in flight at most with 50 clients (the default worker loops)` : ""}. ` +
      `Met: ${rows.filter((r) => r.met).length} of ${rows.length}.`,
    "",
  );

  // ---- Throughput and cost per step
  push("## Throughput and cost per step", "");
  push("| adapter | agents | steps/s | round trips/step: all (work only) | round trips/turn | commits/step | commits/turn | Redis cmds/step | billed cmds/step | bytes to Redis/step | CPU µs/step worker + Redis |");
  push("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
  for (const { adapter, concurrency, runs } of m.gh) {
    const md = (k: (r: GhResult) => number) => stat(runs, k).median;
    const sps = stat(runs, (r) => r.stepsPerSecond);
    push(
      `| ${LABEL[adapter]} | ${concurrency} | ${f(sps.median, 0)}${range(sps)} | ${f(md((r) => r.roundTripsPerStep), 2)} (${f(md((r) => r.workRoundTripsPerStep), 2)}) | ` +
        `${f(md((r) => r.roundTripsPerTurn), 2)} | ${f(md((r) => r.byOp.commit ?? 0), 2)} | ${f(md((r) => r.commitsPerTurn), 2)} | ${f(md((r) => r.redisCommandsPerStep), 1)} | ${f(md((r) => r.billedPerStep), 2)} | ${f(md((r) => r.bytesInPerStep), 0)} | ` +
        `${f(md((r) => r.nodeCpuUsPerStep), 0)} + ${f(md((r) => r.redisCpuUsPerStep), 0)} |`,
    );
  }
  push("");
  push(
    "Each cell is the median over the repetitions of that figure (steps/s with its range). Work only: every store call but the polls of idle loops (claims that found " +
      "nothing, `nextReadyAt`, the watchdog). Billed: on Upstash the commands the bridge ran as Upstash bills them (one per script call); on TCP the script calls Redis " +
      "counted. Worker CPU: this process (for Upstash it includes the REST bridge, which runs in it).",
    "",
  );
  const ops = [...new Set(m.gh.flatMap((g) => g.runs.flatMap((r) => Object.keys(r.byOp))))].sort();
  push("Store calls per step, by operation (each is one script call; the last column is Redis' own count):", "");
  push(`| adapter | agents | ${ops.join(" | ")} | claimNext empty/turn | EVALSHA+EVAL/step |`);
  push("| --- | ---: |" + " ---: |".repeat(ops.length + 2));
  for (const { adapter, concurrency, runs } of m.gh) {
    const md = (k: (r: GhResult) => number) => stat(runs, k).median;
    push(
      `| ${LABEL[adapter]} | ${concurrency} | ${ops.map((k) => f(md((r) => r.byOp[k] ?? 0), 3)).join(" | ")} | ` +
        `${f(md((r) => r.answersPerTurn["claimNext:empty"] ?? 0), 2)} | ${f(md((r) => r.scriptCallsPerStep), 3)} |`,
    );
  }
  push("");

  // ---- BullMQ
  push("## Against BullMQ (same server, same run)", "");
  push("| agents = concurrency | gatehouse TCP steps/s | trivial jobs/s | steps/s ÷ trivial jobs/s | persisting jobs/s (record bytes) | steps/s ÷ persisting jobs/s |");
  push("| ---: | ---: | ---: | ---: | ---: | ---: |");
  for (const c of CONCURRENCY) {
    const g = stat(ghRuns(m, "tcp", c), (r) => r.stepsPerSecond);
    const t = stat(m.bull.get(c)!, (b) => b.jobsPerSecond);
    const p = stat(m.bullPersist.get(c)!, (b) => b.jobsPerSecond);
    const rt = ratio(m, c, "trivial");
    const rp = ratio(m, c, "persisting");
    push(
      `| ${c} | ${f(g.median, 0)}${range(g)} | ${f(t.median, 0)}${range(t)} | ${f(rt.median, 2)}${range(rt, 2)} | ` +
        `${f(p.median, 0)}${range(p)} (${f(stat(m.bullPersist.get(c)!, (b) => b.recordBytes).median, 0)}) | ${f(rp.median, 2)}${range(rp, 2)} |`,
    );
  }
  push("");
  push(
    "Ratios are taken per repetition (each BullMQ run follows the gatehouse runs of the same repetition) and their median is shown. " +
      "Trivial job: the processor returns `{ ok: true }`, `removeOnComplete`: nothing is kept. Persisting job: the processor returns a record as large as the bytes " +
      "the TCP run at the same concurrency sent to Redis per step in the same repetition, and completed jobs are kept (`removeOnComplete: false`): BullMQ writes it " +
      "as the job's `returnvalue` in the script call that completes the job.",
    "",
  );
  push("| job | concurrency | jobs | jobs/s | Redis cmds/job | script calls/job | bytes to Redis/job | CPU µs/job worker + Redis |");
  push("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
  for (const [kind, all] of [["trivial", m.bull], ["persisting", m.bullPersist]] as const) {
    for (const [c, runs] of all) {
      const md = (k: (b: BullResult) => number) => stat(runs, k).median;
      const jps = stat(runs, (b) => b.jobsPerSecond);
      push(
        `| ${kind} | ${c} | ${runs[0].jobs} | ${f(jps.median, 0)}${range(jps)} | ${f(md((b) => b.commandsPerJob), 1)} | ${f(md((b) => b.scriptCallsPerJob), 2)} | ` +
          `${f(md((b) => b.bytesInPerJob), 0)} | ${f(md((b) => b.nodeCpuUsPerJob), 0)} + ${f(md((b) => b.redisCpuUsPerJob), 0)} |`,
      );
    }
  }
  push("");

  // ---- Restate
  push(...userPathReport(m.path));

  // ---- History
  const h = m.history;
  push("## Cost per step against conversation length (TCP Redis)", "");
  push(
    `bench/history-cost.ts on TCP Redis: per size, ${HISTORY.agents} agents grown to the size (not measured), then windows of ${HISTORY.turns} turns per agent ` +
      `(${HISTORY.agents * HISTORY.turns * STEPS_PER_TURN} steps) queued and run by \`drain()\` of one \`createGatehouse()\` instance (default settings, \`retention: false\`, ` +
      `resident agents); median of ${REPEAT} window(s) per size, sizes interleaved; ${f(h.seconds, 0)} s in all. "Shown": messages the model saw per step (grows by 7 a turn: a stored turn is 7 messages).`,
    "",
  );
  push("| conversation | shown per step | worker CPU µs/step | round trips/step (work only) | bytes to Redis/step | bytes from Redis/step | Redis CPU µs/step |");
  push("| --- | ---: | ---: | ---: | ---: | ---: | ---: |");
  const mid = (ws: HistoryWindow[], k: (w: HistoryWindow) => number) => median(ws.map(k));
  const rng = (ws: HistoryWindow[], k: (w: HistoryWindow) => number) =>
    ws.length > 1 ? ` (${f(Math.min(...ws.map(k)), 0)}–${f(Math.max(...ws.map(k)), 0)})` : "";
  for (const s of h.sizes) {
    const ws = s.resident;
    push(
      `| ~${f(s.messages, 0)} messages | ${f(mid(ws, (w) => w.shown), 0)} | ${f(mid(ws, (w) => w.workerCpuUs), 0)}${rng(ws, (w) => w.workerCpuUs)} | ` +
        `${f(mid(ws, (w) => w.storeCalls), 2)} (${f(mid(ws, (w) => w.workCalls), 2)}) | ${f(mid(ws, (w) => w.bytesIn ?? 0), 0)} | ` +
        `${f(mid(ws, (w) => w.bytesOut ?? 0), 0)} | ${f(mid(ws, (w) => w.redisCpuUs ?? 0), 0)} |`,
    );
  }
  push("", `Worker CPU per step, 1,400 ÷ 7 messages: ${f(h.ratio, 2)}x.`, "");
  push(
    `Claims that miss the resident cache: one more turn per agent on a fresh gatehouse instance (nothing resident, as after a restart or on another process), ` +
      `so each of its claims reads the agent back from Redis; "more than resident" is the difference to the median resident window of the same size:`,
    "",
  );
  push("| conversation | claims (all missed) | bytes from Redis per claim | of which more than resident | Redis CPU µs/step (resident) | worker CPU µs/step (resident) | round trips/step, work only (resident) |");
  push("| --- | ---: | ---: | ---: | ---: | ---: | ---: |");
  for (const s of [...h.sizes, { ...h.memory, label: `, \`memory: { keepTurns: ${h.memory.keepTurns} }\`` }]) {
    const w = s.miss;
    const perClaim = (x: number) => (x * w.steps) / w.claims;
    const res = (k: (x: HistoryWindow) => number) => median(s.resident.map(k));
    push(
      `| ~${f(s.messages, 0)} messages${"label" in s ? s.label : ""} | ${w.claims} | ${f(perClaim(w.bytesOut ?? 0), 0)} | ${f(perClaim((w.bytesOut ?? 0) - res((x) => x.bytesOut ?? 0)), 0)} | ` +
        `${f(w.redisCpuUs ?? 0, 0)} (${f(res((x) => x.redisCpuUs ?? 0), 0)}) | ${f(w.workerCpuUs, 0)} (${f(res((x) => x.workerCpuUs), 0)}) | ` +
        `${f(w.workCalls, 2)} (${f(res((x) => x.workCalls), 2)}) |`,
    );
  }
  const hm = h.memory;
  push(
    "",
    `The last row: ${hm.agents} agents grown turn by turn (turns of the measured shape, not measured) to ${f(hm.stored, 0)} stored messages each ` +
      `(${f(h.sizes[h.sizes.length - 1].stored, 0)} for the row without a policy), defined with \`memory: { keepTurns: ${hm.keepTurns} }\` ` +
      `(summarize "truncate"); the model is shown ${f(median(hm.resident.map((w) => w.shown)), 0)} messages per step, and a claim that misses reads ` +
      `only the messages after the rolling summary.`,
    "",
  );

  // ---- Latency
  push("## HTTP: POST to persisted turn end (TCP Redis, default settings)", "");
  push("| clients | turns measured | p50 ms | p99 ms | mean ms | max ms | turns/s | claims in flight (most) |");
  push("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
  for (const l of m.latency) {
    push(`| ${l.clients} | ${l.turns} | ${f(l.p50Ms, 1)} | ${f(l.p99Ms, 1)} | ${f(l.meanMs, 1)} | ${f(l.maxMs, 1)} | ${f(l.turnsPerSecond, 0)} | ${l.maxClaimsInFlight} |`);
  }
  push(
    "",
    "Closed-loop clients in a worker thread, each with its own agent, POST a task (three model steps) and wait for that turn's end before the next; the clock runs " +
      "from the start of the POST to the reply of the commit that ends the turn. Served by @hono/node-server on loopback.",
    "",
  );

  // ---- Noisy neighbour
  push("## Noisy neighbour: fair lanes against first come, first served (TCP Redis)", "");
  if (m.noisy) {
    push(...noisyReport(m.noisy), "");
    push("bench/noisy-neighbour.ts (also `npm run bench:noisy`): tenant A 5,000 tasks on 500 agents, tenant B one task every 200 ms on its own agents; see bench/README.md.", "");
  } else push(QUICK ? "Not written in a smoke run (see its output above)." : "bench/noisy-neighbour.ts failed in this run (see its output).", "");

  // ---- Live
  push("## Live: model deltas and Prefer: wait across processes (TCP Redis)", "");
  if (m.live) {
    push("| figure | n | p50 ms | p99 ms | max ms |", "| --- | ---: | ---: | ---: | ---: |");
    for (const r of m.live) push(`| ${r.figure} | ${r.n} | ${r.p50} | ${r.p99} | ${r.max} |`);
    push(
      "",
      "bench/live.ts: a worker process streams a model's text; a reader process (a second gatehouse with no worker) on the same redis-server reads the agent's " +
        `SSE stream. Times from one clock in both processes. Target: first delta p99 <= 50 ms (${m.live[0]!.p99 <= 50 ? "met" : "not met"}).`,
      "",
    );
  } else push("bench/live.ts failed in this run (see its output).", "");

  // ---- Idle
  push("## Idle cost of one process (default settings; and with 1,000 recurring schedules registered)", "");
  push("| store | store calls/s (steady) | by method (steady, /s) | server commands/s (steady) | script calls/s (steady) | blocking commands/s (steady) | store calls/s (whole run) |");
  push("| --- | ---: | --- | ---: | ---: | ---: | ---: |");
  for (const r of [m.idle.tcp, m.idle.upstash, m.idle.tcpSchedules, m.idle.upstashSchedules]) {
    const fx = (x: number | null) => (x === null ? "—" : f(x, 2));
    push(
      `| ${r.kind === "tcp" ? "TCP Redis" : "Upstash"}${r.mode && r.mode !== "default" ? ` (${r.mode.replace("default + ", "")})` : ""} | ${fx(r.callsLate)} | ${Object.entries(r.byMethodLate).map(([k, v]) => `${k} ${f(v, 2)}`).join(", ") || "none"} | ` +
        `${fx(r.serverLate)} | ${fx(r.scriptsLate)} | ${fx(r.blockingLate)} | ${fx(r.calls)} |`,
    );
  }
  push(
    "",
    `Steady: the last ${IDLE.seconds} s of ${IDLE.warmupSeconds + IDLE.seconds} s idle. Server commands: TCP, every command INFO commandstats counted (scripts and what they run); ` +
      "Upstash, billed commands (the bridge). The four rows run at the same time, each on its own redis-server; the schedules rows register " +
      "1,000 agent ids with one yearly cron schedule each before the process starts (none is due while it idles).",
    "",
  );

  // ---- Memory
  push("## Memory of an idle agent", "");
  push(
    `After one finished turn: ${f(m.idle1.bytes, 0)} bytes in Redis (${Object.entries(m.idle1.keys).map(([k, v]) => `${k} ${v}`).join(", ")}); ` +
      `after five turns ${f(m.idle5.bytes, 0)} bytes (${f((m.idle5.bytes - m.idle1.bytes) / 4, 0)} bytes per further turn: messages and events are kept).`,
    "",
  );
  push(
    `Throughput runs (each repetition): ${m.gh.map(({ adapter, concurrency, runs: [r] }) => `${LABEL[adapter]}/${concurrency}: ${r.agents} agents × ${r.turns / r.agents} turns = ${r.steps} steps`).join("; ")}; ` +
      `after a warm-up turn per worker loop.`,
  );
  return lines.join("\n") + "\n";
}

async function main() {
  const started = performance.now();
  ensureBenchDeps();
  const redis = await startRedisServer();
  const bridge = await startUpstashBridge({ redisUrl: redis.url });
  const info = new Redis(redis.url);
  const makers: Record<Adapter, (prefix: string) => Store> = {
    tcp: (prefix) => redisStore({ url: redis.url, prefix }),
    upstash: (prefix) => upstashStore({ url: bridge.url, token: bridge.token, prefix }),
    "tcp-unsafe": (prefix) => redisStore({ url: redis.url, prefix }),
  };
  try {
    const meta: Record<string, string> = {
      date: new Date().toISOString().slice(0, 10),
      cpu: os.cpus()[0]?.model.trim() ?? "unknown CPU",
      cores: String(os.cpus().length),
      node: process.versions.node,
      redis: /redis_version:(\S+)/.exec(await info.info("server"))?.[1] ?? "?",
      bullmq: createRequire(import.meta.url)("bullmq/package.json").version as string,
      load: os.loadavg().map((x) => x.toFixed(2)).join(" "),
    };
    const gh: GhRuns[] = [];
    const bull = new Map<number, BullResult[]>();
    const bullPersist = new Map<number, BullResult[]>();
    for (const c of CONCURRENCY) {
      const runs: Record<Adapter, GhResult[]> = { tcp: [], upstash: [], "tcp-unsafe": [] };
      const trivial: BullResult[] = [];
      const persisting: BullResult[] = [];
      const jobs = Math.round((c === 1 ? 3_000 : 15_000) / (QUICK ? 10 : 1));
      // One repetition runs every configuration once, so a change in the machine's load hits all of them.
      for (let rep = 0; rep < REPEAT; rep++) {
        for (const adapter of adaptersAt(c)) {
          await info.flushall();
          const r = await runGatehouse({ adapter, concurrency: c, makeStore: makers[adapter], info, bridge, rep });
          runs[adapter].push(r);
          console.log(
            `${adapter} x${c} #${rep + 1}: ${f(r.stepsPerSecond, 0)} steps/s, ${f(r.roundTripsPerStep, 2)} round trips/step (${f(r.workRoundTripsPerStep, 2)} work), ` +
              `${f(r.roundTripsPerTurn, 2)} round trips/turn, ${f(r.commitsPerTurn, 2)} commits/turn, CPU ${f(r.nodeCpuUsPerStep, 0)} + ${f(r.redisCpuUsPerStep, 0)} µs/step, ${f(r.bytesInPerStep, 0)} B/step; per turn ${JSON.stringify(r.answersPerTurn)}`,
          );
        }
        await info.flushall();
        const t = await benchBullMQ({ host: "127.0.0.1", port: redis.port, concurrency: c, jobs, info });
        trivial.push(t);
        await info.flushall();
        // The record: what one gatehouse step sent to Redis in this repetition's TCP run at this concurrency.
        const recordBytes = runs.tcp[rep].bytesInPerStep;
        const p = await benchBullMQ({ host: "127.0.0.1", port: redis.port, concurrency: c, jobs, info, recordBytes });
        persisting.push(p);
        console.log(
          `bullmq x${c} #${rep + 1}: trivial ${f(t.jobsPerSecond, 0)} jobs/s (${f(t.nodeCpuUsPerJob, 0)} + ${f(t.redisCpuUsPerJob, 0)} µs/job), ` +
            `persisting ${f(recordBytes, 0)} B ${f(p.jobsPerSecond, 0)} jobs/s (${f(p.nodeCpuUsPerJob, 0)} + ${f(p.redisCpuUsPerJob, 0)} µs/job, ${f(p.bytesInPerJob, 0)} B/job)`,
        );
      }
      for (const adapter of adaptersAt(c)) gh.push({ adapter, concurrency: c, runs: runs[adapter] });
      bull.set(c, trivial);
      bullPersist.set(c, persisting);
    }
    await info.flushall();
    const idle1 = await idleAgentBytes(info, makers.tcp, 1);
    const idle5 = await idleAgentBytes(info, makers.tcp, 5);

    await info.flushall();
    const history = await runHistory(redis.url, info);

    await info.flushall();
    const latency: LatencyResult[] = [];
    for (const l of LATENCY) {
      const r = await measureLatency({ redisUrl: redis.url, prefix: `lat${l.clients}`, clients: l.clients, turnsPerClient: l.turns, warmupTurnsPerClient: l.warmup });
      latency.push(r);
      console.log(`http x${l.clients}: p50 ${f(r.p50Ms, 1)} ms, p99 ${f(r.p99Ms, 1)} ms, ${f(r.turnsPerSecond, 0)} turns/s, ${r.maxClaimsInFlight} claims in flight at most`);
    }

    const live = runLive();
    const noisy = runNoisy();

    // One repetition inside the full bench (about 5 minutes on two shared cores); `npm run bench:path` runs two.
    const path = await runUserPath({ repeat: QUICK ? 1 : Math.max(1, Number(process.env.BENCH_PATH_REPEAT ?? 1)) });

    const idle = await runIdle();
    console.log(`idle: TCP ${f(idle.tcp.callsLate, 2)} store calls/s, Upstash ${f(idle.upstash.callsLate, 2)} (steady)`);

    meta.seconds = f((performance.now() - started) / 1000, 0);
    meta.loadEnd = os.loadavg().map((x) => x.toFixed(2)).join(" ");
    const md = report({ gh, bull, bullPersist, history, latency, idle, idle1, idle5, live, noisy, path }, meta);
    console.log("\n" + md);
    if (!QUICK) {
      mkdirSync(`${BENCH_DIR}results`, { recursive: true });
      writeFileSync(`${BENCH_DIR}results/${meta.date}.md`, md);
      writeFileSync(`${BENCH_DIR}results/latest.md`, md);
      console.log(`wrote bench/results/${meta.date}.md and bench/results/latest.md`);
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
