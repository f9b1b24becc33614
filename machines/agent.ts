/**
 * The agent statechart (docs/architecture.md, "The statechart"). Pure: transitions and `assign` only, no
 * invoke, no delays, no clock. Every effect (model step, tool dispatch,
 * verification) runs in the actor host between transitions and comes back as
 * an event carrying its time (`at`), so replaying the event log reproduces
 * every snapshot exactly.
 *
 * Finishing is decided by the turn's config, never by which tool the model
 * happened to call: `config.completion` is the one completion tool the turn
 * offers (`agent_output` when the agent declares `output`, else
 * `submit_result`). A call of any other name is an ordinary tool call; the
 * host answers one that was not offered with the error outcome
 * `tool_not_offered`, and the step counts.
 *
 * | from                 | event                                  | to            |
 * | idle / done / failed | TASK_STARTED                           | running       |
 * | running              | MODEL_STEP calling config.completion   | verifying     |
 * |                      |   = agent_output                       |               |
 * | running              | MODEL_STEP calling config.completion   | done          |
 * |                      |   = submit_result                      |               |
 * | running              | MODEL_STEP with other tool calls       | waiting-tools |
 * | running              | MODEL_STEP text, completion            | done          |
 * |                      |   submit_result, mustEndWith empty     |               |
 * | running              | MODEL_STEP text, otherwise             | running       |
 * | running              | MODEL_FAILED / STEP_BUDGET_EXHAUSTED   | failed        |
 * | waiting-tools        | TOOL_RESULT, last one outstanding      | running       |
 * |                      |   (one carrying `handoff` also sets    |               |
 * |                      |   `definition` and the turn config)    |               |
 * | waiting-tools        | TOOL_RESULT terminate, agent_output    | verifying     |
 * |                      |   (its value is the candidate)         |               |
 * | waiting-tools        | TOOL_RESULT terminate, submit_result   | done          |
 * | verifying            | VERIFY_PASSED                          | done          |
 * | verifying            | VERIFY_REJECTED retryable, budget      | revising      |
 * | verifying            | VERIFY_REJECTED final or exhausted     | failed        |
 * | verifying            | VERIFY_ERROR (below the error bound)   | verifying     |
 * | verifying            | VERIFY_ERROR (at the error bound)      | failed        |
 * | revising             | FEEDBACK_APPENDED                      | running       |
 * | any non-final        | CANCEL                                 | failed        |
 * | any                  | TURN_FAILED (claim_error, reset,       | failed        |
 * |                      |   budget_exhausted)                    |               |
 *
 * The only ways into `done`: VERIFY_PASSED (any turn), and for a turn whose
 * completion is `submit_result` also a `submit_result` call, text with
 * `mustEndWith` empty, and a terminating tool result. A turn whose completion
 * is `agent_output` reaches `done` through `verifying` only.
 */
import { roundCost } from "../common/cost.ts";
import { assign, type EventObject, type MetaObject, type NonReducibleUnknown, setup, type StateMachine } from "xstate";
import {
  AGENT_OUTPUT,
  type AgentContext,
  type AgentEvent,
  type AgentState,
  type CompletionTool,
  type ModelToolCall,
  SNAPSHOT_SCHEMA_VERSION,
  SUBMIT_RESULT,
  type TurnConfig,
  type Usage,
  type VerificationState,
} from "./types.ts";

const zeroUsage = (): Usage => ({ inputTokens: 0, outputTokens: 0, cost: 0, steps: 0 });

export const DEFAULT_TURN_CONFIG: TurnConfig = {
  maxSteps: 32,
  completion: SUBMIT_RESULT,
  mustEndWith: [],
  verifyMaxAttempts: 5,
  maxVerifierErrors: 3,
};

const freshVerification = (maxAttempts: number): VerificationState => ({
  maxAttempts,
  attemptsUsed: 0,
  lastCandidateHash: null,
  lastCandidateCallId: null,
  lastOutcome: null,
  lastAttemptAt: null,
  systemErrors: 0,
  retryAt: null,
  candidate: null,
  lastRejection: null,
});

