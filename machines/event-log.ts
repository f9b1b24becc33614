/**
 * The event catalogue: every event type the runtime writes to an agent's log,
 * with the shape of its `data`. It lives beside the machine because it is
 * built on the machine's states and events and is read by both the verifier
 * gate and the routes. One entry per type in `EVENT_DATA`; the rest follows
 * from it:
 * - `EVENT_TYPES`, the list docs/http.md and the OpenAPI document name;
 * - the OpenAPI components `<Type>Event` and the `StoredEvent` union
 *   (routes/schemas.ts), which a generated client narrows on `type`;
 * - the rule for events of other types (`isRuntimeEventType`): an
 *   `afterAttempt` hook of the verifier gate may log events of its own types,
 *   any type the catalogue does not hold (verification/gate.ts refuses a
 *   hook event whose type the runtime writes, so a stored event of a
 *   catalogued type always has the catalogued `data`).
 *
 * Invariant: every event the runtime can write parses with the entry of its
 * type (`data` objects are strict: a field the catalogue does not name fails
 * too); tests/machines/event-schemas.test.ts drives the host, the store, the gate,
 * the watchdog and the routes through every writer and checks each stored
 * event. Adding an event type (or a field) is one change here.
 *
 * Responses are not validated against these schemas at run time: they
 * describe what the writers produce, they never reject it.
 *
 * Stored form and served form (common/event-form.ts). The catalogue is the
 * served form: what `Store.readEvents` answers, and so every reader (the
 * routes, SSE, replay, time travel, forks, bundles). The log stores some
 * events shorter: a payload a `transition` of the same commit carries is
 * stored once, in the transition, and the sibling event names it with
 * `ref` (the transition's id minus its own): a `tool_call`'s `name`,
 * `args`, `external`, `deadline` (the call in `MODEL_STEP`), a
 * `tool_result`'s `ok`, `outcome`, `afterExecution` (`TOOL_RESULT`), a
 * `step`'s `text` (planning), `toolCallIds` (executing, completed) and
 * `llmUsage`/`llmResponseCost` (completed), and a `chunk`'s `text` (a slice
 * `from`..`to` of the `MODEL_STEP` text). Invariants:
 * 1. Transitions are stored whole: replaying the stored `transition` events
 *    reproduces the machine events the actor received, as before; a reader
 *    of transitions alone needs no expansion.
 * 2. `expandEvents(compactEvents(commit))` is the commit's events exactly,
 *    key order included (the writer compacts a field only when the
 *    transition holds the same value, and expands in the catalogue order).
 * 3. A log written before (every event whole, no `ref`) reads unchanged:
 *    only events with a numeric `ref` are expanded (upgrade on read), so a
 *    log may mix both forms and no version marker is needed.
 * 4. Readers get the served form only: `readEvents` expands, reading the
 *    referenced transitions outside a page cut within a commit in the same
 *    atomic read as the page. A commit's events are never separated in
 *    storage (retention cuts the log only at a turn's end, after a whole
 *    commit); were they, a compact event without its transition would be
 *    served as trimmed, never compact (store invariant `served-events`).
 */
import { z } from "zod";
import { STATES } from "./types.ts";

const int = () => z.int().min(0);
const ms = () => z.number().describe("ms since the epoch");
const State = z.enum(STATES);
const AfterExecution = z.enum(["continue", "terminate"]);

/** A tool's outcome as stored (`retriable` already renamed, see common/outcome.ts). */
const ChildUsage = z.strictObject({ inputTokens: int(), outputTokens: int(), cost: z.number() });

const StoredOutcome = z.discriminatedUnion("ok", [
  z.strictObject({ ok: z.literal(true), value: z.unknown() }),
  z.strictObject({
    ok: z.literal(false),
    error: z.strictObject({
      type: z.string(),
      message: z.string(),
      retryable: z.boolean().optional(),
      metadata: z.record(z.string(), z.unknown()).optional(),
    }),
  }),
]);

const TurnConfig = z.strictObject({
  maxSteps: int(),
  completion: z.enum(["agent_output", "submit_result"]),
  mustEndWith: z.array(z.string()),
  verifyMaxAttempts: int(),
  maxVerifierErrors: int(),
});

const TokenUsage = z.strictObject({ inputTokens: int(), outputTokens: int() });
const TurnUsage = z.strictObject({ inputTokens: int(), outputTokens: int(), cost: z.number(), steps: int() });

