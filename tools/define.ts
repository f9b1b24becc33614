/**
 * defineTool(): a tool the model may call. A tool with `execute` runs in the
 * worker (in-process); one without is *external*: its calls are announced as
 * `tool_call` events and its results arrive over HTTP.
 *
 * Checked here, each refusal a `DefinitionError` whose `key` names the field:
 * `parameters` is a zod object schema (the model's arguments are an object:
 * a JSON Schema `{ type: "object" }`, and `defaults`/`fixed` are keyed by
 * its properties); every key of `defaults` and `fixed` is one of its
 * properties, and the value is one that property's schema accepts (so a
 * default or fixed value can never make every call invalid); a key is
 * either defaulted or fixed, not both (a fixed value always wins, so the
 * default would be dead). `role` matches the name pattern; `deliverable`
 * is a contract contracts/deliverable.ts accepts. `inputSchema`, when given,
 * is a JSON Schema object (`{ type: "object", ... }`): the model is shown it
 * instead of the one derived from `parameters`, which still validates every
 * call (tools from another system, such as an MCP server's, keep their own
 * schema word for word; tools/mcp/).
 */
import { z } from "zod";
import { isPlainObject } from "../common/json.ts";
import { DefinitionError } from "../errors/errors.ts";
import { refuseUnknownKeys } from "../common/known-keys.ts";
import type { AfterExecution } from "../common/outcome.ts";
import { checkDeliverableDefinition, type Deliverable } from "../contracts/deliverable.ts";
import type { EventWait } from "../common/event-name.ts";

export interface ToolExecuteContext {
  agentId: string;
  turnId: string;
  toolCallId: string;
  /** Aborted when the worker loses the agent (fenced) or shuts down. */
  signal: AbortSignal;
}

/** Returned by `execute` to end the turn with this value (`afterExecution: "terminate"`). */
export interface ToolTermination {
  readonly __gatehouseTerminate: true;
  value: unknown;
}

/** Ends the turn with `value` right after this tool returns. */
export function terminate(value: unknown): ToolTermination {
  return { __gatehouseTerminate: true, value };
}

export interface ToolConfig<S extends z.ZodType = z.ZodType> {
  name: string;
  description: string;
  parameters: S;
  /**
   * The parameters as the model sees them, as a JSON Schema object, when they
   * come from elsewhere (an MCP server's `inputSchema`). `parameters` still
   * validates the arguments before `execute`; the two must agree.
   */
  inputSchema?: Record<string, unknown>;
  /** Runs the tool in-process. Throw `ToolError` for a typed error outcome. */
  execute?: (args: z.output<S>, ctx: ToolExecuteContext) => unknown | Promise<unknown>;
  /** Arguments filled in when the model omits them. */
  defaults?: Record<string, unknown>;
  /** Arguments forced on every call and hidden from the model's schema. */
  fixed?: Record<string, unknown>;
  /** Resume deadline for one call, in ms (default 60 s in-process, 10 min external). */
  timeoutMs?: number;
  /**
   * What the tool is for, in the tool registry (default: its name). Tools of
   * one role are its methods; see docs/contracts.md.
   */
  role?: string;
  /**
   * The contract of a successful result: `{ type: "object", required: [...] }`,
   * `{ type: "array", items?: { required: [...] } }` or a zod schema. A value
   * that does not satisfy it reaches the model as the error outcome
   * `contract_violation` (contracts/check.ts), for in-process and external
   * results alike.
   */
  deliverable?: Deliverable;
  /** An empty successful result (null, "", [], {}) becomes the error outcome `invalid_input`. */
  resultRequired?: boolean;
  /**
   * Refuse empty required parameters (null, undefined, "", [], {}) with
   * `invalid_input` before `execute` (contracts/preconditions.ts). Default:
   * true when `deliverable` or `resultRequired` is declared, else false.
   */
  preconditions?: boolean;
  /**
   * Declares that running this in-process tool again for the same call is
   * harmless: it only reads, or it deduplicates its side effect on
   * `ctx.toolCallId` (stable across retries, so it works as an idempotency
   * key). Its result is then not committed on its own: it is stored with the
   * commit of the next model step, saving a round trip per step. The price:
   * a crash between the tool's return and that commit runs the tool again
   * (with the same `toolCallId`) before the model step is repeated. Without
   * the flag (the default), a result is committed before anything else
   * happens, so a tool runs again only if the worker dies while it runs.
   * Only for tools with `execute`; see docs/architecture.md, "Commits and
   * crash points".
   */
  retrySafe?: boolean;
  /**
   * A person decides whether each call runs: `true` for every call, or a
   * predicate of the call's arguments (after defaults and fixed values) that
   * answers whether this call needs it (a predicate that throws asks). The
   * call is logged as `approval_requested`, listed in the agent view with
   * `approval: "pending"`, and waits (state `waiting-tools`) for
   * `POST /v1/agents/:agentId/approvals`: approved (optionally with edited
   * arguments, `args`, which it then runs with), it runs (in-process) or
   * takes its result (external); rejected or not decided in time, the model
   * sees the tool error `approval_rejected` (with the reason) or
   * `approval_timeout`. See docs/architecture.md, "Approvals".
   */
  needsApproval?: boolean | ((args: Record<string, unknown>, ctx: ApprovalContext) => boolean | Promise<boolean>);
  /**
   * How long a call waits for the decision (ms); default
   * DEFAULT_APPROVAL_TIMEOUT_MS (7 days). No claim or lease is held while it
   * waits. Approved, the call then has its full `timeoutMs` from the
   * approval on: the tool's own timeout starts when a person approves.
   */
  approvalTimeoutMs?: number;
  /**
   * Makes the tool wait for a named event instead of running: called with the
   * call's arguments (after defaults and fixed values), it answers the event's
   * name and, optionally, how long to wait. The call is external (no
   * `execute`); `POST /v1/events` `{ name, data }` resolves every call waiting
   * on that name when it arrives, with `data` as the result (checked against
   * `deliverable` like any result); no event before the deadline ends the call
   * with the tool error `event_timeout`. A `waitFor` that throws or answers an
   * invalid name fails the call with `invalid_arguments` (nothing waits). See
   * docs/http.md, "Named events".
   */
  waitFor?: (args: Record<string, unknown>, ctx: ApprovalContext) => EventWait;
}

