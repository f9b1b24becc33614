/**
 * What each route needs: a verb and, for routes under `/v1/agents/:agentId`,
 * the agent (whose id the token's tenant prefixes must cover).
 *
 * Each route declares its access where it is declared
 * (`defineRoute(config, problems, access)`, routes/define.ts); this module
 * keeps what the routes declared (`declareAccess`) and answers
 * `requirementOf(method, path)` from it. There is no second list of paths:
 * a route added later is mapped by its own declaration
 * (tests/docs/public-face.test.ts checks every route declares one, and that the
 * table answers as the hand-written one did).
 *
 * Fail closed for a request that matches no declared route (an unknown path
 * or method: the route answers 404 or 405 once let in): under
 * `/v1/agents/:agentId` a read (GET, HEAD) is `read` of that agent (reads
 * change nothing) and anything else `admin` of it; elsewhere `admin` over
 * every tenant. HEAD is answered as GET.
 *
 * The declarations, in words: GET under an agent is `read`. `POST
 * .../what-if` writes nothing but runs the agent's verifier (or a guardian)
 * once per recorded candidate, which may be a paid model: it is `replay`, a
 * verb of its own, so a `read` token cannot spend verifier calls. `POST
 * .../fork` is `admin` over the source here; routes/fork.ts checks the new
 * id against the token too.
 */
import type { AuthVerb } from "./config.ts";

export interface Requirement {
  verb: AuthVerb;
  /** The agent addressed (decoded), when the path names one. */
  agentId?: string;
  /** Whether only a token over every tenant (`""`) may use it (no agent in the path, but agents' data in the answer). */
  global: boolean;
  /** Whether a signed request (Standard Webhooks, QStash) may stand in for a token. */
  signable: boolean;
}

/**
 * Who may call a route, declared with it:
 * - `"public"`: never asks for a token (health, the debugger page's shell);
 * - a verb: a token holding it, over the agent of the path when there is one;
 * - `{ verb, global: true }`: the route names no agent but answers with
 *   agents' data, so only a token over every tenant may call it;
 * - `{ verb, signable: true }`: a signed request (Standard Webhooks, QStash)
 *   may stand in for a token.
 */
export type RouteAccess = "public" | AuthVerb | { verb: AuthVerb; global?: boolean; signable?: boolean };

/** A route's access as declared, with its method and OpenAPI path (`/v1/agents/{agentId}`). */
export interface DeclaredAccess {
  method: string;
  path: string;
  access: RouteAccess;
}

const declared = new Map<string, DeclaredAccess>();

/** Notes a route's access (called by `defineRoute`; a route declared twice keeps its first declaration). */
export function declareAccess(method: string, path: string, access: RouteAccess): void {
  const key = `${method.toUpperCase()} ${path}`;
  if (!declared.has(key)) declared.set(key, { method: method.toUpperCase(), path, access });
}

/** Every route's access as declared so far. */
export function declaredAccess(): readonly DeclaredAccess[] {
  return [...declared.values()];
}

interface Entry {
  method: string;
  re: RegExp;
  /** Index of the `{agentId}` capture, or -1. */
  agentGroup: number;
  verb: AuthVerb;
  global: boolean;
  signable: boolean;
}

/** The regex of an OpenAPI path (`{param}` is one non-empty segment), and the capture index of `{agentId}`. */
function compile(path: string): { re: RegExp; agentGroup: number } {
  let group = 0;
  let agentGroup = -1;
  const body = path.split(/(\{[A-Za-z0-9_]+\})/).map((part) => {
    if (!part.startsWith("{")) return part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    group++;
    if (part === "{agentId}") agentGroup = group;
    return "([^/]+)";
  }).join("");
  return { re: new RegExp(`^${body}$`), agentGroup };
}

let table: Entry[] = [];
let tableOf = -1;

/** The table of the routes declared so far (rebuilt when more were declared). */
function entries(): Entry[] {
  if (tableOf === declared.size) return table;
  table = [];
  for (const d of declared.values()) {
    if (d.access === "public") continue;
    const a = typeof d.access === "string" ? { verb: d.access } : d.access;
    table.push({ method: d.method, ...compile(d.path), verb: a.verb, global: a.global === true, signable: a.signable === true });
  }
  tableOf = declared.size;
  return table;
}

function decoded(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

const AGENT_PATH = /^\/v1\/agents\/([^/]+)(\/.*)?$/;

export function requirementOf(method: string, path: string): Requirement {
  const asMethod = method === "HEAD" ? "GET" : method;
  for (const e of entries()) {
    if (e.method !== asMethod) continue;
    const m = e.re.exec(path);
    if (!m) continue;
    return {
      verb: e.verb,
      ...(e.agentGroup > 0 ? { agentId: decoded(m[e.agentGroup]) } : {}),
      global: e.global,
      signable: e.signable,
    };
  }
  // No declared route: fail closed (see the module comment).
  const read = method === "GET" || method === "HEAD";
  const agent = AGENT_PATH.exec(path);
  if (agent) return { verb: read ? "read" : "admin", agentId: decoded(agent[1]), global: false, signable: false };
  return { verb: "admin", global: true, signable: false };
}
