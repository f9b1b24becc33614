/**
 * Schemas of the debugging routes (list, history, fork, export, what-if):
 * requests are strict, responses describe what the routes answer.
 * `GET /openapi.json` is generated from these objects.
 */
import { z } from "@hono/zod-openapi";
import { ID_PATTERN } from "../common/ids.ts";
import { STATES } from "../machines/types.ts";
import { AgentId, AgentState, decimalInt, StoredEvent } from "./schemas.ts";

const IsoTime = z.string().describe("ISO 8601, UTC");

export const MAX_AGENT_PAGE = 100;

export const AgentListQuery = z.strictObject({
  state: z.enum(STATES).optional().describe("Only agents in this machine state"),
  agent: z.string().min(1).max(64).optional().describe("Only agents bound to this definition name"),
  updatedSince: decimalInt("updatedSince").optional()
    .describe("Only agents whose `updatedAt` is at or after this time (ms since the epoch)"),
  limit: decimalInt("limit", 1, MAX_AGENT_PAGE).optional()
    .describe(`Page size, 1 to ${MAX_AGENT_PAGE} (default 50)`),
  cursor: z.string().regex(/^\d{1,15}_[A-Za-z0-9_.:-]{1,128}$/, "cursor must be a nextCursor of this route").optional()
    .describe("`nextCursor` of the previous page"),
});

export const AgentSummary = z.object({
  agentId: z.string(),
  agent: z.string().describe("Name of the definition the id is bound to"),
  state: AgentState,
  activeTurnId: z.string().nullable(),
  version: z.int(),
  lastEventId: z.int(),
  pendingTasks: z.int(),
  messageCount: z.int(),
  createdAt: IsoTime,
  updatedAt: IsoTime,
  updatedAtMs: z.number(),
});

export const AgentList = z.object({
  agents: z.array(AgentSummary).describe("Newest `updatedAt` first, ties by agent id descending"),
  nextCursor: z.string().nullable().describe(
    "Pass as `cursor` for the next page; null when the index holds nothing further. A page may hold fewer " +
      "than `limit` agents (even none) and still have a cursor: filters are applied to at most 1 000 index entries per request",
  ),
}).openapi("AgentList");

export const HistoryParams = z.object({
  agentId: AgentId,
  eventId: decimalInt("eventId", 1),
});

const Message = z.object({
  role: z.enum(["system", "user", "assistant", "tool"]),
  content: z.string(),
  toolCalls: z.array(z.object({ id: z.string(), name: z.string(), args: z.unknown() })).optional(),
  toolCallId: z.string().optional(),
  name: z.string().optional(),
});

export const HistoryView = z.object({
  agentId: z.string(),
  eventId: z.int(),
  throughEventId: z.int().describe("The agent is shown after this event: the last event of the commit that logged " +
    "`eventId` (`eventId` itself unless that commit logged events after it). A fork at `eventId` takes this point"),
  event: StoredEvent.describe("Event `eventId`"),
  state: AgentState.describe("Machine state after event `throughEventId`"),
  activeTurnId: z.string().nullable().describe("The turn in progress at that point; null between turns"),
  context: z.record(z.string(), z.unknown()).describe("The machine context at that point"),
  snapshot: z.record(z.string(), z.unknown()).describe("The persisted snapshot the commit ending at `throughEventId` stored"),
  messages: z.array(Message).describe("The conversation at that point (user inputs filled in)"),
  messagesFrom: z.int().describe("Index of `messages[0]` in the whole conversation: 0, or where retention's trimmed conversation starts"),
  lastEventId: z.int().describe("The agent's last event id now"),
}).openapi("HistoryView");

