/**
 * The zod schemas of the HTTP surface: request bodies and query strings (what
 * the routes accept, strict: unknown fields are refused) and responses (what
 * they answer). `GET /openapi.json` is generated from these same objects, so
 * the document cannot drift from what the routes check.
 */
import { z } from "@hono/zod-openapi";
import { checkVerifyAttempts, MAX_VERIFY_ATTEMPTS_LIMIT } from "../agents/define.ts";
import { ID_CHARS } from "../common/ids.ts";
import { concurrencyKeyProblem, MAX_CONCURRENCY_KEY_LENGTH, MAX_PRIORITY, priorityProblem } from "../common/concurrency.ts";
import { EVENT_DATA, EVENT_TYPES, type EventType, isRuntimeEventType } from "../machines/event-log.ts";
import { STATES } from "../machines/types.ts";
import { type ProblemCode, PROBLEMS } from "./problem.ts";

/** The agent machine's states. */
export const AgentState = z.enum(STATES).openapi("AgentState");

/** A stored state as the documented enum; a state the machine does not have is a server fault (500). */
export function agentState(state: string): z.output<typeof AgentState> {
  const r = AgentState.safeParse(state);
  if (!r.success) throw new Error(`Cannot answer agent state ${JSON.stringify(state)}: the agent machine has no such state`);
  return r.data;
}

/** Agent ids: no `{`, `}` (they would break the store's hash tag), no whitespace or control characters. */
/** Not `.` or `..`: URL normalization removes such a path segment, so the agent could never be addressed. */
export const AGENT_ID = new RegExp(`^(?!\\.{1,2}$)[${ID_CHARS}]{1,128}$`);

export const AgentId = z.string().regex(AGENT_ID).describe("Agent id, `^[A-Za-z0-9_.:-]{1,128}$`, not `.` or `..`");

const Ref = (what: string) => z.string().min(1).max(256).describe(what);

// ---------------------------------------------------------------- requests

/** A task's spend limits (common/spend-limit.ts); each field lowers the agent's `spendLimit` for this turn (raises it only with `admin` or `tasksMayRaise`). */
export const SpendLimitBody = z.strictObject({
  maxTokensPerTurn: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).optional()
    .describe("Most input + output tokens the turn may use (its children's included)"),
  maxCostPerTurn: z.number().min(0).optional().describe("Most model cost the turn may use (its children's included)"),
  maxCostTotal: z.number().min(0).optional().describe("Most model cost the agent may have used over all its turns"),
}).describe("Spend limits of this turn: per field the smaller of these and the agent's `spendLimit` applies, unless the " +
  "request's token has `admin` or the agent sets `spendLimit.tasksMayRaise` (then these replace the agent's); crossing one " +
  "fails the turn with `budget_exhausted`");

/** A task's verifier attempts, under `name`. */
const attempts = (name: string, description: string) =>
  z.number().superRefine((v, ctx) => {
    const e = checkVerifyAttempts(v);
    if (e) ctx.addIssue({ code: "custom", message: `${name} ${e}` });
  }).meta({ type: "integer", minimum: 1, maximum: MAX_VERIFY_ATTEMPTS_LIMIT, description }).optional();

/** A task's concurrency key (common/concurrency.ts), refused with the rule it breaks. */
export const ConcurrencyKeyField = (description: string) =>
  z.string().superRefine((v, ctx) => {
    const e = concurrencyKeyProblem(v);
    if (e) ctx.addIssue({ code: "custom", message: `concurrencyKey ${e}` });
  }).meta({ type: "string", minLength: 1, maxLength: MAX_CONCURRENCY_KEY_LENGTH, pattern: "^[^\\u0000-\\u001f\\u007f-\\u009f]+$", description })
    .optional();

/** A task's priority in seconds (common/concurrency.ts), refused with the rule it breaks. */
export const PriorityField = (description: string) =>
  z.number().superRefine((v, ctx) => {
    const e = priorityProblem(v);
    if (e) ctx.addIssue({ code: "custom", message: `priority ${e}` });
  }).meta({ type: "integer", minimum: 0, maximum: MAX_PRIORITY, description }).optional();