/**
 * What `TASK_STARTED` changes in the context (the `startTurn` action). Also how a reader shows a turn whose
 * claim stored its start before its first commit (store/port.ts invariant `turn-start`, routes/agent-view.ts).
 */
export function turnStarted(context: AgentContext, e: { turnId: string; config: TurnConfig }): Partial<AgentContext> {
  return {
    turnId: e.turnId,
    turns: context.turns + 1,
    step: 0,
    config: e.config,
    pending: {},
    output: null,
    error: null,
    verification: freshVerification(e.config.verifyMaxAttempts),
    turnUsage: zeroUsage(),
    // A handoff lasts for its turn (agents/handoff.ts); contexts that never had one keep their shape.
    ...(context.definition !== undefined ? { definition: undefined } : {}),
  };
}

export function initialContext(): AgentContext {
  return {
    schemaVersion: SNAPSHOT_SCHEMA_VERSION,
    turnId: null,
    turns: 0,
    step: 0,
    config: { ...DEFAULT_TURN_CONFIG },
    pending: {},
    output: null,
    error: null,
    verification: freshVerification(DEFAULT_TURN_CONFIG.verifyMaxAttempts),
    usage: zeroUsage(),
    turnUsage: zeroUsage(),
  };
}

/** How a model step ends, decided from its tool calls and the turn config. */
export type StepKind = "verify" | "submit" | "tools" | "finish_text" | "remind";

/** True for the two completion tools; any other value (a damaged config) offers neither. */
export function isCompletionTool(name: unknown): name is CompletionTool {
  return name === AGENT_OUTPUT || name === SUBMIT_RESULT;
}

/** The call of the turn's completion tool in a step, if the model made one (the first one counts). */
export function completionCall(toolCalls: ModelToolCall[], config: TurnConfig): ModelToolCall | undefined {
  return isCompletionTool(config.completion) ? toolCalls.find((c) => c.name === config.completion) : undefined;
}

/**
 * Only the turn's own completion tool finishes it; the other one is an
 * ordinary (not offered) tool call. Text ends a turn only when its
 * completion is `submit_result` and `mustEndWith` is empty; a turn that
 * finishes with `agent_output` is reminded instead.
 */
export function classifyStep(toolCalls: ModelToolCall[], config: TurnConfig): StepKind {
  if (completionCall(toolCalls, config)) return config.completion === AGENT_OUTPUT ? "verify" : "submit";
  if (toolCalls.length > 0) return "tools";
  return config.completion === SUBMIT_RESULT && config.mustEndWith.length === 0 ? "finish_text" : "remind";
}

/** The tool names a reminder asks for: `mustEndWith`, or the completion tool when it is empty. */
export function requiredEnding(config: TurnConfig): string[] {
  return config.mustEndWith.length > 0 ? config.mustEndWith : [config.completion];
}

/** The value `submit_result` delivers: its `result` argument, or all arguments. */
export function submittedValue(args: unknown): unknown {
  if (args && typeof args === "object" && !Array.isArray(args) && "result" in args) {
    return (args as { result: unknown }).result;
  }
  return args;
}

/** The value a terminating tool result ends the turn with (or proposes, through the gate). */
export function terminatedValue(e: { outcome: ToolResultEvent["outcome"] }): unknown {
  return e.outcome.ok ? e.outcome.value : { error: e.outcome.error };
}

/**
 * True when a rejection re-reports the candidate already counted: the same
 * bytes (hash) from the same `agent_output` call, as after a worker retry or
 * restart. The same candidate proposed again in a later step is another call,
 * so it is a new attempt and counts.
 */
export function isReplayedRejection(v: VerificationState, hash: string): boolean {
  return v.candidate !== null && v.lastCandidateHash === hash && v.lastCandidateCallId === v.candidate.toolCallId &&
    v.lastOutcome === "rejected";
}

