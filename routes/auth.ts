/**
 * Auth of every route but `/healthz`, `/readyz` and the debugger page's
 * shell, assets and icon (`/debug`, `/debug/...`, `/favicon.ico`), when `rt.auth` is set
 * (routes/auth/config.ts holds the configuration and its invariants).
 *
 * Per request, in order:
 * 1. `Authorization: Bearer <token>`: the token is found in constant time
 *    (every configured token is compared, no early exit); none: 401
 *    `unauthorized`. The route's verb (routes/auth/access.ts) must be among
 *    the token's verbs and the agent's id must start with one of its tenant
 *    prefixes; otherwise 403 `forbidden`. Routes that name no agent and need
 *    cross-tenant data (watchdog tick, verdict by id, routes not mapped yet)
 *    need a token over every tenant (`""`).
 * 2. Otherwise, on the signed write routes (tasks, tool results, cancel,
 *    named events: there the signer's tenants filter the waits), a
 *    Standard Webhooks or QStash signature over the raw body bytes
 *    (routes/auth/signatures.ts; a QStash token's `sub` must be this
 *    request's URL, under `auth.publicUrl` when set). The body is read once
 *    here (same size cap), verified, and handed on to the JSON reader as the
 *    same bytes. A signature outside the window: 401. Then transport dedup
 *    (the store's claimDelivery, invariants in store/port.ts), keyed by the
 *    signer and the message id alone, deployment-wide, and bound to the
 *    request's method and path:
 *    - the first delivery runs; this request holds the message for
 *      DELIVERY_HOLD_MS and renews the hold every third of it while the
 *      route runs, then records the answer (a 5xx answer lets go instead, so
 *      the sender's retry runs again);
 *    - a replay to the same method and path inside the window gets the first
 *      answer (its status and body; header `gatehouse-replayed: true`), or
 *      409 `delivery_in_progress` with `Retry-After: 1` while a live holder
 *      handles it; once the holder stops renewing (its process died), the
 *      first retry takes the message over and runs it;
 *    - a replay to another path (another agent, another route) inside the
 *      window: 409 `delivery_replayed`, nothing runs.
 *    A task delivered signed without an `idempotencyKey` gets the message id
 *    as its idempotency key (`signedIdempotencyKey`), so a retry that takes
 *    over from a holder that died after enqueueing is the same turn.
 * 3. Otherwise, on `GET /v1/agents/:agentId/events` only, a stream session
 *    cookie (routes/auth/stream-session.ts), minted for that agent by
 *    `POST .../events/session` with a bearer token: it stands for that
 *    token (tenants and `read` checked again) on that one route, so
 *    `EventSource`, which cannot send headers, needs no token in its URL.
 * 4. Otherwise 401 with `WWW-Authenticate: Bearer`.
 *
 * Whoever a request was let in as, its name (the token's or webhook
 * secret's `name`, null without one) is what `callerName(c)` answers: the one
 * way a route learns who is calling, recorded as `by` (common/by.ts).
 *
 * Tokens and signatures are never logged: nothing here logs headers, and
 * the problem details name only which check failed.
 */
import type { Context, MiddlewareHandler } from "hono";
import { readCapped } from "./body.ts";
import { ProblemError } from "./problem.ts";
import { AGENT_ID } from "./schemas.ts";
import type { RouteRuntime } from "./runtime.ts";
import { requirementOf } from "./auth/access.ts";
import {
  type AuthVerb,
  type NormalizedSigner,
  type NormalizedToken,
  normalizeTokens,
  type RouteAuth,
  signerScope,
  webhookSecretText,
} from "./auth/config.ts";
import { equalBytes, sha256 } from "./auth/constant-time.ts";
import { hasSignatureHeaders, verifyQstash, verifyStandardWebhook, webhookSecretBytes } from "./auth/signatures.ts";
import type { RateCheck } from "./rate-limit.ts";
import { mintSession, sessionKey, sessionValues, STREAM_SESSION_MS, verifySession } from "./auth/stream-session.ts";
import { replaceRequest } from "./request-origin.ts";

export { checkAuthConfig } from "./auth/config.ts";

/** How long a signed message id is remembered: the 5-minute window on both sides of its timestamp. */
export const DELIVERY_DEDUP_MS = 10 * 60_000;

/** How long a delivery's hold lives without a renewal: a retry after its holder died runs within it. */
export const DELIVERY_HOLD_MS = 5_000;

/** The signed message id of a request let in by its signature (scheme and id), for signedIdempotencyKey. */
const signedIds = new WeakMap<Context, string>();