const KEY_TEXT = "Concurrency key (1-256 characters, no control characters), e.g. `user:42`: at most the configured " +
  "`concurrencyLimits` of its turns run at once across every process; ready keys take turns (fair lanes). Absent: the " +
  "agent definition's `concurrencyKey(task)`, else the default lane";
const PRIORITY_TEXT = "Priority in seconds, 0-86400 (default 0): within its lane the task is ordered as if it became ready " +
  "this many seconds earlier (so it never waits forever behind higher priorities)";

/** The longest delay of a delayed task (ms): 30 days (routes/task-delay.ts). */
export const MAX_TASK_DELAY_MS = 30 * 24 * 60 * 60 * 1000;

/** ISO 8601 date and time with an offset (`Z` or `±hh:mm`), e.g. `2026-05-01T09:00:00Z`. */
const ISO_WITH_OFFSET = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/;

export const TaskRequest = z.strictObject({
  agent: z.string().min(1).max(64).describe("Name of the agent definition; the first task binds the agent id to it"),
  input: z.union([z.string(), z.record(z.string(), z.unknown())], { error: "text or a JSON object" }).describe("The task: text or a JSON object"),
  idempotencyKey: z.string().min(1).max(256).optional()
    .describe("First-wins per agent: a repeated key answers the first task's turn with `duplicate: true`"),
  verifyAttempts: attempts("verifyAttempts", "Overrides the verifier gate's attempts for this turn"),
  spendLimit: SpendLimitBody.optional(),
  concurrencyKey: ConcurrencyKeyField(KEY_TEXT),
  priority: PriorityField(PRIORITY_TEXT),
  delayMs: z.int().min(0).max(MAX_TASK_DELAY_MS).optional()
    .describe("A delayed task: not started before this many ms from now (at most 30 days; not with `runAt`)"),
  runAt: z.string().regex(ISO_WITH_OFFSET, "an ISO 8601 date and time with an offset (Z or ±hh:mm)")
    .refine((v) => Number.isFinite(Date.parse(v)), "a date and time that exists")
    .optional()
    .describe("A delayed task: not started before this time, ISO 8601 with an offset (at most 30 days ahead; a past time runs now; not with `delayMs`)"),
  // Both delayMs and runAt: refused by routes/task-delay.ts, whose answer names the two fields and the rule.
}).openapi("TaskRequest");
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
}).openapi("ToolResultRequest");
export type ToolResultRequest = z.infer<typeof ToolResultRequest>;

/** Turn ids: what `rt.ids` hands out and the store accepts (no control characters). */
// deno-lint-ignore no-control-regex
export const TurnId = z.string().min(1).max(256).regex(/^[^\u0000-\u001f\u007f]+$/, "no control characters")
  .describe("A turn id (from the task's 202 answer)");

export const CancelRequest = z.strictObject({
  reason: z.string().min(1).max(1_000).optional().describe("Becomes the turn's error message"),
  turnId: TurnId.optional()
    .describe("The turn to cancel; omitted: the turn active when the cancel is accepted (fixed at that moment)"),
}).openapi("CancelRequest");

/** Path parameters of routes under `/v1/agents/{agentId}` (routes/agent-id.ts checks the id first). */
export const AgentParams = z.object({ agentId: AgentId });

export const TurnParams = z.object({ agentId: AgentId, turnId: TurnId });

/** Body of routes that take none: absent, empty, or `{}`. */
export const EmptyRequest = z.strictObject({}).openapi("EmptyRequest");

/**
 * A non-negative integer in a query string, path or header: read from its
 * decimal text (at most 15 digits, surrounding blanks allowed), documented
 * and typed as an integer; a client may pass a number.
 */
