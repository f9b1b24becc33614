/**
 * The agent the fault tests and the benchmark run: a scripted turn of four
 * model steps.
 *
 *   step 1: work(1,0), work(1,1)          in-process, in parallel
 *   step 2: work(2,0) [+ approve(2,1)]    approve is external (answered over the store)
 *   step 3: work(3,0)
 *   step 4: submit_result({ calls })      every call of the turn with the text of its result
 *
 * Like a real model, every model step invents fresh random tool call ids, so
 * a model step that is run again after a crash proposes different ids. A
 * logical call is (agentId, turnId, step, index); the runtime must dispatch
 * each one under a single id (the one it recorded before dispatching).
 *
 * Every dispatch of `work` is reported through `record` (phase `start` before
 * the side effect, `done` after it, `aborted` when the abort signal fired
 * first), which is how the tests see side effects of dead or stale workers.
 * The tool waits with an abortable sleep, so a worker that loses the agent
 * stops at once.
 *
 * The task input (`FaultTaskInput`) sets the duration of each work call, so a
 * test controls where a turn spends its time.
 */
import { z } from "zod";
import { defineAgent, defineTool, scriptedModel, ToolError } from "../../mod.ts";
import type { AnyAgent, Message } from "../../mod.ts";

export const FAULT_AGENT = "fault";

export interface FaultTaskInput {
  /** Free label (tests use it to find the task). */
  label: string;
  /** Duration of work(1,0), work(1,1), work(2,0), work(3,0) in ms. */
  toolMs: [number, number, number, number];
  /** Add the external approve(2,1) call. */
  external: boolean;
}

export type DispatchPhase = "start" | "done" | "aborted";

export interface DispatchRecord {
  /** Name of the worker process that ran the tool. */
  worker: string;
  pid: number;
  phase: DispatchPhase;
  agentId: string;
  turnId: string;
  toolCallId: string;
  tool: string;
  step: number;
  i: number;
  at: number;
}

/** One entry of the submitted result: a call of the turn and the text of its result. */
export interface SubmittedCall {
  step: number;
  i: number;
  name: string;
  id: string;
  content: string;
}

export interface FaultAgentOptions {
  /** Worker name written into dispatch records and tool results. */
  worker: string;
  pid: number;
  /** Side channel for dispatch records; awaited before the tool continues. */
  record(r: DispatchRecord): Promise<void>;
  /** Model latency per step in ms (default 0). */
  modelMs?: number;
  /** Upper bound for every work call's duration in ms (a fast worker in a takeover test). */
  toolMsCap?: number;
  /** Declare `work` retrySafe: its results ride with the next model step's commit. */
  retrySafe?: boolean;
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done, { once: true });
  });
}

const randomId = () => `call_${crypto.randomUUID().replace(/-/g, "").slice(0, 16)}`;

/** The messages of the current turn: everything after the last user message. */
function turnMessages(messages: Message[]): { input: FaultTaskInput; rest: Message[] } {
  let at = -1;
  for (let k = messages.length - 1; k >= 0; k--) {
    if (messages[k].role === "user") {
      at = k;
      break;
    }
  }
  if (at < 0) throw new Error("no task message in the conversation");
  return { input: JSON.parse(messages[at].content) as FaultTaskInput, rest: messages.slice(at + 1) };
}

/** The calls of the turn so far with the text of their results. */
export function callsOfTurn(rest: Message[]): SubmittedCall[] {
  const out: SubmittedCall[] = [];
  const results = new Map(rest.filter((m) => m.role === "tool").map((m) => [m.toolCallId, m.content]));
  for (const m of rest) {
    for (const c of m.toolCalls ?? []) {
      const a = c.args as { step?: number; i?: number };
      out.push({ step: a.step ?? -1, i: a.i ?? -1, name: c.name, id: c.id, content: results.get(c.id) ?? "<missing>" });
    }
  }
  return out;
}

export function faultAgent(opts: FaultAgentOptions): AnyAgent {
  const work = defineTool({
    name: "work",
    description: "Does a piece of work that takes `ms` milliseconds.",
    parameters: z.object({ step: z.number().int(), i: z.number().int(), ms: z.number().int().min(0) }),
    ...(opts.retrySafe ? { retrySafe: true } : {}),
    async execute({ step, i, ms }, ctx) {
      const base = {
        worker: opts.worker, pid: opts.pid, agentId: ctx.agentId, turnId: ctx.turnId,
        toolCallId: ctx.toolCallId, tool: "work", step, i,
      };
      await opts.record({ ...base, phase: "start", at: Date.now() });
      await sleep(Math.min(ms, opts.toolMsCap ?? ms), ctx.signal);
      if (ctx.signal.aborted) {
        await opts.record({ ...base, phase: "aborted", at: Date.now() });
        throw new ToolError({ type: "aborted", message: "the worker lost the agent" });
      }
      await opts.record({ ...base, phase: "done", at: Date.now() });
      return { k: `${step}.${i}`, by: opts.worker, pid: opts.pid };
    },
  });
  const approve = defineTool({
    name: "approve",
    description: "Asks a human to approve (answered from outside).",
    parameters: z.object({ step: z.number().int(), i: z.number().int() }),
  });
  const model = scriptedModel(async ({ step, messages }) => {
    if (opts.modelMs) await sleep(opts.modelMs);
    const { input, rest } = turnMessages(messages);
    const w = (s: number, i: number, ms: number) => ({ id: randomId(), name: "work", args: { step: s, i, ms } });
    switch (step) {
      case 1:
        return { toolCalls: [w(1, 0, input.toolMs[0]), w(1, 1, input.toolMs[1])], usage: { inputTokens: 10, outputTokens: 5 } };
      case 2:
        return {
          toolCalls: [
            w(2, 0, input.toolMs[2]),
            ...(input.external ? [{ id: randomId(), name: "approve", args: { step: 2, i: 1 } }] : []),
          ],
          usage: { inputTokens: 10, outputTokens: 5 },
        };
      case 3:
        return { toolCalls: [w(3, 0, input.toolMs[3])], usage: { inputTokens: 10, outputTokens: 5 } };
      default:
        return {
          toolCalls: [{ id: randomId(), name: "submit_result", args: { result: { label: input.label, calls: callsOfTurn(rest) } } }],
          usage: { inputTokens: 10, outputTokens: 5 },
        };
    }
  });
  return defineAgent({ name: FAULT_AGENT, instructions: "Run the fault script.", model, tools: [work, approve], stepLimit: 8 });
}
