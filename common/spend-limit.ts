/**
 * Spend limits: how many tokens and how much model cost a turn, and an
 * agent over its life, may use. Not to be confused with a drive budget
 * (actors/claim/drive-budget.ts), the per-invocation step and wall-time
 * budget of a worker on Workers.
 *
 * A limit is declared on an agent (`defineAgent({ spendLimit })`, the
 * operator's limit) and per task (the `spendLimit` of the enqueue route and
 * API, stored on the task as the option `budget`, the name stored tasks have
 * always had: store/types.ts).
 *
 * Invariant: a task's spend limit only lowers the agent's. Per field, the turn
 * runs under the smaller of the agent's and the task's value; a field only
 * one of them sets is that one's. A task may raise a field (its value
 * replaces the agent's) only when it carries `budgetMayRaise: true`, which
 * the tasks route records when the enqueuing request has the `admin` verb
 * (routes/agents.ts), or when the agent's definition opts in with
 * `spendLimit: { tasksMayRaise: true }`. Crossing a limit (using strictly more
 * than it allows) ends the turn `failed` with reason `budget_exhausted`
 * (actors/spend/spend-limit.ts).
 *
 * - `maxTokensPerTurn`: input + output tokens of the turn's model steps and
 *   of the children it delegated to;
 * - `maxCostPerTurn`: their cost, in the unit the model reports;
 * - `maxCostTotal`: the agent's cost over all its turns (children included).
 */
import { closestKey, firstUnknownKey } from "./known-keys.ts";

export interface SpendLimit {
  maxTokensPerTurn?: number;
  maxCostPerTurn?: number;
  maxCostTotal?: number;
}

/** An agent's spend limit (`defineAgent({ spendLimit })`): the limits, and whether tasks may raise them. */
export interface AgentSpendLimit extends SpendLimit {
  /**
   * Let any task's `spendLimit` raise these limits (default false: a task's
   * spend limit only lowers them, unless its enqueuer had `admin`).
   */
  tasksMayRaise?: boolean;
}

/**
 * Code of the built-in guardian that judges spend limits (registered by
 * verdicts/registry.ts). Its value stays `"budget"`: stored verdicts carry it.
 */
export const SPEND_LIMIT_GUARDIAN = "budget";

export const SPEND_LIMIT_KEYS = ["maxTokensPerTurn", "maxCostPerTurn", "maxCostTotal"] as const;
export type SpendLimitKey = typeof SPEND_LIMIT_KEYS[number];

/** What a spend limit is checked against. */
export interface SpendUsed {
  turnTokens: number;
  turnCost: number;
  totalCost: number;
}

/** The first limit `used` crosses, or null. */
export interface SpendCrossing {
  limit: SpendLimitKey;
  max: number;
  used: number;
}

/** What is wrong with a spend limit: the message and the field at fault (none: the whole value). */
export interface SpendLimitProblem {
  message: string;
  key?: SpendLimitKey | string;
}

/**
 * Checks a spend limit's shape; returns the problem (naming the field) or
 * null. `of: "agent"` also takes `tasksMayRaise` (a boolean). An unknown
 * field is refused with the field probably meant (common/known-keys.ts).
 */
export function checkSpendLimit(v: unknown, of: "task" | "agent" = "task"): SpendLimitProblem | null {
  if (v === undefined) return null;
  const keys: readonly string[] = of === "agent" ? [...SPEND_LIMIT_KEYS, "tasksMayRaise"] : SPEND_LIMIT_KEYS;
  if (!v || typeof v !== "object" || Array.isArray(v)) return { message: `must be an object { ${keys.map((k) => `${k}?`).join(", ")} }` };
  const unknown = firstUnknownKey(v, keys);
  if (unknown !== null) {
    const near = closestKey(unknown, keys);
    return {
      message: `has unknown field "${unknown}"${near ? ` (did you mean "${near}"?)` : ""} (it takes ${keys.join(", ")})`,
      key: unknown,
    };
  }
  for (const k of Object.keys(v)) {
    const n = (v as Record<string, unknown>)[k];
    if (k === "tasksMayRaise") {
      if (n !== undefined && typeof n !== "boolean") return { message: `tasksMayRaise must be true or false, got ${JSON.stringify(n)}`, key: k };
      continue;
    }
    if (n === undefined) continue;
    if (typeof n !== "number" || !Number.isFinite(n) || n < 0 || (k === "maxTokensPerTurn" && !Number.isSafeInteger(n))) {
      return { message: `${k} must be a ${k === "maxTokensPerTurn" ? "non-negative integer" : "finite number >= 0"}, got ${JSON.stringify(n)}`, key: k };
    }
  }
  return null;
}

/**
 * The limit a turn runs under (see the header): per field the smaller of the
 * agent's and the task's, or the task's over the agent's when the task may
 * raise (`taskMayRaise`: the task's `budgetMayRaise`) or the agent lets
 * tasks raise (`tasksMayRaise`); null when neither sets one.
 */
export function resolveSpendLimit(
  agentLimit: AgentSpendLimit | undefined,
  taskLimit: unknown,
  taskMayRaise = false,
): SpendLimit | null {
  // A task limit written into the store by other means than the route is used only when valid.
  const task = taskLimit !== undefined && checkSpendLimit(taskLimit) === null ? taskLimit as SpendLimit : undefined;
  const raise = taskMayRaise || agentLimit?.tasksMayRaise === true;
  const out: SpendLimit = {};
  for (const k of SPEND_LIMIT_KEYS) {
    const a = agentLimit?.[k];
    const t = task?.[k];
    const v = t === undefined ? a : a === undefined || raise ? t : Math.min(a, t);
    if (v !== undefined) out[k] = v;
  }
  return Object.keys(out).length > 0 ? out : null;
}

/** The first limit crossed (strictly more used than allowed), in the order of SPEND_LIMIT_KEYS, or null. */
export function spendCrossed(limit: SpendLimit | null, used: SpendUsed): SpendCrossing | null {
  if (!limit) return null;
  const pairs: Array<[SpendLimitKey, number]> = [
    ["maxTokensPerTurn", used.turnTokens],
    ["maxCostPerTurn", used.turnCost],
    ["maxCostTotal", used.totalCost],
  ];
  for (const [k, u] of pairs) {
    const max = limit[k];
    if (max !== undefined && u > max) return { limit: k, max, used: u };
  }
  return null;
}
