/**
 * `fastSend` (machines/fast-step.ts) gives an actor the snapshot XState's
 * `send` would, without XState's general algorithm. Invariant: for every
 * snapshot the agent machine reaches and every event, the actor after
 * `fastSend` holds a snapshot equal to XState's (value, status, output,
 * error, context by structure and by JSON text, children, history value,
 * the same state nodes, tags, machine, methods, persisted text), and XState's
 * own `send` goes on from it to the same snapshots. Checked on every step of
 * the model-based host paths (every state, every transition) and on seeded
 * random sequences of any event in any state (ignored events, unknown call
 * ids, spent budgets), comparing one actor driven by `fastSend` with one
 * driven by XState's `send`.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createActor } from "xstate";
import { agentMachine } from "../../machines/agent.ts";
import { fastNext, fastSend } from "../../machines/fast-step.ts";
import { persistedOf } from "../../machines/persist.ts";
import type { AgentEvent } from "../../machines/types.ts";
import { ALL_STATES, ALL_TRANSITIONS, generatePaths, type Snap, takenBy } from "../helpers/machine-paths.ts";
import { hostEventsFor } from "../helpers/host-paths.ts";
import { turnConfigArb } from "../helpers/machine-arbs.ts";

type Actor = ReturnType<typeof createActor<typeof agentMachine>>;
type Raw = Record<string, unknown> & { _nodes: unknown[]; tags: Set<string> };

function expectSame(fast: Actor, slow: Actor, where: string) {
  const f = fast.getSnapshot() as unknown as Raw;
  const x = slow.getSnapshot() as unknown as Raw;
  expect(Object.keys(f), where).toEqual(Object.keys(x));
  for (const k of ["value", "status", "output", "error", "children", "historyValue"]) expect(f[k], `${where}: ${k}`).toStrictEqual(x[k]);
  expect(f.context, `${where}: context`).toStrictEqual(x.context);
  expect(JSON.stringify(f.context), `${where}: context text`).toBe(JSON.stringify(x.context));
  expect(f._nodes.length, `${where}: nodes`).toBe(x._nodes.length);
  f._nodes.forEach((n, i) => expect(n, `${where}: node ${i}`).toBe(x._nodes[i]));
  expect([...f.tags], `${where}: tags`).toEqual([...x.tags]);
  for (const k of ["machine", "matches", "hasTag", "can", "getMeta", "toJSON"]) expect(f[k], `${where}: ${k}`).toBe(x[k]);
  expect(JSON.stringify(persistedOf(fast.getSnapshot())), `${where}: persisted`).toBe(JSON.stringify(slow.getPersistedSnapshot()));
}

/** Sends `e` to both; answers whether the fast actor took the short way. */
function sendBoth(fast: Actor, slow: Actor, e: AgentEvent): boolean {
  const short = fastNext(fast, e) !== null;
  fastSend(fast, e);
  slow.send(e);
  return short;
}

