/**
 * Verdict routes: the immutable records of the verifier gate and guardians.
 *
 * - `GET /v1/agents/:agentId/verdicts` lists an agent's verdicts in write
 *   order (the log only grows), optionally filtered by `turnId` and
 *   `status` (PASS, NEEDS_CHANGES, FAIL; anything else is 400
 *   `validation_failed`). An unknown agent is 404 `agent_not_found`.
 * - `GET /v1/verdicts/:verdictId` answers one verdict; an id that is not
 *   `verdict_` + 12 lowercase hex digits is 400 `invalid_verdict_id`, an
 *   unknown one 404 `verdict_not_found`.
 *
 * Records are read through `GuardianVerdictSnapshot.fromJSON`, so records of
 * an older schema version are answered upgraded to the current one.
 */
import { z } from "@hono/zod-openapi";
import { GuardianVerdictSnapshot, VERDICT_ID, VERDICT_STATUSES } from "../verdicts/snapshot.ts";
import { defineRoute, json, routeApp } from "./define.ts";
import { ProblemError } from "./problem.ts";
import type { RouteRuntime } from "./runtime.ts";
import { AgentParams } from "./schemas.ts";

const Json = z.record(z.string(), z.unknown());

export const Verdict = z.object({
  schemaVersion: z.string().describe("Schema version of the record (older records are upgraded on read)"),
  verdictId: z.string().regex(VERDICT_ID).describe("`verdict_` + 12 hex digits"),
  assignmentId: z.string().describe("The assignment of the guardian to the agent"),
  taskId: z.string().describe("The turn whose candidate was judged"),
  guardianCode: z.string().describe("`output_verifier:<agent>` or a registered guardian"),
  status: z.enum(VERDICT_STATUSES),
  flags: z.array(Json).describe("Problems found"),
  evidence: Json.describe("Evidence: duration, accepted result, rejection metadata, guardian data"),
  recommendations: z.array(z.string()),
  createdAt: z.string().describe("ISO 8601, UTC"),
  metadata: Json.describe("The attempt: agentId, toolCallId, candidateHash, attempt, maxAttempts, outcome"),
}).openapi("Verdict");

export const VerdictList = z.object({ verdicts: z.array(Verdict) }).openapi("VerdictList");

const VerdictQuery = z.strictObject({
  turnId: z.string().min(1).max(256).optional().describe("Only verdicts of this turn"),
  status: z.enum(VERDICT_STATUSES).optional().describe("Only verdicts with this status"),
});

const asJson = (v: GuardianVerdictSnapshot) => v.toJSON();

/** The id is checked by the handler (400 `invalid_verdict_id`), so the schema only documents its form. */
const VerdictParams = z.object({
  verdictId: z.string().openapi({ pattern: VERDICT_ID.source, description: "`verdict_` + 12 hex digits" }),
});

const listVerdicts = defineRoute({
  method: "get",
  path: "/v1/agents/{agentId}/verdicts",
  operationId: "listVerdicts",
  summary: "List an agent's verdicts (write order; optionally by turn and status)",
  tags: ["verdicts"],
  request: { params: AgentParams, query: VerdictQuery },
  responses: { 200: json("The verdicts", VerdictList) },
}, ["invalid_agent_id", "validation_failed", "agent_not_found"], "read");

const getVerdict = defineRoute({
  method: "get",
  path: "/v1/verdicts/{verdictId}",
  operationId: "getVerdict",
  summary: "Read one verdict",
  tags: ["verdicts"],
  request: { params: VerdictParams },
  responses: { 200: json("The verdict", Verdict) },
}, ["invalid_verdict_id", "verdict_not_found"], { verb: "read", global: true });

export function verdictRoutes(rt: RouteRuntime) {
  return routeApp(rt)
    .openapi(listVerdicts, async (c) => {
      const { agentId } = c.req.valid("param");
      const q = c.req.valid("query");
      const head = await rt.store.getAgent(agentId);
      if (!head) throw new ProblemError("agent_not_found", `Agent "${agentId}" does not exist`);
      const rows = await rt.store.listVerdicts(agentId, {
        ...(q.turnId !== undefined ? { turnId: q.turnId } : {}),
        ...(q.status !== undefined ? { status: q.status } : {}),
      });
      return c.json({ verdicts: rows.map((json) => asJson(GuardianVerdictSnapshot.fromJSON(json))) }, 200);
    })
    .openapi(getVerdict, async (c) => {
      const { verdictId } = c.req.valid("param");
      if (!VERDICT_ID.test(verdictId)) {
        throw new ProblemError(
          "invalid_verdict_id",
          `Verdict id ${JSON.stringify(verdictId.slice(0, 200))} must be "verdict_" followed by 12 lowercase hex digits`,
        );
      }
      const json = await rt.store.getVerdict(verdictId);
      if (json === null) throw new ProblemError("verdict_not_found", `Verdict "${verdictId}" does not exist`);
      return c.json(asJson(GuardianVerdictSnapshot.fromJSON(json)), 200);
    });
}
