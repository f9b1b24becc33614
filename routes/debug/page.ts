/**
 * The debugger page: `GET /debug` (the agent list) and
 * `GET /debug/agents/:agentId` (one agent: statechart, timeline, time travel,
 * pending tool calls, cancel, fork), plus its script and stylesheet.
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
import { Hono } from "hono";
import type { Context } from "hono";
import type { RouteModule } from "../module.ts";
import type { RouteRuntime } from "../runtime.ts";
import { DEBUG_ASSETS_HASH, DEBUG_CSS, DEBUG_JS } from "./assets.gen.ts";

/** Paths of this module; routes/auth.ts serves them without a token. */
export const DEBUG_PATH_PREFIX = "/debug";

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

export function debugPageRoutes(_rt: RouteRuntime): RouteModule {
  const app = new Hono();
  app.get("/debug", shell);
  app.get("/debug/agents/:agentId", shell);
  app.get("/debug/app.js", (c) => asset(c, DEBUG_JS, "text/javascript; charset=utf-8"));
  app.get("/debug/app.css", (c) => asset(c, DEBUG_CSS, "text/css; charset=utf-8"));
  const page = (path: string, operationId: string, summary: string, contentType: string) => ({
    method: "get" as const,
    path,
    operationId,
    summary,
    tags: ["debug"],
    auth: false,
    responses: { 200: { description: summary, contentType } },
    problems: [],
  });
  return {
    app,
    operations: [
      page("/debug", "debugPage", "The debugger page: the agent list (HTML; asks for the bearer token when auth is on)", "text/html"),
      page("/debug/agents/:agentId", "debugAgentPage", "The debugger page of one agent (HTML)", "text/html"),
      page("/debug/app.js", "debugScript", "The debugger page's script", "text/javascript"),
      page("/debug/app.css", "debugStylesheet", "The debugger page's stylesheet", "text/css"),
    ],
  };
}