/**
 * How long a call that needs approval waits for a person's decision when its
 * tool sets no `approvalTimeoutMs`: 7 days, so a request made before a
 * weekend is still there after it. Nothing is held while it waits (no
 * claim, no lease): only the call's record and its deadline in the due index.
 */
export const DEFAULT_APPROVAL_TIMEOUT_MS = 7 * 24 * 60 * 60 * 1000;

/** What a `needsApproval` predicate learns about the call. */
export interface ApprovalContext {
  agentId: string;
  turnId: string;
  toolCallId: string;
}

export interface ToolDefinition<S extends z.ZodType = z.ZodType> extends ToolConfig<S> {
  readonly kind: "tool";
  readonly external: boolean;
}

export type AnyTool = ToolDefinition<any>;
export type { AfterExecution, Deliverable };

const NAME = /^[a-zA-Z0-9_-]{1,64}$/;

type Shape = Record<string, z.ZodType>;

/** The property schemas of a zod object schema (`z.object`, `z.strictObject`, `z.looseObject`, zod/mini too), or null. */
export function zodObjectShape(schema: unknown): Shape | null {
  const def = (schema as { _zod?: { def?: { type?: unknown; shape?: unknown } } } | null)?._zod?.def;
  return def?.type === "object" && def.shape && typeof def.shape === "object" ? def.shape as Shape : null;
}

/** What a value that should be a zod object schema is, for error messages. */
export function describeSchema(schema: unknown): string {
  const type = (schema as { _zod?: { def?: { type?: unknown } } } | null)?._zod?.def?.type;
  if (typeof type === "string") {
    return type === "pipe" ? "a zod pipe (.transform() or .pipe() around the object)" : `a zod ${type} schema`;
  }
  return schema === null || typeof schema !== "object" ? JSON.stringify(schema) ?? String(schema) : "not a zod schema";
}

function checkArgumentValues(name: string, shape: Shape, config: ToolConfig<z.ZodType>) {
  for (const which of ["defaults", "fixed"] as const) {
    const values = config[which];
    if (values === undefined) continue;
    if (!isPlainObject(values)) {
      throw new DefinitionError(`Tool "${name}": ${which} must be an object of argument values`, { key: which });
    }
    for (const [k, v] of Object.entries(values)) {
      const key = `${which}.${k}`;
      if (!Object.hasOwn(shape, k)) {
        const known = Object.keys(shape);
        throw new DefinitionError(
          `Tool "${name}": ${key} is not a parameter (${known.length > 0 ? `parameters: ${known.join(", ")}` : "it takes none"})`,
          { key },
        );
      }
      const parsed = z.safeParse(shape[k], v);
      if (!parsed.success) {
        throw new DefinitionError(
          `Tool "${name}": ${key} = ${JSON.stringify(v)} is refused by the parameter's schema: ${z.prettifyError(parsed.error)}`,
          { key },
        );
      }
      if (which === "defaults" && config.fixed && Object.hasOwn(config.fixed, k)) {
        throw new DefinitionError(`Tool "${name}": ${key} is also fixed; a fixed argument always wins, drop the default`, {
          key,
        });
      }
    }
  }
}
/**
 * The keys defineTool takes (`satisfies` keeps the list and `ToolConfig` in
 * step); any other key is refused (common/known-keys.ts) except the two a
 * definition adds (`kind`, `external`), so a definition can be spread into a
 * new one; those two are recomputed.
 */
export const TOOL_KEYS: readonly string[] = Object.keys(
  {
    name: true,
    description: true,
    parameters: true,
    execute: true,
    defaults: true,
    fixed: true,
    timeoutMs: true,
    role: true,
    deliverable: true,
    resultRequired: true,
    preconditions: true,
    inputSchema: true,
    retrySafe: true,
    needsApproval: true,
    approvalTimeoutMs: true,
    waitFor: true,
  } satisfies Record<keyof ToolConfig, true>,
);
const TOOL_DEFINITION_KEYS = ["kind", "external"] as const;

