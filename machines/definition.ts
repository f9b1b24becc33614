/**
 * The agent statechart as data, read from `agentMachine` itself (never a
 * copy), so it cannot drift from the machine the host runs. Pure: no I/O.
 *
 * Three views:
 * - `machineConfig(m)`: the machine's config as JSON, in the form XState v5's
 *   `createMachine` loads as is (and Stately's visualizer imports):
 *   `{ id, initial, context, states: { s: { on: { E: [{ target, guard, actions, reenter? }] } } } }`
 *   with guards and actions by name. Invariant: `createMachine(c).provide(m.implementations)`
 *   goes through the same states with the same contexts as `m` for every
 *   event sequence; without implementations it still starts, and takes every
 *   unguarded transition (named actions it lacks are skipped); a guarded
 *   event stops it with XState's `Guard '…' is not implemented`. A machine that
 *   JSON cannot carry (an inline guard or action, dynamic params, `invoke`,
 *   `after`) is refused with an Error naming the place, never served lossy.
 *   (`machine.toJSON()` is XState's internal node view, not a config:
 *   its `initial` is a transition object and its targets are `#id` arrays.)
 * - `describeMachine(m)`: states (with `endsTurn`) and a flat transition
 *   list `{ from, event, to, guard? }` in the order XState tries them. A
 *   transition without a target (XState's targetless transition: actions
 *   only, no state change) is listed with `to === from` and `targetless: true`;
 *   one that re-enters its own state has `reenter: true`.
 * - `toMermaid(def)`: a Mermaid `stateDiagram-v2` text laid out to be read
 *   (see its doc); `docs/machine.svg` is rendered from it by
 *   `scripts/render-machine.ts`.
 */
import type { AnyStateMachine, StateNode } from "xstate";
import { type Json, jsonCopy, JsonValueError } from "../common/json.ts";
import { agentMachine } from "./agent.ts";

// ---------------------------------------------------------------- config --

/** A guard or action by name, with JSON params when the machine gives some. */
export type ImplementationRef = string | { type: string; params: unknown };

export interface TransitionConfigJSON {
  /** A sibling state's key, or `#id` for any other state; absent for a targetless transition. */
  target?: string | string[];
  guard?: ImplementationRef;
  actions?: ImplementationRef[];
  reenter?: true;
  description?: string;
}

export interface StateConfigJSON {
  type?: "parallel" | "final" | "history";
  initial?: string;
  entry?: ImplementationRef[];
  exit?: ImplementationRef[];
  on?: Record<string, TransitionConfigJSON[]>;
  always?: TransitionConfigJSON[];
  states?: Record<string, StateConfigJSON>;
  tags?: string[];
  description?: string;
  meta?: Record<string, unknown>;
}

export interface MachineConfigJSON extends StateConfigJSON {
  id: string;
  /** The initial context (the machine's context function evaluated once, without input). */
  context?: unknown;
}

type AnyNode = StateNode<any, any>;
interface TransitionDef {
  target?: readonly AnyNode[];
  guard?: unknown;
  actions?: readonly unknown[];
  reenter?: boolean;
  description?: string;
}

function refuse(where: string, what: string, hint = ""): never {
  throw new Error(`Cannot serve the machine as JSON: ${what} at ${where}${hint}`);
}

/** A JSON copy of `x`, or a refusal naming what is not JSON. */
function json(x: unknown, where: string, what: string): Json {
  try {
    return jsonCopy(x, what);
  } catch (err) {
    return refuse(where, err instanceof JsonValueError ? err.message : `non-JSON ${what}`);
  }
}

function ref(x: unknown, where: string, kind: "guard" | "action"): ImplementationRef {
  if (typeof x === "string") return x;
  if (x && typeof x === "object" && typeof (x as { type?: unknown }).type === "string") {
    const { type, params } = x as { type: string; params?: unknown };
    if (params === undefined) return type;
    if (typeof params === "function") refuse(where, `${kind} "${type}" with dynamic params`);
    return { type, params: json(params, where, `params of ${kind} "${type}"`) };
  }
  return refuse(where, `an inline ${kind}`, `; name it in setup() so the config can refer to it`);
}

