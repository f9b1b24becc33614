/**
 * A route module: a Hono sub-app plus the OpenAPI description of each of its
 * routes. `routes/app.ts` mounts every module and `routes/openapi.ts` builds
 * the document from their `operations`, so a route and its documentation are
 * declared side by side (tests/routes.test.ts checks that every registered
 * route is documented).
 */
import type { Hono } from "hono";
import type { z } from "zod";
import type { ProblemCode } from "./problem.ts";
import type { RouteRuntime } from "./runtime.ts";

/** A schema and the name it has under `components.schemas`. */
export interface NamedSchema {
  name: string;
  schema: z.ZodType;
}

export interface OperationDoc {
  method: "get" | "post" | "put" | "patch" | "delete";
  /** Hono path, e.g. `/v1/agents/:agentId/tasks`. */
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  tags: string[];
  /** False for routes that never ask for a bearer token (`/healthz`). Default true. */
  auth?: boolean;
  /** Query parameters: a zod object whose keys are the parameter names. */
  query?: z.ZodObject;
  /** Request headers the route reads, by name. */
  headers?: Record<string, { description: string; schema: z.ZodType }>;
  body?: { schema: NamedSchema; required: boolean };
  /**
   * Successful responses by status: `schema` is served as application/json;
   * `contentType` names one more media type served as text (e.g. an event stream).
   */
  responses: Record<number, { description: string; schema?: NamedSchema; contentType?: string }>;
  /** Problem codes the route may answer, beyond those every route may answer. */
  problems: ProblemCode[];
}

export interface RouteModule {
  /** Registers full paths (mounted at "/"). Leave `onError`/`notFound` to the root app. */
  app: Hono;
  operations: OperationDoc[];
}

export type RouteModuleFactory = (rt: RouteRuntime) => RouteModule;

/** Problems of every route that reads a JSON body. */
export const BODY_PROBLEMS: ProblemCode[] = [
  "malformed_json",
  "json_limit_exceeded",
  "validation_failed",
  "payload_too_large",
  "unsupported_media_type",
];
