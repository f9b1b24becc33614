/**
 * Signed requests: Standard Webhooks and QStash, verified with Web Crypto
 * only (runs on Node, Deno, Bun and Workers).
 *
 * Invariants:
 * - The signature covers the raw body bytes as received, checked before any
 *   JSON parsing; one changed byte, header or timestamp fails it.
 * - The window is 5 minutes: a Standard Webhooks `webhook-timestamp` or a
 *   QStash `iat` more than 300 s from now (either way) fails, as does an
 *   expired or not-yet-valid QStash token.
 * - Several secrets verify at once (rotation); every signature is compared
 *   against every secret without an early exit, in constant time.
 * - A verified request yields a message id (`webhook-id`, or the QStash
 *   token's `jti`), both inside what is signed, for transport dedup.
 * - A QStash token is good for one URL: its `sub` claim must equal the URL
 *   the request was sent to (string equality, as QStash's own `Receiver`
 *   checks it). A Standard Webhooks signature does not cover the URL: what
 *   stops it travelling to another route is transport dedup (routes/auth.ts).
 *
 * Standard Webhooks: `webhook-signature` holds space-separated `v1,<base64>`
 * entries, each base64(HMAC-SHA256(secret, `${id}.${timestamp}.${body}`)),
 * where the secret is the base64 after `whsec_`.
 * QStash: `Upstash-Signature` is an HS256 JWT signed with the current or the
 * next signing key, with claims `iss: "Upstash"`, `sub` (the URL), `exp`,
 * `nbf`, `iat`, `jti` and `body` = base64url(SHA-256(body)).
 */
import { equalBytes } from "./constant-time.ts";
import type { QstashKeys } from "./config.ts";

export const SIGNATURE_WINDOW_SECONDS = 300;

export type SignatureCheck =
  /** `matched`: indices of the secrets the signature matched (Standard Webhooks; QStash: [0]). */
  | { ok: true; scheme: "webhook" | "qstash"; messageId: string; matched: number[] }
  | { ok: false; reason: string }
  | null; // no signature headers at all

const enc = new TextEncoder();

function b64decode(s: string): Uint8Array | null {
  try {
    const bin = atob(s);
    const out = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
    return out;
  } catch {
    return null;
  }
}

function b64urlDecode(s: string): Uint8Array | null {
  if (!/^[A-Za-z0-9_-]*={0,2}$/.test(s)) return null;
  const std = s.replace(/=+$/, "").replace(/-/g, "+").replace(/_/g, "/");
  return b64decode(std + "=".repeat((4 - (std.length % 4)) % 4));
}

