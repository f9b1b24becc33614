/**
 * Auth configuration: scoped bearer tokens and the keys of signed requests.
 *
 * Invariants:
 * - Configured auth fails closed: every route but `/healthz` and `/readyz`
 *   needs a token (or, on the signed write routes, a valid signature).
 * - A token reaches only agents whose id starts with one of its `tenants`
 *   prefixes, and only with its `verbs`. A plain string token (and every
 *   `bearerTokens` entry) has every tenant and every verb.
 * - The configuration is checked once at construction; a bad entry is an
 *   error then, never a silently open route later.
 * - A token's or webhook secret's `name` (1 to 64 characters of letters,
 *   digits and `._@:-`; names are unique across tokens and across secrets)
 *   is who its requests act as: the routes record it as `by` on what a
 *   person decides or changes (routes/auth.ts `callerName`). A name is not
 *   a secret; the secret never stands in for it.
 */

/**
 * What a request does: read state, enqueue tasks, deliver tool results,
 * cancel, decide on tool calls that need a person's approval (`approve`:
 * `POST .../approvals`), run an agent's verifier or guardians again over its recorded
 * candidates (`replay`: `POST .../what-if`, which spends verifier calls), or
 * operate (reset, watchdog, verdict log, forks).
 */
export type AuthVerb = "read" | "enqueue" | "deliver" | "cancel" | "approve" | "replay" | "admin";
export const AUTH_VERBS: readonly AuthVerb[] = ["read", "enqueue", "deliver", "cancel", "approve", "replay", "admin"];

export interface ScopedToken {
  /** The secret (16 to 4096 visible ASCII characters). */
  token: string;
  /** Who holds it (e.g. `alice@ops`): recorded as `by` on approvals, tool results, cancels, resets, forks and schedule changes made with it. */
  name?: string;
  /** Agent-id prefixes the token reaches (default `[""]`: every agent). */
  tenants?: string[];
  /** Verbs the token may use (default: all seven). */
  verbs?: AuthVerb[];
}

/** The verbs a signed request can carry: the signed write routes. */
export type SignedVerb = "enqueue" | "deliver" | "cancel";
export const SIGNED_VERBS: readonly SignedVerb[] = ["enqueue", "deliver", "cancel"];

/** A Standard Webhooks secret limited to tenants and signed verbs. */
export interface ScopedWebhookSecret {
  /** `whsec_<base64>`. */
  secret: string;
  /** Who signs with it (e.g. `billing-service`): recorded as `by` on the tool results and cancels it delivers. */
  name?: string;
  /** Agent-id prefixes its requests reach (default `[""]`: every agent). */
  tenants?: string[];
  /** Signed routes its requests may use (default all three). */
  verbs?: SignedVerb[];
}

export interface QstashKeys {
  currentSigningKey: string;
  nextSigningKey: string;
  /** Agent-id prefixes QStash-signed requests reach (default `[""]`: every agent). */
  tenants?: string[];
  /** Signed routes they may use (default all three). */
  verbs?: SignedVerb[];
}

export interface RouteAuth {
  /** Full-access tokens (every tenant and verb); kept for configurations that predate `tokens`. */
  bearerTokens?: string[];
  /** Tokens, plain (full access) or scoped. */
  tokens?: Array<string | ScopedToken>;
  /** Standard Webhooks secrets (`whsec_<base64>`), plain (every agent) or scoped; several at once for rotation. */
  webhookSecrets?: Array<string | ScopedWebhookSecret>;
  /** QStash signing keys (both: QStash signs with either during a rotation). */
  qstash?: QstashKeys;
  /**
   * The URL senders call this deployment by (`https://host` or
   * `https://host/prefix`), when it differs from the URL requests arrive
   * with (behind a proxy or load balancer). A QStash token's `sub` must be
   * this plus the request's path and query; unset, the request's own URL.
   */
  publicUrl?: string;
}

