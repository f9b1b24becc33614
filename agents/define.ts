/**
 * defineAgent(): what an agent is. A definition is immutable and validated
 * here, so a bad one fails at startup, not in the middle of a turn.
 */
import type { z } from "zod";
import { DefinitionError } from "../errors/errors.ts";
import { refuseUnknownKeys } from "../common/known-keys.ts";
import type { Model } from "../models/types.ts";
import { type AnyTool, describeSchema, zodObjectShape } from "../tools/define.ts";
import type { Guardian } from "../verdicts/guardian.ts";
import { checkOutputKeys, checkVerifierShape } from "../common/verifier-shape.ts";
import type { Verifier } from "../common/verifier.ts";
import { type AgentSpendLimit, checkSpendLimit } from "../common/spend-limit.ts";
import { readRenamed, RENAMED_AGENT_KEYS, RENAMED_OUTPUT_KEYS } from "../common/renamed.ts";
import { type AgentRetention, checkMemoryPolicy, checkRetention, type MemoryPolicy } from "./memory-policy.ts";

export interface AgentOutputConfig<S extends z.ZodType = z.ZodType> {
  /** Parameters of the model-facing `agent_output` tool. */
  schema: S;
  /** Gate: return the final result, or throw `VerificationRejected`. */
  verify?: Verifier<z.output<S>>;
  /** Output-level verifier attempts (below the agent's and the task's). */
  verifyAttempts?: number;
  /** @deprecated Renamed `verifyAttempts` (docs/api.md, "Deprecations"); giving both is a DefinitionError. */
  verifyMaxAttempts?: number;
}

export interface AgentConfig<S extends z.ZodType = z.ZodType> {
  name: string;
  instructions: string;
  model: Model;
  tools?: AnyTool[];
  /** Allowlist of tool names offered to the model (default: all of `tools`). */
  allowedTools?: string[];
  output?: AgentOutputConfig<S>;
  /** Attempts of the verifier gate (below a task's override, above `output.verifyAttempts`; default 5); needs `output`. */
  verifyAttempts?: number;
  /** @deprecated Renamed `verifyAttempts` (docs/api.md, "Deprecations"); giving both is a DefinitionError. */
  verifyMaxAttempts?: number;
  /** Guardians that review every candidate the output verifier accepted (defineGuardian()); needs `output`. */
  guardians?: Guardian[];
  /** Tool names one of which must end a turn. With `output` declared it defaults to `["agent_output"]`. */
  mustEndWith?: string[];
  /** Model steps allowed in one turn (default 32); past it the turn fails with `step_budget_exhausted`. */
  stepLimit?: number;
  /** @deprecated Renamed `stepLimit` (docs/api.md, "Deprecations"); giving both is a DefinitionError. */
  maxStepsPerTurn?: number;
  /** Worker target that runs this agent (default `"default"`). */
  workerTarget?: string;
  /** Verifier system errors tolerated per candidate before the turn fails with `verifier_error` (default 3). */
  maxVerifierErrors?: number;
  /** Model call attempts per step before the turn fails (default 3). */
  modelAttempts?: number;
  /**
   * Show the tool registry's `<known_tools>` block (roles, methods, overlap
   * hints) in the system message. Default: true when an offered tool
   * declares a `role`, `deliverable` or `resultRequired`, else false (the
   * prompt stays the instructions alone).
   */
  knownTools?: boolean;
  /**
   * Spend limits (common/spend-limit.ts): crossing one ends the turn `failed` with
   * reason `budget_exhausted`. A task's `spendLimit` only lowers them, field by field (the smaller
   * wins), unless its enqueuer had the `admin` verb or `tasksMayRaise: true` is set here; then
   * the task's fields replace these.
   */
  spendLimit?: AgentSpendLimit;
  /** @deprecated Renamed `spendLimit` (docs/api.md, "Deprecations"); giving both is a DefinitionError. */
  budget?: AgentSpendLimit;
  /** This agent's storage limits, laid over createGatehouse's `retention` (store/retention.ts). */
  retention?: AgentRetention;
  /** What of the conversation the model sees: the last `keepTurns` turns plus a rolling summary (actors/conversation/memory.ts). */
  memory?: MemoryPolicy;
}

