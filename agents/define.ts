/**
 * defineAgent(): what an agent is. A definition is immutable and validated
 * here, so a bad one fails at startup, not in the middle of a turn.
 */
import type { z } from "zod";
import { DefinitionError } from "../errors/errors.ts";
import type { ConcurrencyKeyOf } from "./concurrency-key.ts";
import { refuseUnknownKeys } from "../common/known-keys.ts";
import type { Model } from "../models/types.ts";
import { type AnyTool, describeSchema, zodObjectShape } from "../tools/define.ts";
import type { Guardian } from "../verdicts/guardian.ts";
import { checkOutputKeys, checkVerifierShape } from "../common/verifier-shape.ts";
import type { Verifier } from "../common/verifier.ts";
import { type AgentSpendLimit, checkSpendLimit } from "../common/spend-limit.ts";
import { refuseRenamed, RENAMED_AGENT_KEYS, RENAMED_OUTPUT_KEYS } from "../common/renamed.ts";
import { checkVersionKeys, defaultVersion, isDigestVersion } from "./version.ts";
import { type AgentRetention, checkMemoryPolicy, checkRetention, type MemoryPolicy } from "./memory-policy.ts";

export interface AgentOutputConfig<S extends z.ZodType = z.ZodType> {
  /** Parameters of the model-facing `agent_output` tool. */
  schema: S;
  /** Gate: return the final result, or throw `VerificationRejected`. */
  verify?: Verifier<z.output<S>>;
  /** Output-level verifier attempts (below the agent's and the task's). */
  verifyAttempts?: number;
}

export interface AgentConfig<S extends z.ZodType = z.ZodType> {
  name: string;
  /**
   * This definition's version (agents/version.ts): a turn runs under the version it started with.
   * Default: a digest of the instructions, tool names and schemas, output schema and model name.
   */
  version?: string;
  /** Versions whose turns this version takes over, each recorded as a `turn_upgraded` event (docs/operations.md, "Upgrades"). */
  upgradeFrom?: readonly string[];
  instructions: string;
  model: Model;
  tools?: AnyTool[];
  /** Allowlist of tool names offered to the model (default: all of `tools`). */
  allowedTools?: string[];
  output?: AgentOutputConfig<S>;
  /** Attempts of the verifier gate (below a task's override, above `output.verifyAttempts`; default 5); needs `output`. */
  verifyAttempts?: number;
  /** Guardians that review every candidate the output verifier accepted (defineGuardian()); needs `output`. */
  guardians?: Guardian[];
  /** Tool names one of which must end a turn. With `output` declared it defaults to `["agent_output"]`. */
  mustEndWith?: string[];
  /** Model steps allowed in one turn (default 32); past it the turn fails with `step_budget_exhausted`. */
  stepLimit?: number;
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
  /** This agent's storage limits, laid over createGatehouse's `retention` (store/retention.ts). */
  retention?: AgentRetention;
  /** What of the conversation the model sees: the last `keepTurns` turns plus a rolling summary (actors/conversation/memory.ts). */
  memory?: MemoryPolicy;
  /**
   * The concurrency key of a task whose request gives none (agents/concurrency-key.ts): called with
   * `{ agentId, agentName, input, by?, via, parentKey? }`; a string is the key (1-256 characters, no
   * control characters; another string fails the enqueue), null or undefined means none.
   */
  concurrencyKey?: ConcurrencyKeyOf;
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
  readonly effectiveMustEndWith: string[];
  /** The given `version`, or the digest default (agents/version.ts). */
  readonly version: string;
  readonly upgradeFrom: readonly string[];
}

export type AnyAgent = AgentDefinition<any>;

export const DEFAULT_STEP_LIMIT = 32;
export const DEFAULT_VERIFY_ATTEMPTS = 5;
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
    version: true,
    upgradeFrom: true,
    instructions: true,
    model: true,
    tools: true,
    allowedTools: true,
    output: true,
    verifyAttempts: true,
    guardians: true,
    mustEndWith: true,
    stepLimit: true,
    workerTarget: true,
    maxVerifierErrors: true,
    modelAttempts: true,
    knownTools: true,
    spendLimit: true,
    retention: true,
    memory: true,
    concurrencyKey: true,
  } satisfies Record<keyof AgentConfig, true>,
);
const AGENT_DEFINITION_KEYS = ["kind", "offeredTools", "effectiveMustEndWith"] as const;

