/**
 * Every route under `/v1/agents/:agentId` validates the id before anything
 * else (mounted once in app.ts, so routes added later are covered too). Ids
 * with `{`, `}`, `/`, whitespace or control characters are refused with 400
 * `invalid_agent_id`: they would break the store's per-agent hash tag. So are
 * `.` and `..`: URL normalization turns `/v1/agents/../x` into another path,
 * so such an agent could never be addressed again.
 */
import type { MiddlewareHandler } from "hono";
import { ProblemError } from "./problem.ts";
import { AGENT_ID } from "./schemas.ts";

/** Hono path patterns the guard is mounted on (`/*` also matches the bare path). */
export const AGENT_ID_PATHS = ["/v1/agents/:agentId/*"];

export const agentIdGuard: MiddlewareHandler = async (c, next) => {
  const id = c.req.param("agentId");
  if (id !== undefined && !AGENT_ID.test(id)) {
    throw new ProblemError("invalid_agent_id", `Agent id ${JSON.stringify(id.slice(0, 200))} must match ${AGENT_ID}`);
  }
  await next();
};
