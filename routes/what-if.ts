/**
 * `POST /v1/agents/:agentId/what-if`: the recorded `agent_output`
 * candidates judged again by a registered guardian or the agent's current
 * output verifier (verification/what-if.ts). Reads the head, the log and
 * the turns' inputs; writes nothing and logs nothing.
 */
import { BODY_PROBLEMS, defineRoute, json, jsonBody, routeApp } from "./define.ts";
import { ProblemError } from "./problem.ts";
import type { RouteRuntime } from "./runtime.ts";
import { WhatIfRequest, WhatIfResult } from "./debug-schemas.ts";
import { AgentParams } from "./schemas.ts";
import { whatIfForAgent, type WhatIfVerifier } from "../actors/what-if.ts";
import { OUTPUT_VERIFIER_PREFIX } from "../verdicts/guardian.ts";

const verifierWhatIf = defineRoute({
  method: "post",
  path: "/v1/agents/{agentId}/what-if",
  operationId: "verifierWhatIf",
  summary: "Judge the recorded agent_output candidates again with a guardian or the current output verifier (read-only)",
  tags: ["debugging"],
  request: { params: AgentParams, body: jsonBody(WhatIfRequest) },
  responses: { 200: json("Recorded and new judgments per candidate", WhatIfResult) },
}, [...BODY_PROBLEMS, "invalid_agent_id", "agent_not_found", "unknown_guardian"]);

export function whatIfRoutes(rt: RouteRuntime) {
  function verifierOf(code: string | undefined, agentName: string): WhatIfVerifier {
    if (code === undefined) {
      const agent = rt.agents.get(agentName);
      if (!agent?.output) {
        throw new ProblemError("unknown_guardian", `Definition "${agentName}" is not registered here or declares no output; name a guardian`);
      }
      return { kind: "output_verifier", name: `${OUTPUT_VERIFIER_PREFIX}${agent.name}`, agent };
    }
    const reg = rt.guardians?.get(code);
    if (reg?.kind === "guardian" && reg.guardian) return { kind: "guardian", name: reg.code, guardian: reg.guardian };
    if (reg?.kind === "output_verifier" || (!rt.guardians && code.startsWith(OUTPUT_VERIFIER_PREFIX))) {
      const agent = rt.agents.get(code.slice(OUTPUT_VERIFIER_PREFIX.length));
      if (agent?.output) return { kind: "output_verifier", name: code, agent };
    }
    throw new ProblemError("unknown_guardian", `No guardian is registered as ${JSON.stringify(code)}`);
  }

  return routeApp(rt).openapi(verifierWhatIf, async (c) => {
    const { agentId } = c.req.valid("param");
    const body = c.req.valid("json");
    const head = await rt.store.getAgent(agentId);
    if (!head) throw new ProblemError("agent_not_found", `Agent "${agentId}" does not exist`);
    const verifier = verifierOf(body.guardian, head.agentName);
    const candidates = await whatIfForAgent(rt.store, agentId, head, verifier);
    return c.json({ agentId, verifier: { kind: verifier.kind, name: verifier.name }, candidates }, 200);
  });
}