/** A signing secret as the middleware holds it. */
export interface NormalizedSigner {
  /** Its `name`, or null. */
  name: string | null;
  tenants: string[];
  verbs: ReadonlySet<AuthVerb>;
}

/** A token as the middleware holds it. */
export interface NormalizedToken {
  token: string;
  /** Its `name`, or null (a plain string token, a `bearerTokens` entry, or a scoped token without one). */
  name: string | null;
  tenants: string[];
  verbs: ReadonlySet<AuthVerb>;
}

const TOKEN = /^[\x21-\x7e]{16,4096}$/;
/** A caller's name: what `by` records (letters, digits and `._@:-`, 1 to 64 characters). */
export const CALLER_NAME = /^[A-Za-z0-9._@:-]{1,64}$/;

/** Why `name` cannot be a caller's name (undefined is fine: no name), or null. */
function checkName(name: unknown, what: string): string | null {
  if (name === undefined || (typeof name === "string" && CALLER_NAME.test(name))) return null;
  return `${what}'s name must be 1 to 64 letters, digits or ._@:- (got ${JSON.stringify(name)?.slice(0, 80)})`;
}

/** Why the names of `entries` clash (the same name twice), or null. */
function checkUniqueNames(entries: readonly unknown[], what: string): string | null {
  const seen = new Set<string>();
  for (const e of entries) {
    const name = typeof e === "object" && e !== null ? (e as { name?: unknown }).name : undefined;
    if (typeof name !== "string") continue;
    if (seen.has(name)) return `two ${what} are named ${JSON.stringify(name)}; a name says who acted, so each is used once`;
    seen.add(name);
  }
  return null;
}

/** Checks an auth configuration; returns an error message or null. */
export function checkAuthConfig(auth: RouteAuth): string | null {
  if (auth === null || typeof auth !== "object") return "auth must be an object";
  const { bearerTokens, tokens, webhookSecrets, qstash } = auth;
  if (bearerTokens !== undefined && !Array.isArray(bearerTokens)) return "auth.bearerTokens must be an array of tokens";
  if (tokens !== undefined && !Array.isArray(tokens)) return "auth.tokens must be an array";
  for (const t of [...(bearerTokens ?? []), ...(tokens ?? [])]) {
    const secret = typeof t === "string" ? t : (t as ScopedToken | null)?.token;
    if (typeof secret !== "string" || !TOKEN.test(secret)) return "each token must be 16 to 4096 visible ASCII characters";
    if (typeof t === "object") {
      const e = checkName(t.name, "a token");
      if (e) return e;
      if (t.tenants !== undefined && (!Array.isArray(t.tenants) || t.tenants.length === 0 || t.tenants.some((p) => typeof p !== "string" || p.length > 256))) {
        return "a token's tenants must be a non-empty array of agent-id prefixes (strings up to 256 characters)";
      }
      if (t.verbs !== undefined && (!Array.isArray(t.verbs) || t.verbs.length === 0 || t.verbs.some((v) => !AUTH_VERBS.includes(v)))) {
        return `a token's verbs must be a non-empty array of ${AUTH_VERBS.join(", ")}`;
      }
    }
  }
  const sameName = checkUniqueNames(tokens ?? [], "tokens");
  if (sameName) return sameName;
  if (webhookSecrets !== undefined) {
    if (!Array.isArray(webhookSecrets)) return "auth.webhookSecrets must be an array of whsec_ secrets";
    for (const w of webhookSecrets) {
      const s = typeof w === "string" ? w : (w as ScopedWebhookSecret | null)?.secret;
      if (typeof s !== "string" || !/^(whsec_)?[A-Za-z0-9+/]{16,}={0,2}$/.test(s)) {
        return "each webhook secret must be whsec_ followed by base64 (at least 16 characters)";
      }
      if (typeof w === "object") {
        const e = checkSignerScope(w, "a webhook secret") ?? checkName(w.name, "a webhook secret");
        if (e) return e;
      }
    }
    const e = checkUniqueNames(webhookSecrets, "webhook secrets");
    if (e) return e;
  }
  if (qstash !== undefined) {
    if (qstash === null || typeof qstash !== "object") return "auth.qstash must be { currentSigningKey, nextSigningKey }";
    for (const k of [qstash.currentSigningKey, qstash.nextSigningKey]) {
      if (typeof k !== "string" || k.length < 16) return "auth.qstash needs currentSigningKey and nextSigningKey (16 characters or more)";
    }
    const e = checkSignerScope(qstash, "auth.qstash");
    if (e) return e;
  }
  if (auth.publicUrl !== undefined) {
    const e = checkPublicUrl(auth.publicUrl);
    if (e) return `auth.publicUrl ${e}`;
  }
  const anyToken = (bearerTokens?.length ?? 0) + (tokens?.length ?? 0) > 0;
  const anySigner = (webhookSecrets?.length ?? 0) > 0 || qstash !== undefined;
  if (!anyToken && !anySigner) return "auth needs at least one token (bearerTokens or tokens), webhook secret or QStash key pair";
  return null;
}