export function decimalInt(what: string, min = 0, max = Number.MAX_SAFE_INTEGER) {
  const message = `${what} must be a decimal integer from ${min}${max < Number.MAX_SAFE_INTEGER ? ` to ${max}` : ""}`;
  return z.preprocess(
    (v: string | number) => (typeof v === "string" && /^\s*\d{1,15}\s*$/.test(v) ? Number(v) : v),
    z.int({ error: message }).min(min, { error: message }).max(max, { error: message }),
  );
}

/** Query of `GET /v1/agents/:agentId/events`; `limit` is bounded by the runtime's `maxEventPage`. */
export function eventsQuery(maxEventPage: number) {
  return z.strictObject({
    after: decimalInt("after").optional().describe("Return events with id > after (default 0)"),
    limit: decimalInt("limit", 1, maxEventPage).optional()
      .describe(`Page size, 1 to ${maxEventPage} (default ${Math.min(100, maxEventPage)})`),
    format: z.enum(["json", "sse"]).optional()
      .describe("Force the response format (default: SSE when Accept includes text/event-stream, else JSON)"),
  });
}

export const LastEventId = decimalInt("Last-Event-ID");

// --------------------------------------------------------------- responses

export const TaskAccepted = z.object({
  agentId: z.string(),
  turnId: z.string(),
  duplicate: z.boolean().describe("True when the idempotency key was seen before; nothing was enqueued"),
  runAt: z.string().optional().describe(
    "A delayed task's due time (ISO 8601, UTC): given `delayMs` or `runAt`; on a duplicate, the first task's while it is queued or running",
  ),
}).openapi("TaskAccepted");

export const ToolResultAccepted = z.object({
  accepted: z.literal(true),
  duplicate: z.boolean().describe("True when this exact result was delivered before and won; nothing changed"),
  contract: z.object({
    passed: z.boolean().describe("False when the result did not satisfy the tool's contract: the model receives the typed error instead"),
    mismatch: z.enum(["missing_required_key", "type_mismatch", "nil_required_input"]).nullable(),
  }).describe("The contract check of this result (docs/contracts.md); `passed: true, mismatch: null` for a tool without a contract"),
}).openapi("ToolResultAccepted");

export const CancelAccepted = z.object({
  accepted: z.literal(true),
  turnId: z.string().describe("The turn the cancel is aimed at; it never applies to another turn"),
}).openapi("CancelAccepted");

export const TURN_STATUSES = ["queued", "active", "done", "failed", "ended", "cancelled"] as const;

/** Why a queued task waits (routes/waiting.ts; docs/http.md, "Why a task waits"). */
export const Waiting = z.discriminatedUnion("for", [
  z.object({ for: z.literal("run_at"), runAt: z.string().describe("A delayed task not due yet: its due time (ISO 8601, UTC)") }),
  z.object({ for: z.literal("turn"), ahead: z.int().describe("Turns of this agent that start before it, its active turn counted (at least)") }),
  z.object({
    for: z.literal("concurrency_key"),
    key: z.string().describe("Its concurrency key, at its limit"),
    limit: z.int().describe("The key's limit (`concurrencyLimits`)"),
    running: z.int().describe("Turns of the key running now, across every process"),
  }),
  z.object({
    for: z.literal("lane"),
    key: z.string().describe("Its lane: its concurrency key, \"\" for the default lane"),
    queued: z.int().describe("Agents with due work in this lane that no worker holds (it included)"),
  }),
  z.object({
    for: z.literal("version"),
    version: z.string().describe("The agent view only: the active turn's definition version, which no live process has (docs/operations.md, \"Upgrades\")"),
  }),
]).openapi("Waiting");

