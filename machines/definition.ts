/**
 * The agent statechart as data, for visualizers and docs: states,
 * transitions `{ from, event, to, guard? }` read from `agentMachine` itself
 * (so they cannot drift from it), and a Mermaid `stateDiagram-v2` text.
 * Pure: no I/O.
 *
 * A transition without a target (XState's targetless transition: actions
 * only, no state change) is listed with `to === from` and `targetless: true`;
 * one that re-enters its own state has `reenter: true`.
 */
import type { AnyStateMachine } from "xstate";
import { agentMachine } from "./agent.ts";

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

interface XTransition {
  target?: Array<{ key: string }>;
  guard?: unknown;
  actions?: unknown[];
  reenter?: boolean;
}

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
    const map = node.transitions as unknown as Map<string, XTransition[]>;
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

/** Mermaid state ids allow only word characters; other names get an alias. */
const mermaidId = (name: string) => name.replace(/[^A-Za-z0-9_]/g, "_");

/**
 * @example
 * toMermaid(describeMachine())
 * // stateDiagram-v2
 * //   state "waiting-tools" as waiting_tools
 * //   [*] --> idle
 * //   idle --> running : TASK_STARTED
 * //   running --> waiting_tools : MODEL_STEP [stepCallsTools]
 */
export function toMermaid(def: MachineDefinition): string {
  const lines = ["stateDiagram-v2"];
  for (const s of def.states) {
    if (mermaidId(s.name) !== s.name) lines.push(`  state "${s.name}" as ${mermaidId(s.name)}`);
  }
  lines.push(`  [*] --> ${mermaidId(def.initial)}`);
  for (const t of def.transitions) {
    const label = t.guard ? `${t.event} [${t.guard}]` : t.event;
    lines.push(`  ${mermaidId(t.from)} --> ${mermaidId(t.to)} : ${label}`);
  }
  return lines.join("\n") + "\n";
}
