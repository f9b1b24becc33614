/**
 * Worker CPU per model step against the length of the conversation:
 *
 *   npm run bench:history            # 3 repetitions, writes bench/results/history-cost.md
 *   HISTORY_QUICK=1 npm run bench:history   # one short repetition, nothing written
 *
 * One process, the memory store, the host driven claim by claim (the worker
 * loop's claim + runClaim, without its polling): resident agents whose
 * conversations already hold about 7, 350 and 1,400 messages run more turns
 * of the usual shape (two steps that call the in-process tool `work`, then
 * `submit_result`), and `process.cpuUsage()` around those turns gives CPU per
 * model step. The growth phase that builds the long conversations (one long
 * turn of `work` steps per agent) is not measured. Each size runs twice in the
 * same repetition: with the used tool-call ids kept next to the history (what
 * the host does) and with `rebuildToolCallIds` (the set rebuilt from the whole
 * history at every step, as before). The figure to watch is CPU per step at
 * 1,400 messages ÷ at 7 (target ≤ 1.2x).
 */
import { writeFileSync } from "node:fs";
import { Session } from "node:inspector/promises";
import process from "node:process";
import { z } from "zod";
import { defineAgent, defineTool } from "../mod.ts";
import type { Model, ModelResponse } from "../mod.ts";
import { memoryStore } from "../store/memory.ts";
import type { Store } from "../store/port.ts";
import { hostDeps, runClaim } from "../tests/helpers/host.ts";

type HostDeps = ReturnType<typeof hostDeps>;

const QUICK = process.env.HISTORY_QUICK === "1";
const REPEAT = QUICK ? 1 : Math.max(1, Number(process.env.HISTORY_REPEAT ?? 3));
/** Conversation lengths, agents per length and measured turns per agent (about 300 steps per length). */
const SIZES = [
  { messages: 7, agents: QUICK ? 4 : 10, turns: QUICK ? 5 : 10 },
  { messages: 350, agents: QUICK ? 4 : 10, turns: QUICK ? 5 : 10 },
  { messages: 1400, agents: QUICK ? 4 : 10, turns: QUICK ? 5 : 10 },
];
const MEASURED_WORK_STEPS = 2;
/** HISTORY_PROFILE=dir writes a CPU profile of each measured window (not of the growth) there. */
const PROFILE_DIR = process.env.HISTORY_PROFILE;
/** HISTORY_MODE=kept|rebuilt runs one mode only (for profiles). */
const MODES = process.env.HISTORY_MODE === "kept" ? [false] : process.env.HISTORY_MODE === "rebuilt" ? [true] : [false, true];

/** A model that calls `work` while the turn's plan says so, then submits; it counts steps and what it was shown. */
function planModel() {
  const plan = { workSteps: 0 };
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
        ? { toolCalls: [{ id: `c${req.step}`, name: "work", args: { n: req.step } }], usage: { inputTokens: 50, outputTokens: 10 } }
        : { toolCalls: [{ name: "submit_result", args: { result: "ok" } }], usage: { inputTokens: 70, outputTokens: 5 } };
      return Promise.resolve(res);
    },
  };
  return { model, plan, stats };
}

async function runTurn(deps: HostDeps, store: Store, agentId: string, turnId: string): Promise<void> {
  await store.enqueueTask({ agentId, agentName: "hist", workerTarget: "default", input: `task ${turnId}`, options: {}, turnId, now: Date.now() });
  for (let k = 0; k < 100; k++) {
    const claim = await store.claim({ agentId, workerId: "w1", leaseMs: 30_000, now: Date.now() });
    if (claim.status !== "claimed") return;
    const out = await runClaim(deps, claim, "w1");
    if (out.status !== "released") throw new Error(`${agentId} ${turnId}: ${out.status}`);
    if (out.state === "done") return;
  }
  throw new Error(`${agentId} ${turnId}: the turn did not end`);
}

/** µs of worker CPU per measured step, and the mean number of messages the measured steps were shown. */
async function measure(size: (typeof SIZES)[number], rebuild: boolean): Promise<{ us: number; shown: number }> {
  const { model, plan, stats } = planModel();
  const work = defineTool({ name: "work", description: "Returns its input.", parameters: z.object({ n: z.number() }), execute: ({ n }) => ({ n }) });
  const agent = defineAgent({ name: "hist", instructions: "Run the benchmark script.", model, tools: [work], maxStepsPerTurn: 10_000 });
  const store = memoryStore();
  // Host dependencies as createGatehouse() builds them (own resident cache, 30 s lease), no retention.
  const deps = hostDeps(store, [agent], { now: () => Date.now() }, { retention: null, rebuildToolCallIds: rebuild });
  const ids = Array.from({ length: size.agents }, (_, i) => `a${i}`);
  // Growth (not measured): a turn is user + (assistant, tool) per work step + the submitting assistant;
  // the warm-up turn below adds 6 more.
  plan.workSteps = Math.max(0, Math.round((size.messages - 8) / 2));
  for (const id of ids) await runTurn(deps, store, id, `grow_${id}`);
  plan.workSteps = MEASURED_WORK_STEPS;
  // One unmeasured turn each so every agent is resident and the code paths are warm.
  for (const id of ids) await runTurn(deps, store, id, `warm_${id}`);
  // A collection of what earlier runs left behind would land in this window (run with --expose-gc).
  (globalThis as { gc?: () => void }).gc?.();
  const profiler = PROFILE_DIR ? new Session() : null;
  if (profiler) {
    profiler.connect();
    await profiler.post("Profiler.enable");
    await profiler.post("Profiler.start");
  }
  const s0 = { ...stats };
  const cpu0 = process.cpuUsage();
  for (let t = 0; t < size.turns; t++) for (const id of ids) await runTurn(deps, store, id, `t${t}_${id}`);
  const cpu = process.cpuUsage(cpu0);
  if (profiler) {
    const { profile } = await profiler.post("Profiler.stop");
    writeFileSync(`${PROFILE_DIR}/${size.messages}-${rebuild ? "rebuilt" : "kept"}-${Date.now()}.cpuprofile`, JSON.stringify(profile));
    profiler.disconnect();
  }
  const steps = stats.steps - s0.steps;
  if (steps !== size.agents * size.turns * (MEASURED_WORK_STEPS + 1)) throw new Error(`measured ${steps} steps`);
  await store.close();
  return { us: (cpu.user + cpu.system) / steps, shown: (stats.shown - s0.shown) / steps };
}

const median = (xs: number[]) => xs.length === 0 ? NaN : [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];

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

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
