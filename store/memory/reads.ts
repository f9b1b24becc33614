/**
 * The reads of the memory store (store/port.ts `Reads`): they write nothing and
 * answer copies.
 * Each operation is a top-level function of the store's MemoryState;
 * store/memory.ts binds them to the store object.
 */
import type { AgentIndexEntry, ConcurrencyUsageRequest, ListAgentsRequest, Reads } from "../port.ts";
import { queuedTaskOf, usageOf } from "../lanes.ts";
import { checkTarget } from "../keys.ts";
import { laneRows } from "./lanes.ts";
import { normalizeRecord } from "../spelling.ts";
import { inputText } from "../inputs.ts";
import { turnStatus } from "./records.ts";
import { servedPage } from "../../common/event-form.ts";
import type { MemoryState } from "./state.ts";

/** The result type of the port method `K`. */
type Ret<K extends keyof Reads> = ReturnType<NonNullable<Reads[K]>>;

export async function getAgent(s: MemoryState, agentId: string): Ret<"getAgent"> {
  const { agents, copy } = s;
  const a = agents.get(agentId);
  return a ? copy(a.head) : null;
}

export async function getTurn(s: MemoryState, agentId: string, turnId: string): Ret<"getTurn"> {
  const { agents, copy } = s;
  const a = agents.get(agentId);
  if (!a) return null;
  const status = turnStatus(a, turnId);
  if (status === null) return null;
  // A delayed task's runAt while it waits or runs (invariant `delayed-tasks`).
  const task = status === "queued" ? a.tasks.find((t) => t.turnId === turnId) : status === "active" ? a.head.currentTask : undefined;
  return {
    turnId,
    status,
    ...(a.inputs.has(turnId) ? { input: copy(a.inputs.get(turnId)) } : {}),
    ...(task?.runAt !== undefined ? { runAt: task.runAt } : {}),
  };
}

export async function listQueuedTasks(s: MemoryState, agentId: string, limit: number): Ret<"listQueuedTasks"> {
  const { agents } = s;
  const a = agents.get(agentId);
  if (!a || limit <= 0) return [];
  return a.tasks.slice(0, limit).map((t) => queuedTaskOf(t));
}

export async function getToolCalls(s: MemoryState, agentId: string, turnId: string): Ret<"getToolCalls"> {
  const { agents, copy } = s;
  const a = agents.get(agentId);
  if (!a) return [];
  return [...a.toolCalls.values()].filter((r) => r.turnId === turnId).map((r) => normalizeRecord(copy(r)));
}

export async function readMessages(s: MemoryState, agentId: string, fromIndex = 0): Ret<"readMessages"> {
  const { agents, copy } = s;
  const a = agents.get(agentId);
  if (!a) return [];
  // Indexes are logical (invariant `retention`); a turn's user message is stored as a reference to its input (store/inputs.ts).
  return a.messages.slice(Math.max(0, fromIndex - a.head.messagesTrimmedThrough)).map((m) =>
    m.inputOf === undefined ? copy(m) : { role: m.role, content: a.inputs.has(m.inputOf) ? inputText(a.inputs.get(m.inputOf)) : "" }
  );
}

export async function readEvents(s: MemoryState, agentId: string, after: number, limit: number, maxBytes?: number): Ret<"readEvents"> {
  const { agents, copy } = s;
  const a = agents.get(agentId);
  if (!a || limit <= 0) return [];
  // Ids are dense, so the event with id k sits at index k-1-eventsTrimmedThrough.
  const from = Math.max(0, after - a.head.eventsTrimmedThrough);
  let to = Math.min(a.events.length, from + limit);
  if (maxBytes !== undefined) {
    // Stop before the event that would pass the budget; the first one always comes.
    let used = 0;
    for (let i = from; i < to; i++) {
      used += a.eventBytes[i];
      if (i > from && used > maxBytes) {
        to = i;
        break;
      }
    }
  }
  // Served form (common/event-form.ts): compact events get their fields back from their transition.
  const page = a.events.slice(from, to);
  const base = a.head.eventsTrimmedThrough;
  const served = servedPage(page, (id) => id > base ? a.events[id - 1 - base] : undefined, maxBytes);
  // Every event of the page counted as trimmed (invariant `served-events`): the events after it.
  return served.length === 0 && page.length > 0 ? readEvents(s, agentId, page[page.length - 1].id, limit, maxBytes) : copy(served);
}

export async function readConversation(s: MemoryState, agentId: string, opts?: { fromSummary?: boolean }): Ret<"readConversation"> {
  const { agents, copy } = s;
  const a = agents.get(agentId);
  if (!a) return null;
  const from = Math.max(a.head.messagesTrimmedThrough, opts?.fromSummary ? (a.summary?.through ?? 0) : 0);
  return { summary: copy(a.summary), firstIndex: from, messages: await readMessages(s, agentId, from) };
}

export async function readCheckpoint(s: MemoryState, agentId: string): Ret<"readCheckpoint"> {
  const { agents, copy } = s;
  const a = agents.get(agentId);
  const c = a?.ckpts[0];
  if (!a || !c || a.head.eventsTrimmedThrough === 0 || c.mark.eventId !== a.head.eventsTrimmedThrough) return null;
  return { eventId: c.mark.eventId, at: c.at, snapshot: copy(c.snapshot), messageIndex: c.mark.messageIndex };
}

export async function listAgents(s: MemoryState, req: ListAgentsRequest): Promise<AgentIndexEntry[]> {
  const { agents } = s;
  // The map of agents is this store's index: every head carries its updatedAt (port invariant `agents-index`).
  if (req.limit <= 0) return [];
  const since = req.updatedSince ?? -Infinity;
  const after = req.after;
  const below = (e: AgentIndexEntry) =>
    !after || e.updatedAt < after.updatedAt || (e.updatedAt === after.updatedAt && e.agentId < after.agentId);
  return [...agents.values()]
    .map((a) => ({ agentId: a.head.agentId, updatedAt: a.head.updatedAt }))
    .filter((e) => e.updatedAt >= since && below(e))
    .sort((x, y) => y.updatedAt - x.updatedAt || (x.agentId < y.agentId ? 1 : x.agentId > y.agentId ? -1 : 0))
    .slice(0, req.limit);
}

/** Running and queued counts per lane of a target (invariants `concurrency-keys`, `fair-lanes`). */
export async function concurrencyUsage(s: MemoryState, req: ConcurrencyUsageRequest): Ret<"concurrencyUsage"> {
  checkTarget(req.workerTarget);
  return usageOf(laneRows(s, req.workerTarget, req.now, req.keys), req);
}
