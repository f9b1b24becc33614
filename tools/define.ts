/**
 * defineTool(): a tool the model may call. A tool with `execute` runs in the
 * worker (in-process); one without is *external*: its calls are announced as
 * `tool_call` events and its results arrive over HTTP.
 */
import type { z } from "zod";
import { DefinitionError } from "../errors/errors.ts";
import type { AfterExecution } from "../common/outcome.ts";

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
  /** Runs the tool in-process. Throw `ToolError` for a typed error outcome. */
  execute?: (args: z.output<S>, ctx: ToolExecuteContext) => unknown | Promise<unknown>;
  /** Arguments filled in when the model omits them. */
  defaults?: Record<string, unknown>;
  /** Arguments forced on every call and hidden from the model's schema. */
  fixed?: Record<string, unknown>;
  /** Resume deadline for one call, in ms (default 60 s in-process, 10 min external). */
  timeoutMs?: number;
}

export interface ToolDefinition<S extends z.ZodType = z.ZodType> extends ToolConfig<S> {
  readonly kind: "tool";
  readonly external: boolean;
}

export type AnyTool = ToolDefinition<any>;
export type { AfterExecution };

const NAME = /^[a-zA-Z0-9_-]{1,64}$/;
export const RESERVED_TOOL_NAMES = new Set(["agent_output", "submit_result"]);

/**
 * @example
 * const lookup = defineTool({
 *   name: "lookup", description: "Find a customer",
 *   parameters: z.object({ email: z.string() }),
 *   execute: async ({ email }) => ({ email, plan: "pro" }),
 * });
 */
export function defineTool<S extends z.ZodType>(config: ToolConfig<S>): ToolDefinition<S> {
  if (!config || typeof config !== "object") throw new DefinitionError("defineTool() needs a config object");
  if (typeof config.name !== "string" || !NAME.test(config.name)) {
    throw new DefinitionError(`Tool name ${JSON.stringify(config.name)} must match ${NAME}`);
  }
  if (RESERVED_TOOL_NAMES.has(config.name)) {
    throw new DefinitionError(`Tool name "${config.name}" is reserved for the built-in completion tool`);
  }
  if (typeof config.description !== "string" || config.description.trim() === "") {
    throw new DefinitionError(`Tool "${config.name}" needs a description`);
  }
  if (!config.parameters || typeof (config.parameters as z.ZodType).safeParse !== "function") {
    throw new DefinitionError(`Tool "${config.name}": parameters must be a zod schema`);
  }
  if (config.execute !== undefined && typeof config.execute !== "function") {
    throw new DefinitionError(`Tool "${config.name}": execute must be a function`);
  }
  if (config.timeoutMs !== undefined && (!Number.isInteger(config.timeoutMs) || config.timeoutMs <= 0)) {
    throw new DefinitionError(`Tool "${config.name}": timeoutMs must be a positive integer`);
  }
  return Object.freeze({ ...config, kind: "tool" as const, external: config.execute === undefined });
}
