/**
 * The in-process tools of a claim (actors/host/effects.ts, state `waiting-tools`):
 * run every pending in-process call of the step at once, check each result
 * against its tool's contract, and feed the results to the machine in the
 * order of the calls.
 *
 * Invariants:
 * - Only what the turn offered runs (actors/steps/tool-specs.ts): a call of any
 *   other name, the completion tool the turn does not finish with included,
 *   is answered with the error outcome `tool_not_offered` and never reaches
 *   a tool. Finishing is the statechart's decision, from the turn's config.
 * - Every tool result passes the one contract check (contracts/check.ts)
 *   before the machine, the log or the model sees it (external results pass
 *   it in the delivery route). Its `contractValidation` is on the call's
 *   record and on the `tool_result` event. Preconditions of contracted tools
 *   run before `execute` (contracts/preconditions.ts). A result the contract
 *   refuses goes back to the model; it never ends the turn.
 * - No tool starts once the lease has run out (actors/claim/lease-keeper.ts), and a
 *   tool's signal is the lease-checking tool signal.
 * - A tool's result enters the turn only within the JSON limits (over them:
 *   `invalid_result`); a throw is an error outcome, never a failed claim.
 * - In a fork, an in-process call that was pending at the fork point and is
 *   listed in the task's `forkedUnresolved` (routes/fork.ts) is answered with
 *   the error outcome `forked_unresolved` and never reaches its tool.
 * - Results of an aborted attempt are dropped: nothing is applied or logged.
 *   The process keeps them anyway (actors/claim/kept-results.ts), and a call whose
 *   result it keeps is not run again by a later claim in this process: the
 *   kept result is applied and committed instead (`tool_result_kept` is
 *   logged). A tool runs at most once per call in one living process, as long
 *   as the bound of kept results is not passed.
 * - A call that waits for a person's approval does not run until the store's
 *   record says approved (actors/steps/approvals.ts); it then runs with the
 *   arguments the person edited, if any (checked like the model's), and its
 *   TOOL_RESULT carries them as `editedArgs`.
 * - The tool registry hears of every successful call (actors/registry/claim-view.ts);
 *   a registry failure is logged and never fails the turn.
 * - A handoff call (agents/handoff.ts) is answered by actors/steps/handoff.ts, not by a tool; its
 *   successful result carries the switch of definition in its TOOL_RESULT and is committed at once
 *   (it never rides with the next step's commit).
 */
import { isAgentTool } from "../../agents/agent-tool.ts";
import { isHandoffTool } from "../../agents/handoff.ts";
import { type ContractValidation, notApplied } from "../../common/contract-validation.ts";
import { checkJsonValue, DEFAULT_JSON_LIMITS, describeViolation } from "../../common/json-bounds.ts";
import { type AfterExecution, isMadeOutcome, normalizeOutcome, type Outcome } from "../../common/outcome.ts";
import { checkOutcome } from "../../contracts/check.ts";
import { checkPreconditions } from "../../contracts/preconditions.ts";
import { ToolError } from "../../errors/errors.ts";
import type { AgentContext } from "../../machines/types.ts";
import type { AnyTool, ToolTermination } from "../../tools/define.ts";
import { prepareArgs } from "../../tools/specs.ts";
import type { ClaimContext, HostDeps } from "../claim/context.ts";
import { type Happening, log } from "./happened.ts";
import { jsonValue, WATCHDOG_GRACE_MS } from "./model-step.ts";
import { gateDefinition, offeredToolNames } from "./tool-specs.ts";
import { handoffOutcome, handoffSwitch } from "./handoff.ts";
import { awaitsApproval } from "./approvals.ts";
import { endSpan, startSpan } from "../observe/tracing.ts";

/** What the tool runner reads: the definitions, the claim's task, the lease, the approvals, the kept results. */
export type ToolsInput = Pick<
  ClaimContext, "agent" | "binding" | "agentId" | "epoch" | "abort" | "delegation" | "spans" | "approved"
