/**
 * A shorter way through XState's `send` for the transitions a step takes.
 *
 * XState's `send` walks its general algorithm (mailbox, macrostep, exit and
 * entry sets, action resolution, a new snapshot built from the state nodes)
 * for every event; most of a step's transitions need little of it. For the
 * transitions that fit a narrow shape, `fastSend` computes the next snapshot
 * from the machine's own definition and implementations (its transition
 * list, guards and assign functions, read from `agentMachine`, nothing
 * written twice) and hands it to the actor as XState's `send` would.
 *
 * The shape, checked once per (state, event type) from the machine itself;
 * anything else goes to XState's `send`:
 * - the state is an atomic child of the root; the root takes no transition
 *   on that event type; no state involved has entry or exit actions,
 *   eventless (`always`) or delayed (`after`) transitions, or invokes; the
 *   target is not final; the event type has no wildcard and is not XState's;
 * - each candidate transition has no guard or a named guard that is a plain
 *   function (no `and`/`or`/`not`, no parameters), one target or none, and
 *   only named `assign` actions whose assignment is a function.
 * At send time: the actor's snapshot is `active` with no children and no
 * history value, and some transition is enabled (an ignored event goes to
 * XState too, which answers with the same snapshot).
 *
 * Invariant (tests/machines/machine-fast-step.test.ts): for every snapshot the agent
 * machine can reach and every event, the actor after `fastSend` holds a
 * snapshot equal to the one XState's `send` gives (value, context by
 * structure and by JSON text, status, output, error, children, history
 * value, state nodes, tags), and XState's own `send` goes on from it to the
 * same snapshots. Checked on every step of the model-based host paths and on
 * seeded random event sequences.
 *
 * The actor is given the snapshot through its `_snapshot` field (what
 * `getSnapshot` returns and XState's `update` sets).
 *
 * Checked again at run time, because XState is a peer dependency and the
 * application may bring another 5.x: the first time a process takes a
 * (state, event type) the short way would take, the actor gets XState's own
 * `send` and the short way's snapshot is compared with it (value, status,
 * state nodes, tags, context as JSON text); a difference turns the short way
 * off for that pair for the life of the process. The first such check also
 * checks that `getSnapshot` returns the `_snapshot` field; if not, the short
 * way is off for every pair. An actor with an
 * inspector or observers must see XState's own notifications, so the caller
 * uses XState's `send` for it (actors/host/apply.ts: not with
 * `inspect`; the host subscribes to nothing).
 */
import type { AnyActorRef } from "xstate";
import { agentMachine } from "./agent.ts";
import type { AgentContext, AgentEvent } from "./types.ts";

type Fn = (...a: unknown[]) => unknown;
interface NodeLike {
  key: string;
  type: string;
  parent?: NodeLike;
  entry: unknown[];
  exit: unknown[];
  always?: unknown[];
  after: unknown[];
  invoke: unknown[];
  states: Record<string, NodeLike>;
  transitions: Map<string, TransitionLike[]>;
}
interface TransitionLike {
  guard?: unknown;
  target?: NodeLike[];
  actions: unknown[];
  reenter: boolean;
}
interface Snapshot {
  status: string;
  value: string;
  context: AgentContext;
  children: Record<string, unknown>;
  historyValue: Record<string, unknown>;
  [k: string]: unknown;
}

/** One candidate transition, resolved: guard, assignments in order, the target's snapshot template. */
interface Plan {
  guard: Fn | null;
  assigns: Fn[];
  /** null: stays (no target). */
  template: Snapshot | null;
}

const machine = agentMachine as unknown as {
  root: NodeLike;
  implementations: { guards: Record<string, unknown>; actions: Record<string, unknown> };
};
const root = machine.root;

const quiet = (n: NodeLike) =>
  n.entry.length === 0 && n.exit.length === 0 && (n.always?.length ?? 0) === 0 && n.after.length === 0 && n.invoke.length === 0;

/** A snapshot of `state` as XState builds it (status, nodes, value, tags, methods), to be filled per send. */
const templates = new Map<string, Snapshot>();
function templateOf(state: string): Snapshot {
  let t = templates.get(state);
  if (!t) {
    t = agentMachine.resolveState({ value: state, context: {} as AgentContext }) as unknown as Snapshot;
    templates.set(state, t);
  }
  return t;
}

function planOne(source: NodeLike, t: TransitionLike): Plan | null {
  let guard: Fn | null = null;
  if (t.guard !== undefined) {
    if (typeof t.guard !== "string") return null;
    const g = machine.implementations.guards[t.guard];
    if (typeof g !== "function" || "check" in g) return null;
    guard = g as Fn;
  }
  const assigns: Fn[] = [];
  for (const a of t.actions) {
    if (typeof a !== "string") return null;
    const impl = machine.implementations.actions[a] as { type?: string; assignment?: unknown } | undefined;
    if (!impl || impl.type !== "xstate.assign" || typeof impl.assignment !== "function") return null;
    assigns.push(impl.assignment as Fn);
  }
  const targets = t.target ?? [];
  if (targets.length > 1) return null;
  const target = targets[0];
  if (target && (target.parent !== root || target.type !== "atomic" || !quiet(target))) return null;
  // A reentering transition to its own state exits and enters it: no actions there (quiet), same result.
  if (!target && t.reenter) return null;
  return { guard, assigns, template: target ? templateOf(target.key) : null };
}

