/**
 * `POST /v1/events`: delivers a named event `{ name, data, id? }` to every
 * tool call waiting for that name (tools/define.ts `waitFor`).
 *
 * Invariant (store/port.ts `named-event-waits`): the event reaches the calls
 * that began waiting for its name at or before its first arrival, in the
 * tenants the caller reaches (a token's or a signer's `tenants`: an event
 * from a tenant-limited caller never resolves another tenant's call); each
 * call takes it once (first result wins, through `deliverToolResult`, one
 * atomic operation per call), with `data` as its successful result, checked
 * against the tool's contract like any delivered result. The answer counts
 * the calls this request resolved: `{ delivered: n }`.
 *
 * Dedup: the event's `id` (else the `Idempotency-Key` header, else the
 * signed message's id, else a fresh one) keys its first arrival for a day.
 * A retry with the same id reaches only the waits that began before the
 * first arrival and are still pending (ones the first attempt did not reach
 * before it failed); those it resolved left the index: it resolves nothing
 * twice, and `delivered` counts what this request resolved. A call resolved by
 * something else (another event, a timeout) or whose turn ended is dropped
 * from the index. No retention: a wait that begins after the event's
 * arrival does not see it (docs/http.md "Named events").
 */
import { z } from "@hono/zod-openapi";
import { logGrew } from "./live-feed.ts";
import { BODY_PROBLEMS, defineRoute, json, jsonBody, routeApp } from "./define.ts";
import { callerName, signedIdempotencyKey, tenantsOf } from "./auth.ts";
import type { RouteRuntime } from "./runtime.ts";
import { checkDeliveredResult } from "./tool-contract.ts";
import { EVENT_NAME } from "../common/event-name.ts";
import type { EventWaiter } from "../store/port.ts";

export const NamedEventRequest = z.strictObject({
  name: z.string().regex(EVENT_NAME, "1 to 200 of letters, digits and _ . : / @ # -")
    .describe("The event's name: every tool call waiting for it (`waitFor`) takes it"),
  data: z.unknown().describe("The event's data: the waiting calls' result (default null)"),
  id: z.string().min(1).max(200).optional()
    .describe("The event's id: a retry with the same id within a day reaches the same waits and resolves nothing twice (default: the `Idempotency-Key` header, else a fresh id)"),
}).openapi("NamedEventRequest");

export const NamedEventDelivered = z.object({
  delivered: z.int().describe("The waiting calls this request resolved (a retry with the same id resolves none twice: it counts only the ones it reached)"),
  eventId: z.string().describe("The event's id (the one given, or the one made up)"),
}).openapi("NamedEventDelivered");

const deliverNamedEvent = defineRoute({
  method: "post",
  path: "/v1/events",
  operationId: "deliverNamedEvent",
  summary: "Deliver a named event to every tool call waiting for its name (in the caller's tenants)",
  tags: ["agents"],
  request: { body: jsonBody(NamedEventRequest) },
  responses: { 200: json("Delivered to the waiting calls (none is not an error)", NamedEventDelivered) },
}, [...BODY_PROBLEMS], { verb: "deliver", signable: true });

/** Statuses after which a wait is gone for good: it leaves the index. */
const GONE = new Set(["duplicate", "already_resolved", "turn_finished", "unknown_call", "agent_not_found", "not_external", "delegated_call"]);

export function namedEventRoutes(rt: RouteRuntime) {
  return routeApp(rt).openapi(deliverNamedEvent, async (c) => {
    const body = c.req.valid("json");
    const eventId = body.id ?? c.req.header("idempotency-key") ?? signedIdempotencyKey(c) ?? crypto.randomUUID();
    const tenants = tenantsOf(c);
    const { waits } = await rt.store.eventWaits({ name: body.name, eventId, now: rt.clock.now() });
    const reached = tenants === null ? waits : waits.filter((w) => tenants.some((t) => w.agentId.startsWith(t)));
    const outcome = { ok: true as const, value: body.data ?? null };
    let delivered = 0;
    const gone: EventWaiter[] = [];
    for (const w of reached) {
      const checked = await checkDeliveredResult(rt, w, outcome, "continue");
      const r = await rt.store.deliverToolResult({
        ...w, ...checked, source: "http", event: body.name, by: callerName(c), now: rt.clock.now(),
      });
      if (r.status === "accepted") delivered++;
      if (r.status === "accepted") {
        logGrew(rt, w.agentId);
        rt.wake(w.agentId, c.req.raw);
      }
      if (GONE.has(r.status)) gone.push(w);
    }
    if (gone.length > 0) await rt.store.eventWaits({ name: body.name, eventId, drop: gone, now: rt.clock.now() });
    return c.json({ delivered, eventId }, 200);
  });
}