/**
 * The machine events a `transition` logs (machines/types.ts `AgentEvent`);
 * `TASK_STARTED` without its `input` (stored once per turn, read with `getTurn`).
 */
export const MachineEvent = z.discriminatedUnion("type", [
  z.strictObject({
    type: z.literal("TASK_STARTED"),
    at: ms(),
    turnId: z.string(),
    config: TurnConfig,
    version: z.string().optional().describe("The definition version the turn runs under (absent in logs written before versions)"),
  }),
  z.strictObject({
    type: z.literal("MODEL_STEP"),
    at: ms(),
    text: z.string().nullable(),
    toolCalls: z.array(z.strictObject({
      id: z.string(),
      name: z.string(),
      args: z.unknown(),
      external: z.boolean(),
      deadline: ms(),
      approval: z.literal(true).optional().describe("The call waits for a person's approval (POST …/approvals)"),
    })),
    usage: TokenUsage,
    cost: z.number(),
  }),
  z.strictObject({ type: z.literal("MODEL_FAILED"), at: ms(), message: z.string() }),
  z.strictObject({ type: z.literal("STEP_BUDGET_EXHAUSTED"), at: ms() }),
  z.strictObject({
    type: z.literal("TOOL_RESULT"),
    at: ms(),
    toolCallId: z.string(),
    outcome: StoredOutcome,
    afterExecution: AfterExecution,
    usage: ChildUsage.optional().describe("What a delegated child agent spent for this call (counts toward the parent's spend limits)"),
    handoff: z.strictObject({
      from: z.string(),
      to: z.string(),
      config: TurnConfig,
      keepsGate: z.literal(true).optional()
        .describe("The turn stays gated by its binding's output contract: the verification state goes on"),
    }).optional()
      .describe("The call was a handoff: the turn continues under definition `to` with this turn config"),
    editedArgs: z.record(z.string(), z.unknown()).optional()
      .describe("The call ran with these arguments, edited by the person who approved it (the model's tool message shows them)"),
  }),
  z.strictObject({ type: z.literal("VERIFY_PASSED"), at: ms(), hash: z.string(), result: z.unknown() }),
  z.strictObject({
    type: z.literal("VERIFY_REJECTED"),
    at: ms(),
    hash: z.string(),
    code: z.string(),
    message: z.string(),
    retryable: z.boolean(),
    metadata: z.record(z.string(), z.unknown()).optional(),
  }),
  z.strictObject({ type: z.literal("VERIFY_ERROR"), at: ms(), message: z.string(), retryAt: ms() }),
  z.strictObject({ type: z.literal("FEEDBACK_APPENDED"), at: ms() }),
  z.strictObject({ type: z.literal("CANCEL"), at: ms(), reason: z.string() }),
  z.strictObject({
    type: z.literal("TURN_FAILED"),
    at: ms(),
    turnId: z.string(),
    reason: z.enum(["claim_error", "reset", "budget_exhausted"]),
    message: z.string(),
  }),
]);

const SpendLimit = z.strictObject({
  maxTokensPerTurn: z.number().optional(),
  maxCostPerTurn: z.number().optional(),
  maxCostTotal: z.number().optional(),
});

const DelegationLink = z.strictObject({
  parentAgentId: z.string(),
  parentAgentName: z.string(),
  toolName: z.string(),
  parentTurnId: z.string(),
  toolCallId: z.string(),
  depth: int(),
});

/** The one contract check's record of a tool result (common/contract-validation.ts, docs/contracts.md). */
const ContractValidation = z.strictObject({
  applied: z.boolean(),
  passed: z.boolean(),
  mismatch: z.enum(["missing_required_key", "type_mismatch", "nil_required_input"]).nullable(),
  expectedKeys: z.array(z.string()),
  actualKeys: z.array(z.string()),
  tolerated: z.array(z.strictObject({ expected: z.string(), found: z.string() })).optional(),
});

/**
 * Who made the change (common/by.ts): the name of the token or webhook
 * secret the request came with, null without auth or without a name; absent
 * on changes the runtime made itself and on events logged before `by`.
 */
const by = () => z.string().nullable().optional()
  .describe("Who did it: the name of the token (or webhook secret) of the request; null without auth or a name; absent when the runtime did it or the event predates `by`");

/** What every verifier gate event of an attempt carries. */
const attempt = {
  toolCallId: z.string().describe("The candidate's tool call"),
  attempt: int(),
  maxAttempts: int(),
  candidateHash: z.string(),
};

