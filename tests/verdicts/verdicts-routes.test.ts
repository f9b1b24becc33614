/**
 * The verdict routes: list an agent's verdicts (filters by turn and status),
 * read one by id, problem+json errors (400 bad status or malformed id, 404
 * unknown agent or verdict), old records answered upgraded.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { createGatehouse, defineAgent, scriptedModel, VerificationRejected } from "../../mod.ts";
import { VERDICT_SCHEMA_VERSION } from "../../inspect.ts";
import type { Gatehouse } from "../../mod.ts";
import { enqueue, get, seqIds } from "../fixtures/gate-kit.ts";
import { memoryStateReader, statesOf } from "../helpers/store-state.ts";
import v1 from "../fixtures/verdict-v1.0.0.json" with { type: "json" };

let gh: Gatehouse;

beforeAll(async () => {
  let n = 0;
  const fixer = defineAgent({
    name: "fixer",
    instructions: "",
    model: scriptedModel(({ step }) => ({ toolCalls: [{ name: "agent_output", args: { summary: `v${step}` } }] })),
    output: {
      schema: z.object({ summary: z.string() }),
      verify: (c) => {
        if (++n % 2 === 1) throw new VerificationRejected({ message: "not yet", code: "not_yet" });
        return c.summary;
      },
    },
  });
  gh = createGatehouse({ agents: [fixer], ids: seqIds() });
  for (const input of ["one", "two"]) {
    await enqueue(gh, "a1", { agent: "fixer", input });
    await gh.drain();
  }
});

describe("GET /v1/agents/:agentId/verdicts", () => {
  it("lists the agent's verdicts in write order, as current-version records", async () => {
    const r = await get(gh, "/v1/agents/a1/verdicts");
    expect(r.status).toBe(200);
    expect(r.json.verdicts.map((v: any) => [v.taskId, v.status])).toEqual([
      ["turn_1", "NEEDS_CHANGES"],
      ["turn_1", "PASS"],
      ["turn_2", "NEEDS_CHANGES"],
      ["turn_2", "PASS"],
    ]);
    for (const v of r.json.verdicts) expect(v.schemaVersion).toBe(VERDICT_SCHEMA_VERSION);
  });

  it("filters by turnId and by status, together or alone", async () => {
    const byTurn = await get(gh, "/v1/agents/a1/verdicts?turnId=turn_2");
    expect(byTurn.json.verdicts.map((v: any) => v.status)).toEqual(["NEEDS_CHANGES", "PASS"]);
    const byStatus = await get(gh, "/v1/agents/a1/verdicts?status=PASS");
    expect(byStatus.json.verdicts.map((v: any) => v.taskId)).toEqual(["turn_1", "turn_2"]);
    const both = await get(gh, "/v1/agents/a1/verdicts?turnId=turn_1&status=NEEDS_CHANGES");
    expect(both.json.verdicts).toHaveLength(1);
    expect((await get(gh, "/v1/agents/a1/verdicts?turnId=turn_9")).json.verdicts).toEqual([]);
  });

  it("answers 400 validation_failed for a status that is not PASS, NEEDS_CHANGES or FAIL, changing nothing", async () => {
    const before = await statesOf(memoryStateReader(gh.store), ["a1"]);
    for (const q of ["status=pass", "status=OK", "status=PASS&status=FAIL", "colour=red"]) {
      const r = await get(gh, `/v1/agents/a1/verdicts?${q}`);
      expect(r.status).toBe(400);
      expect(r.type).toBe("application/problem+json");
      expect(r.json.code).toBe("validation_failed");
    }
    expect(await statesOf(memoryStateReader(gh.store), ["a1"])).toEqual(before);
  });

  it("answers 404 agent_not_found for an unknown agent and 400 for an invalid agent id", async () => {
    const r = await get(gh, "/v1/agents/nobody/verdicts");
    expect([r.status, r.json.code]).toEqual([404, "agent_not_found"]);
    const bad = await get(gh, "/v1/agents/a%7B1%7D/verdicts");
    expect([bad.status, bad.json.code]).toEqual([400, "invalid_agent_id"]);
  });
});

describe("GET /v1/verdicts/:verdictId", () => {
  it("answers one verdict by id", async () => {
    const [first] = (await get(gh, "/v1/agents/a1/verdicts")).json.verdicts;
    const r = await get(gh, `/v1/verdicts/${first.verdictId}`);
    expect(r.status).toBe(200);
    expect(r.json).toEqual(first);
  });

  it("answers 404 verdict_not_found for an unknown id and 400 invalid_verdict_id for a malformed one", async () => {
    const missing = await get(gh, "/v1/verdicts/verdict_000000000000");
    expect([missing.status, missing.type, missing.json.code]).toEqual([404, "application/problem+json", "verdict_not_found"]);
    for (const id of ["verdict_abc123", "verdict_0123456789AB", "v_0123456789ab", "verdict_0123456789abc"]) {
      const r = await get(gh, `/v1/verdicts/${id}`);
      expect([r.status, r.json.code]).toEqual([400, "invalid_verdict_id"]);
    }
  });

  it("answers an old-version record upgraded to the current version", async () => {
    await gh.store.putVerdict({ agentId: "a1", verdictId: v1.verdict_id, turnId: v1.task_id, status: v1.status, json: JSON.stringify(v1) });
    const r = await get(gh, `/v1/verdicts/${v1.verdict_id}`);
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({
      schemaVersion: VERDICT_SCHEMA_VERSION,
      verdictId: v1.verdict_id,
      assignmentId: v1.assignment_id,
      taskId: v1.task_id,
      guardianCode: v1.guardian_code,
      createdAt: v1.created_at,
      metadata: {},
    });
    const listed = await get(gh, `/v1/agents/a1/verdicts?turnId=${v1.task_id}`);
    expect(listed.json.verdicts.map((v: any) => v.schemaVersion)).toEqual([VERDICT_SCHEMA_VERSION]);
  });
});

describe("the agent snapshot route", () => {
  it("shows the verification state of the turn", async () => {
    const r = await get(gh, "/v1/agents/a1");
    expect(r.json.verification).toMatchObject({ attemptsUsed: 2, lastOutcome: "passed", lastCandidateHash: expect.stringMatching(/^[0-9a-f]{64}$/) });
    expect(r.json.verification.lastAttemptAt).toMatch(/Z$/);
  });
});
