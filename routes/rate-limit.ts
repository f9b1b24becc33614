/**
 * Rate limits per token and per agent, held in the store (store/port.ts
 * `rateLimit`, one script on Redis and Upstash) so they hold across
 * processes.
 *
 * Invariants:
 * - Only requests that passed auth count: a request that gets 401 or 403
 *   never charges a bucket, so nobody without a token of the tenant can
 *   spend an agent's budget.
 * - One store call checks the token's bucket (`t:<digest>`; signed requests:
 *   `s:<scheme>`) and the agent's bucket (`a:<agentId>`, routes under
 *   `/v1/agents/:agentId`) together and charges both only when both admit.
 * - A refused request is answered `429 rate_limited` with `Retry-After`
 *   (whole seconds, at least 1) before the route runs, and before the
 *   transport dedup of a signed request claims its message id: it changes
 *   nothing else in the store.
 * - The bucket key of a token is a digest, never the token.
 * - Work a route does beyond answering can charge the same buckets again
 *   (`chargeRequest`): `POST .../what-if` charges one unit per candidate it
 *   judges, before judging it (routes/what-if.ts), so a verifier that is a
 *   paid model is called at most as often as the limits admit requests.
 *
 * Defaults (DEFAULT_RATE_LIMITS): on when auth is configured, 1 200 requests
 * per minute per token and 600 per minute per agent, each with a burst of
 * the whole minute's allowance; off without auth (development).
 */
import type { Context } from "hono";
import { DEFAULTS } from "../common/defaults.ts";
import { ProblemError } from "./problem.ts";
import { AGENT_ID } from "./schemas.ts";
import type { Clock } from "../actors/runtime.ts";
import type { Store } from "../store/port.ts";

export interface RateLimitRule {
  /** Requests per period (1 to 1 000 000). */
  limit: number;
  /** The period in ms (1 to 86 400 000). */
  periodMs: number;
}

/** The `rateLimits` option of createGatehouse: each bucket a rule, or `false` for none. */
export interface RateLimitOptions {
  perToken?: RateLimitRule | false;
  perAgent?: RateLimitRule | false;
}

/** Both buckets resolved (null: that bucket is off). */
export interface RateLimits {
  perToken: RateLimitRule | null;
  perAgent: RateLimitRule | null;
}

export const DEFAULT_RATE_LIMITS: Readonly<{ perToken: RateLimitRule; perAgent: RateLimitRule }> = Object.freeze({
  perToken: DEFAULTS.rateLimits.perToken,
  perAgent: DEFAULTS.rateLimits.perAgent,
});

function checkRule(rule: unknown, what: string): string | null {
  if (rule === false) return null;
  const r = rule as RateLimitRule | null;
  if (r === null || typeof r !== "object") return `${what} must be { limit, periodMs } or false`;
  if (!Number.isSafeInteger(r.limit) || r.limit < 1 || r.limit > 1_000_000) return `${what}.limit must be an integer from 1 to 1000000`;
  if (!Number.isSafeInteger(r.periodMs) || r.periodMs < 1 || r.periodMs > 86_400_000) {
    return `${what}.periodMs must be an integer from 1 to 86400000`;
  }
  return null;
}

/** Checks the option; returns an error message or null. */
export function checkRateLimitOptions(opt: RateLimitOptions | false): string | null {
  if (opt === false) return null;
  if (opt === null || typeof opt !== "object") return "rateLimits must be { perToken?, perAgent? } or false";
  for (const k of Object.keys(opt)) if (k !== "perToken" && k !== "perAgent") return `rateLimits has no option "${k}" (perToken, perAgent)`;
  return (opt.perToken !== undefined ? checkRule(opt.perToken, "rateLimits.perToken") : null) ??
    (opt.perAgent !== undefined ? checkRule(opt.perAgent, "rateLimits.perAgent") : null);
}

