/**
 * Verdicts of verification attempts: one per (agent, turn, `agent_output`
 * call, guardian), under a deterministic id, so an attempt run again after a
 * crash finds the verdict of its first run instead of writing a second one.
 *
 * Invariants:
 * - The id of a review is `verdict_` + the first 12 hex digits of
 *   SHA-256(canonical JSON of [agentId, turnId, toolCallId, guardianCode,
 *   probe]), probe = 0 first. Every worker computes the same id.
 * - A stored verdict belongs to a review only if its identity matches
 *   (`taskId`, `guardianCode`, and `metadata.agentId` / `metadata.toolCallId`).
 *   48 bits of id can collide across a large deployment; a slot held by
 *   another review is skipped and the next probe is tried, the same way by
 *   every worker, so a collision never makes one review adopt another's
 *   verdict.
 * - `record` is write-once through the verdict log: when two workers race
 *   on one review, the store keeps the first verdict and the other gets it
 *   back (`exists`); the gate then goes by the stored verdict.
 */
import { VerdictError } from "../verdicts/errors.ts";
import type { Json } from "../common/json.ts";
import type { RecordResult, VerdictLog } from "../verdicts/log.ts";
import type { GuardianRegistry } from "../verdicts/registry.ts";
import { GuardianVerdictSnapshot, type VerdictFlag, type VerdictStatus } from "../verdicts/snapshot.ts";
import { sha256Hex } from "../common/hex.ts";
import { canonicalJson } from "./hash.ts";

/** Which review a verdict records. */
export interface ReviewKey {
  agentId: string;
  agentName: string;
  turnId: string;
  toolCallId: string;
  guardianCode: string;
}

/** The judgment part of a verdict; the recorder adds id, assignment, task, time and identity. */
export interface VerdictDraft {
  status: VerdictStatus;
  flags: VerdictFlag[];
  evidence: Record<string, Json>;
  recommendations: string[];
  metadata: Record<string, Json>;
}

export interface VerdictRecorder {
  /** The verdict already recorded for this review, or null. */
  recall(key: ReviewKey): Promise<GuardianVerdictSnapshot | null>;
  /** Records the review's verdict once; `exists` hands back the verdict stored first. */
  record(key: ReviewKey, draft: VerdictDraft): Promise<RecordResult>;
}

/** Id slots tried per review before giving up (a second collision is already ~2^-48 unlikely). */
export const MAX_PROBES = 4;

export async function verdictIdOf(key: ReviewKey, probe = 0): Promise<string> {
  const text = canonicalJson(["gatehouse.verdict", key.agentId, key.turnId, key.toolCallId, key.guardianCode, probe]);
  return `verdict_${(await sha256Hex(text)).slice(0, 12)}`;
}

export function belongsTo(v: GuardianVerdictSnapshot, key: ReviewKey): boolean {
  return v.taskId === key.turnId && v.guardianCode === key.guardianCode && v.metadata.agentId === key.agentId &&
    v.metadata.toolCallId === key.toolCallId;
}

export function verdictRecorder(deps: {
  log: VerdictLog;
  registry: GuardianRegistry;
  clock: { now(): number };
}): VerdictRecorder {
  const { log, registry, clock } = deps;
  return {
    async recall(key) {
      for (let probe = 0; probe < MAX_PROBES; probe++) {
        const v = await log.get(await verdictIdOf(key, probe));
        if (v === null) return null;
        if (belongsTo(v, key)) return v;
      }
      return null;
    },

    async record(key, draft) {
      const asg = registry.assignmentOf(key.agentName, key.guardianCode);
      if (!asg) {
        throw new VerdictError(
          "unknown_assignment",
          "assignmentId",
          `Guardian "${key.guardianCode}" is not assigned to agent "${key.agentName}"`,
        );
      }
      for (let probe = 0; probe < MAX_PROBES; probe++) {
        const verdict = GuardianVerdictSnapshot.create({
          verdictId: await verdictIdOf(key, probe),
          assignmentId: asg.assignmentId,
          taskId: key.turnId,
          guardianCode: key.guardianCode,
          status: draft.status,
          flags: draft.flags,
          evidence: draft.evidence,
          recommendations: draft.recommendations,
          metadata: { ...draft.metadata, agentId: key.agentId, toolCallId: key.toolCallId },
        }, { now: clock.now() });
        const r = await log.record(key.agentId, verdict);
        // `exists` for this review: another worker judged it first; its verdict stands.
        if (r.status === "written" || belongsTo(r.verdict, key)) return r;
      }
      throw new Error(`No free verdict id for guardian "${key.guardianCode}" after ${MAX_PROBES} probes`);
    },
  };
}
