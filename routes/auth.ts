/**
 * Optional bearer-token auth. When `rt.auth` is set, every request except
 * `/healthz`, `/readyz` and the debugger page (`/debug`, `/debug/...`) must carry `Authorization: Bearer <token>` with one of the
 * configured tokens; otherwise 401 `unauthorized` with
 * `WWW-Authenticate: Bearer`.
 *
 * Comparison is constant-time with Web APIs only: both sides are hashed with
 * SHA-256 (equal lengths whatever the token lengths), the digests compared
 * with an XOR accumulator, and every configured token is compared (no early
 * exit), so the response time tells nothing about how much of a token matched
 * or which one did.
 */
import type { MiddlewareHandler } from "hono";
import { ProblemError } from "./problem.ts";
import type { RouteAuth } from "./runtime.ts";

const UNAUTHENTICATED_PATHS = new Set(["/healthz", "/readyz"]);

/**
 * The debugger page's shell and assets (routes/debug/page.ts) are static and
 * hold no data, so they are served without a token: the page asks for it and
 * sends it to the data routes itself.
 */
function isDebugPagePath(path: string): boolean {
  return path === "/debug" || path.startsWith("/debug/");
}

async function sha256(text: string): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)));
}

/** Constant-time equality of two byte arrays of equal length (digests). */
function equalDigests(a: Uint8Array, b: Uint8Array): boolean {
  let diff = a.length ^ b.length;
  for (let i = 0; i < a.length && i < b.length; i++) diff |= a[i] ^ b[i];
  return diff === 0;
}

/** Checks a token list; returns an error message or null. */
export function checkAuthConfig(auth: RouteAuth): string | null {
  if (!auth || !Array.isArray(auth.bearerTokens) || auth.bearerTokens.length === 0) {
    return "auth.bearerTokens must be a non-empty array of tokens";
  }
  for (const t of auth.bearerTokens) {
    if (typeof t !== "string" || !/^[\x21-\x7e]{16,4096}$/.test(t)) {
      return "each bearer token must be 16 to 4096 visible ASCII characters";
    }
  }
  return null;
}

/** The auth middleware, or null when auth is off. */
export function bearerAuth(auth: RouteAuth | undefined): MiddlewareHandler | null {
  if (!auth) return null;
  const digests = Promise.all(auth.bearerTokens.map(sha256));
  const refuse = (detail: string) =>
    new ProblemError("unauthorized", detail, { headers: { "www-authenticate": 'Bearer realm="gatehouse"' } });
  return async (c, next) => {
    if (UNAUTHENTICATED_PATHS.has(c.req.path) || isDebugPagePath(c.req.path)) return next();
    const header = c.req.header("authorization");
    const m = header ? /^Bearer +([\x21-\x7e]+) *$/i.exec(header) : null;
    if (!m) throw refuse("Send Authorization: Bearer <token>");
    const presented = await sha256(m[1]);
    let ok = false;
    for (const d of await digests) ok = equalDigests(presented, d) || ok;
    if (!ok) throw refuse("The bearer token is not valid");
    return next();
  };
}
