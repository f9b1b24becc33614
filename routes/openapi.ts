/**
 * `GET /openapi.json`: an OpenAPI 3.1 document built from the route modules'
 * `operations` and the zod schemas the routes validate with
 * (`z.toJSONSchema`, JSON Schema 2020-12, OpenAPI 3.1's dialect). Request
 * bodies are converted as inputs (defaults optional), responses as outputs.
 * Every error response points at the one `Problem` schema and lists its codes
 * in `x-problem-codes`.
 */
import { Hono } from "hono";
import { z } from "zod";
import type { NamedSchema, OperationDoc, RouteModule } from "./module.ts";
import { PROBLEM_CONTENT_TYPE, type ProblemCode, PROBLEMS } from "./problem.ts";
import type { RouteRuntime } from "./runtime.ts";
import { AGENT_ID, OpenApiDocument, Problem } from "./schemas.ts";

const REF = "#/components/schemas/";

type Json = Record<string, unknown>;

function bare(schema: Json): Json {
  const { $schema: _s, $id: _i, ...rest } = schema;
  return rest;
}

/** Converts one standalone schema (a parameter) to JSON Schema. */
function inline(schema: z.ZodType, io: "input" | "output"): Json {
  return bare(z.toJSONSchema(schema, { io, unrepresentable: "any" }) as Json);
}

/** Converts named schemas to `components.schemas`, referring to each other by `$ref`. */
function components(named: NamedSchema[], io: "input" | "output"): Record<string, Json> {
  const reg = z.registry<{ id: string }>();
  for (const n of named) reg.add(n.schema, { id: n.name });
  const out = z.toJSONSchema(reg, { io, unrepresentable: "any", uri: (id) => REF + id }) as { schemas: Record<string, Json> };
  const schemas: Record<string, Json> = {};
  for (const [k, v] of Object.entries(out.schemas)) schemas[k] = bare(v);
  return schemas;
}

/** `/v1/agents/:agentId` -> `/v1/agents/{agentId}`. */
export const openApiPath = (honoPath: string) => honoPath.replace(/:([A-Za-z0-9_]+)/g, "{$1}");

function collect(ops: OperationDoc[], pick: (op: OperationDoc) => NamedSchema[]): NamedSchema[] {
  const byName = new Map<string, NamedSchema>();
  for (const op of ops) {
    for (const n of pick(op)) {
      const seen = byName.get(n.name);
      if (seen && seen.schema !== n.schema) throw new Error(`Two schemas are named "${n.name}" in the OpenAPI document`);
      byName.set(n.name, n);
    }
  }
  return [...byName.values()];
}

export interface OpenApiOptions {
  /** Whether bearer auth is on (adds the security scheme and 401 responses). */
  auth: boolean;
  maxBodyBytes: number;
}

