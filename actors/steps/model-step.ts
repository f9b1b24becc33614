/**
 * The model step of a claim (actors/host/effects.ts, state `running`): apply the
 * memory policy, call the model with retries, give every tool call its id,
 * and return what happened (actors/steps/happened.ts): the calls to record
 * in the next commit and `MODEL_STEP` (or `MODEL_FAILED`) for the machine.
 * The host applies it (actors/host/apply.ts).
 *
 * Invariants:
 * - A tool call is recorded (in the buffered commit) before it is dispatched:
 *   the host commits the step before any tool of it runs.
 * - Arguments enter the context, the log and the transcript only within the
 *   JSON limits: a response over them is a retryable model error.
 * - Nothing a model step does grows with the conversation except what the
 *   model is shown: the tool-call ids already used are kept next to the
 *   history (actors/conversation/tool-call-ids.ts: exactly the ids of the history's
 *   messages, changed only where the history changes), not rebuilt per step.
 * - A call of an external tool whose preconditions and arguments pass is
 *   recorded as external with the tool's deadline; every other call (a
 *   refused precondition, bad arguments, a delegation past the nesting bound)
 *   runs in process, where the tool runner answers it
 *   (actors/steps/tool-runner.ts).
 * - A call whose tool needs a person's approval is recorded with its pending
 *   approval and logged as `approval_requested` (actors/steps/approvals.ts).
 * - A call of an agent tool is recorded like an external call, marked
 *   `delegated`; the child's task is enqueued only after that commit applied
 *   (actors/delegation/delegation.ts).
 * - Once the attempt is aborted, no model call starts and nothing is applied.
 * - Streamed text goes out on the live channel as it arrives (`delta`, never
 *   a store write) and is stored only as the step's `chunk` events, with the
 *   step's commit: the stored record is unchanged by the live path.
 */
import type { AnyAgent } from "../../agents/define.ts";
import { isAgentTool } from "../../agents/agent-tool.ts";
import { checkJsonValue, DEFAULT_JSON_LIMITS, describeViolation } from "../../common/json-bounds.ts";
import { jsonClone } from "../../common/json.ts";
import { abortableSleep } from "../../common/sleep.ts";
import { checkPreconditions } from "../../contracts/preconditions.ts";
import { ModelError } from "../../errors/errors.ts";
import { classifyStep, completionCall, submittedValue } from "../../machines/agent.ts";
import { type AgentContext, type ModelToolCall, SUBMIT_RESULT } from "../../machines/types.ts";
import type { ModelResponse } from "../../models/types.ts";
import { prepareArgs } from "../../tools/specs.ts";
import type { AnyTool, ApprovalContext } from "../../tools/define.ts";
import { type EventWait, isEventName } from "../../common/event-name.ts";
import type { ClaimContext, HostDeps } from "../claim/context.ts";
import { agentToolOf, childAgentId } from "../delegation/delegation.ts";
import { type ConversationMemory, modelSummarizer, modelView, rollMemory } from "../conversation/memory.ts";
import { assignToolCallIds, UsedToolCallIds } from "../conversation/tool-call-ids.ts";
import { type Happening, log } from "./happened.ts";
import { agentToolSpecs, gateDefinition } from "./tool-specs.ts";
import { askApprovals } from "./approvals.ts";
import { handoffView } from "./handoff-view.ts";
import { endSpan, startSpan } from "../observe/tracing.ts";

/** In-process deadlines get this much slack so the tool's own timeout normally wins over the watchdog. */
export const WATCHDOG_GRACE_MS = 5_000;

/** What the model step reads: the definitions, the conversation and its memory, the delegation depth, the tool registry's block. */
export type ModelStepInput = Pick<
  ClaimContext,
  "agent" | "binding" | "agentId" | "abort" | "history" | "usedIds" | "memory" | "delegation" | "spans"
> & {
  deps: Partial<Pick<HostDeps, "agents">> & Pick<HostDeps, "clock" | "metrics" | "externalToolTimeoutMs" | "toolTimeoutMs" | "rebuildToolCallIds" | "jsonLimits" | "memory">;
  claim: { task: { input?: unknown } | null };
  registry: Pick<ClaimContext["registry"], "knownTools">;
};

/** Where streamed text goes as it arrives (the live channel's batcher; never a store write). */
export interface DeltaSink {
  push(text: string): void;
  flush(): void;
}

