/**
 * `GET /v1/machine`: the agent statechart as an XState v5 machine config
 * that `createMachine` loads as is, for drawing it and Stately import
 * (`machineConfig` of machines/definition.ts:
 * `{ id, initial, context, states: { s: { on: { E: [{ target, guard, actions }] } } } }`,
 * guards and actions by name only: running a guarded event needs
 * `agentMachine.implementations`), with the richer introspection under XState's
 * own `meta` key: states with `endsTurn`, the flat transition list and the
 * Mermaid text. Read from `agentMachine` and computed once: the machine is
 * one definition for all agents.
 */
import { agentMachine } from "../machines/agent.ts";
import { describeMachine, type MachineConfigJSON, machineConfig, toMermaid } from "../machines/definition.ts";
import { defineRoute, json, routeApp } from "./define.ts";
import type { RouteRuntime } from "./runtime.ts";
import { MachineView } from "./schemas.ts";

export function machineView(): MachineConfigJSON & { meta: Record<string, unknown> } {
  const config = machineConfig(agentMachine);
  const def = describeMachine(agentMachine);
  return {
    ...config,
    meta: { ...config.meta, states: def.states, transitions: def.transitions, mermaid: toMermaid(def) },
  };
}

const getMachine = defineRoute({
  method: "get",
  path: "/v1/machine",
  operationId: "getMachine",
  summary: "The agent statechart as an XState machine config (createMachine loads it, to draw it; guards and actions by name: running it needs agentMachine.implementations), with states, transitions and Mermaid text under meta",
  tags: ["machine"],
  responses: { 200: json("The machine", MachineView) },
}, [], "read");

export function machineRoutes(rt: RouteRuntime) {
  // Checked against the documented schema once, at startup.
  const view = MachineView.parse(machineView());
  return routeApp(rt).openapi(getMachine, (c) => c.json(view, 200));
}