describe("fastSend gives the actor XState's snapshot", () => {
  it("on every step of every host path (all states, all transitions)", () => {
    const paths = generatePaths(hostEventsFor);
    const states = new Set<string>();
    const transitions = new Set<string>();
    const short = new Set<string>();
    let steps = 0;
    for (const path of paths) {
      const fast: Actor = createActor(agentMachine).start();
      const slow: Actor = createActor(agentMachine).start();
      states.add(String(slow.getSnapshot().value));
      for (const [i, e] of path.entries()) {
        const key = takenBy(slow.getSnapshot() as Snap, e);
        if (key !== null) transitions.add(key);
        if (sendBoth(fast, slow, e) && key !== null) short.add(key);
        states.add(String(slow.getSnapshot().value));
        expectSame(fast, slow, `after event ${i} (${e.type}) of [${path.map((x) => x.type).join(", ")}]`);
        steps++;
      }
      fast.stop();
      slow.stop();
    }
    expect(ALL_STATES.filter((s) => !states.has(s))).toEqual([]);
    expect(ALL_TRANSITIONS.filter((t) => !transitions.has(t))).toEqual([]);
    // The short way is taken for the transitions of every step: a model step, a tool result, a turn's start.
    for (const t of ["running --MODEL_STEP [stepCallsTools]--> waiting-tools", "running --MODEL_STEP [stepSubmits]--> done", "waiting-tools --TOOL_RESULT [lastOutstanding]--> running", "idle --TASK_STARTED--> running"]) {
      expect([...short], t).toContain(t);
    }
    expect(steps).toBeGreaterThan(paths.length);
  }, 60_000);

  const KINDS = [
    "TASK_STARTED", "MODEL_STEP", "MODEL_STEP", "MODEL_STEP", "TOOL_RESULT", "TOOL_RESULT", "TOOL_RESULT", "MODEL_FAILED",
    "STEP_BUDGET_EXHAUSTED", "VERIFY_PASSED", "VERIFY_REJECTED", "VERIFY_ERROR", "FEEDBACK_APPENDED", "CANCEL", "TURN_FAILED",
  ] as const;
  const stepArb = fc.record({
    kind: fc.constantFrom(...KINDS),
    pick: fc.nat(),
    config: turnConfigArb,
    calls: fc.array(fc.record({ name: fc.constantFrom("lookup", "ask", "finish", "agent_output", "submit_result"), args: fc.jsonValue({ maxDepth: 2 }) }), { maxLength: 3 }),
    text: fc.option(fc.string({ maxLength: 4 }), { nil: null }),
    ok: fc.boolean(),
    value: fc.jsonValue({ maxDepth: 2 }),
    terminate: fc.boolean(),
    handoff: fc.boolean(),
    retryable: fc.boolean(),
  });
  type Step = typeof stepArb extends fc.Arbitrary<infer T> ? T : never;

  /** Any event, whatever the state (many are ignored there), with ids that sometimes match nothing. */
  function eventOf(s: Snap, st: Step, at: number): AgentEvent {
    const c = s.context;
    switch (st.kind) {
      case "TASK_STARTED":
        return { type: st.kind, at, turnId: `t${c.turns + 1}`, input: "go", config: st.config };
      case "MODEL_STEP":
        return {
          type: st.kind, at, text: st.text, usage: { inputTokens: 3, outputTokens: 2 }, cost: 0.25,
          toolCalls: st.calls.map((k, i) => ({ id: `c${c.step}_${i}`, name: k.name, args: k.args, external: k.name === "ask", deadline: at + 1000 })),
        };
      case "TOOL_RESULT": {
        const ids = Object.keys(c.pending);
        const toolCallId = st.pick % 5 === 0 || ids.length === 0 ? "nobody" : ids[st.pick % ids.length];
        return {
          type: st.kind, at, toolCallId,
          outcome: st.ok ? { ok: true, value: st.value } : { ok: false, error: { type: "boom", message: "no", retryable: false } },
          afterExecution: st.terminate ? "terminate" : "continue",
          ...(st.handoff ? { handoff: { from: "agent", to: "other", config: st.config, ...(st.pick % 2 === 0 ? { keepsGate: true as const } : {}) } } : {}),
          ...(st.pick % 3 === 0 ? { usage: { inputTokens: 5, outputTokens: 1, cost: 0.5 } } : {}),
        };
      }
      case "MODEL_FAILED":
        return { type: st.kind, at, message: "down" };
      case "STEP_BUDGET_EXHAUSTED":
        return { type: st.kind, at };
      case "VERIFY_PASSED":
        return { type: st.kind, at, hash: `h${st.pick % 2}`, result: st.value };
      case "VERIFY_REJECTED":
        return { type: st.kind, at, hash: `h${st.pick % 2}`, code: "tests_failed", message: "no", retryable: st.retryable };
      case "VERIFY_ERROR":
        return { type: st.kind, at, message: "err", retryAt: at + 5 };
      case "FEEDBACK_APPENDED":
        return { type: st.kind, at };
      case "CANCEL":
        return { type: st.kind, at, reason: "stop" };
      case "TURN_FAILED":
        return { type: st.kind, at, turnId: c.turnId ?? `t${c.turns + 1}`, reason: st.pick % 2 ? "claim_error" : "reset", message: "x" };
    }
  }

  it("on seeded random sequences of any event in any state, and XState goes on from its snapshots", () => {
    let events = 0;
    let shortTaken = 0;
    fc.assert(
      fc.property(fc.array(stepArb, { minLength: 1, maxLength: 40 }), (steps) => {
        const fast: Actor = createActor(agentMachine).start();
        const slow: Actor = createActor(agentMachine).start();
        for (const [i, st] of steps.entries()) {
          const e = eventOf(slow.getSnapshot() as Snap, st, 1_000 + i);
          const before = slow.getSnapshot();
          // Every third event goes through XState's own send on both: it must go on from the short way's snapshot.
          if (i % 3 === 2) {
            fast.send(e);
            slow.send(e);
          } else if (sendBoth(fast, slow, e)) {
            shortTaken++;
            // The short way is taken only for an event XState does not ignore.
            expect(slow.getSnapshot()).not.toBe(before);
          }
          expectSame(fast, slow, `after event ${i} (${e.type})`);
          events++;
        }
        fast.stop();
        slow.stop();
      }),
      { numRuns: 300, seed: 20261128 },
    );
    // Most random events are ignored where they land; the short way must still be exercised often.
    expect(shortTaken).toBeGreaterThan(events / 20);
  }, 60_000);

  it("leaves a stopped actor to XState", () => {
    const actor: Actor = createActor(agentMachine).start();
    actor.stop();
    expect(fastNext(actor, { type: "TASK_STARTED", at: 1, turnId: "t1", input: "x", config: { maxSteps: 2, completion: "submit_result", mustEndWith: [], verifyMaxAttempts: 1, maxVerifierErrors: 1 } }))
      .toBeNull();
  });
});
