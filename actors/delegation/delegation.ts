/**
 * Delegation: a parent agent's call of an agent tool (agents/agent-tool.ts)
 * runs as a task of a child agent, and the child's terminal result comes
 * back as the call's outcome.
 *
 * Designed for crashes first. The parent and the child are different agents
 * under different hash tags, and a store script may touch one agent's keys
 * only, so "the child's turn ends" and "the parent's call is resolved" can
 * never be one atomic write. The protocol therefore has an outbox on the
 * child's side and an idempotent, repeatable relay:
 *
 * 1. Record before dispatch. The parent's model step records the call like
 *    any external call (pending, with the call's deadline) in the parent's
 *    commit. Only after that commit is applied is the child's task enqueued.
 * 2. Dispatch is idempotent. The child's id, its task's idempotency key and
 *    its proposed turn id are all derived from (parent id, parent turn, call
 *    id) (`childAgentId`, `delegationKey`, `childTurnIdOf`). Enqueueing again
 *    after a crash answers the first turn (`duplicate`, or `enqueued` from a
 *    store's replay guard, which sees the same proposed turn id), never a
 *    second task. The task goes through the child's inbox, claims and fencing like
 *    any other and carries a `DelegationLink` back to the parent.
 * 3. The outbox is the child's ended turn. The commit that ends the child's
 *    turn writes, atomically in the child's keys, its final snapshot (the
 *    verified `output`, or the `error`), the turn's status and the `task`
 *    event. Nothing else has to be written for the result to survive.
 * 4. Delivery is first-wins. The result reaches the parent only through
 *    `deliverChildResult`, which writes through the store's
 *    `deliverToolResult` (source `delegation`): the first delivery resolves
 *    the call and rings the parent; every later one changes nothing
 *    (`duplicate`, `already_resolved`, `turn_finished`).
 * 5. Relay until acknowledged. The child's host delivers right after the
 *    commit that ended its turn (the fast path). Should that worker die
 *    first, the parent pulls: a parent waiting in `waiting-tools` on a
 *    delegation is released with `runnableAt = now + pollMs`, so some worker
 *    claims it again; each such claim re-dispatches every pending delegation
 *    (idempotent, 2.) and delivers the result of every child whose turn has
 *    ended (`syncDelegations`). The parent's resolved call is the
 *    acknowledgement: once resolved, nothing is relayed for it again. The
 *    call's deadline still holds: the watchdog times it out like any call.
 * 6. Cancelling the parent's turn (or ending it otherwise while a delegation
 *    is pending, or timing a delegation out) cancels the child's turn, best
 *    effort after the commit that ended the parent's (a queued child task is
 *    removed; an active turn gets cancel mail). A delegated turn's commits
 *    stop at a pending cancel (store/port.ts invariant `firm-cancels`): the child's next
 *    commit after the cancel was accepted is refused and the claim that
 *    follows ends the turn cancelled, so a child in the middle of a model
 *    step never commits that step. A child whose worker dies before the
 *    parent's cancel is sent runs on; it delivers into a finished turn,
 *    which changes nothing.
 * 6a. Deleting a child (`DELETE /v1/agents/:childId`) leaves a deletion
 *    marker (store/port.ts invariant `deletion-marker`). The dispatch enqueues with
 *    `refuseDeleted`, so the parent's re-dispatch never creates the child
 *    again: it answers the call with `delegation_failed` (reason
 *    `child_deleted`). The delete route answers the call the same way at
 *    once when the child's turn was active (`answerDeletedChild`).
 * 7. Nesting is bounded: a call at a depth beyond `maxDepth` (default 3) is
 *    answered with the error outcome `delegation_depth_exceeded` and never
 *    dispatched.
 * 8. A child's usage (tokens, cost) travels with the result: the parent's
 *    host reads the child's usage when it applies the delivered result and
 *    passes it on the TOOL_RESULT event, so it counts toward the parent's
 *    spend limits (actors/spend/spend-limit.ts) and is reproduced by a replay of the log.
 *
 * Timelines link both ways: the parent logs `delegation_started` with the
 * child's id, the child logs `delegated_by` with the parent's id, turn and
 * call.
 */
