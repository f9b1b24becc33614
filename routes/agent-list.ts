/**
 * `GET /v1/agents`: the agents, newest `updatedAt` first, paged with an
 * opaque cursor, filtered by state, definition name and `updatedSince`.
 *
 * Backed by the store's agents index (store/port.ts, invariant `agents-index`): the
 * index gives ids in order, the heads give state and definition. `updatedSince`
 * is answered by the index itself; `state` and `agent` are applied to the
 * heads, reading at most SCAN_BUDGET index entries per request, so a page
 * may come back short (even empty) with a cursor to read on from. A token
 * limited to tenant prefixes (routes/auth.ts) sees only agents whose id
 * starts with one of them, filtered the same way: the cursor is the last
 * index entry read, so paging skips nothing and repeats nothing.
 */
import { defineRoute, json, routeApp } from "./define.ts";
import type { RouteRuntime } from "./runtime.ts";
import { AgentList, AgentListQuery } from "./debug-schemas.ts";
import { agentState } from "./schemas.ts";
import type { AgentIndexEntry } from "../store/port.ts";
import type { AgentHead } from "../store/types.ts";
import { tenantsOf } from "./auth.ts";

/** Index entries read at most per request. */
export const SCAN_BUDGET = 1_000;
const DEFAULT_LIMIT = 50;

const iso = (ms: number) => new Date(ms).toISOString();

export const encodeCursor = (e: AgentIndexEntry) => `${e.updatedAt}_${e.agentId}`;
function decodeCursor(c: string): AgentIndexEntry {
  const i = c.indexOf("_");
  return { updatedAt: Number(c.slice(0, i)), agentId: c.slice(i + 1) };
}

export function agentSummary(h: AgentHead) {
  return {
    agentId: h.agentId,
    agent: h.agentName,
    state: agentState(h.state),
    activeTurnId: h.activeTurnId,
    version: h.version,
    lastEventId: h.lastEventId,
    pendingTasks: h.pendingTasks,
    messageCount: h.messageCount,
    createdAt: iso(h.createdAt),
    updatedAt: iso(h.updatedAt),
    updatedAtMs: h.updatedAt,
  };
}

const listAgents = defineRoute({
  method: "get",
  path: "/v1/agents",
  operationId: "listAgents",
  summary: "List agents (newest updatedAt first) with filters and cursor paging",
  description: "Backed by the store's agents index. `state` and `agent` filter at most 1 000 index entries per " +
    "request: a short page with a `nextCursor` means read on.",
  tags: ["debugging"],
  request: { query: AgentListQuery },
  responses: { 200: json("A page of agents", AgentList) },
}, ["validation_failed"], "read");

export function agentListRoutes(rt: RouteRuntime) {
  return routeApp(rt).openapi(listAgents, async (c) => {
    const q = c.req.valid("query");
    const limit = q.limit ?? DEFAULT_LIMIT;
    // A tenant-limited token sees only its prefixes' agents: one more filter, with the same paging.
    const tenants = tenantsOf(c);
    const filtered = q.state !== undefined || q.agent !== undefined || tenants !== null;
    const out: ReturnType<typeof agentSummary>[] = [];
    let after: AgentIndexEntry | undefined = q.cursor !== undefined ? decodeCursor(q.cursor) : undefined;
    let scanned = 0;
    let exhausted = false;
    while (out.length < limit && scanned < SCAN_BUDGET) {
      const want = filtered ? Math.min(SCAN_BUDGET - scanned, Math.max(limit * 2, 50)) : limit - out.length;
      const page = await rt.store.listAgents({
        limit: want,
        ...(q.updatedSince !== undefined ? { updatedSince: q.updatedSince } : {}),
        ...(after ? { after } : {}),
      });
      const heads = await Promise.all(page.map((e) => rt.store.getAgent(e.agentId)));
      let cutShort = false;
      for (let i = 0; i < page.length; i++) {
        scanned++;
        after = page[i];
        if (tenants !== null && !tenants.some((p) => page[i].agentId.startsWith(p))) continue;
        const h = heads[i];
        // An index entry without a head cannot come from the store's own writes; skip it rather than fail the page.
        if (!h) continue;
        if (q.state !== undefined && h.state !== q.state) continue;
        if (q.agent !== undefined && h.agentName !== q.agent) continue;
        out.push(agentSummary(h));
        if (out.length === limit) {
          cutShort = i < page.length - 1;
          break;
        }
      }
      // A page shorter than asked, read to its end, is the end of the index.
      if (page.length < want && !cutShort) {
        exhausted = true;
        break;
      }
    }
    return c.json({ agents: out, nextCursor: exhausted || !after ? null : encodeCursor(after) }, 200);
  });
}
