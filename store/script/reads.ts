/**
 * The reads of the script store (store/port.ts `Reads`), each one script call (listAgents
 * calls each shard on the sharded layout).
 * Each operation is a top-level function of the store's ScriptContext; its
 * arguments are built by the script's encoder (store/lua/args/reads.ts).
 */
import type { AgentIndexEntry, Checkpoint, Conversation, ListAgentsRequest, Reads, TurnStatus } from "../port.ts";
import type { StoredEvent } from "../../common/events.ts";
import { byIdIn, servedPage } from "../../common/event-form.ts";
import type { Message } from "../../common/message.ts";
import { normalizeRecord } from "../spelling.ts";
import type { AgentHead, ToolCallRecord } from "../types.ts";
import { checkTurnId } from "../keys.ts";
import { byCodePoint, int, j } from "./values.ts";
import { encodeGetAgent, encodeGetToolCalls, encodeGetTurn, encodeListAgents, encodeListQueuedTasks, encodeReadCheckpoint, encodeReadConversation, encodeReadEvents, encodeReadMessages } from "../lua/args/reads.ts";
import type { ScriptContext } from "./context.ts";

/** The result type of the port method `K`. */
type Ret<K extends keyof Reads> = ReturnType<NonNullable<Reads[K]>>;

export async function getAgent(c: ScriptContext, agentId: string): Promise<AgentHead | null> {
  const { keys, longKeys, call } = c;
  const k = keys.agent(agentId);
  return call(encodeGetAgent({ head: k.head, long_keys: longKeys(k) }));
}

export async function getTurn(c: ScriptContext, agentId: string, turnId: string): Ret<"getTurn"> {
  const { keys, call } = c;
  const k = keys.agent(agentId);
  checkTurnId(turnId);
  const r = await call<{ status: TurnStatus; input?: unknown; runAt?: number } | null>(encodeGetTurn({
    head: k.head, tasks: k.tasks, turns: k.turns, idem: k.idem, inputs: k.inputs, delayed: k.delayed, turn_raw: turnId, turn_json: j(turnId),
  }));
  return r === null ? null : { turnId, ...r };
}

export async function listQueuedTasks(c: ScriptContext, agentId: string, limit: number): Ret<"listQueuedTasks"> {
  const { keys, call } = c;
  if (limit <= 0) return [];
  const k = keys.agent(agentId);
  return call(encodeListQueuedTasks({ tasks: k.tasks, delayed: k.delayed, limit_text: int(limit, "limit") }));
}

export async function getToolCalls(c: ScriptContext, agentId: string, turnId: string): Promise<ToolCallRecord[]> {
  const { keys, call } = c;
  const list = await call<ToolCallRecord[]>(encodeGetToolCalls({ calls: keys.agent(agentId).calls(turnId) }));
  // Hash order is not insertion order once a hash grows: order by recording time.
  return list.map(normalizeRecord).sort((x, y) => x.recordedAt - y.recordedAt || (x.toolCallId < y.toolCallId ? -1 : x.toolCallId > y.toolCallId ? 1 : 0));
}

export async function readMessages(c: ScriptContext, agentId: string, fromIndex = 0): Promise<Message[]> {
  const { keys, call } = c;
  const k = keys.agent(agentId);
  return call(encodeReadMessages({ msgs: k.messages, inputs: k.inputs, head: k.head, from_index: int(Math.max(0, fromIndex), "fromIndex") }));
}

export async function readEvents(c: ScriptContext, agentId: string, after: number, limit: number, maxBytes?: number): Promise<StoredEvent[]> {
  const { keys, call } = c;
  const k = keys.agent(agentId);
  if (limit <= 0) return [];
  // Served form (common/event-form.ts): the page and the transitions outside it that it names, in one call.
  const [page, named] = await call<[StoredEvent[], StoredEvent[]]>(encodeReadEvents({
    events: k.events, head: k.head,
    after_text: int(Math.max(0, after), "after"), limit_text: int(limit, "limit"),
    max_bytes: maxBytes === undefined ? "" : int(Math.max(0, maxBytes), "maxBytes"),
  }));
  const served = servedPage(page, byIdIn(named.length > 0 ? [...page, ...named] : page), maxBytes);
  // Every event of the page counted as trimmed (invariant `served-events`): the events after it.
  return served.length === 0 && page.length > 0 ? readEvents(c, agentId, page[page.length - 1].id, limit, maxBytes) : served;
}

export async function readConversation(c: ScriptContext, agentId: string, opts?: { fromSummary?: boolean }): Promise<Conversation | null> {
  const { keys, call } = c;
  const k = keys.agent(agentId);
  return call(encodeReadConversation({
    head: k.head, msgs: k.messages, inputs: k.inputs, summary_key: k.summary, from_summary: opts?.fromSummary ? "1" : "0",
  }));
}

export async function readCheckpoint(c: ScriptContext, agentId: string): Promise<Checkpoint | null> {
  const { keys, call } = c;
  const k = keys.agent(agentId);
  return call(encodeReadCheckpoint({ head: k.head, ckpts: k.ckpts }));
}

export async function listAgents(c: ScriptContext, req: ListAgentsRequest): Promise<AgentIndexEntry[]> {
  const { shards, call } = c;
  if (req.limit <= 0) return [];
  const args = {
    limit_text: int(req.limit, "limit"),
    since: req.updatedSince === undefined ? "-inf" : int(req.updatedSince, "updatedSince"),
    cursor_score: req.after ? int(req.after.updatedAt, "after.updatedAt") : "",
    cursor_agent: req.after ? req.after.agentId : "",
  };
  if (shards.length === 1) return call(encodeListAgents({ idx: shards[0].agents, ...args }));
  // Each shard's page after the cursor, merged in the index order: newest first, ties by id descending.
  const pages = await Promise.all(shards.map((s) => call<AgentIndexEntry[]>(encodeListAgents({ idx: s.agents, ...args }))));
  return pages.flat().sort((x, y) => y.updatedAt - x.updatedAt || byCodePoint(y.agentId, x.agentId)).slice(0, req.limit);
}
