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
 * Every path is replayed through `createActor(agentMachine)`. The paths that
 * start a turn from idle, consist only of events the host decides itself
 * (TASK_STARTED, MODEL_STEP with text or a call of `config.completion`,
 * VERIFY_PASSED, VERIFY_REJECTED, FEEDBACK_APPENDED, STEP_BUDGET_EXHAUSTED)
 * and end the turn are also driven through the real host (createGatehouse,
 * memory store, one turn per path):
 *  - TASK_STARTED: a task enqueued over HTTP to an agent whose definition
 *    gives the path's config (maxStepsPerTurn, mustEndWith, output with
 *    verifyMaxAttempts / maxVerifierErrors for `agent_output`);
 *  - MODEL_STEP: the scripted model answers step k with the path's k-th
 *    step (text, or a call of the completion tool);
 *  - VERIFY_PASSED / VERIFY_REJECTED (retryable or final): the agent's verify
 *    function returns or throws VerificationRejected, attempt by attempt as
 *    the path says;
 *  - FEEDBACK_APPENDED: emitted by the host after a retryable rejection;
 *  - STEP_BUDGET_EXHAUSTED: emitted by the host when it would ask the model
 *    again with the steps spent (after reminders).
 * For those, the logged `transition` entries must be the path's transitions
 * (event type, from, to) and the stored final snapshot must match the
 * machine's expected one in the fields the guards read. Not host-driven:
 * tool calls and TOOL_RESULT, VERIFY_ERROR, CANCEL, TURN_FAILED,
 * MODEL_FAILED, and second turns (TASK_STARTED from done/failed); those are
 * covered by the pure replay only.
 */
import { getShortestPaths } from "@xstate/graph";
import { describe, expect, it } from "vitest";
import { createActor, initialTransition, transition } from "xstate";
import { agentMachine, DEFAULT_TURN_CONFIG } from "../machines/agent.ts";
import { describeMachine } from "../machines/definition.ts";
import { z } from "zod";
import { createGatehouse, defineAgent, scriptedModel, VerificationRejected } from "../mod.ts";
import { allEvents, contextOf, enqueue, manualClock, seqIds } from "./fixtures/gate-kit.ts";
import type { AgentContext, AgentEvent, TurnConfig } from "../machines/types.ts";
import type { ModelResponse } from "../mod.ts";

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

const Out = z.object({ v: z.string() });
const HOST_EVENTS = new Set(["TASK_STARTED", "MODEL_STEP", "VERIFY_PASSED", "VERIFY_REJECTED", "FEEDBACK_APPENDED", "STEP_BUDGET_EXHAUSTED"]);

interface HostScript {
  config: TurnConfig;
  /** The model's response at step k (1-based: responses[k - 1]). */
  responses: ModelResponse[];
  /** The verifier's answer per attempt. */
  verdicts: Array<"pass" | "retry" | "final">;
}

/** How the host is driven along the path, or null when the path has an event the host cannot be made to emit here. */
function hostScript(events: AgentEvent[]): HostScript | null {
  const first = events[0];
  if (events.length < 2 || first.type !== "TASK_STARTED") return null;
  const config = first.config;
  const out: HostScript = { config, responses: [], verdicts: [] };
  for (const e of events.slice(1)) {
    if (!HOST_EVENTS.has(e.type) || e.type === "TASK_STARTED") return null;
    if (e.type === "MODEL_STEP") {
      if (e.toolCalls.length === 0) out.responses.push({ text: e.text ?? "" });
      else if (e.toolCalls.length === 1 && e.toolCalls[0].name === config.completion) {
        out.responses.push({ toolCalls: [{ name: config.completion, args: config.completion === "agent_output" ? { v: `v${out.responses.length + 1}` } : { result: "r" } }] });
      } else return null;
    }
    if (e.type === "VERIFY_PASSED") out.verdicts.push("pass");
    if (e.type === "VERIFY_REJECTED") out.verdicts.push(e.retryable ? "retry" : "final");
  }
  return out;
}

describe("model-based paths driven through the host", () => {
  const all = generatePaths();
  const driven = all.flatMap((p) => {
    const script = hostScript(p.events);
    if (!script) return [];
    let s = initialTransition(agentMachine)[0] as Snap;
    const trail: string[] = [];
    const taken: string[] = [];
    for (const e of p.events) {
      const key = takenBy(s, e);
      const next = transition(agentMachine, s as never, e)[0] as Snap;
      if (key !== null) {
        trail.push(`${String(s.value)} --${e.type}--> ${String(next.value)}`);
        taken.push(key);
      }
      s = next;
    }
    // Only turns that end: the host runs a turn to its end in one claim.
    return s.value === "done" || s.value === "failed" ? [{ events: p.events, script, expected: s, trail, taken }] : [];
  });

  it("drives every path of host-decided events to the machine's expected end", async () => {
    console.log(`machine-model: ${driven.length} paths driven through the host`);
    expect(driven.length).toBeGreaterThanOrEqual(4);
    const seen = new Set<string>();
    for (const d of driven) {
      let attempt = 0;
      const gated = d.script.config.completion === "agent_output";
      const agent = defineAgent({
        name: "modelled",
        instructions: "work",
        model: scriptedModel(d.script.responses),
        ...(gated
          ? {
            output: {
              schema: Out,
              verify: (c: { v: string }) => {
                const verdict = d.script.verdicts[attempt++];
                if (verdict === "pass") return { accepted: c.v };
                throw new VerificationRejected({ message: `${c.v} no`, code: "nope", retryable: verdict === "retry" });
              },
            },
            verifyMaxAttempts: d.script.config.verifyMaxAttempts,
            maxVerifierErrors: d.script.config.maxVerifierErrors,
          }
          : { mustEndWith: d.script.config.mustEndWith }),
        maxStepsPerTurn: d.script.config.maxSteps,
      });
      const gh = createGatehouse({ agents: [agent], ids: seqIds(), clock: manualClock() });
      const r = await enqueue(gh, "a1", { agent: agent.name, input: "go" });
      expect(r.status).toBe(202);
      await gh.drain();
      const logged = (await allEvents(gh, "a1")).filter((e) => e.type === "transition").map((e) => {
        const t = e.data as { from: string; to: string; event: { type: string } };
        return `${t.from} --${t.event.type}--> ${t.to}`;
      });
      expect(logged).toEqual(d.trail);
      expect(attempt).toBe(d.script.verdicts.length);
      const { state, context } = await contextOf(gh, "a1");
      const want = d.expected.context;
      expect({ state, step: context.step, error: context.error?.reason ?? null, verification: context.verification.attemptsUsed })
        .toEqual({ state: d.expected.value, step: want.step, error: want.error?.reason ?? null, verification: want.verification.attemptsUsed });
      d.taken.forEach((t) => seen.add(t));
    }
    // The 11 transitions these paths can take: a shrinking event list or host change shows here.
    expect(seen.size).toBe(11);
    console.log(`machine-model: host-driven transitions ${seen.size}/${def.transitions.length}:\n  ${[...seen].join("\n  ")}`);
  });
});
