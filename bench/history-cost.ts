/**
 * Cost per model step against the length of the conversation:
 *
 *   npm run bench:history            # 3 repetitions, writes bench/results/history-cost.md
 *   HISTORY_QUICK=1 npm run bench:history   # one short repetition, nothing written
 *
 * One process, the host driven claim by claim (`store.claim` + `runClaim`, the
 * worker loop's calls without its polling): resident agents whose
 * conversations already hold about 7, 350 and 1,400 messages run more turns
 * of the usual shape (two steps that call the in-process tool `work`, then
 * `submit_result`), and `process.cpuUsage()` around those turns gives worker
 * CPU per model step. The growth phase that builds the long conversations (one
 * long turn of `work` steps per agent) is not measured, and neither is
 * enqueueing: a window's tasks are queued before its clock starts.
 *
 * `historyAgents()` is what `npm run bench` (bench/run.ts) calls, on TCP Redis:
 * there a window also counts store calls (a counting wrapper), bytes to and
 * from Redis and Redis CPU (INFO), and a window can run with a resident cache
 * that never hits, so every claim reads the conversation back (the cost of a
 * claim that misses: after a restart, a takeover or an eviction).
 *
 * This command (main below) runs on the memory store, and each size twice in
 * the same repetition: with the used tool-call ids kept next to the history
 * (what the host does) and with `rebuildToolCallIds` (the set rebuilt from the
 * whole history at every step, as before). The figure to watch is CPU per step
 * at 1,400 messages ÷ at 7 (target ≤ 1.2x).
 */
import { writeFileSync } from "node:fs";
import { Session } from "node:inspector/promises";
import process from "node:process";
import { pathToFileURL } from "node:url";
import { z } from "zod";
import { defineAgent, defineTool } from "../mod.ts";
import type { Model, ModelResponse } from "../mod.ts";
import { memoryStore } from "../store/memory.ts";
import type { Store } from "../store/port.ts";
import { hostDeps, runClaim } from "../tests/helpers/host.ts";
import { countingStore, workCalls } from "./counting-store.ts";
import { commandStats, diffStats, type RedisInfoClient, redisCpuSeconds } from "./redis-info.ts";

const QUICK = process.env.HISTORY_QUICK === "1";
const REPEAT = QUICK ? 1 : Math.max(1, Number(process.env.HISTORY_REPEAT ?? 3));
/** Conversation lengths, agents per length and measured turns per agent (about 300 steps per length). */
const SIZES = [
  { messages: 7, agents: QUICK ? 4 : 10, turns: QUICK ? 5 : 10 },
  { messages: 350, agents: QUICK ? 4 : 10, turns: QUICK ? 5 : 10 },
  { messages: 1400, agents: QUICK ? 4 : 10, turns: QUICK ? 5 : 10 },
];
/** `work` steps of a measured turn; a submitting step follows. */
export const MEASURED_WORK_STEPS = 2;
/** HISTORY_PROFILE=dir writes a CPU profile of each measured window (not of the growth) there. */
const PROFILE_DIR = process.env.HISTORY_PROFILE;
/** HISTORY_MODE=kept|rebuilt runs one mode only (for profiles). */
const MODES = process.env.HISTORY_MODE === "kept" ? [false] : process.env.HISTORY_MODE === "rebuilt" ? [true] : [false, true];

/**
 * A model that calls `work` while the turn's plan says so (`calls` calls per step), then submits; it counts
 * steps and what it was shown.
 */
function planModel() {
  const plan = { workSteps: 0, calls: 1 };
  const stats = { steps: 0, shown: 0 };
  let left = 0;
  let lastTurn = "";
  const model: Model = {
    name: "history-bench",
    generate(req) {
      if (req.turnId !== lastTurn) {
        lastTurn = req.turnId;
        left = plan.workSteps;
      }
      stats.steps++;
      stats.shown += req.messages.length - 1;
      const res: ModelResponse = left-- > 0
        ? {
          toolCalls: Array.from({ length: plan.calls }, (_, k) => ({ id: `c${req.step}_${k}`, name: "work", args: { n: req.step } })),
          usage: { inputTokens: 50, outputTokens: 10 },
        }
        : { toolCalls: [{ name: "submit_result", args: { result: "ok" } }], usage: { inputTokens: 70, outputTokens: 5 } };
      return Promise.resolve(res);
    },
  };
  return { model, plan, stats };
}

/** What one measured window cost, per model step unless named otherwise. */
export interface HistoryWindow {
  /** The conversation size the agents were grown to. */
  messages: number;
  /** Mean number of messages the measured steps were shown (the conversation before each step). */
  shown: number;
  steps: number;
  /** Claims that claimed in the window. */
  claims: number;
  workerCpuUs: number;
  /** Store calls: all, and work only (claims that claimed, commits, reads; not polls). Each is one round trip. */
  storeCalls: number;
  workCalls: number;
  /** With an `info` client (Redis): bytes to and from Redis, script calls, Redis CPU. */
  bytesIn?: number;
  bytesOut?: number;
  scriptCalls?: number;
  redisCpuUs?: number;
}

