/**
 * The reads of the script store (store/port.ts `Reads`), each one script call (listAgents
 * calls each shard on the sharded layout).
 * Each operation is a top-level function of the store's ScriptContext over
 * its script, described here (store/script/operation.ts): layout, reply words, decoding.
 */
import type { AgentIndexEntry, Checkpoint, ConcurrencyUsage, ConcurrencyUsageRequest, Conversation, ListAgentsRequest, Reads, TurnStatus } from "../port.ts";
import { type LaneRow, queuedTaskOf, usageOf } from "../lanes.ts";
import type { StoredEvent } from "../../common/events.ts";
import { byIdIn, servedPage } from "../../common/event-form.ts";
import type { Message } from "../../common/message.ts";
import { normalizeRecord } from "../spelling.ts";
import type { AgentHead, ToolCallRecord } from "../types.ts";
import { checkTarget, checkTurnId } from "../keys.ts";
import { byCodePoint, int, j } from "./values.ts";
import type { InboxTask } from "../types.ts";
import { expandSnapshot } from "../snapshot-form.ts";
import { json, scriptOp } from "./operation.ts";
import { headOf } from "./replies.ts";
import type { ScriptContext } from "./context.ts";

/** store/lua/concurrency_usage.lua */
export const CONCURRENCY_USAGE = scriptOp({
  script: "concurrency_usage",
  keys: ["ready"],
  argv: ["prefix", "now_str"],
  argvRest: "keys",
  words: ["usage"],
}, (_word, payload) => json<Array<[string, number, number, number]>>(payload).map(([key, running, queued, parkedUntil]): LaneRow => ({ key, running, queued, parkedUntil })));

/** The running and queued counts per lane of a target (invariants `concurrency-keys`, `fair-lanes`): each home read, the rows summed by key. */
export async function concurrencyUsage(c: ScriptContext, req: ConcurrencyUsageRequest): Promise<ConcurrencyUsage> {
  const { shards, run } = c;
  checkTarget(req.workerTarget);
  const rows = await Promise.all(shards.map((s) => run(CONCURRENCY_USAGE, {
    ready: s.ready(req.workerTarget), prefix: s.prefix, now_str: int(req.now, "now"), keys: req.keys ? [...req.keys] : [],
  })));
  return usageOf(rows.flat(), req);
}

/** store/lua/get_agent.lua */
export const GET_AGENT = scriptOp({
  script: "get_agent",
  keys: ["head"],
  argv: [],
  keysRest: "long_keys",
  words: ["head", "none"],
}, (word, payload) => (word === "head" ? headOf(json(payload)) : null));

/** store/lua/get_turn.lua */
export const GET_TURN = scriptOp({
  script: "get_turn",
  keys: ["head", "tasks", "turns", "idem", "inputs", "delayed"],
  argv: ["turn_raw", "turn_json"],
  words: ["turn", "none"],
}, (word, payload) => (word === "turn" ? json<{ status: TurnStatus; input?: unknown; runAt?: number }>(payload) : null));

/** store/lua/list_queued_tasks.lua */
export const LIST_QUEUED_TASKS = scriptOp({
  script: "list_queued_tasks",
  keys: ["tasks", "delayed"],
  argv: ["limit_text"],
  words: ["list"],
}, (_word, payload) => json<InboxTask[]>(payload).map(queuedTaskOf));

/** store/lua/get_tool_calls.lua */
export const GET_TOOL_CALLS = scriptOp({
  script: "get_tool_calls",
  keys: ["calls"],
  argv: [],
  words: ["list"],
}, (_word, payload) => json<ToolCallRecord[]>(payload));

/** store/lua/read_messages.lua */
export const READ_MESSAGES = scriptOp({
  script: "read_messages",
  keys: ["msgs", "inputs", "head"],
  argv: ["from_index"],
  words: ["list"],
}, (_word, payload) => json<Message[]>(payload));

/** store/lua/read_events.lua */
export const READ_EVENTS = scriptOp({
  script: "read_events",
  keys: ["events", "head"],
  argv: ["after_text", "limit_text", "max_bytes"],
  words: ["list"],
}, (_word, payload) => json<[StoredEvent[], StoredEvent[]]>(payload));

/** store/lua/read_conversation.lua */
export const READ_CONVERSATION = scriptOp({
  script: "read_conversation",
  keys: ["head", "msgs", "inputs", "summary_key"],
  argv: ["from_summary"],
  words: ["conversation", "none"],
}, (word, payload) => (word === "conversation" ? json<Conversation>(payload) : null));

/** store/lua/read_checkpoint.lua */
export const READ_CHECKPOINT = scriptOp({
  script: "read_checkpoint",
  keys: ["head", "ckpts"],
  argv: [],
  words: ["checkpoint", "none"],
}, (word, payload) => {
  if (word !== "checkpoint") return null;
  const c = json<Checkpoint>(payload);
  c.snapshot = expandSnapshot(c.snapshot);
  return c;
});

