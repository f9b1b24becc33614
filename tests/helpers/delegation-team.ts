/**
 * The team the delegation crash tests run in worker processes: a `lead`
 * that hands its task to a `helper` (agentTool) and submits what came back.
 *
 *   lead   step 1: helper({ input: <the task input> })   a delegation
 *          step 2: submit_result({ child: <the helper's result, parsed> })
 *   helper step 1: work({ ms })    in-process; reports `start`/`done` through `record`
 *          step 2: submit_result({ label, by: <worker name> })
 *
 * With `leadMs`, the lead's first step also calls its in-process `stall`
 * tool, so the lead's worker holds the lead while the helper finishes.
 *
 * With `fail: true` in the input the helper's model fails for good at its
 * first step (the helper's turn ends `failed`), so the lead receives an
 * error outcome.
 */
import { z } from "zod";
import { agentTool, defineAgent, defineTool, scriptedModel } from "../../mod.ts";
import type { AnyAgent } from "../../mod.ts";
import { ModelError } from "../../errors/errors.ts";
import { abortableSleep } from "../../common/sleep.ts";

export interface TeamTaskInput {
  label: string;
  /** How long the helper's work tool runs (ms). */
  ms: number;
  fail?: boolean;
  /** When set, the lead also runs its own in-process `stall` tool this long (ms), next to the delegation. */
  leadMs?: number;
}

export interface TeamRecord {
  worker: string;
  pid: number;
  phase: "start" | "done";
  agentId: string;
  label: string;
  at: number;
}

function parse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

export function delegationTeam(opts: { worker: string; pid: number; record: (r: TeamRecord) => Promise<void>; modelMs?: number }): AnyAgent[] {
  const pause = () => new Promise((r) => setTimeout(r, opts.modelMs ?? 5));
  const work = defineTool({
    name: "work",
    description: "Work for a while",
    parameters: z.object({ ms: z.number(), label: z.string() }),
    async execute({ ms, label }, ctx) {
      await opts.record({ worker: opts.worker, pid: opts.pid, phase: "start", agentId: ctx.agentId, label, at: Date.now() });
      await abortableSleep(ms, ctx.signal);
      ctx.signal.throwIfAborted();
      await opts.record({ worker: opts.worker, pid: opts.pid, phase: "done", agentId: ctx.agentId, label, at: Date.now() });
      return "worked";
    },
  });
  const stall = defineTool({
    name: "stall",
    description: "Wait for a while",
    parameters: z.object({ ms: z.number(), label: z.string() }),
    async execute({ ms, label }, ctx) {
      await opts.record({ worker: opts.worker, pid: opts.pid, phase: "start", agentId: ctx.agentId, label: `lead:${label}`, at: Date.now() });
      await abortableSleep(ms, ctx.signal);
      ctx.signal.throwIfAborted();
      return "stalled";
    },
  });
  const helper = defineAgent({
    name: "helper",
    instructions: "Work on the task.",
    tools: [work],
    model: scriptedModel(async (ctx) => {
      await pause();
      const input = parse(String(ctx.messages.find((m) => m.role === "user")?.content ?? "")) as TeamTaskInput;
      if (input.fail) throw new ModelError("the helper cannot do this", { retryable: false });
      if (ctx.step === 1) return { toolCalls: [{ name: "work", args: { ms: input.ms, label: input.label } }], usage: { inputTokens: 10, outputTokens: 5 } };
      return { toolCalls: [{ name: "submit_result", args: { result: { label: input.label, by: opts.worker } } }] };
    }),
  });
  const lead = defineAgent({
    name: "lead",
    instructions: "Delegate the task.",
    tools: [agentTool(helper), stall],
    model: scriptedModel(async (ctx) => {
      await pause();
      if (ctx.step === 1) {
        const input = parse(String(ctx.messages.find((m) => m.role === "user")?.content ?? "")) as TeamTaskInput;
        const calls = [{ name: "helper", args: { input } }];
        if (input.leadMs !== undefined) calls.push({ name: "stall", args: { ms: input.leadMs, label: input.label } as never });
        return { toolCalls: calls };
      }
      const helperCall = ctx.messages.flatMap((m) => m.toolCalls ?? []).find((c) => c.name === "helper");
      const reply = ctx.messages.find((m) => m.role === "tool" && m.toolCallId === helperCall?.id);
      return { toolCalls: [{ name: "submit_result", args: { result: { child: parse(String(reply?.content)) } } }] };
    }),
  });
  return [lead];
}
