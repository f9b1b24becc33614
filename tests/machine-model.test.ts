/**
 * Model-based tests of the agent statechart (machines/agent.ts).
 *
 * Invariant: every state and every transition of `describeMachine()` (state ×
 * event × guard branch, in the order XState tries them) is reached by some
 * generated path, and replaying any path one event at a time, with the
 * snapshot persisted and restored through JSON between events, yields
 * exactly the snapshots the machine itself computes.
 *
 * How the paths are generated: `getShortestPaths` from `@xstate/graph` walks
 * the machine with `events(snapshot)` giving the concrete payloads to try
 * from each state, built from its context so every guard can go both ways:
 *  - TASK_STARTED with three small configs (maxSteps 2, verifyMaxAttempts 2,
 *    maxVerifierErrors 2): `submit_result` with and without `mustEndWith`,
 *    and `agent_output`;
 *  - MODEL_STEP (only while `step < maxSteps`): text, one tool call, two tool
 *    calls, a call of `config.completion`;
 *  - TOOL_RESULT for each outstanding call, continuing and terminating;
 *  - VERIFY_REJECTED retryable and final (a fresh hash per attempt, so the
 *    attempt budget is reached), VERIFY_ERROR (reaches the error bound),
 *    VERIFY_PASSED, FEEDBACK_APPENDED, STEP_BUDGET_EXHAUSTED (its guard holds
 *    only once the steps are spent), MODEL_FAILED, CANCEL, TURN_FAILED for
 *    the current and for an unknown turn.
 * Snapshots are keyed by the state value and the context fields the guards
 * read, which bounds the graph. The shortest paths reach every key; each is
 * then extended by every event offered at its end, so every edge of the
 * graph is on some path. Coverage is counted by identifying the transition
 * XState selects (`getTransitionData`) with its entry in `describeMachine()`.
 *
 * Scope: the paths are replayed through `createActor(agentMachine)`. Driving
 * them through the actor host (scripted model, memory store) is not part of
 * this file.
 */
import { getShortestPaths } from "@xstate/graph";
import { describe, expect, it } from "vitest";
import { createActor, initialTransition, transition } from "xstate";
import { agentMachine, DEFAULT_TURN_CONFIG } from "../machines/agent.ts";
import { describeMachine } from "../machines/definition.ts";
import type { AgentContext, AgentEvent, TurnConfig } from "../machines/types.ts";

type Snap = ReturnType<typeof agentMachine.transition>;

const small = { maxSteps: 2, verifyMaxAttempts: 2, maxVerifierErrors: 2 };
const CONFIGS: Record<string, TurnConfig> = {
  submitText: { ...DEFAULT_TURN_CONFIG, ...small, completion: "submit_result", mustEndWith: [] },
  submitMust: { ...DEFAULT_TURN_CONFIG, ...small, completion: "submit_result", mustEndWith: ["submit_result"] },
  output: { ...DEFAULT_TURN_CONFIG, ...small, completion: "agent_output", mustEndWith: [] },
};

const usage = { inputTokens: 3, outputTokens: 2 };
const step = (ctx: AgentContext, text: string | null, calls: Array<[string, string]>): AgentEvent => ({
  type: "MODEL_STEP",
  at: 1000 + ctx.step,
  text,
  toolCalls: calls.map(([id, name]) => ({ id: `${id}-${ctx.step}`, name, args: { result: id }, external: false, deadline: 0 })),
  usage,
  cost: 0.01,
});

/** The concrete events to try from a snapshot, built from its context. */
function eventsFor(s: Snap): AgentEvent[] {
  const ctx = s.context;
  const turnId = ctx.turnId ?? "none";
  const always: AgentEvent[] = [
    { type: "TURN_FAILED", at: 5, turnId, reason: "reset", message: "reset" },
    { type: "TURN_FAILED", at: 5, turnId: `other-${turnId}`, reason: "claim_error", message: "claim" },
    { type: "CANCEL", at: 6, reason: "stop" },
  ];
  switch (s.value) {
    case "idle":
    case "done":
    case "failed":
      return [
        ...Object.entries(CONFIGS).map(([name, config]): AgentEvent => ({
          type: "TASK_STARTED",
          at: 10,
          turnId: `${name}-${ctx.turns + 1}`,
          input: "task",
          config,
        })),
        ...always,
      ];
    case "running": {
      const out: AgentEvent[] = [
        { type: "STEP_BUDGET_EXHAUSTED", at: 20 },
        { type: "MODEL_FAILED", at: 21, message: "model down" },
        ...always,
      ];
      if (ctx.step < ctx.config.maxSteps) {
        out.push(
          step(ctx, "thinking", []),
          step(ctx, "", []),
          step(ctx, null, [["a", "search"]]),
          step(ctx, null, [["a", "search"], ["b", "fetch"]]),
          step(ctx, null, [["c", ctx.config.completion]]),
        );
      }
      return out;
    }
    case "waiting-tools":
      return [
        ...Object.keys(ctx.pending).flatMap((id): AgentEvent[] => [
          { type: "TOOL_RESULT", at: 30, toolCallId: id, outcome: { ok: true, value: id }, afterExecution: "continue" },
          { type: "TOOL_RESULT", at: 31, toolCallId: id, outcome: { ok: true, value: id }, afterExecution: "terminate" },
        ]),
        ...always,
      ];
    case "verifying": {
      const hash = `h${ctx.verification.attemptsUsed}`;
      return [
        { type: "VERIFY_PASSED", at: 40, hash, result: { ok: 1 } },
        { type: "VERIFY_REJECTED", at: 41, hash, code: "bad", message: "try again", retryable: true },
        { type: "VERIFY_REJECTED", at: 42, hash, code: "no", message: "never", retryable: false },
        { type: "VERIFY_ERROR", at: 43, message: "verifier down", retryAt: 99 },
        ...always,
      ];
    }
    case "revising":
      return [{ type: "FEEDBACK_APPENDED", at: 50 }, ...always];
    default:
      throw new Error(`no events for state ${String(s.value)}`);
  }
}

