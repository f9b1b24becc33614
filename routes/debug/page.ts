/**
 * The debugger page: `GET /debug` (the agent list) and
 * `GET /debug/agents/:agentId` (one agent: statechart, verdicts, timeline,
 * time travel, pending tool calls, cancel, fork, live model text), plus its
 * script and stylesheet, and `GET /favicon.ico` (routes/debug/favicon.ts).
 *
 * Invariants:
 * - Every response here is static: the same bytes whatever the request (the
 *   shell echoes no part of the URL; the client reads the agent id from
 *   `location`). So these routes need no auth and are served without it
 *   (routes/auth.ts): the page asks for the bearer token itself, keeps it in
 *   `sessionStorage` and sends it as an `Authorization` header to the data
 *   routes, which stay protected. The token never enters a URL.
 * - The assets come from routes/debug/assets.gen.ts (bundled by
 *   scripts/bundle-debug.ts): no filesystem read and no network at runtime,
 *   so the page works on Node, Deno, Bun and Workers alike.
 * - A Content-Security-Policy allows only same-origin scripts, styles and
 *   connections: the page loads nothing from elsewhere.
 */
import { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { defineRoute, routeApp } from "../define.ts";
import type { RouteRuntime } from "../runtime.ts";
import { DEBUG_ASSETS_HASH, DEBUG_CSS, DEBUG_JS } from "./assets.gen.ts";
import { FAVICON_ICO } from "./favicon.ts";

/** Paths of this module; routes/auth.ts serves them without a token. */
export const DEBUG_PATH_PREFIX = "/debug";
/** The icon; static too, so also served without a token. */
export const FAVICON_PATH = "/favicon.ico";

const CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

const SHELL = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>gatehouse debugger</title>
<link rel="icon" href="/favicon.ico" type="image/x-icon">
<link rel="stylesheet" href="/debug/app.css?v=${DEBUG_ASSETS_HASH}">
<script defer src="/debug/app.js?v=${DEBUG_ASSETS_HASH}"></script>
</head>
<body>
<div id="app"><noscript>The gatehouse debugger needs JavaScript.</noscript></div>
</body>
</html>
`;

const COMMON_HEADERS = {
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
};

function shell(c: Context): Response {
  return c.body(SHELL, 200, {
    ...COMMON_HEADERS,
    "content-type": "text/html; charset=utf-8",
    "content-security-policy": CSP,
    "cache-control": "no-cache",
  });
}

function asset(c: Context, body: string, type: string): Response {
  const etag = `"${DEBUG_ASSETS_HASH}"`;
  const headers = { ...COMMON_HEADERS, etag, "cache-control": "no-cache", "content-type": type };
  if (c.req.header("if-none-match") === etag) return c.body(null, 304, headers);
  return c.body(body, 200, headers);
}

const text = <const T extends string>(description: string, type: T) =>
  ({ description, content: { [type]: { schema: z.string() } } as { [K in T]: { schema: z.ZodString } } });
const notModified = { description: "Not modified (the `If-None-Match` ETag is current)" };

const debugPage = defineRoute({
  method: "get",
  path: "/debug",
  operationId: "debugPage",
  summary: "The debugger page: the agent list (HTML; asks for the bearer token when auth is on)",
  tags: ["debug"],
  responses: { 200: text("The page", "text/html") },
}, [], "public");

const debugAgentPage = defineRoute({
  method: "get",
  path: "/debug/agents/{agentId}",
  operationId: "debugAgentPage",
  summary: "The debugger page of one agent (HTML)",
  tags: ["debug"],
  request: { params: z.object({ agentId: z.string() }) },
  responses: { 200: text("The page", "text/html") },
}, [], "public");

const debugScript = defineRoute({
  method: "get",
  path: "/debug/app.js",
  operationId: "debugScript",
  summary: "The debugger page's script",
  tags: ["debug"],
  responses: { 200: text("The script", "text/javascript"), 304: notModified },
}, [], "public");

const debugStylesheet = defineRoute({
  method: "get",
  path: "/debug/app.css",
  operationId: "debugStylesheet",
  summary: "The debugger page's stylesheet",
  tags: ["debug"],
  responses: { 200: text("The stylesheet", "text/css"), 304: notModified },
}, [], "public");

const favicon = defineRoute({
  method: "get",
  path: FAVICON_PATH,
  operationId: "favicon",
  summary: "The debugger page's icon (16×16 ICO)",
  tags: ["debug"],
  responses: {
    200: { description: "The icon", content: { "image/x-icon": { schema: z.string().openapi({ format: "binary" }) } } },
  },
}, [], "public");

function icon(c: Context): Response {
  return c.body(FAVICON_ICO.slice().buffer as ArrayBuffer, 200, {
    ...COMMON_HEADERS,
    "content-type": "image/x-icon",
    "cache-control": "public, max-age=86400",
  });
}

export function debugPageRoutes(rt: RouteRuntime) {
  return routeApp(rt)
    .openapi(debugPage, (c) => shell(c))
    .openapi(debugAgentPage, (c) => shell(c))
    .openapi(debugScript, (c) => asset(c, DEBUG_JS, "text/javascript; charset=utf-8"))
    .openapi(debugStylesheet, (c) => asset(c, DEBUG_CSS, "text/css; charset=utf-8"))
    .openapi(favicon, (c) => icon(c));
}
