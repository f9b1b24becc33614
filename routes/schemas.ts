/**
 * The zod schemas of the HTTP surface: request bodies and query strings (what
 * the routes accept, strict: unknown fields are refused) and responses (what
 * they answer). `GET /openapi.json` is generated from these same objects, so
 * the document cannot drift from what the routes check.
 */
import { z } from "zod";
import { checkAttemptBudget, MAX_VERIFY_ATTEMPTS_LIMIT } from "../agents/define.ts";
import { ID_CHARS } from "../common/ids.ts";

/** Agent ids: no `{`, `}` (they would break the store's hash tag), no whitespace or control characters. */
/** Not `.` or `..`: URL normalization removes such a path segment, so the agent could never be addressed. */
export const AGENT_ID = new RegExp(`^(?!\\.{1,2}$)[${ID_CHARS}]{1,128}$`);

export const AgentId = z.string().regex(AGENT_ID).describe("Agent id, `^[A-Za-z0-9_.:-]{1,128}$`, not `.` or `..`");

const Ref = (what: string) => z.string().min(1).max(256).describe(what);

// ---------------------------------------------------------------- requests

export const TaskRequest = z.strictObject({
  agent: z.string().min(1).max(64).describe("Name of the agent definition; the first task binds the agent id to it"),
  input: z.union([z.string(), z.record(z.string(), z.unknown())]).describe("The task: text or a JSON object"),
  idempotencyKey: z.string().min(1).max(256).optional()
    .describe("First-wins per agent: a repeated key answers the first task's turn with `duplicate: true`"),
  verifyMaxAttempts: z.number().superRefine((v, ctx) => {
    const e = checkAttemptBudget(v);
    if (e) ctx.addIssue({ code: "custom", message: `verifyMaxAttempts ${e}` });
  }).meta({
    type: "integer",
    minimum: 1,
    maximum: MAX_VERIFY_ATTEMPTS_LIMIT,
    description: "Overrides the verification attempt budget for this turn",
  }).optional(),
});
export type TaskRequest = z.infer<typeof TaskRequest>;

export const Outcome = z.discriminatedUnion("ok", [
  z.strictObject({ ok: z.literal(true), value: z.unknown().describe("Any JSON value (required, may be null)") }),
  z.strictObject({
    ok: z.literal(false),
    error: z.strictObject({
      type: z.string().min(1).max(128),
      message: z.string().max(10_000),
      retryable: z.boolean().optional(),
      retriable: z.boolean().optional().describe("Accepted spelling of `retryable`; stored as `retryable`"),
      metadata: z.record(z.string(), z.unknown()).optional(),
    }),
  }),
]);

export const ToolResultRequest = z.strictObject({
  turnId: Ref("The turn the tool call belongs to (from its `tool_call` event)"),
  toolCallId: Ref("The tool call's id (from its `tool_call` event)"),
  outcome: Outcome,
  afterExecution: z.enum(["continue", "terminate"]).optional()
    .describe(
      "`terminate` ends the turn with this result (default `continue`); for an agent that declares `output`, the result is the candidate the verifier gate judges",
    ),
});
export type ToolResultRequest = z.infer<typeof ToolResultRequest>;

/** Turn ids: what `rt.ids` hands out and the store accepts (no control characters). */
// deno-lint-ignore no-control-regex
export const TurnId = z.string().min(1).max(256).regex(/^[^\u0000-\u001f\u007f]+$/, "no control characters")
  .describe("A turn id (from the task's 202 answer)");

export const CancelRequest = z.strictObject({
  reason: z.string().min(1).max(1_000).optional().describe("Becomes the turn's error message"),
  turnId: TurnId.optional()
    .describe("The turn to cancel; omitted: the turn active when the cancel is accepted (fixed at that moment)"),
});

export const TurnParams = z.object({ turnId: TurnId });

/** Body of routes that take none: absent, empty, or `{}`. */
export const EmptyRequest = z.strictObject({});

/** A decimal integer in a query string or header. */
const decimal = (what: string) => z.string().regex(/^\d{1,15}$/, `${what} must be a non-negative decimal integer`);

/** Query of `GET /v1/agents/:agentId/events`; `limit` is bounded by the runtime's `maxEventPage`. */
export function eventsQuery(maxEventPage: number) {
  return z.strictObject({
    after: decimal("after").transform(Number).optional().describe("Return events with id > after (default 0)"),
    limit: decimal("limit").transform(Number).pipe(z.int().min(1).max(maxEventPage)).optional()
      .describe(`Page size, 1 to ${maxEventPage} (default ${Math.min(100, maxEventPage)})`),
    format: z.enum(["json", "sse"]).optional()
      .describe("Force the response format (default: SSE when Accept includes text/event-stream, else JSON)"),
  });
}

export const LastEventId = decimal("Last-Event-ID").transform(Number);