/** The graph key: state value and the context the guards read (bounds the walk). */
function keyOf(s: Snap): string {
  const c = s.context;
  const v = c.verification;
  return JSON.stringify([
    s.value,
    c.config.completion,
    c.config.mustEndWith.length,
    c.step,
    Object.keys(c.pending).sort(),
    v.attemptsUsed,
    v.systemErrors,
    v.candidate?.from ?? null,
    c.error?.reason ?? null,
    c.turns > 0,
  ]);
}

const def = describeMachine(agentMachine);
const transitionKey = (t: { from: string; event: string; to: string; guard?: string; reenter?: true }) =>
  `${t.from} --${t.event}${t.guard ? ` [${t.guard}]` : ""}--> ${t.to}${t.reenter ? " (reenter)" : ""}`;

/** Each transition definition object of the machine, mapped to its describeMachine() entry's key. */
const byDefinition = new Map<unknown, string>();
{
  let i = 0;
  for (const [, node] of Object.entries(agentMachine.root.states)) {
    for (const [, defs] of node.transitions as unknown as Map<string, unknown[]>) {
      for (const d of defs) byDefinition.set(d, transitionKey(def.transitions[i++]));
    }
  }
  if (byDefinition.size !== def.transitions.length) throw new Error("describeMachine() and the machine disagree");
}

/** The describeMachine() key of the transition XState takes for `event` from `s`, or null. */
function takenBy(s: Snap, event: AgentEvent): string | null {
  const ts = agentMachine.getTransitionData(s as never, event as never);
  if (ts.length === 0) return null;
  expect(ts.length).toBe(1);
  const key = byDefinition.get(ts[0]);
  if (key === undefined) throw new Error(`transition of ${event.type} from ${String(s.value)} is not in describeMachine()`);
  return key;
}

interface Path {
  events: AgentEvent[];
}

function generatePaths(): Path[] {
  const shortest = getShortestPaths(agentMachine, {
    events: (s) => eventsFor(s as Snap),
    serializeState: (s) => keyOf(s as Snap),
  });
  const paths: Path[] = [];
  for (const p of shortest) {
    const events = p.steps.map((st) => st.event as AgentEvent).filter((e) => !e.type.startsWith("xstate."));
    paths.push({ events });
    for (const e of eventsFor(p.state as Snap)) paths.push({ events: [...events, e] });
  }
  return paths;
}

const pick = (s: { value: unknown; context: unknown }) => ({ value: s.value, context: s.context });

describe("model-based paths over the agent statechart", () => {
  const paths = generatePaths();

  it("reach every state and every transition of describeMachine()", () => {
    const states = new Set<string>();
    const transitions = new Set<string>();
    for (const p of paths) {
      let s = initialTransition(agentMachine)[0] as Snap;
      states.add(String(s.value));
      for (const e of p.events) {
        const key = takenBy(s as Snap, e);
        if (key !== null) transitions.add(key);
        s = transition(agentMachine, s as never, e)[0] as Snap;
        states.add(String(s.value));
      }
    }
    const allStates = def.states.map((x) => x.name);
    const allTransitions = def.transitions.map(transitionKey);
    const missingStates = allStates.filter((x) => !states.has(x));
    const missingTransitions = allTransitions.filter((x) => !transitions.has(x));
    console.log(
      `machine-model: ${paths.length} paths; states ${allStates.filter((x) => states.has(x)).length}/${allStates.length}, ` +
        `transitions ${allTransitions.filter((x) => transitions.has(x)).length}/${allTransitions.length}`,
    );
    expect(missingStates).toEqual([]);
    expect(missingTransitions).toEqual([]);
    // Nothing counted that describeMachine() does not list.
    expect([...transitions].filter((x) => !allTransitions.includes(x))).toEqual([]);
    expect(allTransitions.length).toBeGreaterThanOrEqual(30);
  });

  it("replay through createActor with a JSON round-trip restore after every event", () => {
    let checked = 0;
    for (const p of paths) {
      let expected = initialTransition(agentMachine)[0] as Snap;
      let persisted: unknown = JSON.parse(JSON.stringify(createActor(agentMachine).start().getPersistedSnapshot()));
      for (const e of p.events) {
        expected = transition(agentMachine, expected as never, e)[0] as Snap;
        const actor = createActor(agentMachine, { snapshot: persisted as never }).start();
        actor.send(e);
        const got = actor.getSnapshot();
        expect(pick(got)).toEqual(pick(expected));
        persisted = JSON.parse(JSON.stringify(actor.getPersistedSnapshot()));
        actor.stop();
        expect((persisted as { value: unknown }).value).toEqual(expected.value);
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(paths.length);
  });
});
