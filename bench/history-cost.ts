/**
 * Cost per model step against the length of the conversation:
 *
 *   npm run bench:history            # 3 repetitions, writes bench/results/history-cost.md
 *   HISTORY_QUICK=1 npm run bench:history   # one short repetition, nothing written
 *
 * One process: resident agents whose conversations already hold about 7, 350
 * and 1,400 messages run more turns of the usual shape (two steps that call
 * the in-process tool `work`, then `submit_result`), and `process.cpuUsage()`
 * around those turns gives worker CPU per model step. The growth phase that builds the long conversations (one
 * long turn of `work` steps per agent) is not measured, and neither is
 * enqueueing: a window's tasks are queued before its clock starts.
 *
 * `historyAgents()` is what `npm run bench` (bench/run.ts) calls, on TCP Redis
 * through a `createGatehouse()` instance: there a window also counts store
 * calls (a counting wrapper), bytes to and from Redis and Redis CPU (INFO),
 * and a window can run where no agent is resident, so each agent's claim reads
 * its conversation back (the cost of a claim that misses: after a restart, a
 * takeover or an eviction). With a `memory` policy the agents are grown turn
 * by turn instead (turns of the usual shape: the policy keeps whole turns, so
 * one long turn would stay in view), and a missing claim reads only what the
 * rolling summary does not cover.
 *
 * This command (main below) drives the host claim by claim (`store.claim` +
 * `runClaim`, the worker loop's calls without its polling) on the memory
 * store, and runs each size twice in
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
import { createGatehouse, defineAgent, defineTool } from "../mod.ts";
import type { Model, ModelResponse } from "../mod.ts";
import type { MemoryPolicy } from "../mod.ts";
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
  // Work steps left per turn (turn ids are unique across agents here); claims of several agents may interleave.
  const left = new Map<string, number>();
  const model: Model = {
    name: "history-bench",
    generate(req) {
      const n = left.get(req.turnId) ?? plan.workSteps;
      left.set(req.turnId, n - 1);
      stats.steps++;
      stats.shown += req.messages.length - 1;
      const res: ModelResponse = n > 0
        ? {
          toolCalls: Array.from({ length: plan.calls }, (_, k) => ({ id: `c${req.step}_${k}`, name: "work", args: { n: req.step } })),
          usage: { inputTokens: 50, outputTokens: 10 },
        }
        : { toolCalls: [{ name: "submit_result", args: { result: "ok" } }], usage: { inputTokens: 70, outputTokens: 5 } };
      if (n <= 0) left.delete(req.turnId);
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
  /** Messages stored per agent after the growth and the warm-up turn (fewest over the agents; nothing is trimmed). */
  stored: number;
  /**
   * Runs `turns` more turns per agent and measures them. `cacheMiss`: the turns run where the agents are
   * not resident, so each agent's first claim reads its conversation from the store.
   */
  window(opts: { turns: number; cacheMiss?: boolean }): Promise<HistoryWindow>;
  close(): Promise<void>;
}

/**
 * Grows `agents` agents to about `messages` messages each (one long turn of `work` steps with
 * `growthCallsPerStep` calls per step, then a warm-up turn; not measured), ready for measured windows.
 * With `memory` (the agent definition's policy) the growth is turns of the measured shape instead,
 * about `messages` ÷ 7 of them per agent, so the policy has turns to leave out of the model's view.
 *
 * Two ways to run the claims:
 * - `runner: "gatehouse"` (bench/run.ts): a `createGatehouse()` instance with its defaults (resident
 *   cache, turn chaining, the batched tool registry writer) and `retention: false`, whose `drain()`
 *   runs every claimable claim through the worker pool's claim runner; a window's counts include the
 *   stop that flushes the registry writer. A `cacheMiss` window runs on a fresh instance (an empty
 *   resident cache, as after a restart or on another process): the first claim of each agent misses.
 * - `runner: "host"` (this command): `store.claim` + `runClaim` one claim at a time with the host
 *   dependencies the test helpers build, so `rebuild` can bring back the per-step scan of the whole
 *   history for the comparison. A `cacheMiss` window uses a resident cache that never hits.
 */
