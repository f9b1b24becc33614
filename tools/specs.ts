/**
 * Tool specs for the model (OpenAI-style function tools) and argument
 * preparation. Invariants: `fixed` arguments never appear in a spec and always
 * win over what the model sent; `defaults` fill only what the model omitted;
 * the built-in completion tool is appended last.
 */
import { z } from "zod";
import type { AnyTool } from "./define.ts";

export interface ToolSpec {
  type: "function";
  function: { name: string; description: string; parameters: Record<string, unknown> };
}

type JsonSchema = Record<string, unknown> & { properties?: Record<string, unknown>; required?: string[] };

/** zod -> JSON Schema (input side, so defaulted fields are optional), without the $schema header. */
export function toJsonSchema(schema: z.ZodType): JsonSchema {
  const js = z.toJSONSchema(schema, { io: "input", unrepresentable: "any" }) as JsonSchema;
  delete js.$schema;
  return js;
}

/** A tool's parameters as the model sees them: its own `inputSchema` (copied, without `$schema`), else derived from `parameters`. */
function parametersOf(tool: AnyTool): JsonSchema {
  if (!tool.inputSchema) return toJsonSchema(tool.parameters);
  const js = structuredClone(tool.inputSchema) as JsonSchema;
  delete js.$schema;
  return js;
}

export function toolSpec(tool: AnyTool): ToolSpec {
  const parameters = parametersOf(tool);
  const hidden = Object.keys(tool.fixed ?? {});
  const defaulted = Object.keys(tool.defaults ?? {});
  if (parameters.properties) {
    for (const k of hidden) delete parameters.properties[k];
  }
  if (Array.isArray(parameters.required)) {
    parameters.required = parameters.required.filter((k) => !hidden.includes(k) && !defaulted.includes(k));
  }
  return { type: "function", function: { name: tool.name, description: tool.description, parameters } };
}

export type PreparedArgs = { ok: true; args: unknown } | { ok: false; message: string; issues: unknown };

/** Fills defaults, forces fixed values, and validates against the tool's schema. */
export function prepareArgs(tool: AnyTool, raw: unknown): PreparedArgs {
  let merged: unknown = raw;
  if (tool.defaults || tool.fixed) {
    const isObject = raw !== null && typeof raw === "object" && !Array.isArray(raw);
    // Arguments that are not an object (e.g. unparsable JSON passed on as its text) must fail, not be replaced by the defaults.
    if (!isObject && raw !== undefined && raw !== null) {
      return { ok: false, message: `Invalid arguments for tool "${tool.name}": expected a JSON object, got ${Array.isArray(raw) ? "an array" : typeof raw}`, issues: [] };
    }
    const given = isObject ? raw as Record<string, unknown> : {};
    const out: Record<string, unknown> = { ...(tool.defaults ?? {}) };
    for (const [k, v] of Object.entries(given)) if (v !== undefined && v !== null) out[k] = v;
    Object.assign(out, tool.fixed ?? {});
    merged = out;
  }
  const parsed = tool.parameters.safeParse(merged);
  if (parsed.success) return { ok: true, args: parsed.data };
  return {
    ok: false,
    message: `Invalid arguments for tool "${tool.name}": ${z.prettifyError(parsed.error)}`,
    issues: parsed.error.issues,
  };
}