/**
 * The idempotency key a signed task without its own stands under:
 * `delivery:<scheme>:<message id>` (undefined for a request that was not
 * signed). The transport dedup record answers replays; this key makes the
 * retry that takes over from a holder that died after enqueueing the same
 * turn, not a second one.
 */
export function signedIdempotencyKey(c: Context): string | undefined {
  const id = signedIds.get(c);
  return id === undefined ? undefined : `delivery:${id}`;
}

const UNAUTHENTICATED_PATHS = new Set(["/healthz", "/readyz"]);

/**
 * The debugger page's shell and assets (routes/debug/page.ts, `/favicon.ico`
 * included) are static and hold no data, so they are served without a token: the page asks for it and
 * sends it to the data routes itself.
 */
function isDebugPagePath(path: string): boolean {
  return path === "/debug" || path.startsWith("/debug/") || path === "/favicon.ico";
}

/** Who a request was let in as; read by routes that find the agent only in the store. */
const principals = new WeakMap<Context, NormalizedToken | "signed">();
/** The name of who a request was let in as (a token's or webhook secret's `name`), null when it has none. */
const callers = new WeakMap<Context, string | null>();

/**
 * Who is calling: the `name` of the token (or stream session, or webhook
 * secret of a signed request) the request was let in with; null when auth
 * is off, or the token or secret has no name. This is the one way a route
 * learns it: what a person decides or changes records it as `by`
 * (docs/security.md, "Who did it").
 *
 * @example
 * await rt.store.requestCancel({ agentId, reason, now, by: callerName(c) });
 */
export function callerName(c: Context): string | null {
  return callers.get(c) ?? null;
}

/** The tenants of the signer a signed request was let in as. */
const signerTenants = new WeakMap<Context, readonly string[]>();
/** The session key of the bearer token a request presented (only bearer requests mint stream sessions). */
const mintKeys = new WeakMap<Context, CryptoKey>();

const EVENTS_PATH = /^\/v1\/agents\/([^/]+)\/events$/;

/**
 * A stream session cookie for `agentId`, minted with the request's bearer
 * token: `{ cookie, expiresAt }`, or null when the request did not come with
 * a bearer token (a session does not mint sessions, so none outlives 5
 * minutes without the token).
 */
export async function mintStreamSession(c: Context, agentId: string, now: number): Promise<{ value: string; expiresAt: number } | null> {
  const key = mintKeys.get(c);
  if (key === undefined) return null;
  const expiresAt = now + STREAM_SESSION_MS;
  return { value: await mintSession(key, agentId, expiresAt), expiresAt };
}

function reaches(token: NormalizedToken | NormalizedSigner, agentId: string): boolean {
  return token.tenants.some((prefix) => agentId.startsWith(prefix));
}

const forbidden = () => new ProblemError("forbidden", "This token does not reach this agent or verb");

/** The tenant prefixes the request's token is limited to; null when it reaches every agent (or auth is off). */
export function tenantsOf(c: Context): string[] | null {
  const p = principals.get(c);
  const tenants = p === "signed" ? signerTenants.get(c) : p?.tenants;
  if (tenants === undefined || tenants.includes("")) return null;
  return [...tenants];
}

/**
 * Whether the request came with a bearer token that has `verb` (a signed
 * request, or auth off, answers false: the caller decides what auth off means).
 */
export function tokenHasVerb(c: Context, verb: AuthVerb): boolean {
  const p = principals.get(c);
  return p !== undefined && p !== "signed" && p.verbs.has(verb);
}

/** Throws 403 `forbidden` when the request's token does not reach `agentId` (auth off or signed: no check). */
export function assertAgentAccess(c: Context, agentId: string): void {
  const p = principals.get(c);
  if (p === undefined || p === "signed") return;
  if (!reaches(p, agentId)) throw forbidden();
}

const hex = (b: Uint8Array) => [...b].map((x) => x.toString(16).padStart(2, "0")).join("");

/** A token's rate-limit bucket: a labelled digest (never the token itself), 128 bits. */
export async function tokenBucketKey(token: string): Promise<string> {
  return `t:${hex(await sha256(`gatehouse rate-limit bucket\n${token}`)).slice(0, 32)}`;
}

/** Whether a path is served without auth and without rate limits (health, the debugger page's shell). */
export function isOpenPath(path: string): boolean {
  return UNAUTHENTICATED_PATHS.has(path) || isDebugPagePath(path);
}

/**
 * The auth middleware, or null when auth is off. `rate` (routes/rate-limit.ts)
 * runs once a request is authenticated and authorized, and (signed requests)
 * before the transport dedup claims its message id.
 */