/**
 * Runs one model step of the turn in `context`: the memory policy, the model call (with retries), its calls
 * given ids and approvals. Returns what happened, in commit order: the step's events, its recorded calls
 * and `MODEL_STEP` (or `MODEL_FAILED`); nothing after the attempt stopped.
 */
export async function modelStep(ctx: ModelStepInput, context: AgentContext, deltas: DeltaSink | null = null): Promise<Happening[]> {
  const { deps, agent, abort } = ctx;
  const { clock } = deps;
  const out: Happening[] = [];
  const emit = (type: string, data: Record<string, unknown>) => void out.push(log(type, data));
  const step = context.step + 1;
  const tId = context.turnId!;
  emit("step", { phase: "started", step });
  const span = startSpan("gatehouse.model_step", { ...ctx.spans.ids, "gatehouse.step": step, "gen_ai.request.model": agent.model.name }, ctx.spans.turn);
  const started = clock.now();
  const memory = await rollHistory(ctx, tId, step, out);
  const { res, lastError, chunks } = await callModel(ctx, memory, tId, step, deltas, emit);
  deps.metrics?.stepDuration((clock.now() - started) / 1000);
  if (abort.signal.aborted || !res) {
    endSpan(span, {}, abort.signal.aborted ? "aborted" : lastError || "model failed");
    if (!abort.signal.aborted) out.push({ kind: "event", event: { type: "MODEL_FAILED", at: clock.now(), message: lastError || "model failed" } });
    return out;
  }
  const now = clock.now();
  const { calls, runMs } = await askApprovals(ctx, toolCallsOf(ctx, res, tId, step, now), tId, now);
  const usage = {
    inputTokens: Math.max(0, Math.trunc(res.usage?.inputTokens ?? 0)),
    outputTokens: Math.max(0, Math.trunc(res.usage?.outputTokens ?? 0)),
  };
  const cost = typeof res.cost === "number" && Number.isFinite(res.cost) ? res.cost : 0;
  const text = typeof res.text === "string" && res.text !== "" ? res.text : null;
  emit("step", { phase: "planning", step, text });
  for (const text of coalesceChunks(chunks)) emit("chunk", { step, text });
  const kind = classifyStep(calls, context.config);
  if (kind === "tools") await recordCalls(ctx, calls, tId, step, runMs, out);
  const completion = completionCall(calls, context.config);
  if (completion) emit("tool_call", { step, toolCallId: completion.id, name: completion.name, args: completion.args, external: false, builtin: true });
  if (completion?.name === SUBMIT_RESULT && kind === "submit") {
    const missing = missingResultFields(ctx.claim.task?.input, submittedValue(completion.args));
    // Availability first: missing result fields degrade with a warning, the turn still completes.
    if (missing.length > 0) emit("submit_result_degraded", { step, toolCallId: completion.id, missingFields: missing });
  }
  out.push({ kind: "event", event: { type: "MODEL_STEP", at: now, text, toolCalls: calls, usage, cost } });
  endSpan(span, {
    "gen_ai.usage.input_tokens": usage.inputTokens, "gen_ai.usage.output_tokens": usage.outputTokens,
    "gatehouse.tool_calls": calls.length,
  });
  emit("step", {
    phase: "completed", step, model: agent.model.name,
    llmUsage: usage, llmResponseCost: cost, toolCallIds: calls.map((c) => c.id),
  });
  return out;
}

const NO_AGENTS: ReadonlyMap<string, AnyAgent> = new Map<string, AnyAgent>();

type Emit = (type: string, data: Record<string, unknown>) => void;

/**
 * Calls the model up to `modelAttempts` times (backing off between retryable errors) with the system
 * message and the history as `memory` shows it; null when every attempt failed or the attempt stopped.
 */
