/**
 * Event builders and a pure driver for the agent statechart, shared by the
 * machine suites. Everything goes through xstate's pure `transition()`, so a
 * test sees exactly what a replay of the event log would see.
 */
import { initialTransition, type SnapshotFrom, transition } from "xstate";
import { agentMachine, DEFAULT_TURN_CONFIG } from "../../machines/agent.ts";
import type { AgentEvent, ModelToolCall, TurnConfig } from "../../machines/types.ts";
import type { AfterExecution, Outcome } from "../../common/outcome.ts";

export type Snap = SnapshotFrom<typeof agentMachine>;

export const config = (over: Partial<TurnConfig> = {}): TurnConfig => ({ ...DEFAULT_TURN_CONFIG, ...over });

export const ev = {
  task: (turnId = "t1", over: Partial<TurnConfig> = {}, input: unknown = "do it"): AgentEvent => ({
    type: "TASK_STARTED",
    at: 1,
    turnId,
    input,
    config: config(over),
  }),
  step: (toolCalls: ModelToolCall[] = [], text: string | null = null, usage = { inputTokens: 3, outputTokens: 2 }, cost = 0.5): AgentEvent => ({
    type: "MODEL_STEP",
    at: 2,
    text,
    toolCalls,
    usage,
    cost,
  }),
  modelFailed: (message = "upstream 500"): AgentEvent => ({ type: "MODEL_FAILED", at: 3, message }),
  budget: (): AgentEvent => ({ type: "STEP_BUDGET_EXHAUSTED", at: 3 }),
  result: (toolCallId: string, outcome: Outcome = { ok: true, value: "r" }, afterExecution: AfterExecution = "continue"): AgentEvent => ({
    type: "TOOL_RESULT",
    at: 4,
    toolCallId,
    outcome,
    afterExecution,
  }),
  passed: (result: unknown = { summary: "ok", verified: true }, hash = "h1"): AgentEvent => ({ type: "VERIFY_PASSED", at: 5, hash, result }),
  rejected: (hash = "h1", retryable = true, code = "tests_failed"): AgentEvent => ({
    type: "VERIFY_REJECTED",
    at: 5,
    hash,
    code,
    message: "2 tests failed",
    retryable,
  }),
  verifierError: (retryAt = 1_000): AgentEvent => ({ type: "VERIFY_ERROR", at: 5, message: "verifier crashed", retryAt }),
  feedback: (): AgentEvent => ({ type: "FEEDBACK_APPENDED", at: 6 }),
  cancel: (reason = "user asked"): AgentEvent => ({ type: "CANCEL", at: 7, reason }),
};

export const call = (id: string, name = "lookup", args: unknown = { q: id }, external = false, deadline = 10_000): ModelToolCall => ({
  id,
  name,
  args,
  external,
  deadline,
});

/** Applies events one by one from `from` (default: the initial snapshot) with the pure transition function. */
export function drive(events: AgentEvent[], from?: Snap): Snap {
  let s = from ?? initialTransition(agentMachine)[0];
  for (const e of events) s = transition(agentMachine, s, e)[0];
  return s;
}

/** Event paths that lead from the initial snapshot into each state. */
export const pathTo = {
  idle: (): AgentEvent[] => [],
  running: (over: Partial<TurnConfig> = {}): AgentEvent[] => [ev.task("t1", over)],
  waitingTools: (over: Partial<TurnConfig> = {}): AgentEvent[] => [
    ev.task("t1", over),
    ev.step([call("c1"), call("c2", "ask", { q: "?" }, true)]),
  ],
  verifying: (over: Partial<TurnConfig> = {}): AgentEvent[] => [
    ev.task("t1", { completion: "agent_output", ...over }),
    ev.step([call("out1", "agent_output", { summary: "s" })]),
  ],
  revising: (over: Partial<TurnConfig> = {}): AgentEvent[] => [...pathTo.verifying(over), ev.rejected("h1", true)],
  done: (): AgentEvent[] => [ev.task("t1"), ev.step([], "the answer")],
  failed: (): AgentEvent[] => [ev.task("t1"), ev.modelFailed()],
};