function targetOf(source: AnyNode, t: AnyNode): string {
  return t.parent !== undefined && t.parent === source.parent ? t.key : `#${t.id}`;
}

function transitionJSON(source: AnyNode, d: TransitionDef, where: string): TransitionConfigJSON {
  const out: TransitionConfigJSON = {};
  const targets = (d.target ?? []).map((t) => targetOf(source, t));
  if (targets.length > 0) out.target = targets.length === 1 ? targets[0] : targets;
  if (d.guard !== undefined) out.guard = ref(d.guard, where, "guard");
  const actions = (d.actions ?? []).map((a) => ref(a, where, "action"));
  if (actions.length > 0) out.actions = actions;
  if (d.reenter) out.reenter = true;
  if (d.description !== undefined) out.description = d.description;
  return out;
}

function stateJSON(node: AnyNode): StateConfigJSON {
  const where = `#${node.id}`;
  if (node.invoke.length > 0) refuse(where, "an invoke");
  if (node.after.length > 0) refuse(where, "a delayed (after) transition");
  const out: StateConfigJSON = {};
  if (node.type === "parallel" || node.type === "final" || node.type === "history") out.type = node.type;
  if (node.type === "compound") out.initial = node.initial.target[0].key;
  if (node.entry.length > 0) out.entry = node.entry.map((a) => ref(a, `${where} entry`, "action"));
  if (node.exit.length > 0) out.exit = node.exit.map((a) => ref(a, `${where} exit`, "action"));
  const on: Record<string, TransitionConfigJSON[]> = {};
  for (const [event, defs] of node.transitions) {
    on[event] = (defs as TransitionDef[]).map((d) => transitionJSON(node, d, `${where} on ${event}`));
  }
  if (Object.keys(on).length > 0) out.on = on;
  if (node.always && node.always.length > 0) {
    out.always = (node.always as TransitionDef[]).map((d) => transitionJSON(node, d, `${where} always`));
  }
  const children = Object.values(node.states) as AnyNode[];
  if (children.length > 0) out.states = Object.fromEntries(children.map((c) => [c.key, stateJSON(c)]));
  if (node.tags.length > 0) out.tags = [...node.tags];
  if (node.description !== undefined) out.description = node.description;
  if (node.meta !== undefined) out.meta = json(node.meta, where, "meta") as Record<string, unknown>;
  return out;
}

function initialContextOf(machine: AnyStateMachine): unknown {
  const c = (machine.config as { context?: unknown }).context;
  if (c === undefined) return undefined;
  const value = typeof c === "function"
    ? c({ input: undefined, self: undefined, spawn: () => refuse("#" + machine.id, "a spawn in the context function") })
    : c;
  return json(value, `#${machine.id}`, "context");
}

/**
 * The machine's config as JSON that `createMachine` loads as is (it runs
 * guarded events once given `m.implementations`).
 *
 * @example
 * const m = createMachine(machineConfig()).provide(agentMachine.implementations);
 * createActor(m).start().send({ type: "CANCEL", at: 0, reason: "stop" });
 */
export function machineConfig(machine: AnyStateMachine = agentMachine): MachineConfigJSON {
  const root = machine.root as AnyNode;
  const { initial, ...rest } = stateJSON(root);
  const context = initialContextOf(machine);
  return {
    id: root.id,
    ...(initial !== undefined ? { initial } : {}),
    ...(context !== undefined ? { context } : {}),
    ...rest,
  };
}

// --------------------------------------------------------- introspection --

export interface MachineTransition {
  from: string;
  event: string;
  to: string;
  /** Name of the guard; transitions of one event are tried in the listed order. */
  guard?: string;
  actions: string[];
  reenter?: true;
  targetless?: true;
}

export interface MachineStateInfo {
  name: string;
  initial: boolean;
  /** `done` and `failed` end a turn, not the agent: a new task starts the next turn. */
  endsTurn: boolean;
  /** Events the state handles. */
  events: string[];
}

export interface MachineDefinition {
  id: string;
  initial: string;
  states: MachineStateInfo[];
  transitions: MachineTransition[];
}

