/**
 * `GET /v1/machine`: the agent statechart for visualizers: XState's JSON
 * definition, the states and transitions `{ from, event, to, guard? }` of
 * machines/definition.ts, and a Mermaid `stateDiagram-v2` text. Computed
 * once: the machine is one definition for all agents.
 */
import { Hono } from "hono";
import { agentMachine } from "../machines/agent.ts";
import { describeMachine, toMermaid } from "../machines/definition.ts";
import type { RouteModule } from "./module.ts";
import type { RouteRuntime } from "./runtime.ts";
import { MachineView } from "./schemas.ts";
import { jsonClone } from "../common/json.ts";

export function machineView() {
  const def = describeMachine(agentMachine);
  return {
    definition: jsonClone(agentMachine.toJSON()) as unknown as Record<string, unknown>,
    states: def.states,
    transitions: def.transitions,
    mermaid: toMermaid(def),
  };
}

export function machineRoutes(_rt: RouteRuntime): RouteModule {
  const app = new Hono();
  const view = machineView();
  app.get("/v1/machine", (c) => c.json(view));
  return {
    app,
    operations: [{
      method: "get",
      path: "/v1/machine",
      operationId: "getMachine",
      summary: "The agent statechart: XState definition, states, transitions, Mermaid text",
      tags: ["machine"],
      responses: { 200: { description: "The machine", schema: { name: "MachineView", schema: MachineView } } },
      problems: [],
    }],
  };
}
