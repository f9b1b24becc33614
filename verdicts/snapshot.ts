/**
 * GuardianVerdictSnapshot: the immutable record of one guardian's judgment of
 * one candidate. A verdict is a governance fact: once written it never
 * changes, and every later decision about the attempt it judged is based on
 * it (the verifier gate adopts a stored verdict instead of judging again).
 *
 * Contract:
 * - Instances are deeply frozen; assigning to any field, nested ones
 *   included, throws a TypeError. A new judgment is a new verdict.
 * - Every instance is valid: `create` and `fromJSON` run `validateVerdict`,
 *   which refuses a record with a `VerdictError` (`code: "invalid_verdict"`)
 *   naming the field: missing or unknown fields, wrong types, a status other
 *   than PASS / NEEDS_CHANGES / FAIL, a malformed id or time, values that
 *   are not JSON.
 * - `toJSON()` gives the current-version record; `fromJSON()` reads any
 *   supported version and upgrades it (verdicts/versions.ts), so
 *   `fromJSON(v.toJSON())` equals `v`.
 *
 * @example
 * const v = GuardianVerdictSnapshot.create({
 *   verdictId: "verdict_0123456789ab", assignmentId: "assignment:fixer:no_secrets",
 *   taskId: "turn_1", guardianCode: "no_secrets", status: "PASS",
 * }, { now: Date.now() });
 * JSON.stringify(v); // the v2.0.0 record
 */
import { VerdictError } from "./errors.ts";
import { deepFreeze } from "../common/freeze.ts";
import { isPlainObject, type Json, jsonCopy, JsonValueError } from "../common/json.ts";
import { upgradeVerdictRecord } from "./versions.ts";

export const VERDICT_STATUSES = ["PASS", "NEEDS_CHANGES", "FAIL"] as const;
export type VerdictStatus = typeof VERDICT_STATUSES[number];

/** The schema version written by this code; older ones are upgraded on read. */
export const VERDICT_SCHEMA_VERSION = "v2.0.0";

/** `verdict_` + 12 lowercase hex digits. */
export const VERDICT_ID = /^verdict_[0-9a-f]{12}$/;

/** ISO 8601 in UTC: `Z` or a `+00:00` offset. */
const UTC_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|\+00:00)$/;
const MAX_REF = 256;

/** A problem found by a guardian, e.g. `{ severity: "critical", code: "TEST_FAILURE", message: "…" }`. */
export type VerdictFlag = { [k: string]: Json };

/** The JSON form of a verdict (schema v2.0.0). */
export interface VerdictRecord {
  schemaVersion: string;
  verdictId: string;
  assignmentId: string;
  /** The turn whose candidate was judged. */
  taskId: string;
  guardianCode: string;
  status: VerdictStatus;
  flags: VerdictFlag[];
  evidence: { [k: string]: Json };
  recommendations: string[];
  /** ISO 8601, UTC. */
  createdAt: string;
  /** Bookkeeping of the writer (the gate stores the attempt identity here). */
  metadata: { [k: string]: Json };
}

/** What `create` needs; `flags`, `evidence`, `recommendations` and `metadata` default to empty. */
export interface NewVerdict {
  verdictId: string;
  assignmentId: string;
  taskId: string;
  guardianCode: string;
  status: VerdictStatus;
  flags?: unknown[];
  evidence?: Record<string, unknown>;
  recommendations?: string[];
  metadata?: Record<string, unknown>;
}

const FIELDS = [
  "schemaVersion",
  "verdictId",
  "assignmentId",
  "taskId",
  "guardianCode",
  "status",
  "flags",
  "evidence",
  "recommendations",
  "createdAt",
  "metadata",
] as const;

const invalid = (field: string, message: string) => new VerdictError("invalid_verdict", field, message);

function json(v: unknown, field: string): Json {
  try {
    return jsonCopy(v, field);
  } catch (err) {
    if (err instanceof JsonValueError) throw invalid(err.path, err.message);
    throw err;
  }
}

function ref(obj: Record<string, unknown>, field: string): string {
  const v = obj[field];
  if (typeof v !== "string" || v.length === 0 || v.length > MAX_REF) {
    throw invalid(field, `${field} must be a non-empty string of at most ${MAX_REF} characters, got ${show(v)}`);
  }
  return v;
}

const show = (v: unknown) => {
  try {
    return JSON.stringify(v)?.slice(0, 80) ?? String(v);
  } catch {
    return String(v);
  }
};

/**
 * Checks a current-version record and returns a JSON copy of it; throws
 * `VerdictError("invalid_verdict", field)` on the first violation.
 */