/** The 1-based number of the attempt a verification of `hash` is (a replay keeps the number it had). */
export function attemptNumber(v: VerificationState, hash: string): number {
  return v.attemptsUsed + (isReplayedRejection(v, hash) ? 0 : 1);
}

/** True when one more verifier system error fails the turn with `verifier_error`. */
export function isLastVerifierError(context: AgentContext): boolean {
  return context.verification.systemErrors + 1 >= context.config.maxVerifierErrors;
}

type StepEvent = Extract<AgentEvent, { type: "MODEL_STEP" }>;
type ToolResultEvent = Extract<AgentEvent, { type: "TOOL_RESULT" }>;
type RejectEvent = Extract<AgentEvent, { type: "VERIFY_REJECTED" }>;
type ErrorEvent = Extract<AgentEvent, { type: "VERIFY_ERROR" }>;

const addUsage = (u: Usage, e: StepEvent): Usage => ({
  inputTokens: u.inputTokens + e.usage.inputTokens,
  outputTokens: u.outputTokens + e.usage.outputTokens,
  cost: roundCost(u.cost + e.cost),
  steps: u.steps + 1,
});

/** Adds a delegated child's usage (TOOL_RESULT `usage`) to a usage total; steps stay the parent's own. */
const addChildUsage = (u: Usage, e: ToolResultEvent): Usage =>
  e.usage
    ? {
      inputTokens: u.inputTokens + nonNegative(e.usage.inputTokens),
      outputTokens: u.outputTokens + nonNegative(e.usage.outputTokens),
      cost: roundCost(u.cost + nonNegative(e.usage.cost)),
      steps: u.steps,
    }
    : u;
const nonNegative = (n: unknown): number => (typeof n === "number" && Number.isFinite(n) && n > 0 ? n : 0);
const childUsage = (context: AgentContext, e: ToolResultEvent) =>
  e.usage ? { usage: addChildUsage(context.usage, e), turnUsage: addChildUsage(context.turnUsage, e) } : {};

const attemptsAfter = (v: VerificationState, e: RejectEvent): number => attemptNumber(v, e.hash);

/** Every state takes TURN_FAILED into `failed` (a turn ended from outside the machine). */
const TURN_FAILED = { target: "failed", actions: "failTurn" } as const;

