/**
 * The replies of the tuned path (commit.lua, claim.lua, claim_next.lua): their
 * words (`REPLY`) and `decode`, which turns such a reply into the port
 * result; and the reply pieces several scripts share (a claim, a head, a
 * schedule, an enqueue answer). Every other script's words and decoding are
 * in its descriptor (store/script/operation.ts), beside its port method.
 */
import type { ClaimResult, PreviousLease, ScheduleRecord } from "../port.ts";
import type { AgentHead, InboxTask, MailItem } from "../types.ts";
import type { ScriptName } from "../lua/scripts.gen.ts";
import { StoreReplyError } from "../script-runner.ts";
import { expandSnapshot } from "../snapshot-form.ts";

/** Reply words of the commit and the claims, named once. */
export const REPLY = [
  "agent_not_found", "claimed", "busy", "empty", "schedule", "need",
  "applied", "fenced", "version", "turn", "tool_call_resolved", "cancel_pending", "slot",
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
export function headOf(h: AgentHead): AgentHead {
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

/** Turns a reply of the commit or a claim into the result of the operation. */
export function decode(name: ScriptName, reply: string, ctx: { agentId?: string } = {}): unknown {
  const sp = reply.indexOf(" ");
  const word = (sp < 0 ? reply : reply.slice(0, sp)) as Word;
  const payload = sp < 0 ? "" : reply.slice(sp + 1);
  if (!WORDS.has(word)) throw new StoreReplyError(`Script ${name} answered an unknown reply ${JSON.stringify(reply.slice(0, 80))}`);
  const json = () => JSON.parse(payload);
  switch (name) {
    case "claim":
    case "claim_next": {
      if (word === "claimed") return claimedOf(json());
      if (word === "schedule") return { status: "schedule_due", schedule: scheduleOf(json()) };
      if (word === "busy") return { status: "busy", agentId: ctx.agentId, leaseUntil: json() };
      // The sharded layout: the claim would run under a limited key; reserve in its slot first (key-slots.ts).
      if (word === "need") return { status: "need", ...json() };
      if (word === "empty") return name === "claim" ? { status: "empty", agentId: ctx.agentId } : payload ? { status: "empty", ...json() } : { status: "empty" };
      return { status: word };
    }
    case "commit": {
      // A refusal that released the lease names a freed reservation of the sharded layout (key-slots.ts).
      if (word !== "applied") return { status: "conflict", reason: word, ...(payload ? json() : {}) };
      const { chained, ...applied } = json();
      return { status: word, ...applied, ...(chained ? { chained: claimedOf(chained) } : {}) };
    }
  }
}