export const ForkRequest = z.strictObject({
  atEventId: z.int().min(1).describe("The event of the source to fork at: the fork is taken at the end of the commit that logged it"),
  newAgentId: z.string().regex(ID_PATTERN).describe("The fork's id; must not exist"),
  agent: z.string().min(1).max(64).optional()
    .describe("Bind the fork to this registered definition (another model or verifier); default the source's"),
  rerunPending: z.boolean().optional()
    .describe("Run in-process calls pending at the fork point again under their ids; default false: each is answered " +
      "with the error outcome `forked_unresolved` unless its tool is `retrySafe`"),
}).openapi("ForkRequest");

export const ForkCreated = z.object({
  agentId: z.string().describe("The fork"),
  forkedFrom: z.object({
    agentId: z.string(),
    atEventId: z.int(),
    throughEventId: z.int().describe("The source's event the fork was taken after: the last event of the commit that logged `atEventId`"),
    eventId: z.int().describe("The source's `forked_to` event"),
  }),
  agent: z.string(),
  state: AgentState,
  activeTurnId: z.string().nullable(),
  pendingToolCalls: z.array(z.object({ turnId: z.string(), toolCallId: z.string(), name: z.string(), deadlineMs: z.number() })),
}).openapi("ForkCreated");

export const WhatIfRequest = z.strictObject({
  guardian: z.string().min(1).max(128).optional()
    .describe("A registered guardian code; default: the agent's current output verifier"),
  after: z.int().min(0).max(Number.MAX_SAFE_INTEGER).optional()
    .describe("Judge only candidates whose `tool_call` event id is greater (default 0); send the last answer's `nextAfter` to go on"),
}).openapi("WhatIfRequest");

export const WhatIfResult = z.object({
  agentId: z.string(),
  verifier: z.object({ kind: z.enum(["guardian", "output_verifier"]), name: z.string() }),
  candidates: z.array(z.object({
    eventId: z.int().describe("The `tool_call` event that proposed the candidate"),
    turnId: z.string().nullable(),
    toolCallId: z.string(),
    candidate: z.unknown(),
    recorded: z.object({ outcome: z.string(), code: z.string().optional(), message: z.string().optional(), eventId: z.int() })
      .nullable().describe("The verdict the turn recorded for this candidate (null: none recorded)"),
    now: z.object({ outcome: z.enum(["passed", "rejected", "system_error"]), code: z.string().optional(), message: z.string().optional() }),
    changed: z.boolean(),
  })),
  total: z.int().describe("Recorded candidates after `after`, judged or not"),
  maxCandidates: z.int().describe("The server's cap on candidates judged per request"),
  stopped: z.enum(["candidate_cap", "rate_limited"]).nullable()
    .describe("Why candidates were left unjudged: the per-request cap, or a rate-limit bucket refused the next verifier call; null: all judged"),
  nextAfter: z.int().nullable().describe("The `after` that judges the rest; null when none are left"),
  retryAfterMs: z.int().optional().describe("With `stopped: rate_limited`: when the refused bucket admits the next call"),
}).openapi("WhatIfResult");

export const ReplayBundle = z.object({
  schemaVersion: z.literal(1),
  exportedAt: IsoTime,
  agentId: z.string(),
  agent: z.string().describe("Definition name"),
  machine: z.record(z.string(), z.unknown()).describe("The machine definition (as `GET /v1/machine` serves it)"),
  head: z.record(z.string(), z.unknown()),
  events: z.array(StoredEvent),
  messages: z.array(z.record(z.string(), z.unknown())),
  verdicts: z.array(z.record(z.string(), z.unknown())),
  inputs: z.record(z.string(), z.unknown()).describe("turnId -> the task input"),
  toolCalls: z.array(z.record(z.string(), z.unknown())),
  checkpoint: z.object({
    eventId: z.int().min(1),
    at: z.number(),
    snapshot: z.unknown(),
    messageIndex: z.int().min(0),
  }).optional().describe("A trimmed agent's base: the agent right after event `eventId`; `events` start after it"),
  messagesFrom: z.int().min(0).optional().describe("Index of `messages[0]` in the whole conversation (a trimmed agent)"),
}).openapi("ReplayBundle");