> & {
  deps: Pick<HostDeps, "clock" | "logger" | "agents" | "toolTimeoutMs" | "keptResults" | "jsonLimits">;
  claim: { task: { turnId: string; options: { forkedUnresolved?: readonly string[] } } | null };
  lease: Pick<ClaimContext["lease"], "lapsed" | "toolSignal">;
};

/** What the tools made happen; `ride`: the results may ride with the next commit (see `runInProcessTools`). */
export interface ToolsRan {
  happened: Happening[];
  ride: boolean;
}

type Executed = { outcome: Outcome; afterExecution: AfterExecution };
/** `ran`: the tool itself ran (its result is worth keeping); false for refusals that never reached it. */
type Dispatched = Executed & { contractValidation: ContractValidation; ran: boolean };

/**
 * Runs the pending in-process calls of the turn in `context` and returns their results as what happened,
 * in the order of the calls: each result is logged, and (while the turn still waits on tools: an earlier
 * result may end it) resolves its call and is fed to the machine. `ride` is true when the results may ride
 * with the next commit instead of being committed now (one commit per step, docs/architecture.md "Commits
 * and crash points"): every tool of the batch is `retrySafe` and every call's deadline is at least
 * WATCHDOG_GRACE_MS away, so the model step that follows is unlikely to outlast it (if it does, the
 * watchdog's timeout wins and that step's commit is refused).
 */
export async function runInProcessTools(ctx: ToolsInput, context: AgentContext): Promise<ToolsRan> {
  const { clock } = ctx.deps;
  const tId = context.turnId!;
  // A call that waits for a person's approval does not run (actors/steps/approvals.ts).
  const todo = Object.entries(context.pending).filter(([id, p]) => !p.external && !awaitsApproval(ctx, id, p));
  const kept = ctx.deps.keptResults;
  const results = await Promise.all(todo.map(async ([id, p]) => {
    const started = clock.now();
    // This process ran the call already and its result never got committed (the claim lost the agent
    // in between): commit that result instead of running the tool again.
    const was = kept?.get(ctx.agentId, tId, id);
    if (was) {
      ctx.deps.logger.info("tool_result_kept", { agentId: ctx.agentId, turnId: tId, toolCallId: id, name: p.name, epoch: ctx.epoch });
      return { id, name: p.name, ...was, ran: false, ms: 0, edited: ctx.approved.get(id)?.args };
    }
    const span = startSpan("gatehouse.tool_call", { ...ctx.spans.ids, "gatehouse.tool_call_id": id, "gatehouse.tool": p.name }, ctx.spans.turn);
    // A person who approved the call may have edited its arguments (POST …/approvals `args`): those run.
    const edited = ctx.approved.get(id)?.args;
    const r = await dispatch(ctx, context, tId, id, p.name, edited ?? p.args);
    endSpan(span, { "gatehouse.tool_ok": r.outcome.ok }, r.outcome.ok ? undefined : r.outcome.error.type);
    // Kept until a commit resolving the call applies, even when this attempt was aborted meanwhile; not
    // when the tool threw after the abort (it stopped because the lease was gone, and runs again).
    if (kept && r.ran && !(ctx.abort.signal.aborted && !r.outcome.ok)) {
      kept.keep(ctx.agentId, tId, id, { outcome: r.outcome, afterExecution: r.afterExecution, contractValidation: r.contractValidation });
    }
    return { id, name: p.name, ...r, ms: clock.now() - started, edited };
  }));
  if (ctx.abort.signal.aborted) return { happened: [], ride: false };
  const happened: Happening[] = [];
  let handedOff = false;
  for (const r of results) {
    happened.push(log("tool_result", {
      toolCallId: r.id, name: r.name, ok: r.outcome.ok, outcome: r.outcome, afterExecution: r.afterExecution, durationMs: r.ms,
      contractValidation: r.contractValidation,
    }));
    // A handoff's result switches the definition in this same commit (actors/steps/handoff.ts).
    const handoff = handoffSwitch(ctx, context, r.id, r.name, r.outcome);
    handedOff ||= handoff !== undefined;
    const resolve: Happening = {
      kind: "resolve-call", result: { toolCallId: r.id, outcome: r.outcome, afterExecution: r.afterExecution, contractValidation: r.contractValidation },
    };
    const event: Happening = {
      kind: "event",
      event: {
        type: "TOOL_RESULT", at: clock.now(), toolCallId: r.id, outcome: r.outcome, afterExecution: r.afterExecution,
        ...(handoff ? { handoff: handoff.handoff } : {}), ...(r.edited ? { editedArgs: r.edited } : {}),
      },
    };
    // Only while the turn still waits on tools: an earlier result may have ended it.
    happened.push({ kind: "while", state: "waiting-tools", then: handoff ? [resolve, handoff.logged, event] : [resolve, event] });
  }
  for (const r of results) if (r.outcome.ok) happened.push({ kind: "tool-used", name: r.name });
  const now = clock.now();
  const ride = !handedOff && todo.length > 0 && todo.every(([id, p]) =>
    ctx.agent.offeredTools.find((t) => t.name === p.name)?.retrySafe === true && (ctx.approved.get(id)?.deadline ?? p.deadline) - now >= WATCHDOG_GRACE_MS
  );
  return { happened, ride };
}

