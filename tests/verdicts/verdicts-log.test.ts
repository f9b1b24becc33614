/**
 * The verdict log: one verdict per verification attempt with the documented
 * status mapping, write-once storage, business checks before a write, an
 * append-only list per agent, and old records upgraded on read.
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import {
  createGatehouse,
  defineAgent,
  defineTool,
  scriptedModel,
  VerdictError,
  VerificationRejected,
} from "../../mod.ts";
import type { Gatehouse, ModelResponse } from "../../mod.ts";
import { GuardianVerdictSnapshot, VERDICT_SCHEMA_VERSION } from "../../inspect.ts";
import type { NewVerdict } from "../../inspect.ts";
import { verdictIdOf } from "../../verification/recorder.ts";
import { enqueue, manualClock, seqIds } from "../fixtures/gate-kit.ts";
import { memoryStateReader } from "../helpers/store-state.ts";
import v1 from "../fixtures/verdict-v1.0.0.json" with { type: "json" };

const Summary = z.object({ summary: z.string() });
const propose = (summary: string): ModelResponse => ({ toolCalls: [{ name: "agent_output", args: { summary } }] });

function agent(verify: (c: { summary: string }) => unknown, verifyMaxAttempts = 3) {
  return defineAgent({
    name: "fixer",
    instructions: "",
    model: scriptedModel(({ step }) => propose(`v${step}`)),
    output: { schema: Summary, verify },
    verifyAttempts: verifyMaxAttempts,
  });
}
const reject = (retryable = true) => (c: { summary: string }) => {
  throw new VerificationRejected({ message: `${c.summary} fails`, code: "tests_failed", retryable, metadata: { failed: ["t1"] } });
};

async function runTurn(gh: Gatehouse, input = "go") {
  await enqueue(gh, "a1", { agent: "fixer", input });
  await gh.drain();
}

describe("one verdict per attempt", () => {
  it("pass -> PASS, with the verifier's result and the duration as evidence", async () => {
    const gh = createGatehouse({ agents: [agent((c) => ({ ok: c.summary }))], ids: seqIds(), clock: manualClock() });
    await runTurn(gh);
    const [v] = await gh.verdicts.list("a1");
    expect(v.toJSON()).toMatchObject({
      schemaVersion: VERDICT_SCHEMA_VERSION,
      assignmentId: "assignment:fixer:output_verifier:fixer",
      taskId: "turn_1",
      guardianCode: "output_verifier:fixer",
      status: "PASS",
      flags: [],
      evidence: { durationMs: 0, result: { ok: "v1" } },
      recommendations: [],
      metadata: { agentId: "a1", attempt: 1, maxAttempts: 3, outcome: "passed" },
    });
    expect(v.verdictId).toMatch(/^verdict_[0-9a-f]{12}$/);
    expect(v.createdAt).toBe(new Date(Date.UTC(2026, 0, 1)).toISOString());
  });

  it("retryable rejections -> NEEDS_CHANGES, the one that exhausts the budget -> FAIL", async () => {
    const gh = createGatehouse({ agents: [agent(reject())], ids: seqIds() });
    await runTurn(gh);
    const verdicts = await gh.verdicts.list("a1");
    expect(verdicts.map((v) => [v.status, v.metadata.attempt])).toEqual([["NEEDS_CHANGES", 1], ["NEEDS_CHANGES", 2], ["FAIL", 3]]);
    expect(verdicts[0].flags).toEqual([{ severity: "error", code: "tests_failed", message: "v1 fails" }]);
    expect(verdicts[0].evidence).toMatchObject({ metadata: { failed: ["t1"] } });
    expect(verdicts[0].recommendations).toHaveLength(1);
    expect(verdicts[2].flags.map((f) => f.code)).toEqual(["tests_failed", "verification_exhausted"]);
    expect(new Set(verdicts.map((v) => v.verdictId)).size).toBe(3);
  });

  it("a non-retryable rejection -> FAIL", async () => {
    const gh = createGatehouse({ agents: [agent(reject(false))], ids: seqIds() });
    await runTurn(gh);
    const verdicts = await gh.verdicts.list("a1");
    expect(verdicts.map((v) => v.status)).toEqual(["FAIL"]);
    expect(verdicts[0].flags[0]).toMatchObject({ severity: "critical", code: "tests_failed" });
  });

  it("the verdict id is deterministic per (agent, turn, agent_output call, guardian)", async () => {
    const gh = createGatehouse({ agents: [agent((c) => c)], ids: seqIds() });
    await runTurn(gh);
    const [v] = await gh.verdicts.list("a1");
    const key = { agentId: "a1", agentName: "fixer", turnId: "turn_1", toolCallId: String(v.metadata.toolCallId), guardianCode: "output_verifier:fixer" };
    expect(v.verdictId).toBe(await verdictIdOf(key));
    expect(await verdictIdOf({ ...key, agentId: "a2" })).not.toBe(v.verdictId);
    expect(await verdictIdOf({ ...key, toolCallId: "other" })).not.toBe(v.verdictId);
    expect(await verdictIdOf({ ...key, guardianCode: "no_secrets" })).not.toBe(v.verdictId);
  });
});

describe("write-once storage", () => {
  async function withTurn() {
    const gh = createGatehouse({ agents: [agent(reject())], ids: seqIds(), clock: manualClock() });
    await runTurn(gh);
    const [first] = await gh.verdicts.list("a1");
    return { gh, first };
  }

  it("a second write of a verdict id answers exists and leaves the stored record unchanged", async () => {
    const { gh, first } = await withTurn();
    const state = memoryStateReader(gh.store);
    const before = await state("a1");
    expect(Object.keys(before.verdicts)).toContain(first.verdictId);
    const other = JSON.stringify({ ...first.toJSON(), status: "PASS" });
    expect(await gh.store.putVerdict({ agentId: "a1", verdictId: first.verdictId, turnId: first.taskId, status: "PASS", json: other }))
      .toEqual({ status: "exists" });
    expect(await state("a1")).toEqual(before);
    expect((await gh.verdicts.get(first.verdictId))?.status).toBe("NEEDS_CHANGES");
    expect(await gh.verdicts.list("a1", { status: "PASS" })).toEqual([]);
  });

  it("the log refuses verdicts of unregistered guardians, foreign assignments and turns that are not active", async () => {
    const gh = createGatehouse({
      agents: [defineAgent({ name: "fixer", instructions: "", model: scriptedModel([{ text: "waiting" }]), output: { schema: Summary, verify: () => 1 }, mustEndWith: [] })],
      ids: seqIds(),
    });
    await enqueue(gh, "a1", { agent: "fixer", input: "go" });
    const make = (over: Partial<NewVerdict>) =>
      GuardianVerdictSnapshot.create({
        verdictId: "verdict_0123456789ab",
        assignmentId: "assignment:fixer:output_verifier:fixer",
        taskId: "turn_1",
        guardianCode: "output_verifier:fixer",
        status: "PASS",
        ...over,
      }, { now: 0 });
    const refused = async (over: Partial<NewVerdict>) => {
      try {
        await gh.verdicts.record("a1", make(over));
      } catch (err) {
        expect(err).toBeInstanceOf(VerdictError);
        return [(err as VerdictError).code, (err as VerdictError).field];
      }
      return null;
    };
    const state = memoryStateReader(gh.store);
    let before = await state("a1");
    expect(await refused({ guardianCode: "nobody" })).toEqual(["unknown_guardian", "guardianCode"]);
    expect(await refused({ assignmentId: "assignment:other:output_verifier:fixer" })).toEqual(["unknown_assignment", "assignmentId"]);
    // turn_1 is enqueued but not yet claimed: not active.
    expect(await refused({})).toEqual(["unknown_task", "taskId"]);
    expect(await state("a1")).toEqual(before);
    await gh.drain(); // claims and finishes turn_1
    before = await state("a1");
    expect(await refused({})).toEqual(["unknown_task", "taskId"]);
    expect(await state("a1")).toEqual(before);
    expect(await gh.verdicts.list("a1")).toEqual([]);
  });

  it("record() writes a valid verdict for the active turn once; the second time it hands back the stored one", async () => {
    const approval = defineTool({ name: "approval", description: "a human approves", parameters: z.object({}) });
    const gh = createGatehouse({
      agents: [defineAgent({
        name: "fixer", instructions: "", output: { schema: Summary }, tools: [approval],
        model: scriptedModel([{ toolCalls: [{ name: "approval", args: {} }] }]),
      })],
      ids: seqIds(),
    });
    await enqueue(gh, "a1", { agent: "fixer", input: "go" });
    await gh.drain(); // waits for the external approval: turn_1 stays active
    expect((await gh.store.getAgent("a1"))?.activeTurnId).toBe("turn_1");
    const v = GuardianVerdictSnapshot.create({
      verdictId: "verdict_0123456789ab", assignmentId: "assignment:fixer:output_verifier:fixer", taskId: "turn_1",
      guardianCode: "output_verifier:fixer", status: "PASS",
    }, { now: 0 });
    expect((await gh.verdicts.record("a1", v)).status).toBe("written");
    const again = GuardianVerdictSnapshot.create({ ...v.toJSON(), status: "FAIL" }, { now: 1 });
    const r = await gh.verdicts.record("a1", again);
    expect(r.status).toBe("exists");
    expect(r.verdict.status).toBe("PASS");
    expect((await gh.verdicts.list("a1")).map((x) => x.status)).toEqual(["PASS"]);
  });
});

describe("the per-agent log", () => {
  it("only grows: every earlier listing is a prefix of every later one, across turns", async () => {
    let attempt = 0;
    const gh = createGatehouse({
      agents: [agent(() => {
        if (++attempt % 2 === 1) throw new VerificationRejected({ message: "once more" });
        return "ok";
      })],
      ids: seqIds(),
    });
    const listings: string[][] = [];
    for (const input of ["one", "two", "three"]) {
      await runTurn(gh, input);
      listings.push((await gh.verdicts.list("a1")).map((v) => v.verdictId));
    }
    expect(listings.map((l) => l.length)).toEqual([2, 4, 6]);
    for (let i = 1; i < listings.length; i++) expect(listings[i].slice(0, listings[i - 1].length)).toEqual(listings[i - 1]);
    const byTurn = await gh.verdicts.list("a1", { turnId: "turn_2" });
    expect(byTurn.map((v) => v.status)).toEqual(["NEEDS_CHANGES", "PASS"]);
    expect((await gh.verdicts.list("a1", { status: "PASS" })).map((v) => v.taskId)).toEqual(["turn_1", "turn_2", "turn_3"]);
  });

  it("reads an old-version record stored in the log upgraded to the current version", async () => {
    const gh = createGatehouse({ agents: [agent((c) => c)], ids: seqIds() });
    await runTurn(gh);
    expect(await gh.store.putVerdict({ agentId: "a1", verdictId: v1.verdict_id, turnId: v1.task_id, status: v1.status, json: JSON.stringify(v1) }))
      .toEqual({ status: "written" });
    const listed = await gh.verdicts.list("a1");
    expect(listed.map((v) => v.schemaVersion)).toEqual([VERDICT_SCHEMA_VERSION, VERDICT_SCHEMA_VERSION]);
    const old = await gh.verdicts.get(v1.verdict_id);
    expect(old?.toJSON()).toMatchObject({ verdictId: v1.verdict_id, taskId: v1.task_id, guardianCode: v1.guardian_code, metadata: {} });
    expect(await gh.store.getVerdict(v1.verdict_id)).toBe(JSON.stringify(v1)); // stored bytes stay as written
  });

  it("refuses a bad status filter with the field named", async () => {
    const gh = createGatehouse({ agents: [agent((c) => c)], ids: seqIds() });
    await expect(gh.verdicts.list("a1", { status: "OK" as never })).rejects.toMatchObject({ code: "invalid_verdict", field: "status" });
  });
});