import type { DelegationSettings } from "../claim/context.ts";
import { checkOutcome } from "../../contracts/check.ts";
import { notApplied } from "../../common/contract-validation.ts";
import type { AnyAgent } from "../../agents/define.ts";
import { type AgentToolDefinition, childInputOf, isAgentTool } from "../../agents/agent-tool.ts";
import { InvalidConcurrencyKey, laneFields, taskConcurrencyKey } from "../../agents/concurrency-key.ts";
import { sha256Hex } from "../../common/hex.ts";
import { DefinitionError } from "../../errors/errors.ts";
import type { Outcome } from "../../common/outcome.ts";
import type { AgentContext, ChildUsage } from "../../machines/types.ts";
import type { DeliverToolResultResult, Store } from "../../store/port.ts";
import type { AgentHead, DelegationLink } from "../../store/types.ts";
import type { Clock, Logger } from "../runtime.ts";

export const DEFAULT_MAX_DELEGATION_DEPTH = 3;
export const DEFAULT_DELEGATION_POLL_MS = 30_000;

// The settings are part of what the host is given (HostDeps, actors/claim/context.ts).
export type { DelegationSettings };

export interface DelegationDeps {
  store: Store;
  clock: Clock;
  logger: Logger;
  agents: ReadonlyMap<string, AnyAgent>;
}

/** One pending call of an agent tool, as the parent's host sees it. */
export interface DelegatedCall {
  parentAgentId: string;
  parentAgentName: string;
  parentTurnId: string;
  toolCallId: string;
  tool: AgentToolDefinition<any>;
  args: unknown;
  /** Depth of the child (the parent's depth + 1). */
  depth: number;
  /** The parent turn's concurrency key: the child's, unless its definition derives one (agents/concurrency-key.ts). */
  parentKey?: string;
}

async function callHash(parentId: string, turnId: string, toolCallId: string): Promise<string> {
  return await sha256Hex(JSON.stringify(["gatehouse.delegation", parentId, turnId, toolCallId]));
}

/**
 * The child's agent id: `<parent id>.<tool name>.<16 hex>`, the hex from
 * SHA-256 of (parent id, turn, call id); the parent id is cut so the whole
 * stays within 128 id characters.
 */
export async function childAgentId(parentId: string, turnId: string, toolCallId: string, toolName: string): Promise<string> {
  const tail = `.${toolName}.${(await callHash(parentId, turnId, toolCallId)).slice(0, 16)}`;
  return parentId.slice(0, 128 - tail.length) + tail;
}

/** The idempotency key of the child's task (first-wins per child). */
export async function delegationKey(parentId: string, turnId: string, toolCallId: string): Promise<string> {
  return `delegation:${(await callHash(parentId, turnId, toolCallId)).slice(0, 32)}`;
}

/** The turn id proposed for the child's task (used only by the first enqueue). */
export async function childTurnIdOf(parentId: string, turnId: string, toolCallId: string): Promise<string> {
  return `turn_d${(await callHash(parentId, turnId, toolCallId)).slice(32, 48)}`;
}

/** The agent tool a call names, or undefined. */
export function agentToolOf(agent: AnyAgent, name: string): AgentToolDefinition<any> | undefined {
  const t = agent.offeredTools.find((x) => x.name === name);
  return isAgentTool(t) ? t : undefined;
}

/** The depth of an agent's current turn: 0 for a top-level task, the link's depth for a delegated one. */
export function depthOf(link: DelegationLink | undefined): number {
  return link && Number.isSafeInteger(link.depth) && link.depth > 0 ? link.depth : 0;
}

/** The pending calls of a context that are delegations. */
export function pendingDelegations(agent: AnyAgent, context: AgentContext): Array<[string, AgentToolDefinition<any>, unknown]> {
  const out: Array<[string, AgentToolDefinition<any>, unknown]> = [];
  for (const [id, p] of Object.entries(context.pending)) {
    const tool = p.external ? agentToolOf(agent, p.name) : undefined;
    if (tool) out.push([id, tool, p.args]);
  }
  return out;
}