/** Runs one in-process call and checks its result against the tool's contract. */
async function dispatch(ctx: ToolsInput, context: AgentContext, tId: string, toolCallId: string, name: string, args: unknown): Promise<Dispatched> {
  const tool: AnyTool | undefined = ctx.agent.offeredTools.find((t) => t.name === name);
  const r = await execute(ctx, context, tool, tId, toolCallId, name, args);
  if (!tool) return { ...r, contractValidation: notApplied(), ran: false };
  const checked = checkOutcome(tool, r.outcome);
  // A result refused by the contract goes back to the model; it never ends the turn.
  const afterExecution = checked.outcome.ok ? r.afterExecution : "continue";
  return { outcome: checked.outcome, afterExecution, contractValidation: checked.contractValidation, ran: r.ran };
}

/** Runs one in-process call: the refusals first (not offered, preconditions, arguments, nesting, lease), then the tool within its deadline. */
async function execute(
  ctx: ToolsInput, context: AgentContext, tool: AnyTool | undefined, tId: string, toolCallId: string, name: string, args: unknown,
): Promise<Executed & { ran: boolean }> {
  const { agent } = ctx;
  const { depth, maxDepth } = ctx.delegation;
  if (!tool) {
    // Not in the turn's specs: unknown, left out by allowedTools, or a completion tool this turn does not finish with.
    const offered = offeredToolNames(agent, gateDefinition(ctx.binding, agent)).join(", ");
    return {
      outcome: { ok: false, error: { type: "tool_not_offered", message: `Tool "${name}" is not offered in this turn; the offered tools are: ${offered}`, retryable: false } },
      afterExecution: "continue",
      ran: false,
    };
  }
  // Answered here, never by a tool, the same way on every run (actors/steps/handoff.ts): a fork may run it again.
  if (isHandoffTool(tool)) return { outcome: handoffOutcome(ctx, context, tool, toolCallId), afterExecution: "continue", ran: false };
  if (ctx.claim.task?.turnId === tId && ctx.claim.task.options.forkedUnresolved?.includes(toolCallId)) {
    // A fork taken while this call was pending (routes/fork.ts): the source may have run it already.
    return {
      outcome: {
        ok: false,
        error: {
          type: "forked_unresolved",
          message: `Tool "${name}" was not run: the call was pending when this agent was forked, and the source may already have run it`,
          retryable: false,
          metadata: { toolCallId },
        },
      },
      afterExecution: "continue",
      ran: false,
    };
  }
  const refused = checkPreconditions(tool, args);
  if (refused) return { outcome: refused, afterExecution: "continue", ran: false };
  const prepared = prepareArgs(tool, args);
  if (!prepared.ok) {
    return { outcome: { ok: false, error: { type: "invalid_arguments", message: prepared.message, retryable: true, metadata: { issues: jsonValue(prepared.issues) as Record<string, unknown> } } }, afterExecution: "continue", ran: false };
  }
  if (isAgentTool(tool) && !tool.execute) {
    return {
      outcome: {
        ok: false,
        error: {
          type: "delegation_depth_exceeded",
          message: `Cannot delegate to agent "${tool.delegate.name}": delegations nest at most ${maxDepth} deep and this call would be depth ${depth + 1}`,
          retryable: false,
          metadata: { depth: depth + 1, maxDepth },
        },
      },
      afterExecution: "continue",
      ran: false,
    };
  }
  if (!tool.execute) {
    return { outcome: { ok: false, error: { type: "invalid_arguments", message: `Tool "${name}" is external`, retryable: false } }, afterExecution: "continue", ran: false };
  }
  // No tool starts once the lease has run out: a process paused between two dispatches of one
  // step (Promise.all starts them one after the other) resumes here, past its lease.
  if (ctx.lease.lapsed()) {
    return { outcome: { ok: false, error: { type: "aborted", message: "the worker lost the agent before the tool started", retryable: true } }, afterExecution: "continue", ran: false };
  }
  return { ...(await callTool(ctx, tool, tool.execute, prepared.args, tId, toolCallId, name)), ran: true };
}