/** The limits in force: `false` turns them off; unset: the defaults when auth is on, none without it. */
export function resolveRateLimits(opt: RateLimitOptions | false | undefined, authOn: boolean): RateLimits | null {
  if (opt === false || (opt === undefined && !authOn)) return null;
  const pick = (v: RateLimitRule | false | undefined, d: RateLimitRule) => (v === false ? null : { ...(v ?? d) });
  const r = { perToken: pick(opt?.perToken, DEFAULT_RATE_LIMITS.perToken), perAgent: pick(opt?.perAgent, DEFAULT_RATE_LIMITS.perAgent) };
  return r.perToken === null && r.perAgent === null ? null : r;
}

/**
 * Checks and charges the buckets of one request; throws 429 `rate_limited`
 * when a bucket refuses. `principal` is the token's bucket key (`t:...`,
 * `s:...`) or null without auth; `agentId` the agent the path names. With
 * `c`, the request's principal is noted for `chargeRequest`.
 */
export type RateCheck = (principal: string | null, agentId: string | undefined, c?: Context) => Promise<void>;

/** One charge's answer: admitted, or refused with the problem to answer and the wait. */
export type RateCharge = { ok: true } | { ok: false; problem: ProblemError; retryAfterMs: number };

/** The token's bucket key of each request the rate check let in (null: no token, auth off). */
const chargedAs = new WeakMap<Context, string | null>();

function charger(limits: RateLimits, rt: { store: Store; clock: Clock }) {
  return async (principal: string | null, agentId: string | undefined): Promise<RateCharge> => {
    const buckets: Array<{ key: string; limit: number; periodMs: number; scope: "token" | "agent" }> = [];
    if (limits.perToken && principal !== null) buckets.push({ key: principal, ...limits.perToken, scope: "token" });
    // An id the agent id guard refuses (400) names no bucket.
    if (limits.perAgent && agentId !== undefined && AGENT_ID.test(agentId)) buckets.push({ key: `a:${agentId}`, ...limits.perAgent, scope: "agent" });
    if (buckets.length === 0) return { ok: true };
    const r = await rt.store.rateLimit({ buckets: buckets.map(({ key, limit, periodMs }) => ({ key, limit, periodMs })), now: rt.clock.now() });
    if (r.status === "allowed") return { ok: true };
    const scope = buckets[r.bucket]?.scope ?? "token";
    const rule = scope === "token" ? limits.perToken! : limits.perAgent!;
    const seconds = Math.max(1, Math.ceil(r.retryAfterMs / 1000));
    const problem = new ProblemError(
      "rate_limited",
      `Too many requests ${scope === "token" ? "with this token" : "to this agent"}: at most ${rule.limit} per ${rule.periodMs} ms; retry in ${seconds} s`,
      { headers: { "retry-after": String(seconds) }, extra: { scope, limit: rule.limit, periodMs: rule.periodMs, retryAfterMs: r.retryAfterMs } },
    );
    return { ok: false, problem, retryAfterMs: r.retryAfterMs };
  };
}

/**
 * @example
 * const check = rateLimiter({ perToken: { limit: 60, periodMs: 60_000 }, perAgent: null }, { store, clock });
 * await check("t:1f2e...", "acme-1"); // throws ProblemError("rate_limited") past 60 a minute
 */
export function rateLimiter(limits: RateLimits | null | undefined, rt: { store: Store; clock: Clock }): RateCheck | null {
  if (!limits) return null;
  const charge = charger(limits, rt);
  return async (principal, agentId, c) => {
    if (c) chargedAs.set(c, principal);
    const r = await charge(principal, agentId);
    if (!r.ok) throw r.problem;
  };
}

/**
 * Charges the buckets the request `c` was charged to (its token's and its
 * agent's) one unit more, for work beyond the request itself. Admitted
 * always when the limits are off or the request was not rate-checked.
 */
export async function chargeRequest(
  c: Context,
  limits: RateLimits | null | undefined,
  rt: { store: Store; clock: Clock },
  agentId: string,
): Promise<RateCharge> {
  if (!limits || !chargedAs.has(c)) return { ok: true };
  return await charger(limits, rt)(chargedAs.get(c)!, agentId);
}