export function openApiDocument(ops: OperationDoc[], opts: OpenApiOptions): Json {
  const requests = collect(ops, (op) => (op.body ? [op.body.schema] : []));
  const responses = collect(ops, (op) =>
    Object.values(op.responses).flatMap((r) => (r.schema ? [r.schema] : []))
  ).concat([{ name: "Problem", schema: Problem }]);
  const clash = requests.find((r) => responses.some((s) => s.name === r.name));
  if (clash) throw new Error(`Schema "${clash.name}" is used both as a request and as a response`);
  const schemas = { ...components(requests, "input"), ...components(responses, "output") };

  const paths: Record<string, Record<string, Json>> = {};
  for (const op of ops) {
    const secured = opts.auth && op.auth !== false;
    const parameters: Json[] = [];
    for (const m of op.path.matchAll(/:([A-Za-z0-9_]+)/g)) {
      parameters.push({
        name: m[1],
        in: "path",
        required: true,
        schema: m[1] === "agentId" ? { type: "string", pattern: AGENT_ID.source } : { type: "string" },
      });
    }
    for (const [name, field] of Object.entries(op.query?.shape ?? {})) {
      const schema = inline(field as z.ZodType, "input");
      const { description, ...rest } = schema;
      parameters.push({
        name,
        in: "query",
        required: !(field as z.ZodType).safeParse(undefined).success,
        ...(description !== undefined ? { description } : {}),
        schema: rest,
      });
    }
    for (const [name, h] of Object.entries(op.headers ?? {})) {
      parameters.push({ name, in: "header", required: false, description: h.description, schema: inline(h.schema, "input") });
    }

    const res: Record<string, Json> = {};
    for (const [status, r] of Object.entries(op.responses)) {
      const content: Json = {};
      if (r.schema) content["application/json"] = { schema: { $ref: REF + r.schema.name } };
      if (r.contentType) content[r.contentType] = { schema: { type: "string" } };
      res[status] = { description: r.description, content };
    }
    const codes: ProblemCode[] = [
      ...op.problems,
      ...(secured ? ["unauthorized" as const, "forbidden" as const, "rate_limited" as const] : []),
      "internal_error",
    ];
    const byStatus = new Map<number, ProblemCode[]>();
    for (const code of new Set(codes)) {
      const s = PROBLEMS[code].status;
      byStatus.set(s, [...(byStatus.get(s) ?? []), code]);
    }
    for (const [status, list] of [...byStatus].sort((a, b) => a[0] - b[0])) {
      res[String(status)] = {
        description: list.map((c) => `\`${c}\`: ${PROBLEMS[c].title}`).join("; "),
        "x-problem-codes": list,
        ...(status === 401 ? { headers: { "WWW-Authenticate": { schema: { type: "string" } } } } : {}),
        ...(status === 429 ? { headers: { "Retry-After": { schema: { type: "string" } } } } : {}),
        content: { [PROBLEM_CONTENT_TYPE]: { schema: { $ref: REF + "Problem" } } },
      };
    }

    const path = openApiPath(op.path);
    paths[path] ??= {};
    paths[path][op.method] = {
      operationId: op.operationId,
      summary: op.summary,
      ...(op.description ? { description: op.description } : {}),
      tags: op.tags,
      ...(parameters.length > 0 ? { parameters } : {}),
      ...(op.body
        ? {
          requestBody: {
            required: op.body.required,
            description: `JSON, at most ${opts.maxBodyBytes} bytes`,
            content: { "application/json": { schema: { $ref: REF + op.body.schema.name } } },
          },
        }
        : {}),
      responses: res,
      ...(opts.auth ? { security: secured ? [{ bearerAuth: [] }] : [] } : {}),
    };
  }

  return {
    openapi: "3.1.0",
    info: {
      title: "gatehouse",
      version: "1",
      description: "Durable actor-model runtime for LLM agents. Errors are application/problem+json " +
        "`{ type, title, status, detail, code }`; `code` is stable.",
    },
    paths,
    components: {
      schemas,
      ...(opts.auth ? { securitySchemes: { bearerAuth: { type: "http", scheme: "bearer" } } } : {}),
    },
  };
}

/** The operation of this module itself, so the document lists its own route. */
const OPENAPI_OPERATION: OperationDoc = {
  method: "get",
  path: "/openapi.json",
  operationId: "openapi",
  summary: "This OpenAPI 3.1 document",
  tags: ["operations"],
  responses: { 200: { description: "The document", schema: { name: "OpenApiDocument", schema: OpenApiDocument } } },
  problems: [],
};

/** Serves the document of `modules` plus its own route; built once, on first request. */
export function openApiRoutes(rt: RouteRuntime, modules: RouteModule[]): RouteModule {
  const app = new Hono();
  const operations = [...modules.flatMap((m) => m.operations), OPENAPI_OPERATION];
  let doc: Json | undefined;
  app.get("/openapi.json", (c) => {
    doc ??= openApiDocument(operations, { auth: rt.auth !== undefined, maxBodyBytes: rt.limits.maxBodyBytes });
    return c.json(doc);
  });
  return { app, operations: [OPENAPI_OPERATION] };
}