function b64urlEncode(bytes: Uint8Array): string {
  let bin = "";
  for (const b of bytes) bin += String.fromCharCode(b);
  return btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

async function hmac(key: Uint8Array, data: Uint8Array): Promise<Uint8Array> {
  const k = await crypto.subtle.importKey("raw", key as BufferSource, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  return new Uint8Array(await crypto.subtle.sign("HMAC", k, data as BufferSource));
}

function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
}

/** The key bytes of a `whsec_<base64>` secret. */
export function webhookSecretBytes(secret: string): Uint8Array {
  const bytes = b64decode(secret.startsWith("whsec_") ? secret.slice(6) : secret);
  if (bytes === null || bytes.length === 0) throw new Error("webhook secret is not base64");
  return bytes;
}

/** True when the request carries headers of either scheme (then it is judged as a signed request). */
export function hasSignatureHeaders(headers: Headers): boolean {
  return headers.has("webhook-signature") || headers.has("upstash-signature");
}

/** Verifies a Standard Webhooks request. */
export async function verifyStandardWebhook(
  headers: Headers,
  body: Uint8Array,
  secrets: readonly Uint8Array[],
  nowMs: number,
): Promise<SignatureCheck> {
  const id = headers.get("webhook-id");
  const ts = headers.get("webhook-timestamp");
  const sig = headers.get("webhook-signature");
  if (sig === null) return null;
  if (secrets.length === 0) return { ok: false, reason: "Standard Webhooks signatures are not configured" };
  if (id === null || ts === null) return { ok: false, reason: "webhook-id and webhook-timestamp are required with webhook-signature" };
  if (!/^[\x21-\x7e]{1,256}$/.test(id)) return { ok: false, reason: "webhook-id must be 1-256 visible ASCII characters" };
  if (!/^\d{1,12}$/.test(ts)) return { ok: false, reason: "webhook-timestamp must be an integer number of seconds" };
  if (Math.abs(nowMs / 1000 - Number(ts)) > SIGNATURE_WINDOW_SECONDS) {
    return { ok: false, reason: "webhook-timestamp is outside the 5-minute window" };
  }
  const presented = sig.split(" ").filter((p) => p.startsWith("v1,")).map((p) => b64decode(p.slice(3))).filter((b): b is Uint8Array => b !== null);
  if (presented.length === 0 || presented.length > 16) return { ok: false, reason: "webhook-signature holds no v1 signature" };
  const signed = concat(enc.encode(`${id}.${ts}.`), body);
  const matched: number[] = [];
  for (let i = 0; i < secrets.length; i++) {
    const expected = await hmac(secrets[i], signed);
    let hit = false;
    for (const p of presented) hit = equalBytes(expected, p) || hit;
    if (hit) matched.push(i);
  }
  return matched.length > 0 ? { ok: true, scheme: "webhook", messageId: id, matched } : { ok: false, reason: "webhook-signature does not match" };
}

/** Verifies a QStash request (`Upstash-Signature`) sent to `url` (the public URL the sender addressed). */
export async function verifyQstash(
  headers: Headers,
  body: Uint8Array,
  keys: QstashKeys | undefined,
  nowMs: number,
  url: string,
): Promise<SignatureCheck> {
  const jwt = headers.get("upstash-signature");
  if (jwt === null) return null;
  if (!keys) return { ok: false, reason: "QStash signatures are not configured" };
  const parts = jwt.split(".");
  if (parts.length !== 3 || jwt.length > 8192) return { ok: false, reason: "Upstash-Signature is not a JWT" };
  const [h, p, s] = parts;
  const sig = b64urlDecode(s);
  if (sig === null) return { ok: false, reason: "Upstash-Signature is not a JWT" };
  const signed = enc.encode(`${h}.${p}`);
  let ok = false;
  for (const key of [keys.currentSigningKey, keys.nextSigningKey]) ok = equalBytes(await hmac(enc.encode(key), signed), sig) || ok;
  if (!ok) return { ok: false, reason: "Upstash-Signature does not match either signing key" };
  let header: { alg?: unknown };
  let claims: { iss?: unknown; sub?: unknown; exp?: unknown; nbf?: unknown; iat?: unknown; jti?: unknown; body?: unknown };
  try {
    header = JSON.parse(new TextDecoder().decode(b64urlDecode(h) ?? new Uint8Array()));
    claims = JSON.parse(new TextDecoder().decode(b64urlDecode(p) ?? new Uint8Array()));
  } catch {
    return { ok: false, reason: "Upstash-Signature is not a JWT" };
  }
  if (header?.alg !== "HS256") return { ok: false, reason: "Upstash-Signature must use HS256" };
  if (claims?.iss !== "Upstash") return { ok: false, reason: "Upstash-Signature has the wrong issuer" };
  if (claims.sub !== url) {
    return { ok: false, reason: "Upstash-Signature was issued for another URL (its sub claim must be this request's URL; behind a proxy set auth.publicUrl)" };
  }
  const now = nowMs / 1000;
  if (typeof claims.exp !== "number" || claims.exp < now) return { ok: false, reason: "Upstash-Signature has expired" };
  if (typeof claims.nbf === "number" && claims.nbf > now + SIGNATURE_WINDOW_SECONDS) {
    return { ok: false, reason: "Upstash-Signature is not valid yet" };
  }
  if (typeof claims.iat !== "number" || Math.abs(now - claims.iat) > SIGNATURE_WINDOW_SECONDS) {
    return { ok: false, reason: "Upstash-Signature was issued outside the 5-minute window" };
  }
  if (typeof claims.jti !== "string" || !/^[\x21-\x7e]{1,256}$/.test(claims.jti)) return { ok: false, reason: "Upstash-Signature has no usable jti" };
  const hash = b64urlEncode(new Uint8Array(await crypto.subtle.digest("SHA-256", body as BufferSource)));
  if (typeof claims.body !== "string" || claims.body.replace(/=+$/, "") !== hash) {
    return { ok: false, reason: "Upstash-Signature does not cover this body" };
  }
  return { ok: true, scheme: "qstash", messageId: claims.jti, matched: [0] };
}