/** store/lua/list_agents.lua */
export const LIST_AGENTS = scriptOp({
  script: "list_agents",
  keys: ["idx"],
  argv: ["limit_text", "since", "cursor_score", "cursor_agent"],
  words: ["list"],
}, (_word, payload): AgentIndexEntry[] => json<Array<[string, number]>>(payload).map(([agentId, updatedAt]) => ({ agentId, updatedAt })));

/** The result type of the port method `K`. */
type Ret<K extends keyof Reads> = ReturnType<NonNullable<Reads[K]>>;

export async function getAgent(c: ScriptContext, agentId: string): Promise<AgentHead | null> {
  const { keys, longKeys, run } = c;
  const k = keys.agent(agentId);
  return run(GET_AGENT, { head: k.head, long_keys: longKeys(k) });
}

export async function getTurn(c: ScriptContext, agentId: string, turnId: string): Ret<"getTurn"> {
  const { keys, run } = c;
  const k = keys.agent(agentId);
  checkTurnId(turnId);
  const r = await run(GET_TURN, {
    head: k.head, tasks: k.tasks, turns: k.turns, idem: k.idem, inputs: k.inputs, delayed: k.delayed, turn_raw: turnId, turn_json: j(turnId),
  });
  return r === null ? null : { turnId, ...r };
}

export async function listQueuedTasks(c: ScriptContext, agentId: string, limit: number): Ret<"listQueuedTasks"> {
  const { keys, run } = c;
  if (limit <= 0) return [];
  const k = keys.agent(agentId);
  return run(LIST_QUEUED_TASKS, { tasks: k.tasks, delayed: k.delayed, limit_text: int(limit, "limit") });
}

export async function getToolCalls(c: ScriptContext, agentId: string, turnId: string): Promise<ToolCallRecord[]> {
  const { keys, run } = c;
  const list = await run(GET_TOOL_CALLS, { calls: keys.agent(agentId).calls(turnId) });
  // Hash order is not insertion order once a hash grows: order by recording time.
  return list.map(normalizeRecord).sort((x, y) => x.recordedAt - y.recordedAt || (x.toolCallId < y.toolCallId ? -1 : x.toolCallId > y.toolCallId ? 1 : 0));
}

export async function readMessages(c: ScriptContext, agentId: string, fromIndex = 0): Promise<Message[]> {
  const { keys, run } = c;
  const k = keys.agent(agentId);
  return run(READ_MESSAGES, { msgs: k.messages, inputs: k.inputs, head: k.head, from_index: int(Math.max(0, fromIndex), "fromIndex") });
}

export async function readEvents(c: ScriptContext, agentId: string, after: number, limit: number, maxBytes?: number): Promise<StoredEvent[]> {
  const { keys, run } = c;
  const k = keys.agent(agentId);
  if (limit <= 0) return [];
  // Served form (common/event-form.ts): the page and the transitions outside it that it names, in one call.
  const [page, named] = await run(READ_EVENTS, {
    events: k.events, head: k.head,
    after_text: int(Math.max(0, after), "after"), limit_text: int(limit, "limit"),
    max_bytes: maxBytes === undefined ? "" : int(Math.max(0, maxBytes), "maxBytes"),
  });
  const served = servedPage(page, byIdIn(named.length > 0 ? [...page, ...named] : page), maxBytes);
  // Every event of the page counted as trimmed (invariant `served-events`): the events after it.
  return served.length === 0 && page.length > 0 ? readEvents(c, agentId, page[page.length - 1].id, limit, maxBytes) : served;
}

export async function readConversation(c: ScriptContext, agentId: string, opts?: { fromSummary?: boolean }): Promise<Conversation | null> {
  const { keys, run } = c;
  const k = keys.agent(agentId);
  return run(READ_CONVERSATION, {
    head: k.head, msgs: k.messages, inputs: k.inputs, summary_key: k.summary, from_summary: opts?.fromSummary ? "1" : "0",
  });
}

export async function readCheckpoint(c: ScriptContext, agentId: string): Promise<Checkpoint | null> {
  const { keys, run } = c;
  const k = keys.agent(agentId);
  return run(READ_CHECKPOINT, { head: k.head, ckpts: k.ckpts });
}

export async function listAgents(c: ScriptContext, req: ListAgentsRequest): Promise<AgentIndexEntry[]> {
  const { shards, run } = c;
  if (req.limit <= 0) return [];
  const args = {
    limit_text: int(req.limit, "limit"),
    since: req.updatedSince === undefined ? "-inf" : int(req.updatedSince, "updatedSince"),
    cursor_score: req.after ? int(req.after.updatedAt, "after.updatedAt") : "",
    cursor_agent: req.after ? req.after.agentId : "",
  };
  if (shards.length === 1) return run(LIST_AGENTS, { idx: shards[0].agents, ...args });
  // Each shard's page after the cursor, merged in the index order: newest first, ties by id descending.
  const pages = await Promise.all(shards.map((s) => run(LIST_AGENTS, { idx: s.agents, ...args })));
  return pages.flat().sort((x, y) => y.updatedAt - x.updatedAt || byCodePoint(y.agentId, x.agentId)).slice(0, req.limit);
}