/**
 * Every event type the runtime writes, with its `data`, in the order the
 * docs list them: the store's, the turn's, the host's, the gate's, the
 * fork's. `describe` is the one-line summary the OpenAPI document shows.
 */
export const EVENT_DATA = {
  // ------------------------------------------------------------ the store
  task_enqueued: z.strictObject({
    turnId: z.string(),
    options: z.strictObject({
      verifyMaxAttempts: int().optional(),
      budget: SpendLimit.optional().describe("This turn's spend limits (they lower the agent's unless `budgetMayRaise`)"),
      budgetMayRaise: z.literal(true).optional()
        .describe("The enqueuer had `admin` (or auth was off): `budget` replaces the agent's limits and may raise them"),
      delegation: DelegationLink.optional().describe("The parent's call this task runs (a child agent's task)"),
    }),
    inputBytes: int().describe("Bytes of the task's input JSON (the input is stored once, read with GET …/turns/{turnId})"),
    runAt: int().optional().describe("A delayed task: not started before this time (ms; store invariant `delayed-tasks`)"),
  }).describe("A task entered the inbox"),
  tool_result_received: z.strictObject({
    toolCallId: z.string(),
    ok: z.boolean(),
    source: z.enum(["http", "watchdog", "inline", "delegation", "approval"])
      .describe("`approval`: a person rejected the call (the error outcome `approval_rejected`)"),
    afterExecution: AfterExecution,
    contractValidation: ContractValidation,
    event: z.string().optional().describe("The named event this result is (`POST /v1/events`), on a call that waited for it (`waitFor`)"),
    by: by(),
  }).describe("A tool result was delivered for the host to apply"),
  approval_decided: z.strictObject({
    toolCallId: z.string(),
    decision: z.enum(["approved", "rejected", "timeout"]).describe("`timeout`: nobody decided before the approval's deadline (the watchdog)"),
    reason: z.string().nullable(),
    args: z.record(z.string(), z.unknown()).optional()
      .describe("Approved with edited arguments: what the call runs with (the proposed ones are in `approval_requested`)"),
    by: by(),
    deadline: ms().nullable().describe("Approved: the call's deadline from now on; null otherwise (the call is resolved with its error)"),
  }).describe("A person's decision on a call that needed approval, or the watchdog's timeout of it (first decision wins)"),
  task_cancelled: z.strictObject({ turnId: z.string(), reason: z.string(), by: by() })
    .describe("A queued task was removed before it started"),
  schedule_deleted: z.strictObject({ scheduleId: z.string(), by: z.string().nullable().describe("Who deleted it (the token's name; null without auth or a name)") })
    .describe("A schedule of the agent was deleted (DELETE …/schedules/{scheduleId})"),
  cancel_requested: z.strictObject({ reason: z.string(), turnId: z.string().describe("The turn the cancel is aimed at"), by: by() })
    .describe("A cancel of the active turn was accepted"),
  watchdog_skipped: z.strictObject({ toolCallId: z.string(), reason: z.string(), retryAt: ms().nullable() })
    .describe("A due tool call the watchdog could not time out, moved out of its way"),
  claim_failed: z.strictObject({
    attempt: int(),
    maxAttempts: int(),
    error: z.string(),
    workerId: z.string(),
    retryAt: ms().nullable().describe("null: the last attempt, the turn failed"),
  }).describe("A claim of the turn threw"),
  // ------------------------------------------------------------- the turn
  transition: z.strictObject({
    seq: int().describe("1, 2, … within the commit"),
    from: State,
    to: State,
    event: MachineEvent,
    snapshotReset: z.literal(true).optional()
      .describe("The stored snapshot could not be restored; the turn failed from the initial one"),
    by: by().describe("A reset's transition: who reset the agent (POST …/reset; null without auth or a name)"),
    commit: z.strictObject({
      index: int().describe("This event's position (from 0) among the events its commit appended"),
      count: int().describe("How many events its commit appended"),
    }).optional().describe("Which events one commit of the host wrote (absent: a transition a store operation logged, or a log written before the mark)"),
  }).describe("A machine transition; replaying them rebuilds every snapshot"),
  task: z.strictObject({
    turnId: z.string().nullable(),
    status: z.enum(["done", "failed"]),
    deliverable: z.unknown().describe("The turn's output (null when it failed)"),
    error: z.strictObject({ reason: z.string(), message: z.string() }).nullable(),
    usage: TurnUsage,
  }).describe("The turn ended"),
  // ------------------------------------------------------------- the host
  step: z.discriminatedUnion("phase", [
    z.strictObject({ phase: z.literal("started"), step: int() }),
    z.strictObject({ phase: z.literal("planning"), step: int(), text: z.string().nullable() }),
    z.strictObject({ phase: z.literal("executing"), step: int(), toolCallIds: z.array(z.string()) }),
    z.strictObject({
      phase: z.literal("completed"),
      step: int(),
      model: z.string(),
      llmUsage: TokenUsage,
      llmResponseCost: z.number(),
      toolCallIds: z.array(z.string()),
    }),
  ]).describe("A model step: started, planning (its text), executing (its tool calls), completed (its usage)"),
  chunk: z.strictObject({ step: int(), text: z.string() })
    .describe("The model's streamed text, joined into pieces of 512+ characters"),
  model_error: z.strictObject({ step: int(), attempt: int(), message: z.string() })
    .describe("A model call failed (retried up to the agent's modelAttempts)"),
  tool_call: z.strictObject({
    step: int(),
    toolCallId: z.string(),
    name: z.string(),
    args: z.unknown(),
    external: z.boolean().describe("true: answered over POST …/tool-results"),
    deadline: ms().optional().describe("When the watchdog times the call out (absent for the completion tool)"),
    builtin: z.literal(true).optional().describe("The completion tool (`submit_result`, `agent_output`)"),
  }).describe("The model called a tool"),
  approval_requested: z.strictObject({
    step: int(),
    toolCallId: z.string(),
    name: z.string(),
    args: z.unknown(),
    external: z.boolean(),
    deadline: ms().describe("When the watchdog ends the wait as `approval_timeout`"),
  }).describe("A tool call waits for a person's approval (POST …/approvals)"),
  tool_result: z.strictObject({
    toolCallId: z.string(),
    name: z.string(),
    ok: z.boolean(),
    outcome: StoredOutcome,
    afterExecution: AfterExecution,
    durationMs: z.number(),
    contractValidation: ContractValidation,
  }).describe("An in-process tool finished"),
  submit_result_degraded: z.strictObject({ step: int(), toolCallId: z.string(), missingFields: z.array(z.string()) })
    .describe("`submit_result` lacked fields the task asked for; the turn still completes"),
  mail_ignored: z.discriminatedUnion("kind", [
    z.strictObject({
      seq: int(),
      kind: z.literal("cancel"),
      state: State,
      turnId: z.string().nullable().describe("The turn the cancel was aimed at"),
      activeTurnId: z.string().nullable(),
      why: z.enum(["not_in_turn", "turn_finished"]),
    }),
    z.strictObject({ seq: int(), kind: z.literal("tool_result"), toolCallId: z.string(), state: State }),
    z.strictObject({ seq: int(), kind: z.literal("approval"), toolCallId: z.string(), state: State }),
  ]).describe("Mail the host could not apply (its turn ended, or the call is no longer pending)"),
  event_ignored: z.strictObject({ event: z.string().describe("The machine event's type"), state: State })
    .describe("The machine did not take a machine event in its state"),
  worker_missing_definition: z.strictObject({ agent: z.string(), workerId: z.string() })
    .describe("The worker has no definition of the agent's name; the agent is parked"),
  turn_upgraded: z.strictObject({ turnId: z.string(), from: z.string(), to: z.string() })
    .describe("The turn moved from definition version `from` to `to` (the new version's `upgradeFrom`); its remaining steps run under `to`"),
  snapshot_unrestorable: z.strictObject({ message: z.string() })
    .describe("The stored snapshot does not restore in this build; the agent is parked"),
  claim_yielded: z.strictObject({ reason: z.literal("budget"), steps: int(), elapsedMs: z.number() })
    .describe("A claim with a budget (Workers) handed the agent back with work left"),
  // -------------------------------------------------------- the verifier gate
  verification_started: z.strictObject({ ...attempt, replayed: z.boolean() })
    .describe("The gate judges a candidate"),
  verdict_recorded: z.strictObject({
    ...attempt,
    verdictId: z.string(),
    guardianCode: z.string(),
    status: z.enum(["PASS", "NEEDS_CHANGES", "FAIL"]),
    how: z.enum(["written", "exists", "recalled"]),
  }).describe("A judgment's verdict was written, found written, or adopted"),
  verification_passed: z.strictObject({ ...attempt, durationMs: z.number() }).describe("Every judge passed"),
  verification_rejected: z.strictObject({
    ...attempt,
    code: z.string(),
    message: z.string(),
    retryable: z.boolean(),
    replayed: z.boolean(),
    durationMs: z.number(),
  }).describe("A judge rejected the candidate"),
  verification_attempt_counted: z.strictObject({ ...attempt, attemptsUsed: int() })
    .describe("The attempt counts against the budget (not on a replay)"),
  verification_exhausted: z.strictObject({ ...attempt, attemptsUsed: int() })
    .describe("A rejection used the last attempt"),
  verification_error: z.strictObject({
    toolCallId: z.string().nullable(),
    attempt: int().optional(),
    maxAttempts: int().optional(),
    candidateHash: z.string().optional(),
    message: z.string(),
    systemErrors: int(),
    final: z.boolean().describe("The turn fails with it (the verifier error budget is spent)"),
    retryAt: ms(),
  }).describe("A system error of the gate; the candidate is judged again at retryAt (attempt fields absent when the gate failed before it had them)"),
  verification_hook_failed: z.strictObject({ ...attempt, message: z.string() })
    .describe("The afterAttempt hook threw (or returned an event of a type the runtime writes)"),
  // -------------------------------------------------------------- forks
  forked_from: z.strictObject({
    agentId: z.string().describe("The source agent"),
    atEventId: int(),
    throughEventId: int().optional()
      .describe("The source's event the fork was rebuilt through: the last event of the commit that logged `atEventId`"),
    snapshot: z.record(z.string(), z.unknown()),
    messageCount: int(),
    by: by(),
  }).describe("The first event of a fork"),
  forked_to: z.strictObject({ agentId: z.string().describe("The new agent"), atEventId: int(), by: by() })
    .describe("The source agent was forked"),
  // ------------------------------------------- tools, teams and spending
  interface_overlap: z.strictObject({
    role: z.string(),
    method: z.string().describe("The method (tool name) whose successful call showed the overlap"),
    overlaps: z.array(z.strictObject({ methods: z.tuple([z.string(), z.string()]), kind: z.enum(["alias", "prefix"]) })),
    hint: z.string(),
  }).describe("A tool role has methods that look like one capability (an observation; nothing is renamed)"),
  delegation_started: z.strictObject({
    step: int(),
    toolCallId: z.string(),
    tool: z.string(),
    childAgent: z.string().describe("The child's definition"),
    childAgentId: z.string(),
    depth: int(),
  }).describe("A call of an agent tool handed a task to a child agent"),
  handoff: z.strictObject({
    step: int(),
    toolCallId: z.string(),
    tool: z.string(),
    from: z.string().describe("The definition that made the call"),
    to: z.string().describe("The definition the turn continues under"),
  }).describe("A handoff call transferred the turn to another definition (agents/handoff.ts)"),
  delegated_by: DelegationLink.extend({ turnId: z.string().describe("This child's turn") }).describe("This turn runs a parent's agent-tool call"),
  budget_exhausted: z.strictObject({
    turnId: z.string(),
    limit: z.enum(["maxTokensPerTurn", "maxCostPerTurn", "maxCostTotal"]),
    max: z.number(),
    used: z.number(),
    budget: SpendLimit,
    verdictId: z.string().nullable().describe("The budget guardian's FAIL verdict, null when it could not be recorded"),
  }).describe("The turn crossed a spend limit and fails with budget_exhausted"),
  memory_rolled: z.strictObject({ through: int().describe("Messages before this index are covered by the summary"), summaryChars: int() })
    .describe("The rolling summary of older turns was renewed"),
  summary_failed: z.strictObject({ message: z.string() })
    .describe("The summarizer failed: older turns leave the model's view without new summary text"),
} as const satisfies Record<string, z.ZodType>;

export type EventType = keyof typeof EVENT_DATA;

/** Event types the runtime writes, in catalogue order. */
export const EVENT_TYPES = Object.keys(EVENT_DATA) as EventType[];

const KNOWN = new Set<string>(EVENT_TYPES);

/** Whether the runtime writes events of this type (else: a hook's own type). */
export function isRuntimeEventType(type: string): type is EventType {
  return KNOWN.has(type);
}
