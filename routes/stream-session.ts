/**
 * `POST /v1/agents/:agentId/events/session`: a stream session cookie for
 * `EventSource` clients, which cannot send an `Authorization` header
 * (routes/auth/stream-session.ts holds the invariants, docs/security.md the
 * threat analysis). Needs a bearer token with `read` over the agent; a
 * request let in by a session cookie cannot mint another one. Without auth
 * there is nothing to authenticate: 200 `{ expiresAt: null }`, no cookie.
 */
import { z } from "@hono/zod-openapi";
import { mintStreamSession } from "./auth.ts";
import { sessionCookie } from "./auth/stream-session.ts";
import { defineRoute, json, routeApp } from "./define.ts";
import { ProblemError } from "./problem.ts";
import type { RouteRuntime } from "./runtime.ts";
import { AgentParams } from "./schemas.ts";

const StreamSession = z.object({
  expiresAt: z.number().int().nullable().describe("When the session ends (ms since the epoch); null when auth is off"),
  path: z.string().describe("The one path the cookie opens"),
}).openapi("StreamSession");

const createStreamSession = defineRoute({
  method: "post",
  path: "/v1/agents/{agentId}/events/session",
  operationId: "createStreamSession",
  summary: "A short-lived cookie that opens this agent's event stream for EventSource (no token in the URL)",
  description: "Sets `gh_stream` (HttpOnly, Secure, SameSite=Strict, Path=/v1/agents/:agentId/events, 5 minutes). " +
    "Send it with the bearer token (verb `read`); then `new EventSource(path)` authenticates with the cookie.",
  tags: ["agents"],
  request: { params: AgentParams },
  responses: { 200: json("The session (and its Set-Cookie)", StreamSession) },
}, ["invalid_agent_id"], "read");

export function streamSessionRoutes(rt: RouteRuntime) {
  return routeApp(rt).openapi(createStreamSession, async (c) => {
    const { agentId } = c.req.valid("param");
    const path = `/v1/agents/${agentId}/events`;
    c.header("cache-control", "no-store");
    if (!rt.auth) return c.json({ expiresAt: null, path }, 200);
    const s = await mintStreamSession(c, agentId, rt.clock.now());
    if (s === null) throw new ProblemError("forbidden", "A stream session is minted with a bearer token");
    c.header("set-cookie", sessionCookie(s.value, agentId));
    return c.json({ expiresAt: s.expiresAt, path }, 200);
  });
}
