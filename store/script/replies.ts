/**
 * The replies of the scripts: every word a script answers (`REPLY`), and
 * `decode`, which turns a reply into the port result, one place for every
 * script.
 */
import type { ClaimResult, PreviousLease, ScheduleRecord } from "../port.ts";
import type { AgentHead, InboxTask, MailItem } from "../types.ts";
import { loadToolRoleEntry } from "../../common/tool-registry.ts";
import type { ScriptName } from "../lua/scripts.gen.ts";
import { StoreReplyError } from "../script-runner.ts";
import { expandSnapshot } from "../snapshot-form.ts";

/** Reply words of every script, named once. */
export const REPLY = [
  "enqueued", "duplicate", "definition_conflict",
  "accepted", "resolved", "not_external", "delegated_call", "agent_not_found", "unknown_call", "turn_finished", "not_active",
  "claimed", "busy", "empty",
  "renewed", "lost",
  "applied", "fenced", "version", "turn", "tool_call_resolved", "cancel_pending",
  "head", "none", "list", "at", "count", "verdict",
  "written", "exists",
  "retry", "turn_failed", "stale", "reset", "conflict", "pong",
  "turn_not_started", "turn_not_found", "cancelled", "already_cancelled", "turn_started", "skipped", "absent",
  "fresh", "in_progress", "answered", "other_target",
  "created", "recorded", "entry",
  "allowed", "limited", "held", "released", "not_held",
  "conversation", "checkpoint", "deleted", "agent_deleted", "too_many_delayed",
  "approval_pending", "not_due", "decided", "decided_before", "not_awaiting_approval",
  "schedule", "replaced", "fired",
] as const;
type Word = (typeof REPLY)[number];
const WORDS = new Set<string>(REPLY);

type ClaimedReply = { epoch: number; head: AgentHead; mail: MailItem[]; previousLease: PreviousLease | null; input?: unknown };

/** A claim as a script answers it (claim, claim_next, and a commit that chained the next task). */
function claimedOf(c: ClaimedReply): Extract<ClaimResult, { status: "claimed" }> {
  // The input is stored once, apart from the task (store/inputs.ts); a task stored with it inline keeps it.
  const task: InboxTask | null = c.head.currentTask === null
    ? null
    : { ...structuredClone(c.head.currentTask), ...("input" in c ? { input: c.input } : {}) };
  return { status: "claimed", agentId: c.head.agentId, epoch: c.epoch, head: headOf(c.head), task, mail: c.mail, previousLease: c.previousLease };
}

/** A head as a script answers it, its snapshot served whole (store/snapshot-form.ts). */
function headOf(h: AgentHead): AgentHead {
  h.snapshot = expandSnapshot(h.snapshot);
  return h;
}

/** The pieces of a schedule as the scripts join them (store/lua/includes/schedule.lua). */
export interface ScheduleReply {
  record: Omit<ScheduleRecord, "nextTick" | "rev" | "lastFired" | "createdAt">;
  nextTick: number | null;
  rev: number;
  lastFired: ScheduleRecord["lastFired"];
  createdAt: number;
  input: unknown;
}

/** A schedule as a script answers it. */
export function scheduleOf(c: ScheduleReply): ScheduleRecord {
  const { record, input } = c;
  return {
    ...record, spec: { ...record.spec, input }, nextTick: c.nextTick, rev: c.rev, lastFired: c.lastFired, createdAt: c.createdAt,
  };
}

/** A fire's enqueue answer: `enqueued "t"`, `duplicate "t"` or `definition_conflict "name"`. */
export function enqueueOf(reply: string): unknown {
  const sp = reply.indexOf(" ");
  const word = reply.slice(0, sp);
  const v = JSON.parse(reply.slice(sp + 1));
  return word === "definition_conflict" ? { status: word, boundTo: v } : { status: word, turnId: v };
}