export interface HistoryAgents {
  /**
   * Runs `turns` more turns per agent and measures them. `cacheMiss`: the claims use a resident cache
   * that never hits, so each reads its conversation from the store (run it last: it leaves the
   * agents' resident entries behind).
   */
  window(opts: { turns: number; cacheMiss?: boolean }): Promise<HistoryWindow>;
  close(): Promise<void>;
}

/**
 * Grows `agents` agents to about `messages` messages each (one long turn of `work` steps with
 * `growthCallsPerStep` calls per step, then a warm-up turn; not measured), ready for measured windows.
 */
export async function historyAgents(opts: {
  messages: number;
  agents: number;
  store: Store;
  info?: RedisInfoClient;
  rebuild?: boolean;
  growthCallsPerStep?: number;
}): Promise<HistoryAgents> {
  const { model, plan, stats } = planModel();
  const work = defineTool({ name: "work", description: "Returns its input.", parameters: z.object({ n: z.number() }), execute: ({ n }) => ({ n }) });
  const agent = defineAgent({ name: "hist", instructions: "Run the benchmark script.", model, tools: [work], maxStepsPerTurn: 10_000 });
  const counted = countingStore(opts.store);
  const store = counted.store;
  const ended = new Map<string, number>();
  counted.onTurnEnded = (_turnId, agentId) => ended.set(agentId, (ended.get(agentId) ?? 0) + 1);
  const clock = { now: () => Date.now() };
  // Host dependencies as createGatehouse() builds them (own resident cache, 30 s lease), no retention.
  const deps = hostDeps(store, [agent], clock, { retention: null, rebuildToolCallIds: opts.rebuild ?? false });
  const missing = hostDeps(store, [agent], clock, {
    retention: null,
    rebuildToolCallIds: opts.rebuild ?? false,
    cache: { take: () => undefined, put: () => {}, delete: () => {} },
  });
  const ids = Array.from({ length: opts.agents }, (_, i) => `h${opts.messages}a${i}`);
  let seq = 0;

  const enqueue = async (agentId: string, turns: number) => {
    for (let t = 0; t < turns; t++) {
      const turnId = `t${++seq}`;
      await store.enqueueTask({ agentId, agentName: "hist", workerTarget: "default", input: `task ${turnId}`, options: {}, turnId, now: Date.now() });
    }
  };
  /** Claims the agent and runs its claims until `turns` more of its turns ended. */
  const runTurns = async (d: typeof deps, agentId: string, turns: number) => {
    const target = (ended.get(agentId) ?? 0) + turns;
    for (let k = 0; (ended.get(agentId) ?? 0) < target; k++) {
      if (k > 100 * turns) throw new Error(`${agentId}: ${turns} turns did not end`);
      const claim = await store.claim({ agentId, workerId: "w1", leaseMs: 30_000, now: Date.now() });
      if (claim.status !== "claimed") throw new Error(`${agentId}: claim answered ${claim.status}`);
      const out = await runClaim(d, claim, "w1");
      if (out.status !== "released") throw new Error(`${agentId}: ${out.status}`);
    }
  };

  // Growth: a turn is user + (assistant, tool × calls) per work step + the submitting assistant;
  // the warm-up turn below adds 6 more.
  plan.calls = Math.max(1, opts.growthCallsPerStep ?? 1);
  plan.workSteps = Math.max(0, Math.round((opts.messages - 8) / (1 + plan.calls)));
  for (const id of ids) await enqueue(id, 1);
  for (const id of ids) await runTurns(deps, id, 1);
  plan.calls = 1;
  plan.workSteps = MEASURED_WORK_STEPS;
  // One unmeasured turn each so every agent is resident and the code paths are warm.
  for (const id of ids) await enqueue(id, 1);
  for (const id of ids) await runTurns(deps, id, 1);

  return {
    async window({ turns, cacheMiss = false }) {
      for (const id of ids) await enqueue(id, turns);
      // A collection of what earlier runs left behind would land in this window (run with --expose-gc).
      (globalThis as { gc?: () => void }).gc?.();
      const profiler = PROFILE_DIR ? new Session() : null;
      if (profiler) {
        profiler.connect();
        await profiler.post("Profiler.enable");
        await profiler.post("Profiler.start");
      }
      counted.reset();
      const s0 = { ...stats };
      const before = opts.info ? await commandStats(opts.info) : null;
      const redisCpu0 = opts.info ? await redisCpuSeconds(opts.info) : 0;
      const cpu0 = process.cpuUsage();
      // Turn by turn across the agents, as a worker pool interleaves them.
      for (let t = 0; t < turns; t++) for (const id of ids) await runTurns(cacheMiss ? missing : deps, id, 1);
      const cpu = process.cpuUsage(cpu0);
      const redisCpu = opts.info ? await redisCpuSeconds(opts.info) - redisCpu0 : 0;
      const after = opts.info ? await commandStats(opts.info) : null;
      if (profiler) {
        const { profile } = await profiler.post("Profiler.stop");
        writeFileSync(`${PROFILE_DIR}/${opts.messages}-${opts.rebuild ? "rebuilt" : "kept"}-${Date.now()}.cpuprofile`, JSON.stringify(profile));
        profiler.disconnect();
      }
      const steps = stats.steps - s0.steps;
      if (steps !== ids.length * turns * (MEASURED_WORK_STEPS + 1)) throw new Error(`measured ${steps} steps`);
      const calls = Object.values(counted.counts.calls).reduce((a, b) => a + b, 0);
      const d = before && after ? diffStats(before, after) : null;
      return {
        messages: opts.messages,
        shown: (stats.shown - s0.shown) / steps,
        steps,
        claims: (counted.counts.answers["claim:claimed"] ?? 0) + (counted.counts.answers["claimNext:claimed"] ?? 0),
        workerCpuUs: (cpu.user + cpu.system) / steps,
        storeCalls: calls / steps,
        workCalls: workCalls(counted.counts) / steps,
        ...(d
          ? {
            bytesIn: d.netInputBytes / steps,
            bytesOut: d.netOutputBytes / steps,
            scriptCalls: d.scriptCalls / steps,
            redisCpuUs: (redisCpu * 1e6) / steps,
          }
          : {}),
      };
    },
    close: () => store.close(),
  };
}