export const TurnView = z.object({
  agentId: z.string(),
  turnId: z.string(),
  status: z.enum(TURN_STATUSES).describe(
    "`queued` in the inbox, `active`, `done` / `failed` once it ended (`ended`: ended, state not recorded), " +
      "`cancelled` while queued",
  ),
  input: z.unknown().optional().describe("The task's input (stored once per turn; events refer to it by turn id)"),
  runAt: z.string().optional().describe("A delayed task's due time (ISO 8601, UTC), while it is queued or active"),
  concurrencyKey: z.string().optional().describe("The task's concurrency key, while it is queued or active (absent: the default lane)"),
  priority: z.int().optional().describe("The task's priority in seconds, while it is queued or active (absent: 0)"),
  waiting: Waiting.optional().describe("Why the queued task has not started (docs/http.md, \"Why a task waits\"); only while `queued`"),
}).openapi("TurnView");

export const TaskCancelled = z.object({
  agentId: z.string(),
  turnId: z.string(),
  status: z.literal("cancelled"),
  duplicate: z.boolean().describe("True when an earlier request cancelled it; nothing changed"),
}).openapi("TaskCancelled");

const Usage = z.object({
  inputTokens: z.number(),
  outputTokens: z.number(),
  cost: z.number(),
  steps: z.number(),
});

const IsoTime = z.string().describe("ISO 8601, UTC");

/** How many queued tasks the agent view lists. */
export const QUEUED_TASKS_SHOWN = 100;