export interface AgentDefinition<S extends z.ZodType = z.ZodType> extends Readonly<AgentConfig<S>> {
  readonly kind: "agent";
  readonly tools: AnyTool[];
  readonly guardians: Guardian[];
  /** Tools offered to the model, after `allowedTools`. */
  readonly offeredTools: AnyTool[];
  readonly workerTarget: string;
  /** Model steps allowed in one turn (the given `stepLimit`, or 32). */
  readonly stepLimit: number;
  /** The same as `stepLimit` (its old name, read by the runtime). */
  readonly maxStepsPerTurn: number;
  readonly effectiveMustEndWith: string[];
}

export type AnyAgent = AgentDefinition<any>;

export const DEFAULT_MAX_STEPS = 32;
export const DEFAULT_VERIFY_MAX_ATTEMPTS = 5;
export const MAX_VERIFY_ATTEMPTS_LIMIT = 100;
export const WORKER_TARGET = /^[a-z0-9_-]{1,64}$/;
const NAME = /^[a-zA-Z0-9_.-]{1,64}$/;

/**
 * The keys defineAgent takes (`satisfies` keeps the list and `AgentConfig`
 * in step). Any other key is refused (common/known-keys.ts) except those a
 * definition adds (`kind`, `offeredTools`, `effectiveMustEndWith`), so a
 * definition can be spread into a new one; those are recomputed.
 */
export const AGENT_KEYS: readonly string[] = Object.keys(
  {
    name: true,
    instructions: true,
    model: true,
    tools: true,
    allowedTools: true,
    output: true,
    verifyAttempts: true,
    verifyMaxAttempts: true,
    guardians: true,
    mustEndWith: true,
    stepLimit: true,
    maxStepsPerTurn: true,
    workerTarget: true,
    maxVerifierErrors: true,
    modelAttempts: true,
    knownTools: true,
    spendLimit: true,
    budget: true,
    retention: true,
    memory: true,
  } satisfies Record<keyof AgentConfig, true>,
);
const AGENT_DEFINITION_KEYS = ["kind", "offeredTools", "effectiveMustEndWith"] as const;

/** Checks an attempt budget; returns an error message or null. */
export function checkAttemptBudget(v: unknown): string | null {
  if (v === undefined) return null;
  if (typeof v !== "number" || !Number.isInteger(v) || v < 1 || v > MAX_VERIFY_ATTEMPTS_LIMIT) {
    return `must be an integer from 1 to ${MAX_VERIFY_ATTEMPTS_LIMIT}, got ${JSON.stringify(v)}`;
  }
  return null;
}

/**
 * @example
 * const support = defineAgent({
 *   name: "support", instructions: "Answer the customer.",
 *   model: scriptedModel([{ text: "Hello!" }]),
 *   tools: [lookup],
 * });
 */
