/**
 * What each route needs: a verb and, for routes under `/v1/agents/:agentId`,
 * the agent (whose id the token's tenant prefixes must cover).
 *
 * Fail closed: a route not named here needs `admin` over every tenant, so a
 * route added later is reachable only by full-access tokens until it is
 * mapped. GET under an agent is `read` (reads change nothing). `POST
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

const AGENT_PATH = /^\/v1\/agents\/([^/]+)(\/.*)?$/;

export function requirementOf(method: string, path: string): Requirement {
  const m = AGENT_PATH.exec(path);
  const read = method === "GET" || method === "HEAD";
  if (m) {
    let agentId: string;
    try {
      agentId = decodeURIComponent(m[1]);
    } catch {
      agentId = m[1];
    }
    const rest = m[2] ?? "";
    if (read) return { verb: "read", agentId, global: false, signable: false };
    if (method === "POST" && rest === "/tasks") return { verb: "enqueue", agentId, global: false, signable: true };
    if (method === "POST" && rest === "/tool-results") return { verb: "deliver", agentId, global: false, signable: true };
    if (method === "POST" && rest === "/cancel") return { verb: "cancel", agentId, global: false, signable: true };
    // A stream session (routes/auth/stream-session.ts) reads the agent's events, nothing more.
    if (method === "POST" && rest === "/events/session") return { verb: "read", agentId, global: false, signable: false };
    // What-if writes nothing but spends verifier calls (routes/what-if.ts): its own verb.
    if (method === "POST" && rest === "/what-if") return { verb: "replay", agentId, global: false, signable: false };
    if (method === "DELETE" && /^\/tasks\/[^/]+$/.test(rest)) return { verb: "cancel", agentId, global: false, signable: false };
    return { verb: "admin", agentId, global: false, signable: false };
  }
  // The agents list spans tenants: a tenant-limited token reads it filtered to its prefixes (routes/agent-list.ts).
  if (read && path === "/v1/agents") return { verb: "read", global: false, signable: false };
  // Reads that name no agent and reveal no agent's state.
  if (read && (path === "/v1/machine" || path === "/openapi.json")) return { verb: "read", global: false, signable: false };
  // The tool registry spans every agent's tools: a token over every tenant reads it.
  if (read && (path === "/v1/tools" || /^\/v1\/tools\/[^/]+$/.test(path))) return { verb: "read", global: true, signable: false };
  // A verdict by id names its agent only in the store: tenant tokens read verdicts under their agents instead.
  if (read && /^\/v1\/verdicts\/[^/]+$/.test(path)) return { verb: "read", global: true, signable: false };
  return { verb: "admin", global: true, signable: false };
}