// --------------------------------------------------------------- responses

export const TaskAccepted = z.object({
  agentId: z.string(),
  turnId: z.string(),
  duplicate: z.boolean().describe("True when the idempotency key was seen before; nothing was enqueued"),
});

export const ToolResultAccepted = z.object({
  accepted: z.literal(true),
  duplicate: z.boolean().describe("True when this exact result was delivered before and won; nothing changed"),
});

export const CancelAccepted = z.object({
  accepted: z.literal(true),
  turnId: z.string().describe("The turn the cancel is aimed at; it never applies to another turn"),
});

export const TURN_STATUSES = ["queued", "active", "done", "failed", "ended", "cancelled"] as const;

export const TurnView = z.object({
  agentId: z.string(),
  turnId: z.string(),
  status: z.enum(TURN_STATUSES).describe(
    "`queued` in the inbox, `active`, `done` / `failed` once it ended (`ended`: ended, state not recorded), " +
      "`cancelled` while queued",
  ),
  input: z.unknown().optional().describe("The task's input (stored once per turn; events refer to it by turn id)"),
});

export const TaskCancelled = z.object({
  agentId: z.string(),
  turnId: z.string(),
  status: z.literal("cancelled"),
  duplicate: z.boolean().describe("True when an earlier request cancelled it; nothing changed"),
});

const Usage = z.object({
  inputTokens: z.number(),
  outputTokens: z.number(),
  cost: z.number(),
  steps: z.number(),
});

const IsoTime = z.string().describe("ISO 8601, UTC");

export const AgentView = z.object({
  agentId: z.string(),
  agent: z.string().describe("Name of the definition the id is bound to"),
  state: z.string().describe("Machine state: idle, running, waiting-tools, verifying, revising, done, failed"),
  turnId: z.string().nullable().describe("The active turn, else the last turn that ran (null before the first)"),
  activeTurnId: z.string().nullable().describe("The turn in progress; null between turns"),
  epoch: z.int(),
  version: z.int(),
  pendingTasks: z.int(),
  lease: z.object({
    workerId: z.string().describe("The worker loop holding the agent (`<process worker id>/<loop>`)"),
    until: IsoTime,
    untilMs: z.number().describe("`until` in ms since the epoch"),
  }).nullable().describe(
    "Who holds the agent and until when; null when no worker does. A lease whose `until` has passed belongs to " +
      "a worker that stopped renewing it (crashed or stalled): the next worker poll takes the agent over.",
  ),
  runnableAt: IsoTime.nullable().describe("When the agent is due for a worker without new mail; null: only on mail or a task"),
  runnableAtMs: z.number().nullable().describe("`runnableAt` in ms since the epoch"),
  pendingToolCalls: z.array(z.object({
    toolCallId: z.string(),
    name: z.string(),
    args: z.unknown(),
    external: z.boolean(),
    deadline: IsoTime,
    deadlineMs: z.number().describe("`deadline` in ms since the epoch"),
  })),
  output: z.unknown().optional().describe("The turn's deliverable (present once set)"),
  error: z.object({ reason: z.string(), message: z.string() }).optional()
    .describe("Why the turn failed (present in `failed`)"),
  verification: z.object({
    maxAttempts: z.int(),
    attemptsUsed: z.int(),
    lastOutcome: z.enum(["passed", "rejected", "system_error"]).nullable(),
    lastAttemptAt: IsoTime.nullable(),
    lastCandidateHash: z.string().nullable(),
    retryAt: IsoTime.nullable(),
    lastRejection: z.object({
      code: z.string(),
      message: z.string(),
      retryable: z.boolean(),
      metadata: z.record(z.string(), z.unknown()).optional(),
    }).nullable(),
  }).optional().describe("The verifier gate of the turn (present once a candidate was proposed)"),
  usage: Usage.describe("Model usage over all turns"),
  turnUsage: Usage.describe("Model usage of the current (or last) turn"),
  createdAt: IsoTime,
  updatedAt: IsoTime,
  updatedAtMs: z.number().describe("`updatedAt` in ms since the epoch"),
});
export type AgentView = z.infer<typeof AgentView>;

export const StoredEvent = z.object({
  id: z.int().describe("1, 2, 3, … per agent"),
  type: z.string(),
  data: z.record(z.string(), z.unknown()),
  at: z.number().describe("ms since the epoch"),
  turnId: z.string().nullable(),
});