export function authMiddleware(
  auth: RouteAuth | undefined,
  rt: Pick<RouteRuntime, "store" | "clock" | "limits" | "logger">,
  rate: RateCheck | null = null,
): MiddlewareHandler | null {
  if (!auth) return null;
  const tokens = normalizeTokens(auth);
  const digests = Promise.all(tokens.map((t) => sha256(t.token)));
  const bucketKeys = Promise.all(tokens.map((t) => tokenBucketKey(t.token)));
  const sessionKeys = Promise.all(tokens.map((t) => sessionKey(t.token)));
  const webhookEntries = auth.webhookSecrets ?? [];
  const publicBase = auth.publicUrl === undefined ? null : auth.publicUrl.replace(/\/+$/, "");
  const secrets = webhookEntries.map((w) => webhookSecretBytes(webhookSecretText(w)));
  const webhookSigners = webhookEntries.map(signerScope);
  const qstashSigner = signerScope(auth.qstash);
  // A signer's rate bucket: a labelled digest of its secret (QStash: of the deployment's key pair role).
  const webhookBuckets = Promise.all(webhookEntries.map(async (w) => `s:${(await tokenBucketKey(webhookSecretText(w))).slice(2)}`));
  const unauthorized = (detail: string) =>
    new ProblemError("unauthorized", detail, { headers: { "www-authenticate": 'Bearer realm="gatehouse"' } });

  return async (c, next) => {
    if (UNAUTHENTICATED_PATHS.has(c.req.path) || isDebugPagePath(c.req.path)) return next();
    const need = requirementOf(c.req.method, c.req.path);
    const header = c.req.header("authorization");

    if (header !== undefined) {
      const m = /^Bearer +([\x21-\x7e]+) *$/i.exec(header);
      if (!m) throw unauthorized("Send Authorization: Bearer <token>");
      const presented = await sha256(m[1]);
      let found: NormalizedToken | null = null;
      let bucket = "";
      let mintKey: CryptoKey | null = null;
      const all = await digests;
      const keys = await bucketKeys;
      const sk = await sessionKeys;
      for (let i = 0; i < all.length; i++) {
        if (equalBytes(presented, all[i])) {
          found = tokens[i];
          bucket = keys[i];
          mintKey = sk[i];
        }
      }
      if (found === null) throw unauthorized("The bearer token is not valid");
      if (!found.verbs.has(need.verb)) throw forbidden();
      if (need.agentId !== undefined ? !reaches(found, need.agentId) : need.global && !found.tenants.includes("")) {
        throw forbidden();
      }
      principals.set(c, found);
      callers.set(c, found.name);
      if (mintKey) mintKeys.set(c, mintKey);
      if (rate) await rate(bucket, need.agentId, c);
      return next();
    }

    const sessions = (c.req.method === "GET" || c.req.method === "HEAD") && EVENTS_PATH.test(c.req.path) && need.agentId !== undefined
      ? sessionValues(c.req.header("cookie"))
      : [];
    if (sessions.length > 0) {
      const i = await verifySession(await sessionKeys, sessions, need.agentId!, rt.clock.now());
      if (i < 0) throw unauthorized("The stream session is not valid or has expired; ask POST .../events/session for a new one");
      const token = tokens[i];
      if (!token.verbs.has("read") || !reaches(token, need.agentId!)) throw forbidden();
      principals.set(c, token);
      callers.set(c, token.name);
      if (rate) await rate((await bucketKeys)[i], need.agentId, c);
      return next();
    }

    if (!hasSignatureHeaders(c.req.raw.headers)) throw unauthorized("Send Authorization: Bearer <token> or a signed request");
    if (!need.signable) {
      throw unauthorized("Signed requests are accepted on the tasks, tool-results, cancel and named-event routes only");
    }
    const max = rt.limits.maxBodyBytes;
    const declared = c.req.header("content-length");
    if (declared !== undefined && /^\d{1,15}$/.test(declared.trim()) && Number(declared) > max) {
      throw new ProblemError("payload_too_large", `The body exceeds ${max} bytes`, { extra: { limit: max } });
    }
    const bytes = await readCapped(c.req.raw.body, max);
    const now = rt.clock.now();
    const requestUrl = new URL(c.req.raw.url);
    const check = c.req.raw.headers.has("webhook-signature")
      ? await verifyStandardWebhook(c.req.raw.headers, bytes, secrets, now)
      : await verifyQstash(c.req.raw.headers, bytes, auth.qstash, now, publicUrlOf(publicBase, requestUrl));
    if (check === null || !check.ok) throw unauthorized(check?.reason ?? "No signature");
    // The signer's scope: a secret (or the QStash key pair) configured with tenants and verbs reaches only those.
    const signers = check.scheme === "webhook" ? check.matched.map((i) => ({ scope: webhookSigners[i], i })) : [{ scope: qstashSigner, i: -1 }];
    // A route that names no agent (named events) takes the signer's tenants instead (tenantsOf).
    const admitted = signers.find(({ scope }) => scope.verbs.has(need.verb) && (need.agentId === undefined || reaches(scope, need.agentId)));
    if (admitted === undefined) throw forbidden();
    signerTenants.set(c, admitted.scope.tenants);
    // The JSON reader reads these same bytes.
    const old = c.req.raw;
    replaceRequest(c, new Request(old.url, { method: old.method, headers: old.headers, body: bytes.byteLength > 0 ? (bytes as BodyInit) : null, signal: old.signal }));
    principals.set(c, "signed");
    callers.set(c, admitted.scope.name);
    signedIds.set(c, `${check.scheme}:${check.messageId}`);

    // The id becomes part of a store key: the agent id guard's check, before the claim.
    if (need.agentId !== undefined && !AGENT_ID.test(need.agentId)) {
      throw new ProblemError("invalid_agent_id", `Agent id ${JSON.stringify(need.agentId.slice(0, 200))} must match ${AGENT_ID}`);
    }
    const bucket = admitted.i >= 0 ? (await webhookBuckets)[admitted.i] : "s:qstash";
    if (rate) await rate(bucket, need.agentId, c);
    return await deliverOnce(c, next, rt, {
      // Deployment-wide: the signer (a webhook secret's digest; QStash has one key pair) and the message id, no agent.
      messageId: check.scheme === "webhook" ? `webhook:${bucket.slice(2, 18)}:${check.messageId}` : `qstash:${check.messageId}`,
      target: `${c.req.method} ${requestUrl.pathname}`,
      holder: crypto.randomUUID(),
    });
  };
}