/** Why `url` cannot be a public base URL (http or https, no query, fragment or credentials), or null. */
export function checkPublicUrl(url: unknown): string | null {
  let u: URL;
  try {
    u = new URL(String(url));
  } catch {
    return "must be an absolute http:// or https:// URL";
  }
  if (typeof url !== "string" || (u.protocol !== "http:" && u.protocol !== "https:")) return "must be an absolute http:// or https:// URL";
  if (u.search !== "" || u.hash !== "" || url.includes("?") || url.includes("#")) return "must not carry a query or fragment";
  if (u.username !== "" || u.password !== "") return "must not carry credentials";
  return null;
}

function checkSignerScope(scope: { tenants?: unknown; verbs?: unknown }, what: string): string | null {
  const { tenants, verbs } = scope;
  if (tenants !== undefined && (!Array.isArray(tenants) || tenants.length === 0 || tenants.some((p) => typeof p !== "string" || p.length > 256))) {
    return `${what}'s tenants must be a non-empty array of agent-id prefixes (strings up to 256 characters)`;
  }
  if (verbs !== undefined && (!Array.isArray(verbs) || verbs.length === 0 || verbs.some((v) => !SIGNED_VERBS.includes(v)))) {
    return `${what}'s verbs must be a non-empty array of ${SIGNED_VERBS.join(", ")}`;
  }
  return null;
}

/** The secret text of a webhook secret entry. */
export const webhookSecretText = (w: string | ScopedWebhookSecret) => (typeof w === "string" ? w : w.secret);

/** A signer's scope with its defaults filled in (every tenant, every signed verb). */
export function signerScope(scope: string | { name?: string; tenants?: string[]; verbs?: SignedVerb[] } | undefined): NormalizedSigner {
  const s = typeof scope === "object" ? scope : {};
  return { name: s.name ?? null, tenants: [...(s.tenants ?? [""])], verbs: new Set<AuthVerb>(s.verbs ?? SIGNED_VERBS) };
}

/** The tokens with their defaults filled in. */
export function normalizeTokens(auth: RouteAuth): NormalizedToken[] {
  const all = new Set(AUTH_VERBS);
  return [
    ...(auth.bearerTokens ?? []).map((token) => ({ token, name: null, tenants: [""], verbs: all })),
    ...(auth.tokens ?? []).map((t) =>
      typeof t === "string"
        ? { token: t, name: null, tenants: [""], verbs: all }
        : { token: t.token, name: t.name ?? null, tenants: [...(t.tenants ?? [""])], verbs: new Set(t.verbs ?? AUTH_VERBS) }
    ),
  ];
}

/** A copy of the configuration (so later changes by the caller change nothing). */
export function copyAuth(auth: RouteAuth): RouteAuth {
  return structuredClone(auth);
}
