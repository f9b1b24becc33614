/**
 * `POST /v1/agents/:agentId/events/session`: a stream session cookie for
 * `EventSource` clients, which cannot send an `Authorization` header
 * (routes/auth/stream-session.ts holds the invariants, docs/security.md the
 * threat analysis). Needs a bearer token with `read` over the agent; a
 * request let in by a session cookie cannot mint another one. Without auth
 * there is nothing to authenticate: 200 `{ expiresAt: null }`, no cookie.
 */
import { Hono } from "hono";
import { z } from "zod";
import { mintStreamSession } from "./auth.ts";
import { sessionCookie } from "./auth/stream-session.ts";
import type { RouteModule } from "./module.ts";
import { ProblemError } from "./problem.ts";
import type { RouteRuntime } from "./runtime.ts";

const StreamSession = z.object({
  expiresAt: z.number().int().nullable().describe("When the session ends (ms since the epoch); null when auth is off"),
  path: z.string().describe("The one path the cookie opens"),
});

export function streamSessionRoutes(rt: RouteRuntime): RouteModule {
  const app = new Hono();

  app.post("/v1/agents/:agentId/events/session", async (c) => {
    const agentId = c.req.param("agentId");
    const path = `/v1/agents/${agentId}/events`;
    c.header("cache-control", "no-store");
    if (!rt.auth) return c.json({ expiresAt: null, path });
    const s = await mintStreamSession(c, agentId, rt.clock.now());
    if (s === null) throw new ProblemError("forbidden", "A stream session is minted with a bearer token");
    c.header("set-cookie", sessionCookie(s.value, agentId));
    return c.json({ expiresAt: s.expiresAt, path });
  });

  return {
    app,
    operations: [{
      method: "post",
      path: "/v1/agents/:agentId/events/session",
      operationId: "createStreamSession",
      summary: "A short-lived cookie that opens this agent's event stream for EventSource (no token in the URL)",
      description: "Sets `gh_stream` (HttpOnly, Secure, SameSite=Strict, Path=/v1/agents/:agentId/events, 5 minutes). " +
        "Send it with the bearer token (verb `read`); then `new EventSource(path)` authenticates with the cookie.",
      tags: ["agents"],
      responses: { 200: { description: "The session (and its Set-Cookie)", schema: { name: "StreamSession", schema: StreamSession } } },
      problems: ["invalid_agent_id"],
    }],
  };
}
