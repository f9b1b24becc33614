/**
 * The verdict log: write-once verdict records on the store port, one
 * append-only list per agent, read back upgraded to the current schema.
 *
 * Invariants:
 * - A verdict id is written at most once. A second write of the id answers
 *   `exists` with the stored record and changes nothing (store invariant `write-once-verdicts`);
 *   nothing is ever overwritten or deleted, so an agent's list only grows.
 * - Before writing, the business rules of a verdict are checked, each
 *   refused with a `VerdictError` naming the field: the guardian is
 *   registered (`unknown_guardian`), the assignment exists and joins this
 *   guardian to this agent (`unknown_assignment`), and the task is the
 *   agent's active turn (`unknown_task`): verdicts judge candidates of a
 *   running turn. An agent is joined to the guardians of its own definition
 *   and, while a handoff holds its turn, of the definition the turn was
 *   handed to (the stored snapshot's `definition`, agents/handoff.ts).
 * - Reads never trust the bytes: every record goes through
 *   `GuardianVerdictSnapshot.fromJSON` (upgrade + validation).
 */
import type { Store, VerdictFilter } from "../store/port.ts";
import { VerdictError } from "./errors.ts";
import type { GuardianRegistry } from "./registry.ts";
import { GuardianVerdictSnapshot, VERDICT_STATUSES, type VerdictStatus } from "./snapshot.ts";

export type RecordResult =
  | { status: "written"; verdict: GuardianVerdictSnapshot }
  | { status: "exists"; verdict: GuardianVerdictSnapshot };

export interface VerdictQuery {
  turnId?: string;
  status?: VerdictStatus;
}

export interface VerdictLog {
  /** Checks and writes a verdict of `agentId`; `exists` hands back the stored record. */
  record(agentId: string, verdict: GuardianVerdictSnapshot): Promise<RecordResult>;
  /** One verdict by id, upgraded; null when unknown. */
  get(verdictId: string): Promise<GuardianVerdictSnapshot | null>;
  /** An agent's verdicts in write order, upgraded, optionally filtered. */
  list(agentId: string, query?: VerdictQuery): Promise<GuardianVerdictSnapshot[]>;
}

/** The definitions whose assignments may judge the agent now: its binding, and the target of a handoff its stored turn runs under. */
function judgedAs(head: { agentName: string; snapshot: unknown }): string[] {
  const definition = (head.snapshot as { context?: { definition?: unknown } } | null | undefined)?.context?.definition;
  return typeof definition === "string" ? [head.agentName, definition] : [head.agentName];
}

export function createVerdictLog(deps: { store: Store; registry: GuardianRegistry }): VerdictLog {
  const { store, registry } = deps;
  const get = async (verdictId: string) => {
    const json = await store.getVerdict(verdictId);
    return json === null ? null : GuardianVerdictSnapshot.fromJSON(json);
  };
  return {
    async record(agentId, verdict) {
      if (!(verdict instanceof GuardianVerdictSnapshot)) {
        throw new VerdictError("invalid_verdict", "(record)", "record() takes a GuardianVerdictSnapshot (use GuardianVerdictSnapshot.create)");
      }
      if (!registry.get(verdict.guardianCode)) {
        throw new VerdictError("unknown_guardian", "guardianCode", `Guardian "${verdict.guardianCode}" is not registered`);
      }
      const head = await store.getAgent(agentId);
      const asg = registry.assignment(verdict.assignmentId);
      if (!asg || asg.guardianCode !== verdict.guardianCode || (head !== null && !judgedAs(head).includes(asg.agent))) {
        throw new VerdictError(
          "unknown_assignment",
          "assignmentId",
          `Assignment "${verdict.assignmentId}" does not assign guardian "${verdict.guardianCode}" to agent "${agentId}"`,
        );
      }
      if (head === null || head.activeTurnId !== verdict.taskId) {
        throw new VerdictError("unknown_task", "taskId", `Turn "${verdict.taskId}" is not the active turn of agent "${agentId}"`);
      }
      // The check above and the write below are two store calls: a cancel
      // committed in between ends the turn first, and the verdict then lands
      // for a turn that just ended. It still judges a candidate of that turn
      // truthfully; nothing reads it as the turn's outcome.
      const r = await store.putVerdict({
        agentId,
        verdictId: verdict.verdictId,
        turnId: verdict.taskId,
        status: verdict.status,
        json: JSON.stringify(verdict),
      });
      if (r.status === "written") return { status: "written", verdict };
      const stored = await get(verdict.verdictId);
      if (!stored) throw new Error(`Verdict "${verdict.verdictId}" exists but cannot be read back`);
      return { status: "exists", verdict: stored };
    },

    get,

    async list(agentId, query = {}) {
      if (query.status !== undefined && !(VERDICT_STATUSES as readonly string[]).includes(query.status)) {
        throw new VerdictError("invalid_verdict", "status", `Invalid status ${JSON.stringify(query.status)}: expected PASS, NEEDS_CHANGES or FAIL`);
      }
      const filter: VerdictFilter = {};
      if (query.turnId !== undefined) filter.turnId = query.turnId;
      if (query.status !== undefined) filter.status = query.status;
      const rows = await store.listVerdicts(agentId, filter);
      return rows.map((json) => GuardianVerdictSnapshot.fromJSON(json));
    },
  };
}