export const AgentView = z.object({
  agentId: z.string(),
  agent: z.string().describe("Name of the definition the id is bound to"),
  definition: z.string().describe(
    "The definition the current (or last) turn runs under: `agent`, unless a handoff transferred the turn to another " +
      "definition. The next turn starts under `agent` again",
  ),
  state: AgentState.describe("Machine state"),
  turnId: z.string().nullable().describe("The active turn, else the last turn that ran (null before the first)"),
  activeTurnId: z.string().nullable().describe("The turn in progress; null between turns"),
  epoch: z.int(),
  version: z.int(),
  pendingTasks: z.int(),
  queuedTasks: z.array(z.object({
    turnId: z.string(),
    enqueuedAt: IsoTime,
    runAt: IsoTime.optional().describe("A delayed task: not started before this time"),
    concurrencyKey: z.string().optional().describe("Its concurrency key (absent: the default lane)"),
    priority: z.int().optional().describe("Its priority in seconds (absent: 0)"),
  })).describe(`The first ${QUEUED_TASKS_SHOWN} queued tasks in the order they will start (docs/http.md, "Delayed tasks")`),
  waiting: Waiting.optional().describe("Why the agent's work waits (docs/http.md, \"Why a task waits\"): `version` while the active turn waits for a process that has its definition version, else why the first queued task has not started; absent when neither"),
  concurrencyKey: z.string().optional().describe("The active turn's concurrency key (absent: none, or no active turn)"),
  priority: z.int().optional().describe("The active turn's priority in seconds (absent: 0, or no active turn)"),
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
  activity: z.object({
    kind: z.enum(["model", "tool", "verifier"]).describe(
      "`model`: a model step (state `running`); `tool`: tool calls (state `waiting-tools`); `verifier`: the verifier gate (state `verifying`)",
    ),
    step: z.int().describe("The step of the turn the activity belongs to (a model step: the one being asked)"),
    since: IsoTime.describe("When it began: the commit (or claim) that entered the state"),
    sinceMs: z.number().describe("`since` in ms since the epoch"),
    toolCallIds: z.array(z.string()).optional()
      .describe("`tool`: the calls not answered yet (in-process calls running, external calls awaited)"),
  }).nullable().describe("What the turn is doing, read from the stored state; null at rest (idle, done, failed)"),
  pendingToolCalls: z.array(z.object({
    toolCallId: z.string(),
    name: z.string(),
    args: z.unknown().describe("The arguments the call runs with: the model's, or a person's edit when approving it"),
    proposedArgs: z.unknown().optional().describe(
      "Present when a person edited the arguments when approving the call (`POST …/approvals` `args`): the model's proposal",
    ),
    external: z.boolean(),
    deadline: IsoTime.describe("When the watchdog times the call out; while an approval is pending, the approval's deadline"),
    deadlineMs: z.number().describe("`deadline` in ms since the epoch"),
    delivered: z.boolean().describe(
      "True once the store accepted a result for the call (`POST …/tool-results`, or the watchdog's timeout) that the " +
        "worker has not applied yet: do not deliver it again",
    ),
    approval: z.enum(["pending", "approved", "rejected", "timeout"]).optional().describe(
      "Present when the call needs a person's approval (`needsApproval`): `pending` until `POST …/approvals` decides it " +
        "(or its approval deadline passes: `timeout`)",
    ),
    decidedBy: z.string().nullable().optional().describe(
      "Who decided the call's approval: the name of the request's token (null without auth or a name; docs/security.md)",
    ),
    deliveredBy: z.string().nullable().optional().describe(
      "Who delivered the call's result over `POST …/tool-results` (the token's or webhook secret's name, or null)",
    ),
    event: z.string().optional().describe(
      "Present when the call waits for a named event (`waitFor`): its name; `POST /v1/events` with that name resolves it",
    ),
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
  schedules: z.array(z.object({
    scheduleId: z.string(),
    cron: z.string().optional(),
    everyMs: z.int().optional(),
    timezone: z.string().optional(),
    nextRunAt: IsoTime.nullable().describe("The next tick; null: the schedule has no more ticks, or is paused"),
    paused: z.literal(true).optional().describe("Present when the schedule is paused (PATCH .../schedules/:scheduleId)"),
  })).optional().describe("The agent's recurring schedules (present when it has any; routes/schedules.ts)"),
  turnVersion: z.string().optional().describe("The definition version the active turn runs under (present when it recorded one)"),
}).openapi("AgentView");
export type AgentView = z.infer<typeof AgentView>;

/**
 * Stored events, one component per type of the catalogue (machines/event-log.ts):
 * `<Type>Event` with `type` a literal and `data` the type's shape, and
 * `CustomEvent` for the types an `afterAttempt` hook adds (any type the
 * runtime does not write). `RuntimeEvent` is the `oneOf` of the former with a
 * discriminator on `type` mapping each type to its component, so a generated
 * client narrows `data` on `type`; `StoredEvent` is `RuntimeEvent` or
 * `CustomEvent`.
 */
export { EVENT_TYPES };

const eventFields = {
  id: z.int().describe("1, 2, 3, … per agent"),
  at: z.number().describe("ms since the epoch"),
  turnId: z.string().nullable(),
};

const componentName = (type: string) => `${type.split("_").map((w) => w[0].toUpperCase() + w.slice(1)).join("")}Event`;

function runtimeEvent<T extends EventType>(type: T) {
  return z.object({
    id: eventFields.id,
    type: z.literal(type).describe("The event type (also the SSE `event:` name)"),
    data: EVENT_DATA[type] as (typeof EVENT_DATA)[T],
    at: eventFields.at,
    turnId: eventFields.turnId,
  }).describe(EVENT_DATA[type].description ?? type).openapi(componentName(type));
}

type RuntimeEventSchema<T extends EventType> = ReturnType<typeof runtimeEvent<T>>;

/** The runtime's event schemas, by type. */
export const RUNTIME_EVENTS = Object.fromEntries(EVENT_TYPES.map((t) => [t, runtimeEvent(t)])) as {
  [T in EventType]: RuntimeEventSchema<T>;
};

type AnyRuntimeEventSchema = { [T in EventType]: RuntimeEventSchema<T> }[EventType];

const runtimeEvents = EVENT_TYPES.map((t) => RUNTIME_EVENTS[t]) as [AnyRuntimeEventSchema, ...AnyRuntimeEventSchema[]];

/**
 * An event of a type the runtime writes, checked against that type's `data`:
 * a `oneOf` with a discriminator mapping every runtime type to its component.
 */
export const RuntimeEvent = z.discriminatedUnion("type", runtimeEvents)
  .describe("An event of a type the runtime writes; `type` tells which `data` it carries")
  .openapi("RuntimeEvent");

export const CustomEvent = z.object({
  id: eventFields.id,
  type: z.string().min(1).refine((t) => !isRuntimeEventType(t), { error: "a type the runtime writes" })
    .meta({ not: { enum: [...EVENT_TYPES] } })
    .describe("A type of the verifier gate's `afterAttempt` hook: any type the runtime does not write"),
  data: z.record(z.string(), z.unknown()),
  at: eventFields.at,
  turnId: eventFields.turnId,
}).describe("An event an `afterAttempt` hook of the verifier gate added (docs/verification.md)").openapi("CustomEvent");

/**
 * An entry of the log: `oneOf` a `RuntimeEvent` or a `CustomEvent`. The
 * discriminator sits on `RuntimeEvent`, not here: a discriminator over a
 * member no mapping names gives that member its schema name as implicit
 * `type` value in generators (openapi-typescript types `CustomEvent.type`
 * as `"CustomEvent"`).
 */
export const StoredEvent = z.union([z.lazy(() => RuntimeEvent), CustomEvent]).openapi("StoredEvent", {
  description: "An entry of the agent's event log: an event of a type the runtime writes (`RuntimeEvent`, " +
    "discriminated on `type`), or one an `afterAttempt` hook added (`CustomEvent`)",
}, { unionPreferredType: "oneOf" });

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
  "holds at least one event when there is one after `after`").openapi("EventsPage");
export type EventsPage = z.output<typeof EventsPage>;

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
  "The agent statechart as an XState v5 machine config, to draw it (Stately imports it): `createMachine(body)` loads it as is; guards and actions are names only, so a guarded event needs `.provide(agentMachine.implementations)`",
).openapi("MachineView");

export const WatchdogTick = z.object({
  timedOut: z.int().describe("Calls past their deadline now resolved with a timeout"),
  alreadyResolved: z.int().describe("Calls a result resolved first"),
  turnFinished: z.int().describe("Calls whose turn had ended (or whose call or agent is unknown)"),
  skipped: z.int().describe(
    "Records the pass could not time out, taken out of the due index (or pushed back after an error) so they " +
      "never hold up the others; each is logged as `watchdog_skipped`",
  ),
}).openapi("WatchdogTick");

export const Health = z.object({ ok: z.literal(true), store: z.enum(["memory", "redis", "upstash"]) }).openapi("Health");
export const Draining = z.object({
  ok: z.literal(false),
  status: z.literal("draining").describe("The process stopped claiming and is finishing or handing back its claims before it exits"),
  store: z.enum(["memory", "redis", "upstash"]),
}).openapi("Draining");

export const OpenApiDocument = z.record(z.string(), z.unknown()).describe("This OpenAPI 3.1 document").openapi("OpenApiDocument");

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
  code: z.enum(Object.keys(PROBLEMS) as [ProblemCode, ...ProblemCode[]]).describe("Stable error code (see docs/http.md)"),
  errors: z.array(ValidationIssue).optional().describe("Schema violations (`validation_failed`)"),
  resolvedBy: z.enum(["timeout", "result"]).optional()
    .describe("`already_resolved`: whether the watchdog's timeout or another result resolved the call"),
}).openapi("Problem");

/** Body of `POST /v1/agents/:agentId/reset` (optional). */
export const ResetRequest = z.strictObject({
  reason: z.string().min(1).max(500).optional().describe("Becomes the turn's error message"),
}).openapi("ResetRequest");

export const ResetAccepted = z.object({
  reset: z.literal(true),
  turnId: z.string().describe("The turn that was ended (failed, reason `reset`)"),
  version: z.number().describe("The agent's snapshot version after the reset"),
}).openapi("ResetAccepted");

export const Ready = z.object({ ready: z.literal(true), store: z.enum(["memory", "redis", "upstash"]) }).openapi("Ready");

export const AgentDeleted = z.object({
  deleted: z.literal(true),
  agentId: z.string(),
}).describe("The agent and its records are gone (verdict records are kept)").openapi("AgentDeleted");