export function validateVerdict(raw: unknown): VerdictRecord {
  if (!isPlainObject(raw)) throw invalid("(record)", `A verdict must be a JSON object, got ${show(raw)}`);
  for (const f of FIELDS) {
    if (!(f in raw) || raw[f] === undefined) throw invalid(f, `Missing required field: ${f}`);
  }
  for (const k of Object.keys(raw)) {
    if (!(FIELDS as readonly string[]).includes(k)) throw invalid(k, `Unknown field: ${k}`);
  }
  if (raw.schemaVersion !== VERDICT_SCHEMA_VERSION) {
    throw invalid("schemaVersion", `schemaVersion must be ${VERDICT_SCHEMA_VERSION}, got ${show(raw.schemaVersion)}`);
  }
  const verdictId = ref(raw, "verdictId");
  if (!VERDICT_ID.test(verdictId)) {
    throw invalid("verdictId", `verdictId must be "verdict_" followed by 12 lowercase hex digits, got ${show(verdictId)}`);
  }
  const assignmentId = ref(raw, "assignmentId");
  const taskId = ref(raw, "taskId");
  const guardianCode = ref(raw, "guardianCode");
  if (!(VERDICT_STATUSES as readonly unknown[]).includes(raw.status)) {
    throw invalid("status", `Invalid status ${show(raw.status)}: expected PASS, NEEDS_CHANGES or FAIL`);
  }
  if (!Array.isArray(raw.flags)) throw invalid("flags", "flags must be a list");
  raw.flags.forEach((f, i) => {
    if (!isPlainObject(f)) throw invalid(`flags[${i}]`, `flags[${i}] must be an object`);
  });
  if (!isPlainObject(raw.evidence)) throw invalid("evidence", "evidence must be an object");
  if (!Array.isArray(raw.recommendations)) throw invalid("recommendations", "recommendations must be a list");
  raw.recommendations.forEach((r, i) => {
    if (typeof r !== "string") throw invalid(`recommendations[${i}]`, `recommendations[${i}] must be a string`);
  });
  const createdAt = raw.createdAt;
  if (typeof createdAt !== "string" || !UTC_TIME.test(createdAt) || Number.isNaN(Date.parse(createdAt))) {
    throw invalid("createdAt", `createdAt must be an ISO 8601 time in UTC (e.g. 2024-01-28T10:30:00Z), got ${show(createdAt)}`);
  }
  if (!isPlainObject(raw.metadata)) throw invalid("metadata", "metadata must be an object");
  return {
    schemaVersion: VERDICT_SCHEMA_VERSION,
    verdictId,
    assignmentId,
    taskId,
    guardianCode,
    status: raw.status as VerdictStatus,
    flags: json(raw.flags, "flags") as VerdictFlag[],
    evidence: json(raw.evidence, "evidence") as VerdictRecord["evidence"],
    recommendations: [...raw.recommendations] as string[],
    createdAt,
    metadata: json(raw.metadata, "metadata") as VerdictRecord["metadata"],
  };
}

export class GuardianVerdictSnapshot {
  readonly schemaVersion: string;
  readonly verdictId: string;
  readonly assignmentId: string;
  readonly taskId: string;
  readonly guardianCode: string;
  readonly status: VerdictStatus;
  readonly flags: readonly VerdictFlag[];
  readonly evidence: Readonly<Record<string, Json>>;
  readonly recommendations: readonly string[];
  readonly createdAt: string;
  readonly metadata: Readonly<Record<string, Json>>;

  private constructor(r: VerdictRecord) {
    this.schemaVersion = r.schemaVersion;
    this.verdictId = r.verdictId;
    this.assignmentId = r.assignmentId;
    this.taskId = r.taskId;
    this.guardianCode = r.guardianCode;
    this.status = r.status;
    this.flags = deepFreeze(r.flags);
    this.evidence = deepFreeze(r.evidence);
    this.recommendations = deepFreeze(r.recommendations);
    this.createdAt = r.createdAt;
    this.metadata = deepFreeze(r.metadata);
    Object.freeze(this);
  }

  /** A new verdict created at `now` (ms since the epoch, written as ISO 8601 UTC). */
  static create(input: NewVerdict, opts: { now: number }): GuardianVerdictSnapshot {
    if (!isPlainObject(input)) throw invalid("(record)", "GuardianVerdictSnapshot.create() needs an object");
    if (!Number.isFinite(opts?.now)) throw invalid("createdAt", "create() needs a finite `now`");
    return new GuardianVerdictSnapshot(validateVerdict({
      schemaVersion: VERDICT_SCHEMA_VERSION,
      verdictId: input.verdictId,
      assignmentId: input.assignmentId,
      taskId: input.taskId,
      guardianCode: input.guardianCode,
      status: input.status,
      flags: input.flags ?? [],
      evidence: input.evidence ?? {},
      recommendations: input.recommendations ?? [],
      createdAt: new Date(opts.now).toISOString(),
      metadata: input.metadata ?? {},
    }));
  }

  /** Reads a record (JSON text or object) of any supported schema version, upgrading it to the current one. */
  static fromJSON(raw: unknown): GuardianVerdictSnapshot {
    let obj = raw;
    if (typeof raw === "string") {
      try {
        obj = JSON.parse(raw);
      } catch {
        throw invalid("(record)", "A verdict record must be valid JSON text");
      }
    }
    if (!isPlainObject(obj)) throw invalid("(record)", `A verdict must be a JSON object, got ${show(obj)}`);
    return new GuardianVerdictSnapshot(validateVerdict(upgradeVerdictRecord(obj)));
  }

  /** The current-version record (a fresh, mutable copy). */
  toJSON(): VerdictRecord {
    return {
      schemaVersion: this.schemaVersion,
      verdictId: this.verdictId,
      assignmentId: this.assignmentId,
      taskId: this.taskId,
      guardianCode: this.guardianCode,
      status: this.status,
      flags: structuredClone(this.flags) as VerdictFlag[],
      evidence: structuredClone(this.evidence) as VerdictRecord["evidence"],
      recommendations: [...this.recommendations],
      createdAt: this.createdAt,
      metadata: structuredClone(this.metadata) as VerdictRecord["metadata"],
    };
  }
}
