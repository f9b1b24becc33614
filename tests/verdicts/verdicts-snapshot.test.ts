/**
 * GuardianVerdictSnapshot as a value: deeply frozen, valid by construction
 * (refusals name the field), round-trips through JSON, and reads records of
 * older schema versions upgraded to the current one.
 */
import { describe, expect, it } from "vitest";
import { VerdictError } from "../../mod.ts";
import { GuardianVerdictSnapshot, VERDICT_SCHEMA_VERSION } from "../../inspect.ts";
import type { NewVerdict, VerdictRecord } from "../../inspect.ts";
import v1 from "../fixtures/verdict-v1.0.0.json" with { type: "json" };

const NOW = Date.UTC(2026, 0, 2, 3, 4, 5, 6);
const input = (over: Partial<NewVerdict> = {}): NewVerdict => ({
  verdictId: "verdict_00000000abcd",
  assignmentId: "assignment:fixer:no_secrets",
  taskId: "turn_1",
  guardianCode: "no_secrets",
  status: "NEEDS_CHANGES",
  flags: [{ severity: "critical", code: "SECRET", message: "API key in summary", location: { line: 3 } }],
  evidence: { scanned: { files: 2, hits: ["summary"] } },
  recommendations: ["Remove the key"],
  ...over,
});
const record = (over: Record<string, unknown> = {}): Record<string, unknown> => ({
  ...GuardianVerdictSnapshot.create(input(), { now: NOW }).toJSON(),
  ...over,
});

function refusal(f: () => unknown): VerdictError {
  try {
    f();
  } catch (err) {
    expect(err).toBeInstanceOf(VerdictError);
    return err as VerdictError;
  }
  throw new Error("expected a VerdictError");
}

describe("creating a verdict", () => {
  it("fills the current schema version, ISO 8601 UTC time and empty defaults", () => {
    const v = GuardianVerdictSnapshot.create(
      { verdictId: "verdict_0123456789ab", assignmentId: "asg", taskId: "t", guardianCode: "g", status: "PASS" },
      { now: NOW },
    );
    expect(v.toJSON()).toEqual({
      schemaVersion: VERDICT_SCHEMA_VERSION,
      verdictId: "verdict_0123456789ab",
      assignmentId: "asg",
      taskId: "t",
      guardianCode: "g",
      status: "PASS",
      flags: [],
      evidence: {},
      recommendations: [],
      createdAt: "2026-01-02T03:04:05.006Z",
      metadata: {},
    });
  });

  it("is deeply frozen: no field, nested ones included, can be changed", () => {
    const v = GuardianVerdictSnapshot.create(input(), { now: NOW });
    const attempts: Array<() => void> = [
      () => ((v as { status: string }).status = "PASS"),
      () => ((v as { verdictId: string }).verdictId = "verdict_ffffffffffff"),
      () => (v.flags as unknown[]).push({}),
      () => ((v.flags[0] as Record<string, unknown>).severity = "info"),
      () => (((v.flags[0] as { location: { line: number } }).location).line = 4),
      () => ((v.evidence.scanned as { hits: string[] }).hits.push("x")),
      () => ((v.recommendations as string[])[0] = "ignore it"),
      () => ((v.metadata as Record<string, unknown>).x = 1),
      () => ((v as unknown as Record<string, unknown>).extra = 1),
    ];
    for (const f of attempts) expect(f).toThrow(TypeError);
    expect(v.toJSON()).toEqual(record());
  });

  it("does not share state with its input", () => {
    const flags = [{ code: "A" }];
    const v = GuardianVerdictSnapshot.create(input({ flags }), { now: NOW });
    flags[0].code = "B";
    expect(v.flags[0].code).toBe("A");
  });

  it("toJSON gives a mutable copy; fromJSON(toJSON()) is equal; JSON.stringify writes the record", () => {
    const v = GuardianVerdictSnapshot.create(input(), { now: NOW });
    const json = v.toJSON();
    json.flags.push({ code: "mine" });
    expect(v.flags).toHaveLength(1);
    expect(GuardianVerdictSnapshot.fromJSON(v.toJSON())).toEqual(v);
    expect(GuardianVerdictSnapshot.fromJSON(JSON.stringify(v)).toJSON()).toEqual(v.toJSON());
    expect(JSON.parse(JSON.stringify(v))).toEqual(v.toJSON());
  });
});