export function defineAgent<S extends z.ZodType>(config: AgentConfig<S>): AgentDefinition<S> {
  if (!config || typeof config !== "object") throw new DefinitionError("defineAgent() needs a config object");
  const where = `Agent ${JSON.stringify(config.name)}`;
  if (typeof config.name !== "string" || !NAME.test(config.name)) {
    throw new DefinitionError(`${where}: name must match ${NAME}`, { key: "name" });
  }
  refuseUnknownKeys(config, AGENT_KEYS, where, "", AGENT_DEFINITION_KEYS);
  // The names given, for messages; then the renamed options under the names the runtime reads (common/renamed.ts).
  const spendName = (config as AgentConfig).spendLimit !== undefined ? "spendLimit" : "budget";
  const verifyName = config.verifyAttempts !== undefined ? "verifyAttempts" : "verifyMaxAttempts";
  const stepName = config.stepLimit !== undefined ? "stepLimit" : "maxStepsPerTurn";
  config = readRenamed(ownSpread(config), RENAMED_AGENT_KEYS, where, "old");
  const outputVerifyName = config.output?.verifyAttempts !== undefined ? "verifyAttempts" : "verifyMaxAttempts";
  if (config.output && typeof config.output === "object") {
    config = { ...config, output: readRenamed(config.output, RENAMED_OUTPUT_KEYS, where, "old", "output.") };
  }
  if (typeof config.instructions !== "string") {
    throw new DefinitionError(`${where}: instructions must be a string`, { key: "instructions" });
  }
  if (!config.model || typeof config.model.generate !== "function") {
    throw new DefinitionError(`${where}: model must be a Model (scriptedModel(), openaiCompatible(), …)`, { key: "model" });
  }
  const tools = [...(config.tools ?? [])];
  const names = new Set<string>();
  for (const t of tools) {
    if (!t || t.kind !== "tool") throw new DefinitionError(`${where}: tools must come from defineTool()`, { key: "tools" });
    if (names.has(t.name)) throw new DefinitionError(`${where}: two tools are named "${t.name}"`, { key: "tools" });
    // A handoff (agents/handoff.ts) to the agent itself would change nothing but the step count.
    if ((t as { handoffTo?: unknown }).handoffTo === config.name) {
      throw new DefinitionError(`${where}: tool "${t.name}" hands off to the agent itself; a handoff needs another definition`, { key: "tools" });
    }
    names.add(t.name);
  }
  if (config.allowedTools !== undefined) {
    for (const n of config.allowedTools) {
      if (!names.has(n)) {
        throw new DefinitionError(`${where}: allowedTools names unknown tool "${n}"`, { key: "allowedTools" });
      }
    }
  }
  const offeredTools = config.allowedTools ? tools.filter((t) => config.allowedTools!.includes(t.name)) : tools;
  if (config.output !== undefined) {
    if (!config.output || typeof config.output !== "object") {
      throw new DefinitionError(`${where}: output must be an object { schema, verify?, verifyAttempts? }`, { key: "output" });
    }
    checkOutputKeys(config.output as unknown as Record<string, unknown>, where);
    // The schema is the parameters of the model-facing agent_output tool: an object, as every tool's.
    if (!zodObjectShape(config.output.schema)) {
      throw new DefinitionError(
        `${where}: output.schema must be a zod object schema (z.object({ ... })), got ${describeSchema(config.output.schema)}`,
        { key: "output.schema" },
      );
    }
    if (config.output.verify !== undefined) checkVerifierShape(config.output.verify, `${where}: output.verify`);
    const e = checkAttemptBudget(config.output.verifyMaxAttempts);
    if (e) throw new DefinitionError(`${where}: output.${outputVerifyName} ${e}`, { key: `output.${outputVerifyName}` });
  }
  const e = checkAttemptBudget(config.verifyMaxAttempts);
  if (e) throw new DefinitionError(`${where}: ${verifyName} ${e}`, { key: verifyName });
  if (config.verifyMaxAttempts !== undefined && config.output === undefined) {
    throw new DefinitionError(`${where}: ${verifyName} needs output (there is no agent_output to verify)`, {
      key: verifyName,
    });
  }
  if (config.guardians !== undefined && !Array.isArray(config.guardians)) {
    throw new DefinitionError(`${where}: guardians must be a list of defineGuardian() results`, { key: "guardians" });
  }
  const guardians = [...(config.guardians ?? [])];
  const codes = new Set<string>();
  for (const g of guardians) {
    if (!g || g.kind !== "guardian") {
      throw new DefinitionError(`${where}: guardians must come from defineGuardian()`, { key: "guardians" });
    }
    if (codes.has(g.code)) throw new DefinitionError(`${where}: guardian "${g.code}" is listed twice`, { key: "guardians" });
    codes.add(g.code);
  }
  if (guardians.length > 0 && config.output === undefined) {
    throw new DefinitionError(`${where}: guardians need output (they review agent_output candidates)`, { key: "guardians" });
  }
  const maxStepsPerTurn = config.maxStepsPerTurn ?? DEFAULT_MAX_STEPS;
  if (!Number.isInteger(maxStepsPerTurn) || maxStepsPerTurn < 1 || maxStepsPerTurn > 10_000) {
    throw new DefinitionError(`${where}: ${stepName} must be an integer from 1 to 10000`, { key: stepName });
  }
  const workerTarget = config.workerTarget ?? "default";
  if (!WORKER_TARGET.test(workerTarget)) {
    throw new DefinitionError(
      `${where}: workerTarget ${JSON.stringify(workerTarget)} must be one token of [a-z0-9_-] (no ".", "*", ">" or spaces)`,
      { key: "workerTarget" },
    );
  }
  const budgetError = checkSpendLimit(config.budget, "agent");
  if (budgetError) {
    throw new DefinitionError(`${where}: ${spendName} ${budgetError.message}`, {
      key: budgetError.key ? `${spendName}.${budgetError.key}` : spendName,
    });
  }
  const completion = config.output ? "agent_output" : "submit_result";
  const mustEndWith = config.mustEndWith ?? (config.output ? ["agent_output"] : []);
  for (const n of mustEndWith) {
    if (n !== completion && !names.has(n)) {
      throw new DefinitionError(`${where}: mustEndWith names unknown tool "${n}"`, { key: "mustEndWith" });
    }
  }
  for (const [k, v] of [["maxVerifierErrors", config.maxVerifierErrors], ["modelAttempts", config.modelAttempts]] as const) {
    if (v !== undefined && (!Number.isInteger(v) || v < 1 || v > 100)) {
      throw new DefinitionError(`${where}: ${k} must be an integer from 1 to 100`, { key: k });
    }
  }
  if (config.knownTools !== undefined && typeof config.knownTools !== "boolean") {
    throw new DefinitionError(`${where}: knownTools must be true or false`, { key: "knownTools" });
  }
  const retentionError = checkRetention(config.retention);
  if (retentionError) throw new DefinitionError(`${where}: ${retentionError.message}`, { key: retentionError.key });
  const memoryError = checkMemoryPolicy(config.memory);
  if (memoryError) throw new DefinitionError(`${where}: ${memoryError.message}`, { key: memoryError.key });
  return Object.freeze({
    ...config,
    kind: "agent" as const,
    tools,
    guardians,
    offeredTools,
    workerTarget,
    maxStepsPerTurn,
    stepLimit: maxStepsPerTurn,
    ...(config.budget !== undefined ? { spendLimit: config.budget } : {}),
    ...(config.verifyMaxAttempts !== undefined ? { verifyAttempts: config.verifyMaxAttempts } : {}),
    effectiveMustEndWith: mustEndWith,
  });
}