/** A `waitFor` tool is a function and has no `execute` (the event is its result). */
function checkWaitFor(config: ToolConfig<z.ZodType>): void {
  if (typeof config.waitFor !== "function") {
    throw new DefinitionError(`Tool "${config.name}": waitFor must be a function of the call's arguments`, { key: "waitFor" });
  }
  if (config.execute !== undefined) {
    throw new DefinitionError(`Tool "${config.name}": a tool with waitFor takes its result from the event; drop execute`, { key: "waitFor" });
  }
}

export type { EventWait };

export const RESERVED_TOOL_NAMES = new Set(["agent_output", "submit_result"]);

/**
 * @example
 * const lookup = defineTool({
 *   name: "lookup", description: "Find a customer",
 *   parameters: z.object({ email: z.string() }),
 *   execute: async ({ email }) => ({ email, plan: "pro" }),
 * });
 * // A contracted tool: its result must be an object with a `body` (`Body`, `BODY` satisfy it too).
 * const fetchUrl = defineTool({
 *   name: "fetch_url", role: "web_fetcher", description: "Fetch a page",
 *   parameters: z.object({ url: z.string() }),
 *   deliverable: { type: "object", required: ["body"] },
 *   execute: async ({ url }) => ({ status: 200, body: await (await fetch(url)).text() }),
 * });
 */
export function defineTool<S extends z.ZodType>(config: ToolConfig<S>): ToolDefinition<S> {
  if (!config || typeof config !== "object") throw new DefinitionError("defineTool() needs a config object");
  if (typeof config.name !== "string" || !NAME.test(config.name)) {
    throw new DefinitionError(`Tool name ${JSON.stringify(config.name)} must match ${NAME}`, { key: "name" });
  }
  refuseUnknownKeys(config, TOOL_KEYS, `Tool "${config.name}"`, "", TOOL_DEFINITION_KEYS);
  if (RESERVED_TOOL_NAMES.has(config.name)) {
    throw new DefinitionError(`Tool name "${config.name}" is reserved for the built-in completion tool`, {
      key: "name",
    });
  }
  if (typeof config.description !== "string" || config.description.trim() === "") {
    throw new DefinitionError(`Tool "${config.name}" needs a description`, { key: "description" });
  }
  const shape = zodObjectShape(config.parameters);
  if (!shape) {
    throw new DefinitionError(
      `Tool "${config.name}": parameters must be a zod object schema (z.object({ ... })), got ${describeSchema(config.parameters)}`,
      { key: "parameters" },
    );
  }
  checkArgumentValues(config.name, shape, config);
  if (config.inputSchema !== undefined && (!isPlainObject(config.inputSchema) || config.inputSchema.type !== "object")) {
    throw new DefinitionError(
      `Tool "${config.name}": inputSchema must be a JSON Schema object ({ type: "object", ... }), got ${JSON.stringify(config.inputSchema) ?? String(config.inputSchema)}`,
      { key: "inputSchema" },
    );
  }
  if (config.execute !== undefined && typeof config.execute !== "function") {
    throw new DefinitionError(`Tool "${config.name}": execute must be a function`, { key: "execute" });
  }
  if (config.timeoutMs !== undefined && (!Number.isInteger(config.timeoutMs) || config.timeoutMs <= 0)) {
    throw new DefinitionError(`Tool "${config.name}": timeoutMs must be a positive integer`, { key: "timeoutMs" });
  }
  if (config.role !== undefined && (typeof config.role !== "string" || !NAME.test(config.role))) {
    throw new DefinitionError(`Tool "${config.name}": role ${JSON.stringify(config.role)} must match ${NAME}`, { key: "role" });
  }
  if (config.deliverable !== undefined) checkDeliverableDefinition(config.deliverable, `Tool "${config.name}"`);
  if (config.retrySafe !== undefined && config.execute === undefined) {
    throw new DefinitionError(
      `Tool "${config.name}": retrySafe applies to tools with execute; an external tool's result is stored when it is delivered`,
      { key: "retrySafe" },
    );
  }
  if (config.needsApproval !== undefined && typeof config.needsApproval !== "boolean" && typeof config.needsApproval !== "function") {
    throw new DefinitionError(`Tool "${config.name}": needsApproval must be true, false or a function of the call's arguments`, { key: "needsApproval" });
  }
  if (config.approvalTimeoutMs !== undefined && (!Number.isInteger(config.approvalTimeoutMs) || config.approvalTimeoutMs <= 0)) {
    throw new DefinitionError(`Tool "${config.name}": approvalTimeoutMs must be a positive integer`, { key: "approvalTimeoutMs" });
  }
  if (config.waitFor !== undefined) checkWaitFor(config);
  for (const k of ["resultRequired", "preconditions", "retrySafe"] as const) {
    if (config[k] !== undefined && typeof config[k] !== "boolean") {
      throw new DefinitionError(`Tool "${config.name}": ${k} must be true or false`, { key: k });
    }
  }
  return Object.freeze({ ...config, kind: "tool" as const, external: config.execute === undefined });
}