export type DispatchResult =
  | { status: "enqueued" | "duplicate"; childAgentId: string; childTurnId: string }
  /** The child's definition derived an invalid concurrency key: nothing was enqueued; the call fails. */
  | { status: "invalid_concurrency_key"; childAgentId: string; message: string }
  | { status: "definition_conflict"; childAgentId: string; boundTo: string }
  | { status: "agent_deleted"; childAgentId: string; childTurnId: string };

/** Enqueues the child's task, or finds the one enqueued before (idempotent). */
export async function dispatchChild(deps: DelegationDeps, call: DelegatedCall): Promise<DispatchResult> {
  const child = call.tool.delegate;
  const id = await childAgentId(call.parentAgentId, call.parentTurnId, call.toolCallId, call.tool.name);
  const link: DelegationLink = {
    parentAgentId: call.parentAgentId,
    parentAgentName: call.parentAgentName,
    toolName: call.tool.name,
    parentTurnId: call.parentTurnId,
    toolCallId: call.toolCallId,
    depth: call.depth,
  };
  const input = childInputOf(call.tool, call.args);
  let key: string | undefined;
  try {
    key = taskConcurrencyKey(child, undefined, {
      agentId: id, agentName: child.name, input, via: "delegation", ...(call.parentKey !== undefined ? { parentKey: call.parentKey } : {}),
    });
  } catch (err) {
    if (err instanceof InvalidConcurrencyKey) return { status: "invalid_concurrency_key", childAgentId: id, message: err.message };
    throw err;
  }
  const r = await deps.store.enqueueTask({
    agentId: id,
    agentName: child.name,
    workerTarget: child.workerTarget,
    input,
    options: { delegation: link },
    ...laneFields(key, undefined),
    idempotencyKey: await delegationKey(call.parentAgentId, call.parentTurnId, call.toolCallId),
    turnId: await childTurnIdOf(call.parentAgentId, call.parentTurnId, call.toolCallId),
    now: deps.clock.now(),
    // A child deleted once is never created again by this call (store/port.ts invariant `deletion-marker`).
    refuseDeleted: true,
  });
  if (r.status === "definition_conflict") return { status: r.status, childAgentId: id, boundTo: r.boundTo };
  if (r.status === "agent_deleted") {
    return { status: r.status, childAgentId: id, childTurnId: await childTurnIdOf(call.parentAgentId, call.parentTurnId, call.toolCallId) };
  }
  // A dispatch is never delayed, so the bound on delayed tasks cannot refuse it.
  if (r.status === "too_many_delayed") throw new Error("the store refused an immediate task as a delayed one");
  return { status: r.status, childAgentId: id, childTurnId: r.turnId };
}

interface PersistedLike {
  value?: unknown;
  context?: Partial<AgentContext>;
}

/** The outcome a parent receives for a child's ended turn (`done`: its output, verified when it has a verifier). */
export function outcomeOfEndedTurn(
  childId: string,
  childTurnId: string,
  status: string,
  output: unknown,
  error: { reason: string; message: string } | null,
): Outcome {
  if (status === "done") return { ok: true, value: output === undefined ? null : output };
  const reason = error?.reason ?? (status === "cancelled" ? "cancelled" : "failed");
  return {
    ok: false,
    error: {
      type: "delegation_failed",
      message: `Agent "${childId}" failed its task: ${reason}${error?.message ? `: ${error.message}` : ""}`,
      retryable: false,
      metadata: { childAgentId: childId, childTurnId, reason },
    },
  };
}

/** What the parent's call is answered with once its child was deleted (`DELETE /v1/agents/:childId`). */
export function deletedChildOutcome(childId: string, childTurnId: string): Outcome {
  return outcomeOfEndedTurn(childId, childTurnId, "failed", null, { reason: "child_deleted", message: "the agent was deleted" });
}

