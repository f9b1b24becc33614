/**
 * The run-time check of machines/fast-step.ts: XState is a peer dependency,
 * so the short way is compared with XState's own `send` the first time a
 * process takes each (state, event type). Invariant: an actor always ends in
 * XState's snapshot, whatever XState does; when the short way would disagree
 * with it (or `getSnapshot` is not the `_snapshot` field), the short way is
 * turned off, for that pair or for every pair.
 *
 * Each case uses a `FastSender` of its own (`fastSend` keeps one per process).
 */
import { describe, expect, it } from "vitest";
import { createActor } from "xstate";
import { agentMachine } from "../../machines/agent.ts";
import { FastSender } from "../../machines/fast-step.ts";
import type { AgentEvent, TurnConfig } from "../../machines/types.ts";

const config: TurnConfig = { maxSteps: 4, completion: "agent_output", mustEndWith: [], verifyMaxAttempts: 1, maxVerifierErrors: 1 };
const started = (n: number): AgentEvent => ({ type: "TASK_STARTED", at: n, turnId: `t${n}`, input: "go", config });

function fresh() {
  const sender = new FastSender();
  return { agentMachine, fastSend: (a: unknown, e: AgentEvent) => sender.send(a as never, e) };
}

/** An actor whose `send` is counted and whose snapshot can be altered after XState's send. */
function countedActor(agentMachine: Parameters<typeof createActor>[0], alter?: (s: any) => any) {
  const real = createActor(agentMachine as any).start() as any;
  const origSend = real.send.bind(real);
  let sends = 0;
  real.send = (e: AgentEvent) => {
    sends++;
    origSend(e);
    if (alter) real._snapshot = alter(real._snapshot);
  };
  return { actor: real, sends: () => sends };
}

describe("fastSend checks itself against XState at run time", () => {
  it("uses XState's send the first time a pair is met, the short way after it agreed", () => {
    const m = fresh();
    const a = countedActor(m.agentMachine);
    m.fastSend(a.actor, started(1));
    expect(a.sends()).toBe(1);
    expect(a.actor.getSnapshot().value).toBe("running");
    const b = countedActor(m.agentMachine);
    m.fastSend(b.actor, started(2));
    expect(b.sends()).toBe(0); // agreed: the short way
    expect(b.actor.getSnapshot().value).toBe("running");
    expect(b.actor.getSnapshot().context.turnId).toBe("t2");
  });

  it("turns the short way off for a pair whose snapshot differs from XState's", () => {
    const m = fresh();
    // An XState that (as far as the check can tell) computes another context for this pair.
    const a = countedActor(m.agentMachine, (s) => ({ ...s, context: { ...s.context, turns: s.context.turns + 7 } }));
    m.fastSend(a.actor, started(1));
    expect(a.actor.getSnapshot().context.turns).toBe(8); // XState's answer stands
    const b = countedActor(m.agentMachine, (s) => ({ ...s, context: { ...s.context, turns: s.context.turns + 7 } }));
    m.fastSend(b.actor, started(2));
    expect(b.sends()).toBe(1); // still XState's send
    expect(b.actor.getSnapshot().context.turns).toBe(8);
    const c = countedActor(m.agentMachine);
    m.fastSend(c.actor, started(3));
    expect(c.sends()).toBe(1); // the pair stays refused
  });

  it("turns the short way off everywhere when getSnapshot is not the _snapshot field", () => {
    const m = fresh();
    const real = createActor(m.agentMachine).start() as any;
    let sends = 0;
    // An actor whose snapshot lives elsewhere: writing `_snapshot` would change nothing.
    let current = real.getSnapshot();
    const actor = {
      getSnapshot: () => current,
      send: (e: AgentEvent) => {
        sends++;
        real.send(e);
        current = real.getSnapshot();
      },
    };
    m.fastSend(actor as any, started(1));
    expect(sends).toBe(1);
    const other = createActor(m.agentMachine).start() as any;
    let otherSends = 0;
    const origSend = other.send.bind(other);
    other.send = (e: AgentEvent) => {
      otherSends++;
      origSend(e);
    };
    m.fastSend(other, started(2));
    expect(otherSends).toBe(1);
    expect(other.getSnapshot().value).toBe("running");
  });
});