/** Plans by "state\nEVENT"; null: XState's send. */
const plans = new Map<string, Plan[] | null>();
function plansFor(state: string, type: string): Plan[] | null {
  const key = `${state}\n${type}`;
  let p = plans.get(key);
  if (p !== undefined) return p;
  p = null;
  try {
    p = planPair(state, type);
  } catch {
    // An XState whose machine objects are shaped otherwise: XState's send for this pair.
    p = null;
  }
  plans.set(key, p);
  return p;
}

function planPair(state: string, type: string): Plan[] | null {
  let p: Plan[] | null = null;
  const source = Object.hasOwn(root.states, state) ? root.states[state] : undefined;
  const fits = source && source.parent === root && source.type === "atomic" && quiet(source) && quiet(root) &&
    !type.includes("*") && !type.startsWith("xstate.") && !root.transitions.has(type) &&
    ![...source.transitions.keys()].some((k) => k.includes("*"));
  if (fits) {
    const list = source.transitions.get(type) ?? [];
    const planned = list.map((t) => planOne(source, t));
    p = planned.every((x) => x !== null) && planned.length > 0 ? planned as Plan[] : null;
  }
  return p;
}

const noSpawn = () => {
  throw new Error("fastSend: an assign of the agent machine spawned an actor");
};

/**
 * The snapshot XState's `send(event)` would give `actor`, when the
 * transition fits the short way; null otherwise (and when no transition is
 * enabled).
 */
export function fastNext(actor: AnyActorRef, event: AgentEvent): Snapshot | null {
  const s = actor.getSnapshot() as Snapshot;
  if (s.status !== "active" || s.machine !== agentMachine) return null;
  for (const _ in s.children) return null;
  for (const _ in s.historyValue) return null;
  const list = plansFor(s.value, event.type);
  if (!list) return null;
  for (const plan of list) {
    if (plan.guard && !plan.guard({ context: s.context, event }, undefined)) continue;
    let context = s.context;
    for (const assign of plan.assigns) {
      const partial = assign({ context, event, spawn: noSpawn, self: actor, system: actor.system }, undefined);
      context = Object.assign({}, context, partial);
    }
    const base = plan.template ?? s;
    return { ...base, context, children: s.children, historyValue: s.historyValue } as Snapshot;
  }
  return null;
}

type Raw = Snapshot & { _nodes?: unknown[]; tags?: Set<string> };
function sameSnapshot(a: Raw, b: Raw): boolean {
  if (a.value !== b.value || a.status !== b.status) return false;
  const an = a._nodes ?? [], bn = b._nodes ?? [];
  if (an.length !== bn.length || an.some((n, i) => n !== bn[i])) return false;
  if ([...(a.tags ?? [])].join("\n") !== [...(b.tags ?? [])].join("\n")) return false;
  return JSON.stringify(a.context) === JSON.stringify(b.context);
}

/**
 * Sends events the short way once it agreed with XState (see the header):
 * one per process (`fastSend`); tests make their own to start unchecked.
 */
export class FastSender {
  /** Pairs ("state\nEVENT") whose short way was compared with XState's `send` and agreed. */
  #agreed = new Set<string>();
  /** Pairs whose short way disagreed: XState's send from then on. */
  #refused = new Set<string>();
  /** Whether `getSnapshot` returns the `_snapshot` field; undefined until first checked. */
  #fieldIsSnapshot: boolean | undefined;

  /** `actor.send(event)`, the short way when it fits and agreed with XState. */
  send(actor: AnyActorRef, event: AgentEvent): void {
    if (this.#fieldIsSnapshot === false) return void actor.send(event);
    const key = `${(actor.getSnapshot() as Snapshot).value}\n${event.type}`;
    const next = this.#refused.has(key) ? null : fastNext(actor, event);
    if (!next) return void actor.send(event);
    if (this.#agreed.has(key)) {
      (actor as unknown as { _snapshot: unknown })._snapshot = next;
      return;
    }
    // First use of this pair: XState's own send, then the comparison.
    actor.send(event);
    const real = actor.getSnapshot() as Raw;
    this.#fieldIsSnapshot ??= (actor as unknown as { _snapshot: unknown })._snapshot === real;
    if (this.#fieldIsSnapshot && sameSnapshot(next as Raw, real)) this.#agreed.add(key);
    else this.#refused.add(key);
  }
}

const shared = new FastSender();

/** `actor.send(event)`, the short way when it fits and agreed with XState in this process (see the header). */
export function fastSend(actor: AnyActorRef, event: AgentEvent): void {
  shared.send(actor, event);
}