/**
 * The fast path of a child's deletion (routes/agent-delete.ts): answers the parent's call with
 * `delegation_failed` (`child_deleted`) right after the delete. `head` is the child as read before the
 * delete; nothing happens for an agent that is not a linked child with its turn active. A child deleted
 * while its task was still queued reaches the parent at its next poll, through the refused dispatch.
 */
export async function answerDeletedChild(
  store: Store,
  agents: ReadonlyMap<string, AnyAgent>,
  head: AgentHead,
  now: number,
): Promise<DeliverToolResultResult | null> {
  const task = head.currentTask;
  const link = task?.options?.delegation;
  if (!task || !link || head.activeTurnId !== task.turnId || !(await isLinkedChild(head.agentId, link))) return null;
  return await deliverChildResult(store, {
    link, childAgentId: head.agentId, childTurnId: task.turnId, outcome: deletedChildOutcome(head.agentId, task.turnId),
    tool: linkTool(agents, link), now,
  });
}

/** Pages of the child's log read, at most, to find an older turn's `task` event. */
const MAX_EVENT_PAGES = 50;

/**
 * The child's result for its turn, read from its outbox (the ended turn):
 * null while the turn is queued or active, or when the child is unknown.
 */
export async function childOutcome(store: Store, childId: string, childTurnId: string): Promise<Outcome | null> {
  const turn = await store.getTurn(childId, childTurnId);
  if (!turn || turn.status === "queued" || turn.status === "active") return null;
  if (turn.status === "cancelled") return outcomeOfEndedTurn(childId, childTurnId, "cancelled", null, null);
  const head = await store.getAgent(childId);
  // The snapshot's own state: the head's says `running` once a claim takes the next task, before the
  // snapshot leaves this turn (store/port.ts invariant `turn-start`).
  const snapshot = head?.snapshot as PersistedLike | null | undefined;
  const ctx = snapshot?.context;
  const state = snapshot?.value;
  if (ctx && ctx.turnId === childTurnId && (state === "done" || state === "failed")) {
    return outcomeOfEndedTurn(childId, childTurnId, state, ctx.output, ctx.error ?? null);
  }
  // The child went on to another turn (someone else gave it a task): its log has this turn's end.
  let after = 0;
  for (let page = 0; page < MAX_EVENT_PAGES; page++) {
    const events = await store.readEvents(childId, after, 500);
    if (events.length === 0) break;
    for (const e of events) {
      const d = e.data as { turnId?: unknown; status?: unknown; deliverable?: unknown; error?: unknown };
      if (e.type === "task" && d.turnId === childTurnId && typeof d.status === "string") {
        return outcomeOfEndedTurn(childId, childTurnId, d.status, d.deliverable, (d.error as { reason: string; message: string }) ?? null);
      }
      after = e.id;
    }
  }
  return outcomeOfEndedTurn(childId, childTurnId, "failed", null, { reason: "ended", message: "the turn ended without a recorded result" });
}

/** What a child spent (its agent's usage: a child is private to one call, so all of it is the call's). */
export function childUsageOf(head: AgentHead | null): ChildUsage | undefined {
  const u = (head?.snapshot as PersistedLike | null)?.context?.usage;
  if (!u) return undefined;
  return { inputTokens: u.inputTokens ?? 0, outputTokens: u.outputTokens ?? 0, cost: u.cost ?? 0 };
}

export interface ChildResultDelivery {
  link: DelegationLink;
  childAgentId: string;
  childTurnId: string;
  outcome: Outcome;
  /** The agent tool of the call, when this process knows the parent's definition (its `deliverable` applies). */
  tool: AgentToolDefinition<any> | undefined;
  now: number;
}

/**
 * THE boundary where a child's result becomes its parent's tool result.
 * Every delivery (the child's push, the parent's pull) goes through here,
 * into the store's first-wins `deliverToolResult`; checks on the result
 * (the call's `deliverable`) belong here and nowhere else.
 */