describe("validation names the field", () => {
  const cases: Array<[string, Record<string, unknown>, string, RegExp]> = [
    ["a missing field", { verdictId: undefined }, "verdictId", /Missing required field: verdictId/],
    ["a missing status", { status: undefined }, "status", /Missing required field: status/],
    ["an unknown status", { status: "OK" }, "status", /Invalid status "OK": expected PASS, NEEDS_CHANGES or FAIL/],
    ["a lowercase status", { status: "pass" }, "status", /Invalid status/],
    ["a malformed id", { verdictId: "verdict_abc123" }, "verdictId", /12 lowercase hex digits/],
    ["an empty task id", { taskId: "" }, "taskId", /taskId must be a non-empty string/],
    ["a numeric guardian code", { guardianCode: 7 }, "guardianCode", /guardianCode must be a non-empty string/],
    ["flags that are not a list", { flags: {} }, "flags", /flags must be a list/],
    ["a flag that is not an object", { flags: ["bad"] }, "flags[0]", /flags\[0\] must be an object/],
    ["evidence that is not an object", { evidence: [] }, "evidence", /evidence must be an object/],
    ["recommendations that are not a list", { recommendations: "do it" }, "recommendations", /recommendations must be a list/],
    ["a recommendation that is not a string", { recommendations: [1] }, "recommendations[0]", /must be a string/],
    ["a local time", { createdAt: "2024-01-28T10:30:00+02:00" }, "createdAt", /ISO 8601 time in UTC/],
    ["an impossible date", { createdAt: "2024-13-45T10:30:00Z" }, "createdAt", /ISO 8601/],
    ["evidence without a JSON form", { evidence: { ratio: Number.NaN } }, "evidence.ratio", /evidence.ratio is not JSON/],
    ["metadata that is not an object", { metadata: null }, "metadata", /metadata must be an object/],
    ["an unknown field", { verdict_id: "verdict_0123456789ab" }, "verdict_id", /Unknown field: verdict_id/],
    ["another schema version", { schemaVersion: "v9.0.0" }, "schemaVersion", /Unsupported verdict schema version "v9.0.0"/],
  ];
  for (const [what, over, field, message] of cases) {
    it(`refuses ${what}`, () => {
      const e = refusal(() => GuardianVerdictSnapshot.fromJSON(record(over)));
      expect(e.code).toBe("invalid_verdict");
      expect(e.field).toBe(field);
      expect(e.message).toMatch(message);
    });
  }

  it("create() refuses the same way", () => {
    const e = refusal(() => GuardianVerdictSnapshot.create(input({ status: "MAYBE" as never }), { now: NOW }));
    expect([e.code, e.field]).toEqual(["invalid_verdict", "status"]);
    expect(refusal(() => GuardianVerdictSnapshot.create(input({ flags: [() => 1] }), { now: NOW })).field).toBe("flags[0]");
  });

  it("refuses text that is not JSON", () => {
    expect(refusal(() => GuardianVerdictSnapshot.fromJSON("{nope")).message).toMatch(/valid JSON/);
  });
});

describe("schema versions", () => {
  it("upgrades the v1.0.0 fixture (snake_case, no version) to the current version on read", () => {
    const v = GuardianVerdictSnapshot.fromJSON(structuredClone(v1));
    const r: VerdictRecord = v.toJSON();
    expect(r).toEqual({
      schemaVersion: VERDICT_SCHEMA_VERSION,
      verdictId: v1.verdict_id,
      assignmentId: v1.assignment_id,
      taskId: v1.task_id,
      guardianCode: v1.guardian_code,
      status: "NEEDS_CHANGES",
      flags: v1.flags,
      evidence: v1.evidence,
      recommendations: v1.recommendations,
      createdAt: "2024-01-28T10:30:00+00:00",
      metadata: {},
    });
    expect(Object.isFrozen(v.evidence.test_results)).toBe(true);
  });

  it("upgrades v1.1.0 (schema_version and metadata) too", () => {
    const v = GuardianVerdictSnapshot.fromJSON({ ...v1, schema_version: "v1.1.0", metadata: { source: "ci" } });
    expect(v.schemaVersion).toBe(VERDICT_SCHEMA_VERSION);
    expect(v.metadata).toEqual({ source: "ci" });
  });

  it("validates the upgraded record: an old record with a bad status is refused naming the field", () => {
    const e = refusal(() => GuardianVerdictSnapshot.fromJSON({ ...v1, status: "WARN" }));
    expect([e.field, e.message]).toEqual(["status", 'Invalid status "WARN": expected PASS, NEEDS_CHANGES or FAIL']);
  });

  it("refuses fields an old version does not define, and unknown versions", () => {
    expect(refusal(() => GuardianVerdictSnapshot.fromJSON({ ...v1, score: 3 })).field).toBe("score");
    expect(refusal(() => GuardianVerdictSnapshot.fromJSON({ ...v1, metadata: {} })).message).toMatch(/v1.0.0 verdict record: metadata/);
    expect(refusal(() => GuardianVerdictSnapshot.fromJSON({ ...v1, schema_version: "v0.9.0" })).field).toBe("schema_version");
  });

  it("does not change the record it reads", () => {
    const raw = structuredClone(v1);
    GuardianVerdictSnapshot.fromJSON(raw);
    expect(raw).toEqual(v1);
  });
});