const TURN_ENDING = new Set(["done", "failed"]);

function nameOf(x: unknown): string {
  if (typeof x === "string") return x;
  if (x && typeof x === "object" && typeof (x as { type?: unknown }).type === "string") return (x as { type: string }).type;
  if (typeof x === "function") return x.name || "inline";
  return "inline";
}

/** States and transitions of a flat machine (default: the agent machine), in definition order. */
export function describeMachine(machine: AnyStateMachine = agentMachine): MachineDefinition {
  const root = machine.root;
  const initial = (root.config.initial as string | undefined) ?? Object.keys(root.states)[0];
  const states: MachineStateInfo[] = [];
  const transitions: MachineTransition[] = [];
  for (const [name, node] of Object.entries(root.states)) {
    const map = node.transitions as unknown as Map<string, TransitionDef[]>;
    states.push({ name, initial: name === initial, endsTurn: TURN_ENDING.has(name), events: [...map.keys()] });
    for (const [event, defs] of map) {
      for (const d of defs) {
        const to = d.target && d.target.length > 0 ? d.target[0].key : undefined;
        transitions.push({
          from: name,
          event,
          to: to ?? name,
          ...(d.guard !== undefined ? { guard: nameOf(d.guard) } : {}),
          actions: (d.actions ?? []).map(nameOf),
          ...(d.reenter ? { reenter: true as const } : {}),
          ...(to === undefined ? { targetless: true as const } : {}),
        });
      }
    }
  }
  return { id: root.id, initial, states, transitions };
}

// --------------------------------------------------------------- mermaid --

/** Mermaid state ids allow only word characters; every state is declared with its name as label. */
const mermaidId = (name: string) => name.replace(/[^A-Za-z0-9_]/g, "_");

/**
 * The guard as the diagram shows it: its name, `else` for an unguarded
 * transition that XState tries only after guarded ones of the same event
 * and state, nothing for an event's only (unguarded) transition.
 */
function guardText(def: MachineDefinition, t: MachineTransition): string | undefined {
  if (t.guard !== undefined) return t.guard;
  const i = def.transitions.indexOf(t);
  return def.transitions.some((u, j) => j < i && u.from === t.from && u.event === t.event && u.guard !== undefined)
    ? "else"
    : undefined;
}

/** `EVENT` or `EVENT [g1 | g2]` for transitions of one event, guards in the order XState tries them. */
function eventLabel(def: MachineDefinition, event: string, ts: MachineTransition[]): string {
  const guards = ts.map((t) => guardText(def, t)).filter((g) => g !== undefined);
  return guards.length === 0 ? event : `${event} [${guards.join(" | ")}]`;
}

/** Transitions grouped by event, in first-seen order. */
function byEvent(ts: MachineTransition[]): Array<[string, MachineTransition[]]> {
  const m = new Map<string, MachineTransition[]>();
  for (const t of ts) m.set(t.event, [...(m.get(t.event) ?? []), t]);
  return [...m];
}

/** Distance of each state from the initial one, following transitions (unreachable states last). */
function depths(def: MachineDefinition): Map<string, number> {
  const depth = new Map([[def.initial, 0]]);
  for (let frontier = [def.initial]; frontier.length > 0;) {
    const next: string[] = [];
    for (const t of def.transitions) {
      if (frontier.includes(t.from) && !depth.has(t.to)) {
        depth.set(t.to, depth.get(t.from)! + 1);
        next.push(t.to);
      }
    }
    frontier = next;
  }
  for (const s of def.states) if (!depth.has(s.name)) depth.set(s.name, def.states.length);
  return depth;
}