/**
 * A definition spread into a new config carries each renamed option under
 * both names (defineAgent sets both): the pair that still agrees is taken
 * under the old name alone; a pair changed on one side is left for
 * `readRenamed` to refuse.
 */
function ownSpread<S extends z.ZodType>(config: AgentConfig<S>): AgentConfig<S> {
  if ((config as { kind?: unknown }).kind !== "agent") return config;
  const c = config as unknown as Record<string, unknown>;
  let out: Record<string, unknown> | null = null;
  for (const [name, old] of Object.entries(RENAMED_AGENT_KEYS)) {
    if (c[name] !== undefined && c[old] !== undefined && c[name] === c[old]) {
      out ??= { ...c };
      delete out[name];
    }
  }
  return (out ?? config) as AgentConfig<S>;
}

/**
 * Verifier attempts, by precedence: task override > agent `verifyAttempts` >
 * `output.verifyAttempts` > 5 (read under their old names, common/renamed.ts). The task route refuses an invalid override
 * (checkAttemptBudget); one written into the store by other means is
 * ignored here, so a turn always starts with a valid budget.
 */
export function resolveVerifyMaxAttempts(agent: AnyAgent, taskOverride?: unknown): number {
  const override = taskOverride !== undefined && checkAttemptBudget(taskOverride) === null ? taskOverride as number : undefined;
  return override ?? agent.verifyMaxAttempts ?? agent.output?.verifyMaxAttempts ?? DEFAULT_VERIFY_MAX_ATTEMPTS;
}
