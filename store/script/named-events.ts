/**
 * Named events of the script store (store/port.ts `NamedEvents`, invariant
 * `named-event-waits`): one call of store/lua/event_waits.lua per home
 * (every shard on the sharded layout), merged oldest first.
 */
import type { EventWaiter, EventWaitsRequest, EventWaitsResult } from "../port.ts";
import { checkEventWaitsRequest, EVENT_ARRIVAL_KEPT_MS, EVENT_WAITS_LIMIT } from "../named-events.ts";
import { int, j } from "./values.ts";
import { json, scriptOp } from "./operation.ts";
import type { ScriptContext } from "./context.ts";

/** store/lua/event_waits.lua */
export const EVENT_WAITS = scriptOp({
  script: "event_waits",
  keys: ["waits", "arrival"],
  argv: ["now_str", "keep_ms", "drop", "limit"],
  words: ["waits"],
}, (_word, payload) => json<{ since: number; waits: string[] }>(payload));

const member = (w: EventWaiter) => `${w.agentId}\n${w.turnId}\n${w.toolCallId}`;

function waiterOf(m: string): EventWaiter {
  const a = m.indexOf("\n");
  const b = m.indexOf("\n", a + 1);
  return { agentId: m.slice(0, a), turnId: m.slice(a + 1, b), toolCallId: m.slice(b + 1) };
}

export async function eventWaits(c: ScriptContext, req: EventWaitsRequest): Promise<EventWaitsResult> {
  const { shards, keys, run } = c;
  checkEventWaitsRequest(req);
  const now = int(req.now, "now");
  // A wait to drop sits in the home of its agent.
  const drops = new Map<string, string[]>();
  for (const w of req.drop ?? []) {
    const home = keys.homeOf(w.agentId).prefix;
    drops.set(home, [...(drops.get(home) ?? []), member(w)]);
  }
  const answers = await Promise.all(shards.map((s) => {
    const drop = drops.get(s.prefix);
    return run(EVENT_WAITS, {
      waits: s.waits(req.name), arrival: s.namedEvent(req.eventId), now_str: now, keep_ms: String(EVENT_ARRIVAL_KEPT_MS),
      drop: drop ? j(drop) : "", limit: String(EVENT_WAITS_LIMIT),
    });
  }));
  return {
    since: Math.min(...answers.map((a) => a.since)),
    waits: answers.flatMap((a) => a.waits).map(waiterOf),
  };
}