/** µs of worker CPU per measured step, and the mean number of messages the measured steps were shown (memory store). */
async function measure(size: (typeof SIZES)[number], rebuild: boolean): Promise<{ us: number; shown: number }> {
  const agents = await historyAgents({ messages: size.messages, agents: size.agents, store: memoryStore(), rebuild });
  const w = await agents.window({ turns: size.turns });
  await agents.close();
  return { us: w.workerCpuUs, shown: w.shown };
}

export const median = (xs: number[]) => xs.length === 0 ? NaN : [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];

async function main() {
  const rows: Array<{ messages: number; shown: number; kept: number[]; rebuilt: number[] }> = SIZES.map((s) => ({ messages: s.messages, shown: 0, kept: [], rebuilt: [] }));
  // Not recorded: the first runs of a process pay for compiling the code paths.
  for (const rebuild of MODES) await measure(SIZES[0], rebuild);
  for (let rep = 0; rep < REPEAT; rep++) {
    for (const [i, size] of SIZES.entries()) {
      // Alternate which mode goes first, so neither always runs on a warmer heap.
      const order = rep % 2 === 0 ? MODES : [...MODES].reverse();
      for (const rebuild of order) {
        const r = await measure(size, rebuild);
        (rebuild ? rows[i].rebuilt : rows[i].kept).push(r.us);
        rows[i].shown = r.shown;
        console.log(`rep ${rep + 1}, ~${size.messages} messages (${r.shown.toFixed(0)} shown per step), ${rebuild ? "rebuilt per step" : "kept"}: ${r.us.toFixed(0)} µs/step`);
      }
    }
  }
  const us = (xs: number[]) => xs.length === 0 ? "not run" : `${median(xs).toFixed(0)} (${Math.min(...xs).toFixed(0)}–${Math.max(...xs).toFixed(0)})`;
  const lines = [
    `| conversation | shown per step | kept ids: µs/step | rebuilt per step: µs/step |`,
    `| --- | --- | --- | --- |`,
    ...rows.map((r) => `| ~${r.messages} messages | ${r.shown.toFixed(0)} | ${us(r.kept)} | ${us(r.rebuilt)} |`),
  ];
  const ratio = (xs: (r: (typeof rows)[number]) => number[]) => median(xs(rows[2])) / median(xs(rows[0]));
  const summary = [
    `1,400 ÷ 7 messages, kept ids: ${ratio((r) => r.kept).toFixed(2)}x (target ≤ 1.2x)`,
    `1,400 ÷ 7 messages, rebuilt per step: ${ratio((r) => r.rebuilt).toFixed(2)}x`,
  ];
  console.log(["", ...lines, "", ...summary].join("\n"));
  if (QUICK || MODES.length < 2) return;
  const md = [
    `# Worker CPU per model step against conversation length`,
    ``,
    `\`npm run bench:history\` (bench/history-cost.ts), ${new Date().toISOString().slice(0, 10)}, Node ${process.version}, memory store,`,
    `${REPEAT} repetitions (median, range), about 300 measured steps per cell. Steps: two \`work\` calls and a submit per turn.`,
    ``,
    ...lines,
    ``,
    ...summary.map((s) => `- ${s}`),
    ``,
  ].join("\n");
  writeFileSync(new URL("./results/history-cost.md", import.meta.url), md);
  console.log("\nwrote bench/results/history-cost.md");
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