/** Calls the tool within its deadline and turns what it returned or threw into an outcome. */
async function callTool(
  ctx: ToolsInput, tool: AnyTool, run: NonNullable<AnyTool["execute"]>, args: unknown, tId: string, toolCallId: string, name: string,
): Promise<Executed> {
  const { deps, agentId } = ctx;
  const limits = deps.jsonLimits ?? DEFAULT_JSON_LIMITS;
  const timeoutMs = tool.timeoutMs ?? deps.toolTimeoutMs;
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    const value = await Promise.race([
      // The signal is made at the tool's first read of it (actors/claim/lease-keeper.ts).
      Promise.resolve(run(args as never, {
        agentId, turnId: tId, toolCallId,
        get signal() {
          return ctx.lease.toolSignal;
        },
      })),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new ToolError({ type: "timeout", message: `Tool "${name}" did not finish within ${timeoutMs} ms`, retryable: true })), timeoutMs);
      }),
    ]);
    const terminate = isTermination(value);
    let result = terminate ? value.value : value;
    // An outcome made by ok()/error() is the tool's outcome; any other value is an ok value.
    if (isMadeOutcome(result)) {
      const made = normalizeOutcome(result);
      if (!made.ok) {
        const meta = made.error.metadata !== undefined && !checkJsonValue(made.error.metadata, limits) ? { metadata: jsonValue(made.error.metadata) as Record<string, unknown> } : {};
        return {
          outcome: { ok: false, error: { type: String(made.error.type), message: String(made.error.message), retryable: made.error.retryable ?? false, ...meta } },
          afterExecution: "continue",
        };
      }
      result = made.value;
    }
    const over = checkJsonValue(result, limits);
    if (over) {
      return { outcome: { ok: false, error: { type: "invalid_result", message: `Tool "${name}" returned a value over the limits: ${describeViolation(over)}`, retryable: false } }, afterExecution: "continue" };
    }
    return { outcome: { ok: true, value: jsonValue(result) }, afterExecution: terminate ? "terminate" : "continue" };
  } catch (err) {
    if (err instanceof ToolError) {
      if (err.metadata && checkJsonValue(err.metadata, limits)) {
        return { outcome: { ok: false, error: { type: err.type, message: err.message, retryable: err.retryable } }, afterExecution: "continue" };
      }
      return { outcome: { ok: false, error: { type: err.type, message: err.message, retryable: err.retryable, ...(err.metadata ? { metadata: err.metadata } : {}) } }, afterExecution: "continue" };
    }
    return { outcome: { ok: false, error: { type: "tool_exception", message: (err as Error)?.message ?? String(err), retryable: false } }, afterExecution: "continue" };
  } finally {
    clearTimeout(timer);
  }
}

function isTermination(v: unknown): v is ToolTermination {
  return !!v && typeof v === "object" && (v as ToolTermination).__gatehouseTerminate === true;
}
