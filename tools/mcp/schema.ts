/**
 * JSON Schema from an MCP server, as gatehouse checks it.
 *
 * - `argumentsSchema`: the zod schema that validates a call's arguments
 *   before the server sees them (a violation is the error outcome
 *   `invalid_arguments`, tools/specs.ts). Built with zod 4's
 *   `z.fromJSONSchema`; always a zod object schema, as defineTool requires
 *   (a schema zod turns into something else is checked inside a loose
 *   object). A schema zod cannot read leaves the arguments to the server's
 *   own check (any object passes here).
 * - `deliverableSchema`: the zod schema of a declared `outputSchema`, the
 *   tool's deliverable contract (contracts/deliverable.ts), or undefined
 *   when zod cannot read it.
 * - `PASS_THROUGH_VALIDATOR`: the SDK client's output validator. The client
 *   would otherwise compile output schemas with ajv (code generation, which
 *   Cloudflare Workers forbid) and throw on a mismatch; here the contract
 *   check does that job and the model is told what is wrong.
 */
import type { jsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/types.js";
import { z } from "zod";

type JsonSchema = Record<string, unknown>;

function fromJsonSchema(schema: JsonSchema): z.ZodType | undefined {
  try {
    return z.fromJSONSchema(schema as Parameters<typeof z.fromJSONSchema>[0]);
  } catch {
    return undefined;
  }
}

/** A zod object schema validating what `schema` (an MCP tool's inputSchema) accepts. */
export function argumentsSchema(schema: JsonSchema): z.ZodType {
  const built = fromJsonSchema(schema);
  if (!built) return z.looseObject({});
  if ((built as { _zod: { def: { type: string } } })._zod.def.type === "object") return built;
  return z.looseObject({}).superRefine((value, ctx) => {
    const r = built.safeParse(value);
    if (!r.success) for (const issue of r.error.issues) ctx.addIssue({ ...issue, code: "custom", message: issue.message, path: issue.path });
  });
}

/** The zod schema of an MCP tool's outputSchema, or undefined when zod cannot read it. */
export function deliverableSchema(schema: JsonSchema | undefined): z.ZodType | undefined {
  return schema === undefined ? undefined : fromJsonSchema(schema);
}

export const PASS_THROUGH_VALIDATOR: jsonSchemaValidator = {
  getValidator: () => (input: unknown) => ({ valid: true, data: input as never, errorMessage: undefined }),
};
