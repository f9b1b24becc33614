/**
 * Stream sessions: how a client that cannot send headers (the browser's
 * `EventSource`) opens an agent's event stream without putting a token in
 * a URL.
 *
 * The client asks `POST /v1/agents/:agentId/events/session` with its bearer
 * token (verb `read` over that agent). The answer sets a cookie
 *
 *   gh_stream=v1.<expiresAt ms>.<base64url HMAC-SHA256>; Path=/v1/agents/<id>/events;
 *   Max-Age=300; HttpOnly; Secure; SameSite=Strict
 *
 * and `new EventSource("/v1/agents/<id>/events")` then carries it.
 *
 * Invariants:
 * - The cookie opens only `GET /v1/agents/<id>/events` (JSON or SSE) of the
 *   one agent it was minted for: the MAC covers the agent id and the expiry,
 *   the cookie's `Path` keeps browsers from sending it anywhere else, and the
 *   middleware accepts it on that route only.
 * - It never outlives its token: the MAC key is derived from the token that
 *   minted it (SHA-256 of a label and the token), so removing or rotating the
 *   token ends every session it minted; the token's tenants and `read` verb
 *   are checked again at every use.
 * - It expires STREAM_SESSION_MS after minting (time from the server's
 *   clock); a stream open at that moment runs on, a reconnect after it
 *   needs a new session.
 * - Nothing secret goes into a URL or a log: the token travels only in the
 *   `Authorization` header of the POST, the session only in a cookie header.
 * - Verification compares against every token's key with no early exit.
 *
 * Stateless: no store record, so every process that has the same tokens
 * accepts the session; the cost is that one session cannot be revoked
 * alone (rotate the token, or wait at most 5 minutes).
 */
import { equalBytes } from "./constant-time.ts";

export const STREAM_SESSION_COOKIE = "gh_stream";
export const STREAM_SESSION_MS = 300_000;

const enc = new TextEncoder();

function b64url(bytes: Uint8Array): string {
  let bin = "";
  for (const b of bytes) bin += String.fromCharCode(b);
  return btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** The session MAC key of a token. */
export async function sessionKey(token: string): Promise<CryptoKey> {
  const raw = await crypto.subtle.digest("SHA-256", enc.encode(`gatehouse stream session\n${token}`));
  return crypto.subtle.importKey("raw", raw, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
}

async function mac(key: CryptoKey, agentId: string, expiresAt: number): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.sign("HMAC", key, enc.encode(`v1\n${agentId}\n${expiresAt}`)));
}

/** The cookie value of a session of `agentId` until `expiresAt`. */
export async function mintSession(key: CryptoKey, agentId: string, expiresAt: number): Promise<string> {
  return `v1.${expiresAt}.${b64url(await mac(key, agentId, expiresAt))}`;
}

/** The `Set-Cookie` header of a session (the agent id is `[A-Za-z0-9_.:-]`, safe in a path). */
export function sessionCookie(value: string, agentId: string, maxAgeMs = STREAM_SESSION_MS): string {
  return `${STREAM_SESSION_COOKIE}=${value}; Path=/v1/agents/${agentId}/events; Max-Age=${Math.floor(maxAgeMs / 1000)}; HttpOnly; Secure; SameSite=Strict`;
}

/** Every `gh_stream` value of a Cookie header (a browser may send several, one per matching path). */
export function sessionValues(cookieHeader: string | undefined): string[] {
  if (!cookieHeader || cookieHeader.length > 16_384) return [];
  const out: string[] = [];
  for (const part of cookieHeader.split(";")) {
    const eq = part.indexOf("=");
    if (eq < 0 || part.slice(0, eq).trim() !== STREAM_SESSION_COOKIE) continue;
    const v = part.slice(eq + 1).trim();
    if (/^v1\.\d{1,15}\.[A-Za-z0-9_-]{43}$/.test(v)) out.push(v);
    if (out.length === 8) break;
  }
  return out;
}

/**
 * The index of the token whose key minted a live session of `agentId` among
 * `values`, or -1. Every value is checked against every key.
 */
export async function verifySession(keys: readonly CryptoKey[], values: readonly string[], agentId: string, now: number): Promise<number> {
  let found = -1;
  for (const v of values) {
    const [, exp, sig] = v.split(".");
    const expiresAt = Number(exp);
    const presented = Uint8Array.from(atob(sig.replace(/-/g, "+").replace(/_/g, "/") + "="), (ch) => ch.charCodeAt(0));
    for (let i = 0; i < keys.length; i++) {
      const expected = await mac(keys[i], agentId, expiresAt);
      // The MAC rules out forged expiries; the upper bound (with a minute for clocks of other processes) is a second fence.
      if (equalBytes(expected, presented) && expiresAt > now && expiresAt <= now + STREAM_SESSION_MS + 60_000) found = i;
    }
  }
  return found;
}