const machine = setup({
  types: {
    context: {} as AgentContext,
    events: {} as AgentEvent,
  },
  guards: {
    stepVerifies: ({ context, event }) =>
      classifyStep((event as StepEvent).toolCalls, context.config) === "verify",
    stepSubmits: ({ context, event }) =>
      classifyStep((event as StepEvent).toolCalls, context.config) === "submit",
    stepCallsTools: ({ context, event }) =>
      classifyStep((event as StepEvent).toolCalls, context.config) === "tools",
    stepFinishesWithText: ({ context, event }) =>
      classifyStep((event as StepEvent).toolCalls, context.config) === "finish_text",
    budgetSpent: ({ context }) => context.step >= context.config.maxSteps,
    knownCall: ({ context, event }) => (event as ToolResultEvent).toolCallId in context.pending,
    // A terminating result of a turn that finishes with agent_output goes through the gate.
    terminatesThroughGate: ({ context, event }) => {
      const e = event as ToolResultEvent;
      return e.toolCallId in context.pending && e.afterExecution === "terminate" && context.config.completion === AGENT_OUTPUT;
    },
    terminates: ({ context, event }) => {
      const e = event as ToolResultEvent;
      return e.toolCallId in context.pending && e.afterExecution === "terminate" && context.config.completion === SUBMIT_RESULT;
    },
    lastOutstanding: ({ context, event }) => {
      const e = event as ToolResultEvent;
      return e.toolCallId in context.pending && Object.keys(context.pending).length === 1;
    },
    rejectionFinal: ({ event }) => !(event as RejectEvent).retryable,
    attemptsExhausted: ({ context, event }) =>
      attemptsAfter(context.verification, event as RejectEvent) >= context.verification.maxAttempts,
    verifierErrorsExhausted: ({ context }) => isLastVerifierError(context),
  },
  actions: {
    startTurn: assign(({ context, event }) => turnStarted(context, event as Extract<AgentEvent, { type: "TASK_STARTED" }>)),
    /**
     * A handoff's result: the turn goes on under the target, with the turn config the switch carries
     * (the turn's step budget kept). A switch that `keepsGate` (the binding's output contract gates the
     * turn, actors/steps/handoff.ts) keeps the verification state; any other starts a fresh one for
     * the target's gate.
     */
    handOff: assign(({ event }) => {
      const h = (event as ToolResultEvent).handoff;
      if (!h) return {};
      if (h.keepsGate === true) return { definition: h.to, config: h.config };
      return { definition: h.to, config: h.config, verification: freshVerification(h.config.verifyMaxAttempts) };
    }),
    countStep: assign(({ context, event }) => {
      const e = event as StepEvent;
      return { step: context.step + 1, usage: addUsage(context.usage, e), turnUsage: addUsage(context.turnUsage, e) };
    }),
    takeCandidate: assign(({ context, event }) => {
      const call = completionCall((event as StepEvent).toolCalls, context.config)!;
      return {
        verification: {
          ...context.verification,
          candidate: { toolCallId: call.id, args: call.args, from: "agent_output" as const },
          systemErrors: 0,
          retryAt: null,
        },
      };
    }),
    takeTerminationCandidate: assign(({ context, event }) => {
      const e = event as ToolResultEvent;
      return {
        ...childUsage(context, e),
        pending: {},
        verification: {
          ...context.verification,
          candidate: { toolCallId: e.toolCallId, args: terminatedValue(e), from: "terminate" as const },
          systemErrors: 0,
          retryAt: null,
        },
      };
    }),
    takeSubmission: assign(({ context, event }) => {
      const call = completionCall((event as StepEvent).toolCalls, context.config)!;
      return { output: submittedValue(call.args) };
    }),
    takeText: assign(({ event }) => {
      const text = (event as StepEvent).text ?? "";
      return { output: text === "" ? "(no output)" : text };
    }),
    recordPending: assign(({ event }) => {
      const pending: AgentContext["pending"] = {};
      for (const c of (event as StepEvent).toolCalls) {
        pending[c.id] = { name: c.name, args: c.args, external: c.external, deadline: c.deadline, ...(c.approval ? { approval: true as const } : {}), ...(c.event !== undefined ? { event: c.event } : {}) };
      }
      return { pending };
    }),
    resolvePending: assign(({ context, event }) => {
      const pending = { ...context.pending };
      delete pending[(event as ToolResultEvent).toolCallId];
      return { ...childUsage(context, event as ToolResultEvent), pending };
    }),
    terminateWithResult: assign(({ context, event }) => ({
      ...childUsage(context, event as ToolResultEvent),
      pending: {},
      output: terminatedValue(event as ToolResultEvent),
    })),
    failModel: assign(({ event }) => ({
      error: { reason: "model_error", message: (event as Extract<AgentEvent, { type: "MODEL_FAILED" }>).message },
    })),
    failBudget: assign(({ context }) => ({
      error: {
        reason: "step_budget_exhausted",
        message: `The turn used its ${context.config.maxSteps} model steps without finishing`,
      },
    })),
    passVerification: assign(({ context, event }) => {
      const e = event as Extract<AgentEvent, { type: "VERIFY_PASSED" }>;
      return {
        output: e.result,
        verification: {
          ...context.verification,
          attemptsUsed: context.verification.attemptsUsed + 1,
          lastCandidateHash: e.hash,
          lastCandidateCallId: context.verification.candidate?.toolCallId ?? null,
          lastOutcome: "passed" as const,
          lastAttemptAt: e.at,
          candidate: null,
          retryAt: null,
        },
      };
    }),
    countRejection: assign(({ context, event }) => {
      const e = event as RejectEvent;
      const v = context.verification;
      return {
        verification: {
          ...v,
          attemptsUsed: attemptsAfter(v, e),
          lastCandidateHash: e.hash,
          lastCandidateCallId: v.candidate?.toolCallId ?? null,
          lastOutcome: "rejected" as const,
          lastAttemptAt: e.at,
          retryAt: null,
          lastRejection: {
            code: e.code,
            message: e.message,
            retryable: e.retryable,
            ...(e.metadata !== undefined ? { metadata: e.metadata } : {}),
          },
        },
      };
    }),
    failRejected: assign(({ event }) => {
      const e = event as RejectEvent;
      return { error: { reason: "verification_rejected", message: `${e.code}: ${e.message}` } };
    }),
    failExhausted: assign(({ context, event }) => {
      const e = event as RejectEvent;
      return {
        error: {
          reason: "verification_exhausted",
          message: `Verification rejected ${context.verification.attemptsUsed} of ${context.verification.maxAttempts} attempts; last: ${e.code}: ${e.message}`,
        },
      };
    }),
    noteVerifierError: assign(({ context, event }) => {
      const e = event as ErrorEvent;
      return {
        verification: {
          ...context.verification,
          systemErrors: context.verification.systemErrors + 1,
          lastOutcome: "system_error" as const,
          lastAttemptAt: e.at,
          retryAt: e.retryAt,
        },
      };
    }),
    failVerifierError: assign(({ event }) => ({
      error: { reason: "verifier_error", message: (event as ErrorEvent).message },
    })),
    clearCandidate: assign(({ context }) => ({ verification: { ...context.verification, candidate: null, retryAt: null } })),
    failTurn: assign(({ context, event }) => {
      const e = event as Extract<AgentEvent, { type: "TURN_FAILED" }>;
      // The turn may not have started in the machine (the claim threw before TASK_STARTED was committed).
      const fresh = context.turnId !== e.turnId;
      return {
        turnId: e.turnId,
        turns: fresh ? context.turns + 1 : context.turns,
        step: fresh ? 0 : context.step,
        pending: {},
        output: null,
        error: { reason: e.reason, message: e.message },
        verification: fresh
          ? freshVerification(context.config.verifyMaxAttempts)
          : { ...context.verification, candidate: null, retryAt: null },
        turnUsage: fresh ? zeroUsage() : context.turnUsage,
        ...(fresh && context.definition !== undefined ? { definition: undefined } : {}),
      };
    }),
    cancel: assign(({ event }) => ({
      pending: {},
      error: { reason: "cancelled", message: (event as Extract<AgentEvent, { type: "CANCEL" }>).reason },
    })),
  },
}).createMachine({
  id: "agent",
  initial: "idle",
  context: initialContext,
  states: {
    idle: { on: { TASK_STARTED: { target: "running", actions: "startTurn" }, TURN_FAILED: TURN_FAILED } },
    running: {
      on: {
        MODEL_STEP: [
          { guard: "stepVerifies", target: "verifying", actions: ["countStep", "takeCandidate"] },
          { guard: "stepSubmits", target: "done", actions: ["countStep", "takeSubmission"] },
          { guard: "stepCallsTools", target: "waiting-tools", actions: ["countStep", "recordPending"] },
          { guard: "stepFinishesWithText", target: "done", actions: ["countStep", "takeText"] },
          // Text while mustEndWith is set: stay, the host appends a system reminder.
          { target: "running", reenter: true, actions: ["countStep"] },
        ],
        MODEL_FAILED: { target: "failed", actions: "failModel" },
        STEP_BUDGET_EXHAUSTED: { guard: "budgetSpent", target: "failed", actions: "failBudget" },
        CANCEL: { target: "failed", actions: "cancel" },
        TURN_FAILED: TURN_FAILED,
      },
    },
    "waiting-tools": {
      on: {
        TOOL_RESULT: [
          { guard: "terminatesThroughGate", target: "verifying", actions: "takeTerminationCandidate" },
          { guard: "terminates", target: "done", actions: "terminateWithResult" },
          { guard: "lastOutstanding", target: "running", actions: ["resolvePending", "handOff"] },
          { guard: "knownCall", actions: ["resolvePending", "handOff"] },
        ],
        CANCEL: { target: "failed", actions: "cancel" },
        TURN_FAILED: TURN_FAILED,
      },
    },
    verifying: {
      on: {
        VERIFY_PASSED: { target: "done", actions: "passVerification" },
        VERIFY_REJECTED: [
          { guard: "rejectionFinal", target: "failed", actions: ["countRejection", "failRejected", "clearCandidate"] },
          {
            guard: "attemptsExhausted",
            target: "failed",
            actions: ["countRejection", "failExhausted", "clearCandidate"],
          },
          { target: "revising", actions: "countRejection" },
        ],
        VERIFY_ERROR: [
          {
            guard: "verifierErrorsExhausted",
            target: "failed",
            actions: ["noteVerifierError", "failVerifierError", "clearCandidate"],
          },
          { target: "verifying", reenter: true, actions: "noteVerifierError" },
        ],
        CANCEL: { target: "failed", actions: "cancel" },
        TURN_FAILED: TURN_FAILED,
      },
    },
    revising: {
      on: {
        FEEDBACK_APPENDED: { target: "running", actions: "clearCandidate" },
        CANCEL: { target: "failed", actions: "cancel" },
        TURN_FAILED: TURN_FAILED,
      },
    },
    done: { on: { TASK_STARTED: { target: "running", actions: "startTurn" }, TURN_FAILED: TURN_FAILED } },
    failed: { on: { TASK_STARTED: { target: "running", actions: "startTurn" }, TURN_FAILED: TURN_FAILED } },
  },
});