async function callModel(
  ctx: ModelStepInput, memory: ConversationMemory, tId: string, step: number, live: DeltaSink | null, emit: Emit,
): Promise<{ res: ModelResponse | null; lastError: string; chunks: string[] }> {
  const { agent, agentId, abort, history } = ctx;
  const limits = ctx.deps.jsonLimits ?? DEFAULT_JSON_LIMITS;
  const tools = agentToolSpecs(agent, gateDefinition(ctx.binding, agent));
  const chunks: string[] = [];
  let res: ModelResponse | null = null;
  let lastError = "";
  const attempts = agent.modelAttempts ?? 3;
  // Deltas go out live as they arrive (not stored: the step's chunk events are the record).
  const onChunk = (t: string) => {
    chunks.push(t);
    live?.push(t);
  };
  for (let i = 0; i < attempts && !abort.signal.aborted; i++) {
    try {
      chunks.length = 0;
      res = await agent.model.generate({
        agentId, turnId: tId, step,
        messages: handoffView(modelView(history, memory, { role: "system", content: await systemMessage(ctx) }), agent, ctx.binding, ctx.deps.agents ?? NO_AGENTS),
        tools, signal: abort.signal, onChunk,
      }).finally(() => live?.flush());
      // Arguments enter the context, the log and the transcript: bounded before anything else sees them.
      for (const c of res.toolCalls ?? []) {
        const v = checkJsonValue(c.args, limits);
        if (v) {
          res = null;
          throw new ModelError(`Tool call "${String(c.name).slice(0, 64)}": ${describeViolation(v)}`, { retryable: true });
        }
      }
      break;
    } catch (err) {
      lastError = (err as Error)?.message ?? String(err);
      emit("model_error", { step, attempt: i + 1, message: lastError });
      if (err instanceof ModelError && !err.retryable) break;
      if (i + 1 < attempts) await abortableSleep(Math.min(2_000, 100 * 2 ** i), abort.signal);
    }
  }
  return { res, lastError, chunks };
}

/** The model's tool calls with their ids and deadlines; external only when the tool is external and the call may be dispatched. */
function toolCallsOf(ctx: ModelStepInput, res: ModelResponse, tId: string, step: number, now: number): ModelToolCall[] {
  const { deps, agent, history } = ctx;
  const { depth, maxDepth } = ctx.delegation;
  const raw = res.toolCalls ?? [];
  const callIds = assignToolCallIds(raw, deps.rebuildToolCallIds ? UsedToolCallIds.of(history) : ctx.usedIds, tId, step);
  return raw.map((c, i) => {
    const id = callIds[i];
    const tool = agent.offeredTools.find((t) => t.name === c.name);
    const args = c.args ?? {};
    // A delegation past the nesting bound runs as an in-process call that the tool runner answers with an error.
    if (tool?.external && !checkPreconditions(tool, args) && !(isAgentTool(tool) && depth + 1 > maxDepth)) {
      const prepared = prepareArgs(tool, args);
      const wait = prepared.ok ? eventWaitOf(tool, prepared.args as Record<string, unknown>, { agentId: ctx.agentId, turnId: tId, toolCallId: id }) : null;
      if (prepared.ok && wait !== false) {
        const timeout = wait?.timeoutMs ?? tool.timeoutMs ?? deps.externalToolTimeoutMs;
        return { id, name: c.name, args: jsonValue(prepared.args), external: true, deadline: now + timeout, ...(wait ? { event: wait.event } : {}) };
      }
    }
    const timeout = (tool?.timeoutMs ?? deps.toolTimeoutMs) + WATCHDOG_GRACE_MS;
    return { id, name: String(c.name), args: jsonValue(args), external: false, deadline: now + timeout };
  });
}

/**
 * The event a `waitFor` tool's call waits for: null for a tool without `waitFor`, false when `waitFor`
 * throws or answers no valid name or timeout (the call then runs in-process and fails `invalid_arguments`).
 */
function eventWaitOf(tool: AnyTool, args: Record<string, unknown>, ctx: ApprovalContext): EventWait | null | false {
  if (!tool.waitFor) return null;
  try {
    const w = tool.waitFor(args, ctx);
    if (!w || !isEventName(w.event)) return false;
    if (w.timeoutMs !== undefined && (!Number.isSafeInteger(w.timeoutMs) || w.timeoutMs <= 0)) return false;
    return { event: w.event, ...(w.timeoutMs !== undefined ? { timeoutMs: w.timeoutMs } : {}) };
  } catch {
    return false;
  }
}

