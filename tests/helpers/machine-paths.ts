/**
 * Paths over the agent statechart for the model-based tests, and the names
 * of the transitions they take.
 *
 * A transition is named by its entry in `describeMachine()` (state × event ×
 * guard branch, in the order XState tries them): `takenBy` asks XState which
 * transition definition it selects for an event (`getTransitionData`) and
 * maps that definition object to its entry, so coverage is counted against
 * the machine's own list, never against a list kept by the tests.
 *
 * Paths come from `getShortestPaths` of `@xstate/graph` over a graph whose
 * nodes are `keyOf` (the state value and the context fields the guards
 * read, which bounds the walk); each shortest path is then extended by every
 * event its end offers, so every edge of that graph lies on some path.
 */
import { getShortestPaths } from "@xstate/graph";
import { initialTransition, transition } from "xstate";
import { agentMachine } from "../../machines/agent.ts";
import { describeMachine } from "../../machines/definition.ts";
import type { AgentEvent } from "../../machines/types.ts";

export type Snap = ReturnType<typeof agentMachine.transition>;

export const machineDefinition = describeMachine(agentMachine);

export const transitionKey = (t: { from: string; event: string; to: string; guard?: string; reenter?: true }): string =>
  `${t.from} --${t.event}${t.guard ? ` [${t.guard}]` : ""}--> ${t.to}${t.reenter ? " (reenter)" : ""}`;

/** Every transition of describeMachine(), by key, in its order. */
export const ALL_TRANSITIONS: readonly string[] = machineDefinition.transitions.map(transitionKey);
export const ALL_STATES: readonly string[] = machineDefinition.states.map((s) => s.name);

/** Each transition definition object of the machine, mapped to its describeMachine() key. */
const byDefinition = new Map<unknown, string>();
{
  let i = 0;
  for (const [, node] of Object.entries(agentMachine.root.states)) {
    for (const [, defs] of node.transitions as unknown as Map<string, unknown[]>) {
      for (const d of defs) byDefinition.set(d, ALL_TRANSITIONS[i++]);
    }
  }
  if (byDefinition.size !== ALL_TRANSITIONS.length) throw new Error("describeMachine() and the machine disagree");
}

/** The describeMachine() key of the transition XState takes for `event` from `s`, or null (the event is ignored). */
export function takenBy(s: Snap, event: AgentEvent): string | null {
  const ts = agentMachine.getTransitionData(s as never, event as never);
  if (ts.length === 0) return null;
  if (ts.length !== 1) throw new Error(`${event.type} from ${String(s.value)} selects ${ts.length} transitions`);
  const key = byDefinition.get(ts[0]);
  if (key === undefined) throw new Error(`The transition of ${event.type} from ${String(s.value)} is not in describeMachine()`);
  return key;
}

/** The graph key: state value and the context the guards read (bounds the walk). */
export function keyOf(s: Snap): string {
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

export const initialSnap = (): Snap => initialTransition(agentMachine)[0] as Snap;
export const step = (s: Snap, e: AgentEvent): Snap => transition(agentMachine, s as never, e)[0] as Snap;

/** Shortest paths to every graph key, each also extended by every event its end offers. */
export function generatePaths(eventsFor: (s: Snap) => AgentEvent[]): AgentEvent[][] {
  const shortest = getShortestPaths(agentMachine, {
    events: (s) => eventsFor(s as Snap),
    serializeState: (s) => keyOf(s as Snap),
  });
  const paths: AgentEvent[][] = [];
  for (const p of shortest) {
    const events = p.steps.map((st) => st.event as AgentEvent).filter((e) => !e.type.startsWith("xstate."));
    paths.push(events);
    for (const e of eventsFor(p.state as Snap)) paths.push([...events, e]);
  }
  return paths;
}

/** A path with the events that take no transition left out, and what the machine does at each event. */
export interface Walk {
  events: AgentEvent[];
  /** snaps[i] is the snapshot before events[i]; snaps[events.length] the end. */
  snaps: Snap[];
  /** The describeMachine() key of the transition events[i] takes. */
  keys: string[];
}

export function walk(path: AgentEvent[]): Walk {
  let s = initialSnap();
  const out: Walk = { events: [], snaps: [s], keys: [] };
  for (const e of path) {
    const key = takenBy(s, e);
    if (key === null) continue;
    s = step(s, e);
    out.events.push(e);
    out.snaps.push(s);
    out.keys.push(key);
  }
  return out;
}