export async function deliverChildResult(store: Store, d: ChildResultDelivery): Promise<DeliverToolResultResult> {
  // The call's deliverable applies here, by the one contract check of every boundary (contracts/check.ts). It is
  // pure, so the push and a later pull of the same result check to the same outcome (a duplicate stays one).
  const checked = d.tool ? checkOutcome(d.tool, d.outcome) : { outcome: d.outcome, contractValidation: notApplied() };
  return await store.deliverToolResult({
    agentId: d.link.parentAgentId,
    turnId: d.link.parentTurnId,
    toolCallId: d.link.toolCallId,
    outcome: checked.outcome,
    afterExecution: "continue",
    source: "delegation",
    contractValidation: checked.contractValidation,
    now: d.now,
  });
}

/** The agent tool a link names, when this process has the parent's definition. */
export function linkTool(agents: ReadonlyMap<string, AnyAgent>, link: DelegationLink): AgentToolDefinition<any> | undefined {
  const parent = agents.get(link.parentAgentName);
  const t = parent?.tools.find((x) => x.name === link.toolName);
  return isAgentTool(t) ? t : undefined;
}

/**
 * Is `agentId` the child the link's call created? A fork of a child carries
 * its task's link too, but is another agent: only the child itself answers
 * the parent's call.
 */
export async function isLinkedChild(agentId: string, link: DelegationLink): Promise<boolean> {
  return agentId === await childAgentId(link.parentAgentId, link.parentTurnId, link.toolCallId, link.toolName);
}

/**
 * The push after a child's turn ended: delivers the result to the parent.
 * A failure is logged and left to the parent's pull (see the header, 5.).
 */
export async function pushChildResult(
  deps: DelegationDeps,
  childId: string,
  link: DelegationLink,
  turn: { turnId: string; status: string; output: unknown; error: { reason: string; message: string } | null },
): Promise<void> {
  try {
    const r = await deliverChildResult(deps.store, {
      link, childAgentId: childId, childTurnId: turn.turnId,
      outcome: outcomeOfEndedTurn(childId, turn.turnId, turn.status, turn.output, turn.error),
      tool: linkTool(deps.agents, link), now: deps.clock.now(),
    });
    deps.logger.info("delegation_delivered", { childAgentId: childId, parentAgentId: link.parentAgentId, toolCallId: link.toolCallId, status: r.status });
  } catch (err) {
    deps.logger.warn("delegation delivery failed; the parent pulls it", { childAgentId: childId, parentAgentId: link.parentAgentId, error: String(err) });
  }
}

/**
 * Dispatches (again) every pending delegation of a parent and, with `pull`,
 * delivers the result of each child whose turn has ended (see the header, 2.
 * and 5.). The first dispatch, right after the commit that recorded the
 * calls, has nothing to pull (no child of a call recorded a moment ago can
 * have run). Never throws: a failure is logged, the next poll tries again.
 */
