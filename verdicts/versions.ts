/**
 * Schema versions of verdict records and the upgrades between them. Stored
 * records are never rewritten; they are upgraded each time they are read.
 *
 * | version | shape |
 * | v1.0.0  | snake_case fields (`verdict_id`, `assignment_id`, `task_id`, `guardian_code`, `status`, `flags`, `evidence`, `recommendations`, `created_at`), no version field |
 * | v1.1.0  | v1.0.0 + `schema_version` + optional `metadata` (default `{}`) |
 * | v2.0.0  | camelCase fields, `schemaVersion`, `metadata` required (current) |
 *
 * Contract: an upgrade never invents facts. It renames and adds fields with
 * their documented defaults; an unknown version, or a field the version does
 * not define, is refused with a `VerdictError` naming the field.
 */
import { VerdictError } from "./errors.ts";

type Raw = Record<string, unknown>;

const V1_FIELDS = [
  "verdict_id",
  "assignment_id",
  "task_id",
  "guardian_code",
  "status",
  "flags",
  "evidence",
  "recommendations",
  "created_at",
];

function onlyFields(raw: Raw, allowed: string[], version: string): void {
  for (const k of Object.keys(raw)) {
    if (!allowed.includes(k)) {
      throw new VerdictError("invalid_verdict", k, `Unknown field for a ${version} verdict record: ${k}`);
    }
  }
}

/** Upgrades keyed by the version they upgrade from; each returns the next version's record. */
const UPGRADES: Record<string, (raw: Raw) => Raw> = {
  "v1.0.0": (raw) => {
    onlyFields(raw, [...V1_FIELDS, "schema_version"], "v1.0.0");
    const { schema_version: _drop, ...rest } = raw;
    return { ...rest, schema_version: "v1.1.0", metadata: {} };
  },
  "v1.1.0": (raw) => {
    onlyFields(raw, [...V1_FIELDS, "schema_version", "metadata"], "v1.1.0");
    return {
      schemaVersion: "v2.0.0",
      verdictId: raw.verdict_id,
      assignmentId: raw.assignment_id,
      taskId: raw.task_id,
      guardianCode: raw.guardian_code,
      status: raw.status,
      flags: raw.flags,
      evidence: raw.evidence,
      recommendations: raw.recommendations,
      createdAt: raw.created_at,
      metadata: raw.metadata ?? {},
    };
  },
};

/** The version a raw record declares (records without a version field are v1.0.0). */
export function verdictRecordVersion(raw: Raw): string {
  if ("schemaVersion" in raw) return String(raw.schemaVersion);
  if ("schema_version" in raw) return String(raw.schema_version);
  return "v1.0.0";
}

/** Upgrades a raw record of any supported version to the current one (validation is the caller's). */
export function upgradeVerdictRecord(raw: Raw): Raw {
  let rec = raw;
  let version = verdictRecordVersion(rec);
  const seen = new Set<string>();
  while (UPGRADES[version]) {
    if (seen.has(version)) break;
    seen.add(version);
    rec = UPGRADES[version](rec);
    version = verdictRecordVersion(rec);
  }
  if (version !== "v2.0.0") {
    const field = "schemaVersion" in rec ? "schemaVersion" : "schema_version";
    throw new VerdictError("invalid_verdict", field, `Unsupported verdict schema version ${JSON.stringify(version)}`);
  }
  return rec;
}