/** Turns a script reply into the result of the operation (one place for every script). */
export function decode(name: ScriptName, reply: string, ctx: { agentId?: string } = {}): unknown {
  // Long because it is one case per script: every reply is turned into a port result here and nowhere else.
  const sp = reply.indexOf(" ");
  const word = (sp < 0 ? reply : reply.slice(0, sp)) as Word;
  const payload = sp < 0 ? "" : reply.slice(sp + 1);
  if (!WORDS.has(word)) throw new StoreReplyError(`Script ${name} answered an unknown reply ${JSON.stringify(reply.slice(0, 80))}`);
  const json = () => JSON.parse(payload);
  switch (name) {
    case "enqueue_task":
      if (word === "agent_deleted") return { status: word, deletedAt: json() };
      if (word === "too_many_delayed") return { status: word, limit: json() };
      return word === "definition_conflict" ? { status: word, boundTo: json() } : { status: word, turnId: json() };
    case "deliver_tool_result":
      // 'resolved' is turned into duplicate / already_resolved by answerResolved (store/redelivery.ts).
      return word === "accepted" || word === "resolved" ? { status: word, record: json() } : { status: word };
    case "decide_approval":
      // 'decided_before' is turned into duplicate / conflict by answerDecided (store/approvals.ts).
      return word === "decided" || word === "decided_before" ? { status: word, record: json() } : { status: word };
    case "request_cancel":
      return word === "accepted" ? { status: word, turnId: json() } : { status: word };
    case "cancel_task":
      if (word === "cancelled" || word === "already_cancelled") return { status: "cancelled", already: word === "already_cancelled" };
      return { status: word };
    case "get_turn":
      return word === "turn" ? json() : null;
    case "skip_due_tool_call":
      return { status: word };
    case "claim":
    case "claim_next": {
      if (word === "claimed") return claimedOf(json());
      if (word === "schedule") return { status: "schedule_due", schedule: scheduleOf(json()) };
      if (word === "busy") return { status: "busy", agentId: ctx.agentId, leaseUntil: json() };
      if (word === "empty") return name === "claim" ? { status: "empty", agentId: ctx.agentId } : payload ? { status: "empty", ...json() } : { status: "empty" };
      return { status: word };
    }
    case "renew_lease":
      return word === "renewed" ? { status: word, leaseUntil: json() } : { status: word };
    case "commit": {
      if (word !== "applied") return { status: "conflict", reason: word };
      const { chained, ...applied } = json();
      return { status: word, ...applied, ...(chained ? { chained: claimedOf(chained) } : {}) };
    }
    case "record_claim_failure":
      return word === "retry" || word === "turn_failed" ? { status: word, ...json() } : { status: word };
    case "reset_turn":
      return word === "reset" ? { status: word, ...json() } : { status: word };
    case "ping":
      return undefined;
    case "delivery":
      if (word === "answered") return { status: word, response: json() };
      if (word === "in_progress") return { status: word, holdUntil: Number(payload) };
      return { status: word };
    case "rate_limit": {
      if (word === "allowed") return { status: "allowed" };
      const [bucket, wait] = payload.split(" ").map(Number);
      return { status: "limited", bucket, retryAfterMs: wait };
    }
    case "definition_sets":
      return (json() as Array<[string, number]>).map(([set, seenAt]) => ({ agents: set.split(","), seenAt }));
    case "target_lease": {
      if (word === "held") return { status: "held", leaseUntil: Number(payload) };
      if (word === "busy") {
        const sp2 = payload.indexOf(" ");
        return { status: "busy", leaseUntil: Number(payload.slice(0, sp2)), holder: payload.slice(sp2 + 1) };
      }
      return { status: word };
    }
    case "get_agent":
      return word === "head" ? headOf(json()) : null;
    case "read_conversation":
      return word === "conversation" ? json() : null;
    case "read_checkpoint": {
      if (word !== "checkpoint") return null;
      const c = json() as { snapshot: unknown };
      c.snapshot = expandSnapshot(c.snapshot);
      return c;
    }
    case "delete_agent":
      return { status: word };
    case "next_ready_at":
      return word === "at" ? Number(payload) : null;
    case "ready_count":
      return Number(payload);
    case "get_verdict":
      return word === "verdict" ? payload : null;
    case "put_verdict":
      return { status: word };
    case "create_fork":
    case "record_fork":
      return word === "created" || word === "recorded" ? { status: word, ...json() } : { status: word };
    case "list_queued_tasks":
      return (json() as InboxTask[]).map((t) => ({ turnId: t.turnId, enqueuedAt: t.enqueuedAt, ...(t.runAt !== undefined ? { runAt: t.runAt } : {}) }));
    case "list_agents":
      return (json() as Array<[string, number]>).map(([agentId, updatedAt]) => ({ agentId, updatedAt }));
    case "record_tool_method": {
      const r = json() as { added: "method" | "alias" | "none"; entry: { role?: unknown } };
      const entry = loadToolRoleEntry(String(r.entry?.role ?? ""), r.entry);
      if (!entry) throw new StoreReplyError(`Script ${name} answered an entry that is not an object`);
      return { status: "recorded", added: r.added, entry };
    }
    case "get_tool_role":
      return word === "entry" ? payload : null;
    case "list_tool_roles":
      return json();
    case "read_messages":
    case "read_events":
    case "get_tool_calls":
    case "due_tool_calls":
    case "list_verdicts":
      return json();
  }
}