/** The step's calls, recorded with the next commit (before any is dispatched), and the delegations announced. */
async function recordCalls(
  ctx: ModelStepInput, calls: ModelToolCall[], tId: string, step: number, runMs: ReadonlyMap<string, number>, out: Happening[],
): Promise<void> {
  const { agent, agentId } = ctx;
  const { depth } = ctx.delegation;
  for (const c of calls) {
    const delegated = c.external && agentToolOf(agent, c.name) !== undefined;
    out.push({
      kind: "record-call",
      call: {
        turnId: tId, toolCallId: c.id, name: c.name, args: c.args, external: c.external, deadline: c.deadline,
        ...(delegated ? { delegated: true } : {}),
        ...(c.approval ? { approval: { status: "pending" as const, runMs: runMs.get(c.id)! } } : {}),
        ...(c.event !== undefined ? { event: c.event } : {}),
      },
      delegated,
    });
    out.push(log("tool_call", { step, toolCallId: c.id, name: c.name, args: c.args, external: c.external, deadline: c.deadline, ...(c.event !== undefined ? { event: c.event } : {}) }));
    if (c.approval) out.push(log("approval_requested", { step, toolCallId: c.id, name: c.name, args: c.args, external: c.external, deadline: c.deadline }));
    const delegate = c.external ? agentToolOf(agent, c.name) : undefined;
    if (delegate) {
      const childId = await childAgentId(agentId, tId, c.id, c.name);
      out.push(log("delegation_started", { step, toolCallId: c.id, tool: c.name, childAgent: delegate.delegate.name, childAgentId: childId, depth: depth + 1 }));
    }
  }
  out.push(log("step", { phase: "executing", step, toolCallIds: calls.map((c) => c.id) }));
}

/**
 * Applies the memory policy before a model step (actors/conversation/memory.ts): the memory the model is
 * shown. A new summary is returned as happened (it rides with the next commit).
 */
async function rollHistory(ctx: ModelStepInput, turnId: string, step: number, out: Happening[]): Promise<ConversationMemory> {
  // The agent's memory policy, else the process's; none: every retained message.
  const policy = ctx.binding.memory ?? ctx.deps.memory;
  if (!policy) return ctx.memory;
  const how = policy.summarize ?? "truncate";
  const summarizer = how === "truncate" ? null : how === "model" ? modelSummarizer(ctx.agent.model, turnId, step) : how;
  const next = await rollMemory(ctx.history, ctx.memory, policy, {
    agentId: ctx.agentId, signal: ctx.abort.signal, summarizer,
    onError: (err) => out.push(log("summary_failed", { message: (err as Error)?.message ?? String(err) })),
  });
  if (!next) return ctx.memory;
  out.push({ kind: "summary", summary: next });
  out.push(log("memory_rolled", { through: next.through, summaryChars: next.content.length }));
  return { ...ctx.memory, summary: next };
}

/** The agent's instructions, and the `<known_tools>` block when the agent has tools and the registry knows any. */
async function systemMessage(ctx: ModelStepInput): Promise<string> {
  const block = await ctx.registry.knownTools();
  return block === "" ? ctx.agent.instructions : `${ctx.agent.instructions}\n\n${block}`;
}

/** A value as it enters the context and the log: its JSON form (`undefined`: null). */
export function jsonValue(v: unknown): unknown {
  return v === undefined ? null : jsonClone(v);
}

/** Streamed text is logged in pieces of at least this many characters (the last may be shorter). */
export const CHUNK_EVENT_CHARS = 512;

/**
 * Chunks are committed with the step, so logging every token delta as its own
 * event would only multiply events (a streaming model sends one per token);
 * consecutive deltas are joined into pieces of CHUNK_EVENT_CHARS or more.
 */
export function coalesceChunks(chunks: string[]): string[] {
  const out: string[] = [];
  let cur = "";
  for (const c of chunks) {
    cur += c;
    if (cur.length >= CHUNK_EVENT_CHARS) {
      out.push(cur);
      cur = "";
    }
  }
  if (cur !== "") out.push(cur);
  return out;
}

/**
 * A task may declare the fields its result must carry: an object input with
 * `resultFields: string[]`. Returns the declared fields the submitted value
 * lacks (all of them when the value is not an object); a malformed
 * declaration is ignored.
 */
export function missingResultFields(input: unknown, value: unknown): string[] {
  if (!input || typeof input !== "object" || Array.isArray(input)) return [];
  const fields = (input as { resultFields?: unknown }).resultFields;
  if (!Array.isArray(fields) || !fields.every((f) => typeof f === "string")) return [];
  if (!value || typeof value !== "object" || Array.isArray(value)) return [...fields];
  return fields.filter((f) => !(f in (value as Record<string, unknown>)));
}
