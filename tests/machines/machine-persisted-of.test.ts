/**
 * `persistedOf` (machines/persist.ts) builds the stored snapshot without
 * XState's `getPersistedSnapshot`. Invariant: on every snapshot the agent
 * machine can reach, it deep-equals XState's persisted form, gives the same
 * JSON text, and restores into an actor in the same state. Checked on every
 * step of the model-based paths the host can produce (every state, every
 * transition of describeMachine()), on a resident actor as the host runs it.
 */
import { describe, expect, it } from "vitest";
import { createActor, createMachine } from "xstate";
import { agentMachine } from "../../machines/agent.ts";
import { checkSnapshot, persistedOf } from "../../machines/persist.ts";
import { ALL_STATES, ALL_TRANSITIONS, generatePaths, takenBy, type Snap } from "../helpers/machine-paths.ts";
import { hostEventsFor } from "../helpers/host-paths.ts";

type Actor = ReturnType<typeof createActor<typeof agentMachine>>;

function expectEquivalent(actor: Actor, where: string) {
  const snapshot = actor.getSnapshot();
  const ours = persistedOf(snapshot);
  const theirs = actor.getPersistedSnapshot();
  expect(ours, where).toStrictEqual(theirs);
  expect(JSON.stringify(ours), where).toBe(JSON.stringify(theirs));
  // Restored from the stored text, it is the same state with the same context.
  const restored = createActor(agentMachine, { snapshot: checkSnapshot(JSON.parse(JSON.stringify(ours))) as never }).start();
  const back = restored.getSnapshot();
  expect(back.value, where).toEqual(snapshot.value);
  expect(back.status, where).toEqual(snapshot.status);
  expect(JSON.stringify(back.context), where).toBe(JSON.stringify(snapshot.context));
  restored.stop();
}

describe("persistedOf equals XState's persisted snapshot", () => {
  it("on every step of every host path (all states, all transitions)", () => {
    const paths = generatePaths(hostEventsFor);
    const states = new Set<string>();
    const transitions = new Set<string>();
    let checked = 0;
    for (const path of paths) {
      const actor: Actor = createActor(agentMachine).start();
      expectEquivalent(actor, "initial");
      states.add(String(actor.getSnapshot().value));
      for (const [i, e] of path.entries()) {
        const key = takenBy(actor.getSnapshot() as Snap, e);
        if (key !== null) transitions.add(key);
        actor.send(e);
        states.add(String(actor.getSnapshot().value));
        expectEquivalent(actor, `after event ${i} (${e.type}) of [${path.map((x) => x.type).join(", ")}]`);
        checked++;
      }
      actor.stop();
    }
    expect(ALL_STATES.filter((s) => !states.has(s))).toEqual([]);
    expect(ALL_TRANSITIONS.filter((t) => !transitions.has(t))).toEqual([]);
    expect(checked).toBeGreaterThan(paths.length);
  }, 60_000);

  it("shares the context, as XState does (no copy per commit)", () => {
    const actor = createActor(agentMachine).start();
    expect(persistedOf(actor.getSnapshot()).context).toBe(actor.getSnapshot().context);
    actor.stop();
  });

  it("hands a snapshot with children to XState (the short way would drop them)", () => {
    // The agent machine has none; a machine that has them shows the fallback keeps the equality.
    const child = createMachine({ id: "child", initial: "on", states: { on: {} } });
    const parent = createMachine({
      id: "parent",
      initial: "a",
      context: { n: 1 },
      states: { a: { invoke: { id: "kid", src: "kid" } } },
    }).provide({ actors: { kid: child } });
    const actor = createActor(parent).start();
    const s = actor.getSnapshot();
    const ours = persistedOf(s as never) as unknown as Record<string, unknown>;
    expect(Object.keys(ours.children as object)).toEqual(["kid"]);
    expect(ours).toStrictEqual(actor.getPersistedSnapshot());
    actor.stop();
  });
});