/**
 * A Mermaid `stateDiagram-v2` text drawn top-down to be read: every
 * transition of `def` appears once, either as an edge or as a line inside a
 * state's box, chosen so that no two edge labels compete for one spot in
 * Mermaid's layered layout:
 * - inside the source's box: transitions that stay in their state
 *   (`⟲ EVENT [guard]`, marked `(reenter)` or `(targetless)` where it is), transitions out of a turn-ending
 *   state (`TASK_STARTED → running`), and of two states joined both ways the
 *   edge that points back toward the initial state (`TOOL_RESULT [lastOutstanding] → running`);
 * - inside a turn-ending state's box: one event that reaches it unguarded
 *   from three or more states (`← CANCEL from running, waiting-tools, …`);
 * - every other transition is an edge; transitions between the same two
 *   states share one edge, one label line per event, guards in the order
 *   XState tries them (`VERIFY_REJECTED [rejectionFinal | attemptsExhausted]`);
 *   an unguarded transition tried after guarded ones of its event reads `[else]`.
 * `docs/machine.png` shows it rendered.
 *
 * @example
 * toMermaid(describeMachine())
 * // stateDiagram-v2
 * //   direction TB
 * //   [*] --> idle
 * //   state "idle" as idle
 * //   …
 * //   running --> waiting_tools : MODEL_STEP [stepCallsTools]
 */
export function toMermaid(def: MachineDefinition): string {
  const depth = depths(def);
  const order = new Map(def.states.map((s, i) => [s.name, i]));
  const endsTurn = new Set(def.states.filter((s) => s.endsTurn).map((s) => s.name));
  const boxLines = new Map<string, string[]>(def.states.map((s) => [s.name, []]));
  const inBox = new Set<MachineTransition>();
  const put = (state: string, line: string) => boxLines.get(state)!.push(line);

  const pairs = new Set(def.transitions.filter((t) => t.from !== t.to).map((t) => `${t.from}\u0000${t.to}`));
  const pointsBack = (t: MachineTransition) =>
    pairs.has(`${t.to}\u0000${t.from}`) &&
    (depth.get(t.from)! > depth.get(t.to)! ||
      (depth.get(t.from) === depth.get(t.to) && order.get(t.from)! > order.get(t.to)!));

  for (const t of def.transitions) {
    const g = guardText(def, t);
    const guard = g ? ` [${g}]` : "";
    if (t.from === t.to) {
      put(t.from, `⟲ ${t.event}${guard}${t.targetless ? " (targetless)" : t.reenter ? " (reenter)" : ""}`);
      inBox.add(t);
    } else if (endsTurn.has(t.from) || pointsBack(t)) {
      put(t.from, `${t.event}${guard} → ${t.to}`);
      inBox.add(t);
    }
  }
  const fanIn = new Map<string, MachineTransition[]>();
  for (const t of def.transitions) {
    if (inBox.has(t) || t.guard !== undefined || !endsTurn.has(t.to)) continue;
    const key = `${t.event}\u0000${t.to}`;
    fanIn.set(key, [...(fanIn.get(key) ?? []), t]);
  }
  for (const group of fanIn.values()) {
    if (group.length < 3) continue;
    group.forEach((t) => inBox.add(t));
    put(group[0].to, `← ${group[0].event} from ${group.map((t) => t.from).join(", ")}`);
  }

  const lines = ["stateDiagram-v2", "  direction TB", `  [*] --> ${mermaidId(def.initial)}`];
  for (const s of def.states) lines.push(`  state "${s.name}" as ${mermaidId(s.name)}`);
  const edges = new Map<string, MachineTransition[]>();
  const sources = [...def.states].sort((a, b) => depth.get(a.name)! - depth.get(b.name)! || order.get(a.name)! - order.get(b.name)!);
  for (const s of sources) {
    for (const t of def.transitions) {
      if (t.from !== s.name || inBox.has(t)) continue;
      const key = `${t.from}\u0000${t.to}`;
      edges.set(key, [...(edges.get(key) ?? []), t]);
    }
  }
  for (const ts of edges.values()) {
    const label = byEvent(ts).map(([event, group]) => eventLabel(def, event, group)).join("<br/>");
    lines.push(`  ${mermaidId(ts[0].from)} --> ${mermaidId(ts[0].to)} : ${label}`);
  }
  for (const s of def.states) {
    for (const line of boxLines.get(s.name)!) lines.push(`  ${mermaidId(s.name)} : ${line}`);
  }
  return lines.join("\n") + "\n";
}