/** Checks a number of verifier attempts; returns an error message or null. */
export function checkVerifyAttempts(v: unknown): string | null {
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
  // An old name of a renamed option is refused naming the new one (common/renamed.ts), before the unknown keys.
  refuseRenamed(config, RENAMED_AGENT_KEYS, where);
  if (config.output && typeof config.output === "object") refuseRenamed(config.output, RENAMED_OUTPUT_KEYS, where, "output.");
  refuseUnknownKeys(config, AGENT_KEYS, where, "", AGENT_DEFINITION_KEYS);
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
    const e = checkVerifyAttempts(config.output.verifyAttempts);
    if (e) throw new DefinitionError(`${where}: output.verifyAttempts ${e}`, { key: "output.verifyAttempts" });
  }
  const e = checkVerifyAttempts(config.verifyAttempts);
  if (e) throw new DefinitionError(`${where}: verifyAttempts ${e}`, { key: "verifyAttempts" });
  if (config.verifyAttempts !== undefined && config.output === undefined) {
    throw new DefinitionError(`${where}: verifyAttempts needs output (there is no agent_output to verify)`, {
      key: "verifyAttempts",
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
  const stepLimit = config.stepLimit ?? DEFAULT_STEP_LIMIT;
  if (!Number.isInteger(stepLimit) || stepLimit < 1 || stepLimit > 10_000) {
    throw new DefinitionError(`${where}: stepLimit must be an integer from 1 to 10000`, { key: "stepLimit" });
  }
  const workerTarget = config.workerTarget ?? "default";
  if (!WORKER_TARGET.test(workerTarget)) {
    throw new DefinitionError(
      `${where}: workerTarget ${JSON.stringify(workerTarget)} must be one token of [a-z0-9_-] (no ".", "*", ">" or spaces)`,
      { key: "workerTarget" },
    );
  }
  const spendLimitError = checkSpendLimit(config.spendLimit, "agent");
  if (spendLimitError) {
    throw new DefinitionError(`${where}: spendLimit ${spendLimitError.message}`, {
      key: spendLimitError.key ? `spendLimit.${spendLimitError.key}` : "spendLimit",
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
  if (config.concurrencyKey !== undefined && typeof config.concurrencyKey !== "function") {
    throw new DefinitionError(`${where}: concurrencyKey must be a function (task) => string | null`, { key: "concurrencyKey" });
  }
  const memoryError = checkMemoryPolicy(config.memory);
  if (memoryError) throw new DefinitionError(`${where}: ${memoryError.message}`, { key: memoryError.key });
  checkVersionKeys(where, config.version, config.upgradeFrom);
  // A spread definition's digest default is computed again from what it now holds (agents/version.ts).
  const spread = (config as { kind?: unknown }).kind === "agent" && isDigestVersion(config.version);
  const given = spread ? undefined : config.version;
  const version = given ?? defaultVersion({ instructions: config.instructions, model: config.model, offeredTools, output: config.output });
  return Object.freeze({
    ...config,
    version,
    upgradeFrom: Object.freeze([...(config.upgradeFrom ?? [])]),
    kind: "agent" as const,
    tools,
    guardians,
    offeredTools,
    workerTarget,
    stepLimit,
    effectiveMustEndWith: mustEndWith,
  });
}

/**
 * Verifier attempts, by precedence: task override > agent `verifyAttempts` >
 * `output.verifyAttempts` > 5. The task route refuses an invalid override
 * (checkVerifyAttempts); one written into the store by other means is
 * ignored here, so a turn always starts with a valid number of attempts.
 */
export function resolveVerifyAttempts(agent: AnyAgent, taskOverride?: unknown): number {
  const override = taskOverride !== undefined && checkVerifyAttempts(taskOverride) === null ? taskOverride as number : undefined;
  return override ?? agent.verifyAttempts ?? agent.output?.verifyAttempts ?? DEFAULT_VERIFY_ATTEMPTS;
}