/** The URL a sender addressed: `publicBase` (auth.publicUrl, no trailing slash) + the path and query, else the request's own URL. */
function publicUrlOf(publicBase: string | null, url: URL): string {
  return publicBase === null ? url.href : `${publicBase}${url.pathname}${url.search}`;
}

/**
 * Runs a signed delivery at most once per message (see the middleware's
 * header): claims it, holds it while the route runs (renewing the hold every
 * third of DELIVERY_HOLD_MS), records the answer.
 */
async function deliverOnce(
  c: Context,
  next: () => Promise<void>,
  rt: Pick<RouteRuntime, "store" | "clock" | "logger">,
  ref: { messageId: string; target: string; holder: string },
): Promise<Response | void> {
  const claimed = await rt.store.claimDelivery({ ...ref, now: rt.clock.now(), windowMs: DELIVERY_DEDUP_MS, holdMs: DELIVERY_HOLD_MS });
  switch (claimed.status) {
    case "other_target":
      throw new ProblemError("delivery_replayed", "This signed message was delivered to another route; a signature is good for the route it was sent to only");
    case "in_progress":
      throw new ProblemError("delivery_in_progress", "A delivery of this message is being handled; retry shortly", {
        headers: { "retry-after": "1" },
      });
    case "answered":
      return new Response(claimed.response.body, {
        status: claimed.response.status,
        headers: { "content-type": claimed.response.contentType, "gatehouse-replayed": "true" },
      });
  }
  const renewal = setInterval(() => {
    rt.store.renewDelivery({ ...ref, now: rt.clock.now(), holdMs: DELIVERY_HOLD_MS }).then((r) => {
      if (r.status === "lost") rt.logger.warn("transport dedup hold lost while the route ran", { path: c.req.path });
    }, (err) => rt.logger.warn("transport dedup renewal failed", { path: c.req.path, error: String(err) }));
  }, Math.floor(DELIVERY_HOLD_MS / 3));
  let response: { status: number; contentType: string; body: string } | null = null;
  try {
    await next();
    if (c.res.status < 500) {
      response = { status: c.res.status, contentType: c.res.headers.get("content-type") ?? "application/json", body: await c.res.clone().text() };
    }
  } finally {
    clearInterval(renewal);
    await rt.store.recordDelivery({ ...ref, now: rt.clock.now(), windowMs: DELIVERY_DEDUP_MS, response }).then((r) => {
      if (r.status === "lost") rt.logger.warn("transport dedup hold lost before the answer was recorded", { path: c.req.path });
    }, (err) => {
      rt.logger.warn("transport dedup record failed", { path: c.req.path, error: String(err) });
    });
  }
}