export async function syncDelegations(deps: DelegationDeps, calls: DelegatedCall[], pull: boolean): Promise<void> {
  await Promise.all(calls.map(async (call) => {
    try {
      const r = await dispatchChild(deps, call);
      const link: DelegationLink = {
        parentAgentId: call.parentAgentId, parentAgentName: call.parentAgentName, toolName: call.tool.name,
        parentTurnId: call.parentTurnId, toolCallId: call.toolCallId, depth: call.depth,
      };
      if (r.status === "definition_conflict") {
        // The derived id is taken by an agent of another definition: the call cannot run.
        await deliverChildResult(deps.store, {
          link, childAgentId: r.childAgentId, childTurnId: "",
          outcome: {
            ok: false,
            error: {
              type: "delegation_conflict",
              message: `Cannot delegate to agent "${r.childAgentId}": the id is bound to definition "${r.boundTo}"`,
              retryable: false,
              metadata: { childAgentId: r.childAgentId, boundTo: r.boundTo },
            },
          },
          tool: call.tool, now: deps.clock.now(),
        });
        return;
      }
      if (r.status === "invalid_concurrency_key") {
        await deliverChildResult(deps.store, {
          link, childAgentId: r.childAgentId, childTurnId: "", tool: call.tool, now: deps.clock.now(),
          outcome: { ok: false, error: { type: "invalid_concurrency_key", message: r.message, retryable: false, metadata: { childAgentId: r.childAgentId } } },
        });
        return;
      }
      if (r.status === "agent_deleted") {
        // The child was deleted (store/port.ts invariant `deletion-marker`): the call fails, and no child is created again.
        const d = await deliverChildResult(deps.store, {
          link, childAgentId: r.childAgentId, childTurnId: r.childTurnId, outcome: deletedChildOutcome(r.childAgentId, r.childTurnId),
          tool: call.tool, now: deps.clock.now(),
        });
        deps.logger.info("delegation_child_deleted", { parentAgentId: call.parentAgentId, toolCallId: call.toolCallId, childAgentId: r.childAgentId, status: d.status });
        return;
      }
      // A store may answer a repeated enqueue `enqueued` (its replay guard sees the same proposed turn id)
      // rather than `duplicate`; either way there is one task, so the child's turn is looked at in both cases.
      if (r.status === "enqueued") {
        deps.logger.info("delegation_dispatched", { parentAgentId: call.parentAgentId, toolCallId: call.toolCallId, childAgentId: r.childAgentId });
      }
      if (!pull) return;
      const outcome = await childOutcome(deps.store, r.childAgentId, r.childTurnId);
      if (outcome) {
        const d = await deliverChildResult(deps.store, {
          link, childAgentId: r.childAgentId, childTurnId: r.childTurnId, outcome, tool: call.tool, now: deps.clock.now(),
        });
        deps.logger.info("delegation_pulled", { parentAgentId: call.parentAgentId, toolCallId: call.toolCallId, childAgentId: r.childAgentId, status: d.status });
      }
    } catch (err) {
      deps.logger.warn("delegation sync failed", { parentAgentId: call.parentAgentId, toolCallId: call.toolCallId, error: String(err) });
    }
  }));
}

/** Cancels the children of calls the parent no longer waits for (sent once, after the parent's commit; see the header, 6.). */
export async function cancelChildren(
  deps: DelegationDeps,
  parentAgentId: string,
  parentTurnId: string,
  calls: Array<{ toolCallId: string; toolName: string }>,
  reason: string,
): Promise<void> {
  await Promise.all(calls.map(async (c) => {
    try {
      const childId = await childAgentId(parentAgentId, parentTurnId, c.toolCallId, c.toolName);
      const turnId = await childTurnIdOf(parentAgentId, parentTurnId, c.toolCallId);
      const now = deps.clock.now();
      // The child's turn is the one its first enqueue proposed (the key makes later enqueues duplicates).
      const r = await deps.store.requestCancel({ agentId: childId, turnId, reason, now });
      if (r.status === "turn_not_started") await deps.store.cancelTask({ agentId: childId, turnId, reason, now });
      deps.logger.info("delegation_cancelled", { parentAgentId, toolCallId: c.toolCallId, childAgentId: childId, status: r.status });
    } catch (err) {
      deps.logger.warn("could not cancel a child agent", { parentAgentId, toolCallId: c.toolCallId, error: String(err) });
    }
  }));
}

/** Refuses bad delegation settings with a DefinitionError naming the field. */
export function checkDelegationSettings(s: DelegationSettings | undefined): void {
  if (s === undefined) return;
  if (!s || typeof s !== "object") throw new DefinitionError("createGatehouse(): delegation must be an object { maxDepth?, pollMs? }", { key: "delegation" });
  if (s.maxDepth !== undefined && (!Number.isSafeInteger(s.maxDepth) || s.maxDepth < 0 || s.maxDepth > 32)) {
    throw new DefinitionError(`createGatehouse(): delegation.maxDepth must be an integer from 0 to 32, got ${JSON.stringify(s.maxDepth)}`, { key: "delegation.maxDepth" });
  }
  if (s.pollMs !== undefined && (!Number.isSafeInteger(s.pollMs) || s.pollMs < 1)) {
    throw new DefinitionError(`createGatehouse(): delegation.pollMs must be a positive integer, got ${JSON.stringify(s.pollMs)}`, { key: "delegation.pollMs" });
  }
}
