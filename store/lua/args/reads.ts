/**
 * The argument layouts and encoders of the read scripts (store/port.ts `Reads`).
 * Each layout names the KEYS and ARGV of its script in order, as the
 * script's header does (store/lua/args/layout.ts).
 */
import { encoder, type ScriptLayout } from "./layout.ts";

/** store/lua/get_agent.lua */
export const GET_AGENT = {
  script: "get_agent",
  keys: ["head"],
  argv: [],
  keysRest: "long_keys",
} as const satisfies ScriptLayout;
export const encodeGetAgent = encoder(GET_AGENT);

/** store/lua/get_turn.lua */
export const GET_TURN = {
  script: "get_turn",
  keys: ["head", "tasks", "turns", "idem", "inputs", "delayed"],
  argv: ["turn_raw", "turn_json"],
} as const satisfies ScriptLayout;
export const encodeGetTurn = encoder(GET_TURN);

/** store/lua/list_queued_tasks.lua */
export const LIST_QUEUED_TASKS = {
  script: "list_queued_tasks",
  keys: ["tasks", "delayed"],
  argv: ["limit_text"],
} as const satisfies ScriptLayout;
export const encodeListQueuedTasks = encoder(LIST_QUEUED_TASKS);

/** store/lua/get_tool_calls.lua */
export const GET_TOOL_CALLS = {
  script: "get_tool_calls",
  keys: ["calls"],
  argv: [],
} as const satisfies ScriptLayout;
export const encodeGetToolCalls = encoder(GET_TOOL_CALLS);

/** store/lua/read_messages.lua */
export const READ_MESSAGES = {
  script: "read_messages",
  keys: ["msgs", "inputs", "head"],
  argv: ["from_index"],
} as const satisfies ScriptLayout;
export const encodeReadMessages = encoder(READ_MESSAGES);

/** store/lua/read_events.lua */
export const READ_EVENTS = {
  script: "read_events",
  keys: ["events", "head"],
  argv: ["after_text", "limit_text", "max_bytes"],
} as const satisfies ScriptLayout;
export const encodeReadEvents = encoder(READ_EVENTS);

/** store/lua/read_conversation.lua */
export const READ_CONVERSATION = {
  script: "read_conversation",
  keys: ["head", "msgs", "inputs", "summary_key"],
  argv: ["from_summary"],
} as const satisfies ScriptLayout;
export const encodeReadConversation = encoder(READ_CONVERSATION);

/** store/lua/read_checkpoint.lua */
export const READ_CHECKPOINT = {
  script: "read_checkpoint",
  keys: ["head", "ckpts"],
  argv: [],
} as const satisfies ScriptLayout;
export const encodeReadCheckpoint = encoder(READ_CHECKPOINT);

/** store/lua/list_agents.lua */
export const LIST_AGENTS = {
  script: "list_agents",
  keys: ["idx"],
  argv: ["limit_text", "since", "cursor_score", "cursor_agent"],
} as const satisfies ScriptLayout;
export const encodeListAgents = encoder(LIST_AGENTS);