/** The names of the machine's actions and guards. */
type AgentActionName =
  | "cancel" | "startTurn" | "countStep" | "takeCandidate" | "takeSubmission" | "takeText" | "recordPending"
  | "resolvePending" | "takeTerminationCandidate" | "terminateWithResult" | "failModel" | "failBudget" | "passVerification"
  | "countRejection" | "failRejected" | "failExhausted" | "noteVerifierError" | "failVerifierError" | "clearCandidate" | "failTurn"
  | "handOff";
type AgentGuardName =
  | "stepVerifies" | "stepSubmits" | "stepCallsTools" | "stepFinishesWithText" | "budgetSpent" | "knownCall"
  | "terminatesThroughGate" | "terminates" | "lastOutstanding" | "rejectionFinal" | "attemptsExhausted" | "verifierErrorsExhausted";
/** `{ type: N; params: P }` for each name N, as a union (XState's parameterized objects). */
type Parameterized<N extends string, P> = { [K in N]: { type: K; params: P } }[N];

/**
 * The machine's type, written out (published type declarations must not be
 * inferred). `MachineTypeIsExact` below fails the type check when it drifts
 * from what `setup().createMachine()` infers.
 */
export type AgentMachine = StateMachine<
  AgentContext,
  AgentEvent,
  // deno-lint-ignore ban-types -- the exact type XState infers for "no children"
  {},
  never,
  Parameterized<AgentActionName, NonReducibleUnknown>,
  Parameterized<AgentGuardName, unknown>,
  never,
  AgentState,
  string,
  NonReducibleUnknown,
  NonReducibleUnknown,
  EventObject,
  MetaObject,
  { id: "agent"; states: { readonly [S in AgentState]: {} } },
  MetaObject
>;

type Equals<A, B> = (<T>() => T extends A ? 1 : 2) extends (<T>() => T extends B ? 1 : 2) ? true : false;
const MachineTypeIsExact: Equals<typeof machine, AgentMachine> = true;
void MachineTypeIsExact;

/** The agent statechart. */
export const agentMachine: AgentMachine = machine;