export async function historyAgents(opts: {
  messages: number;
  agents: number;
  store: Store;
  info?: RedisInfoClient;
  runner: "gatehouse" | "host";
  rebuild?: boolean;
  growthCallsPerStep?: number;
  memory?: MemoryPolicy;
}): Promise<HistoryAgents> {
  const { model, plan, stats } = planModel();
  // As in bench/agent.ts: `work` only returns its input, so it is declared retry-safe.
  const work = defineTool({ name: "work", description: "Returns its input.", parameters: z.object({ n: z.number() }), execute: ({ n }) => ({ n }), retrySafe: true });
  const agent = defineAgent({ name: "hist", instructions: "Run the benchmark script.", model, tools: [work], stepLimit: 10_000, ...(opts.memory ? { memory: opts.memory } : {}) });
  const counted = countingStore(opts.store);
  const store = counted.store;
  const ended = new Map<string, number>();
  counted.onTurnEnded = (_turnId, agentId) => ended.set(agentId, (ended.get(agentId) ?? 0) + 1);
  const ids = Array.from({ length: opts.agents }, (_, i) => `h${opts.messages}${opts.memory ? "m" : ""}a${i}`);
  let seq = 0;

  const enqueue = async (turns: number) => {
    for (let t = 0; t < turns; t++) {
      for (const agentId of ids) {
        const turnId = `t${++seq}`;
        await store.enqueueTask({ agentId, agentName: "hist", workerTarget: "default", input: `task ${turnId}`, options: {}, turnId, now: Date.now() });
      }
    }
  };
  const endedAll = () => ids.reduce((a, id) => a + (ended.get(id) ?? 0), 0);

  /** Runs the `count` queued turns; `miss`: where no agent is resident. Resolves after the counts are final. */
  let run: (miss: boolean, count: number) => Promise<void>;
  if (opts.runner === "gatehouse") {
    const make = () => createGatehouse({ agents: [agent], store, retention: false });
    const gh = make();
    run = async (miss, count) => {
      const g = miss ? make() : gh;
      const want = endedAll() + count;
      await g.drain();
      // The stop writes the registry writer's pending counts: work of this window.
      await g.stopWorker();
      if (endedAll() !== want) throw new Error(`drain ended ${endedAll()} turns, expected ${want}`);
    };
  } else {
    const clock = { now: () => Date.now() };
    const deps = hostDeps(store, [agent], clock, { retention: null, rebuildToolCallIds: opts.rebuild ?? false });
    const missing = hostDeps(store, [agent], clock, {
      retention: null,
      rebuildToolCallIds: opts.rebuild ?? false,
      cache: { take: () => undefined, put: () => {}, delete: () => {} },
    });
    run = async (miss, count) => {
      const want = endedAll() + count;
      // Turn by turn across the agents, one claim at a time.
      for (let k = 0; endedAll() < want; k++) {
        for (const agentId of ids) {
          const claim = await store.claim({ agentId, workerId: "w1", leaseMs: 30_000, now: Date.now() });
          if (claim.status !== "claimed") continue;
          const out = await runClaim(miss ? missing : deps, claim, "w1");
          if (out.status !== "released") throw new Error(`${agentId}: ${out.status}`);
        }
        if (k > 100_000) throw new Error("the turns did not end");
      }
    };
  }
  const runTurns = async (turns: number) => {
    await enqueue(turns);
    await run(false, turns * ids.length);
  };

  // Growth: a turn is user + (assistant, tool × calls) per work step + the submitting assistant;
  // the warm-up turn below adds 6 more.
  if (opts.memory) {
    // Turns of the measured shape (user, then assistant + tool per step, the submitting step's
    // included: 7 messages), queued in batches so no queue grows long.
    plan.calls = 1;
    plan.workSteps = MEASURED_WORK_STEPS;
    const perTurn = 1 + 2 * (MEASURED_WORK_STEPS + 1);
    for (let left = Math.max(1, Math.round((opts.messages - perTurn) / perTurn)); left > 0; left -= 50) await runTurns(Math.min(50, left));
  } else {
    plan.calls = Math.max(1, opts.growthCallsPerStep ?? 1);
    plan.workSteps = Math.max(0, Math.round((opts.messages - 8) / (1 + plan.calls)));
    await runTurns(1);
    plan.calls = 1;
    plan.workSteps = MEASURED_WORK_STEPS;
  }
  // One unmeasured turn each so every agent is resident and the code paths are warm.
  await runTurns(1);
  // What the agents hold now, read past the counting wrapper (not measured).
  let stored = Infinity;
  for (const agentId of ids) {
    const conv = await opts.store.readConversation(agentId);
    stored = Math.min(stored, conv?.messages.length ?? 0);
  }

  return {
    stored,
    async window({ turns, cacheMiss = false }) {
      await enqueue(turns);
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
      await run(cacheMiss, turns * ids.length);
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
  const agents = await historyAgents({ messages: size.messages, agents: size.agents, store: memoryStore(), runner: "host", rebuild });
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