export const EventsPage = z.object({
  events: z.array(StoredEvent),
  nextAfter: z.int().describe("Pass as `after` to read the next page (the last id returned, or `after` when empty)"),
  more: z.boolean().describe(
    "True when the log held events after `nextAfter` when the page was read (the page ended at `limit` or at " +
      "the byte budget): read on with `after=nextAfter`",
  ),
  trimmed: z.object({
    type: z.literal("events_trimmed"),
    after: z.int().describe("The cursor asked from"),
    trimmedThrough: z.int().describe("Events 1..trimmedThrough were removed by retention; the log goes on after it"),
  }).optional().describe("Present when events after `after` were removed by retention (docs/http.md, \"events_trimmed\")"),
}).describe("A page is cut at `limit` events or at the server's byte budget, whichever comes first; it always " +
  "holds at least one event when there is one after `after`");

const Transition = z.object({
  from: z.string(),
  event: z.string(),
  to: z.string(),
  guard: z.string().optional(),
  actions: z.array(z.string()),
  reenter: z.literal(true).optional(),
  targetless: z.literal(true).optional(),
});

const ImplementationRef = z.union([z.string(), z.object({ type: z.string(), params: z.unknown() })])
  .describe("A guard or action by the name the machine gives it in setup()");

const TransitionConfig = z.object({
  target: z.union([z.string(), z.array(z.string())]).optional()
    .describe("A sibling state's key, or `#id`; absent for a targetless transition (actions only)"),
  guard: ImplementationRef.optional(),
  actions: z.array(ImplementationRef).optional(),
  reenter: z.literal(true).optional(),
  description: z.string().optional(),
});

const StateConfig = z.object({
  type: z.enum(["parallel", "final", "history"]).optional(),
  initial: z.string().optional(),
  entry: z.array(ImplementationRef).optional(),
  exit: z.array(ImplementationRef).optional(),
  on: z.record(z.string(), z.array(TransitionConfig)).optional().describe("Transitions per event, in the order XState tries them"),
  always: z.array(TransitionConfig).optional(),
  states: z.record(z.string(), z.record(z.string(), z.unknown())).optional()
    .describe("Child states of a compound state, of this same shape (the agent machine has none)"),
  tags: z.array(z.string()).optional(),
  description: z.string().optional(),
  meta: z.record(z.string(), z.unknown()).optional(),
});

export const MachineView = z.object({
  id: z.string(),
  initial: z.string(),
  context: z.record(z.string(), z.unknown()).describe("The initial context of a new agent"),
  states: z.record(z.string(), StateConfig),
  meta: z.object({
    states: z.array(z.object({
      name: z.string(),
      initial: z.boolean(),
      endsTurn: z.boolean(),
      events: z.array(z.string()),
    })),
    transitions: z.array(Transition).describe("Every transition, flat, in the order XState tries them"),
    mermaid: z.string().describe("Mermaid stateDiagram-v2 text (docs/machine.svg)"),
  }).describe("Introspection: states, a flat transition list and a Mermaid text"),
}).describe(
  "The agent statechart as an XState v5 machine config: `createMachine(body)` runs it as is; guards and actions are named (provide them with `.provide(agentMachine.implementations)`)",
);

export const WatchdogTick = z.object({
  timedOut: z.int().describe("Calls past their deadline now resolved with a timeout"),
  alreadyResolved: z.int().describe("Calls a result resolved first"),
  turnFinished: z.int().describe("Calls whose turn had ended (or whose call or agent is unknown)"),
  skipped: z.int().describe(
    "Records the pass could not time out, taken out of the due index (or pushed back after an error) so they " +
      "never hold up the others; each is logged as `watchdog_skipped`",
  ),
});

export const Health = z.object({ ok: z.literal(true), store: z.enum(["memory", "redis", "upstash"]) });

export const OpenApiDocument = z.record(z.string(), z.unknown()).describe("This OpenAPI 3.1 document");

export const ValidationIssue = z.object({
  path: z.array(z.union([z.string(), z.number()])),
  code: z.string(),
  message: z.string(),
});

export const Problem = z.looseObject({
  type: z.string(),
  title: z.string(),
  status: z.int(),
  detail: z.string(),
  code: z.string().describe("Stable error code (see docs/http.md)"),
  errors: z.array(ValidationIssue).optional().describe("Schema violations (`validation_failed`)"),
  resolvedBy: z.enum(["timeout", "result"]).optional()
    .describe("`already_resolved`: whether the watchdog's timeout or another result resolved the call"),
});

/** Body of `POST /v1/agents/:agentId/reset` (optional). */
export const ResetRequest = z.strictObject({
  reason: z.string().min(1).max(500).optional().describe("Becomes the turn's error message"),
});

export const ResetAccepted = z.object({
  reset: z.literal(true),
  turnId: z.string().describe("The turn that was ended (failed, reason `reset`)"),
  version: z.number().describe("The agent's snapshot version after the reset"),
});

export const Ready = z.object({ ready: z.literal(true), store: z.enum(["memory", "redis", "upstash"]) });

export const AgentDeleted = z.object({
  deleted: z.literal(true),
  agentId: z.string(),
}).describe("The agent and its records are gone (verdict records are kept)");
