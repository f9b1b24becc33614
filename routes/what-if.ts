/**
 * `POST /v1/agents/:agentId/what-if`: the recorded `agent_output`
 * candidates judged again by a registered guardian or the agent's current
 * output verifier (verification/what-if.ts). Reads the head, the log and
 * the turns' inputs; writes nothing and logs nothing.
 *
 * Every judged candidate may call a verifier that is a paid model, so the
 * route is bounded three ways (docs/security.md, "What-if"):
 * - it needs the verb `replay` (routes/auth/access.ts), not `read`;
 * - one request judges at most `maxWhatIfCandidates` candidates (default
 *   20, createGatehouse `whatIfMaxCandidates`), in log order after `after`;
 *   the rest are left for the next request (`stopped: "candidate_cap"`,
 *   `nextAfter`);
 * - each candidate is charged one unit against the request's rate-limit
 *   buckets (its token's and the agent's, routes/rate-limit.ts) before its
 *   verifier runs. A refusal before the first candidate answers 429
 *   `rate_limited` with `Retry-After`; a refusal later answers 200 with the
 *   candidates judged so far, `stopped: "rate_limited"`, `retryAfterMs`,
 *   `nextAfter` and the `Retry-After` header.
 */
import { BODY_PROBLEMS, defineRoute, json, jsonBody, routeApp } from "./define.ts";
import { DEFAULTS } from "../common/defaults.ts";
import { ProblemError } from "./problem.ts";
import type { RouteRuntime } from "./runtime.ts";
import { WhatIfRequest, WhatIfResult } from "./debug-schemas.ts";
import { chargeRequest, type RateCharge } from "./rate-limit.ts";
import { AgentParams } from "./schemas.ts";
import { whatIfForAgent, type WhatIfVerifier } from "../actors/replay/what-if.ts";
import { OUTPUT_VERIFIER_PREFIX } from "../verdicts/guardian.ts";

/** Candidates one what-if request judges when `whatIfMaxCandidates` is not set. */
export const DEFAULT_WHAT_IF_MAX_CANDIDATES = DEFAULTS.whatIfMaxCandidates;

const verifierWhatIf = defineRoute({
  method: "post",
  path: "/v1/agents/{agentId}/what-if",
  operationId: "verifierWhatIf",
  summary: "Judge the recorded agent_output candidates again with a guardian or the current output verifier (read-only)",
  description: "Needs the verb `replay`. Judges at most the server's `maxCandidates` per request, in log order " +
    "after `after`; each judged candidate charges one unit to the token's and the agent's rate-limit buckets " +
    "before its verifier runs. `stopped` says why candidates were left unjudged and `nextAfter` where to go on.",
  tags: ["debugging"],
  request: { params: AgentParams, body: jsonBody(WhatIfRequest) },
  responses: { 200: json("Recorded and new judgments per candidate", WhatIfResult) },
}, [...BODY_PROBLEMS, "invalid_agent_id", "agent_not_found", "unknown_guardian"], "replay");

export function whatIfRoutes(rt: RouteRuntime) {
  const maxCandidates = rt.limits.maxWhatIfCandidates ?? DEFAULT_WHAT_IF_MAX_CANDIDATES;

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
    let refused: Extract<RateCharge, { ok: false }> | null = null;
    const run = await whatIfForAgent(rt.store, agentId, head, verifier, {
      ...(body.after !== undefined ? { after: body.after } : {}),
      max: maxCandidates,
      charge: async () => {
        const r = await chargeRequest(c, rt.rateLimits, rt, agentId);
        if (r.ok) return r;
        refused = r;
        return { ok: false, retryAfterMs: r.retryAfterMs };
      },
    });
    // Refused before any verifier ran: the request did nothing but read, and says so as any refused request does.
    if (refused !== null && run.candidates.length === 0) throw (refused as Extract<RateCharge, { ok: false }>).problem;
    const headers: Record<string, string> = run.retryAfterMs !== undefined
      ? { "retry-after": String(Math.max(1, Math.ceil(run.retryAfterMs / 1000))) }
      : {};
    return c.json({
      agentId,
      verifier: { kind: verifier.kind, name: verifier.name },
      candidates: run.candidates,
      total: run.total,
      maxCandidates,
      stopped: run.stopped,
      nextAfter: run.nextAfter,
      ...(run.retryAfterMs !== undefined ? { retryAfterMs: run.retryAfterMs } : {}),
    }, 200, headers);
  });
}
