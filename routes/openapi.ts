/**
 * `GET /openapi.json`: the OpenAPI 3.1 document `@hono/zod-openapi` builds
 * from the routes registered on the app (their `createRoute` configs and zod
 * schemas). This file only adds what is the server's, not a route's: info
 * and license, servers, tag descriptions, and the bearer scheme with a
 * default `security` when auth is configured (public routes carry
 * `security: []`). Built once, on the first request.
 */
import type { OpenAPIHono } from "@hono/zod-openapi";
import { defineRoute, json } from "./define.ts";
import type { RouteRuntime } from "./runtime.ts";
import { OpenApiDocument } from "./schemas.ts";

const TAGS = [
  { name: "agents", description: "Tasks, tool results, cancels and the event log of one agent" },
  { name: "verdicts", description: "Verdict records of the verifier gate and guardians" },
  { name: "debugging", description: "Agent list, time travel, forks, what-if and replay bundles" },
  { name: "debug", description: "The debugger page and its assets" },
  { name: "machine", description: "The agent statechart" },
  { name: "tools", description: "The tool registry: roles, canonical methods, aliases and overlaps" },
  { name: "operations", description: "Health, readiness, metrics, watchdog and this document" },
];

export const openApiRoute = defineRoute({
  method: "get",
  path: "/openapi.json",
  operationId: "openapi",
  summary: "This OpenAPI 3.1 document",
  tags: ["operations"],
  responses: { 200: json("The document", OpenApiDocument) },
}, [], "read");

/** The document of the routes registered on `app`. */
export function openApiDocument(app: OpenAPIHono, rt: Pick<RouteRuntime, "auth">): Record<string, unknown> {
  const auth = rt.auth !== undefined;
  const doc = app.getOpenAPI31Document({
    openapi: "3.1.0",
    info: {
      title: "gatehouse",
      version: "1",
      description: "Durable actor-model runtime for LLM agents. Errors are application/problem+json " +
        "`{ type, title, status, detail, code }`; `code` is stable (docs/http.md).",
      license: { name: "MIT", url: "https://opensource.org/license/mit" },
    },
    servers: [{ url: "/", description: "The server that serves this document" }],
    tags: TAGS,
    // Without auth no route asks for credentials: an empty requirement list says so.
    security: auth ? [{ bearerAuth: [] }] : [],
  });
  if (auth) {
    doc.components = {
      ...doc.components,
      securitySchemes: { bearerAuth: { type: "http", scheme: "bearer" } },
    };
  }
  return doc as unknown as Record<string, unknown>;
}
