/**
 * Retention and deletion over HTTP, on the memory store and on Redis: the
 * `events_trimmed` marker (JSON page and SSE stream), time travel and forks
 * before and after the trimmed point (410 `event_trimmed`, or the agent
 * rebuilt from the base checkpoint), the replay bundle of a trimmed agent,
 * and `DELETE /v1/agents/:agentId` (admin only; everything of the agent
 * gone, verdict records kept).
 */
import { describe, expect, it } from "vitest";
import { createGatehouse, defineAgent, type GatehouseOptions, scriptedModel } from "../../mod.ts";
import { memoryStore } from "../../store/memory.ts";
import type { Store } from "../../store/port.ts";
import { redisStore } from "../../store/redis.ts";
import { useRedisServer } from "../helpers/redis.ts";
import { HistoryView } from "../../routes/debug-schemas.ts";
import { EventsPage } from "../../routes/schemas.ts";

const T0 = 1_700_000_000_000;
const server = useRedisServer();
let n = 0;

const ADMIN = "admin-token-0123456789";
const READER = "reader-token-0123456789";

const stores: Array<[string, () => Store]> = [
  ["memory", () => memoryStore()],
  ["redis", () => redisStore({ url: server.url, prefix: `ret${++n}x${Date.now() % 100000}` })],
];

describe.each(stores)("retention over HTTP on the %s store", (_name, makeStore) => {
  function setup(over: Partial<GatehouseOptions> = {}) {
    const clock = { t: T0, now: () => clock.t };
    const agent = defineAgent({
      name: "short",
      instructions: "Answer.",
      model: scriptedModel([{ toolCalls: [{ name: "submit_result", args: { result: "ok" } }] }]),
      retention: { maxEvents: 20, maxTurns: 2, checkpointEvery: 5 },
    });
    const gh = createGatehouse({ agents: [agent], clock, store: makeStore(), ...over });
    const send = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
      gh.fetch(new Request(`http://gh.test${path}`, {
        method,
        headers: body === undefined ? headers : { "content-type": "application/json", ...headers },
        body: body === undefined ? undefined : JSON.stringify(body),
      }));
    const call = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
      const res = await send(method, path, body, headers);
      return { status: res.status, body: await res.json() as any };
    };
    const turns = async (k: number, headers: Record<string, string> = {}) => {
      for (let i = 0; i < k; i++) {
        clock.t += 10;
        expect((await call("POST", "/v1/agents/a1/tasks", { agent: "short", input: `q${i}` }, headers)).status).toBe(202);
        await gh.drain();
      }
    };
    return { gh, clock, send, call, turns };
  }

  it("marks a page that starts before the trimmed point with events_trimmed", async () => {
    const { gh, call, turns } = setup();
    await turns(12);
    const head = (await gh.store.getAgent("a1"))!;
    const base = head.eventsTrimmedThrough;
    expect(base).toBeGreaterThan(0);
    const page = EventsPage.parse((await call("GET", "/v1/agents/a1/events?limit=5")).body);
    expect(page.trimmed).toEqual({ type: "events_trimmed", after: 0, trimmedThrough: base });
    expect(page.events[0].id).toBe(base + 1);
    const fromBase = EventsPage.parse((await call("GET", `/v1/agents/a1/events?after=${base}&limit=5`)).body);
    expect(fromBase.trimmed).toBeUndefined();
    expect(fromBase.events[0].id).toBe(base + 1);
    await gh.close();
  });

  it("sends an events_trimmed frame (id = the trimmed point) before the first event of a stream resumed too early", async () => {
    const { gh, send, turns } = setup();
    await turns(12);
    const base = (await gh.store.getAgent("a1"))!.eventsTrimmedThrough;
    const res = await send("GET", "/v1/agents/a1/events?format=sse", undefined, { "last-event-id": "1" });
    const reader = res.body!.getReader();
    const { value } = await reader.read();
    await reader.cancel();
    const text = new TextDecoder().decode(value);
    expect(text.startsWith(`id: ${base}\nevent: events_trimmed\ndata: {"type":"events_trimmed","after":1,"trimmedThrough":${base}}\n\n`)).toBe(true);
    expect(text).toContain(`\nid: ${base + 1}\n`);
    await gh.close();
  });

  it("answers 410 event_trimmed for history and forks before the trimmed point, and rebuilds the agent after it", async () => {
    const { gh, call, turns } = setup();
    await turns(12);
    const head = (await gh.store.getAgent("a1"))!;
    const base = head.eventsTrimmedThrough;
    for (const id of [1, base]) {
      const r = await call("GET", `/v1/agents/a1/history/${id}`);
      expect(r.status).toBe(410);
      expect(r.body).toMatchObject({ code: "event_trimmed", trimmedThrough: base });
    }
    const fork = await call("POST", "/v1/agents/a1/fork", { atEventId: 1, newAgentId: "f1" });
    expect([fork.status, fork.body.code]).toEqual([410, "event_trimmed"]);
    expect(await gh.store.getAgent("f1")).toBeNull();

    // After the trimmed point: replayed from the base checkpoint, up to the head's snapshot.
    const first = HistoryView.parse((await call("GET", `/v1/agents/a1/history/${base + 1}`)).body);
    expect(first.event.id).toBe(base + 1);
    const last = HistoryView.parse((await call("GET", `/v1/agents/a1/history/${head.lastEventId}`)).body);
    expect(last.snapshot).toEqual(head.snapshot);
    expect(last.messagesFrom).toBe(head.messagesTrimmedThrough);
    const conv = (await gh.store.readConversation("a1"))!;
    expect(last.messages).toEqual(conv.messages);
    const ok = await call("POST", "/v1/agents/a1/fork", { atEventId: head.lastEventId, newAgentId: "f2" });
    expect(ok.status).toBe(201);
    expect((await gh.store.getAgent("f2"))!.state).toBe("done");
    await gh.close();
  });

  it("exports a trimmed agent with its base checkpoint; the loaded bundle answers history like the original", async () => {
    const { gh, call, turns } = setup();
    await turns(12);
    const head = (await gh.store.getAgent("a1"))!;
    const bundle = (await call("GET", "/v1/agents/a1/export")).body;
    expect(bundle.checkpoint.eventId).toBe(head.eventsTrimmedThrough);
    expect(bundle.events[0].id).toBe(head.eventsTrimmedThrough + 1);
    const { loadReplayBundle } = await import("../../routes/replay-bundle.ts");
    const offline = memoryStore();
    loadReplayBundle(offline, bundle);
    const loadedHead = (await offline.getAgent("a1"))!;
    expect([loadedHead.lastEventId, loadedHead.eventsTrimmedThrough]).toEqual([head.lastEventId, head.eventsTrimmedThrough]);
    const { historyAt } = await import("../../actors/replay/time-travel.ts");
    const there = await historyAt(offline, "a1", head.lastEventId);
    expect(there!.snapshot).toEqual(head.snapshot);
    await gh.close();
  });

  it("DELETE /v1/agents/:agentId removes the agent (admin only); verdict records stay readable", async () => {
    const auth = { tokens: [{ token: ADMIN }, { token: READER, verbs: ["read", "enqueue"] as Array<"read" | "enqueue"> }] };
    const { gh, call, turns } = setup({ auth });
    const admin = { authorization: `Bearer ${ADMIN}` };
    const reader = { authorization: `Bearer ${READER}` };
    await turns(3, admin);
    await gh.store.putVerdict({ agentId: "a1", verdictId: "verdict_0123456789ab", turnId: "t", status: "passed", json: '{"verdictId":"verdict_0123456789ab"}' });
    const refused = await call("DELETE", "/v1/agents/a1", undefined, reader);
    expect([refused.status, refused.body.code]).toEqual([403, "forbidden"]);
    expect(await gh.store.getAgent("a1")).not.toBeNull();

    expect(await call("DELETE", "/v1/agents/a1", undefined, admin)).toEqual({ status: 200, body: { deleted: true, agentId: "a1" } });
    expect((await call("GET", "/v1/agents/a1", undefined, admin)).status).toBe(404);
    expect((await call("GET", "/v1/agents/a1/events", undefined, admin)).status).toBe(404);
    expect((await call("GET", "/v1/agents", undefined, admin)).body.agents).toEqual([]);
    expect(await gh.store.getVerdict("verdict_0123456789ab")).toBe('{"verdictId":"verdict_0123456789ab"}');
    const again = await call("DELETE", "/v1/agents/a1", undefined, admin);
    expect([again.status, again.body.code]).toEqual([404, "agent_not_found"]);
    // The id is free: a new agent starts from scratch, its first turn runs.
    await turns(1, admin);
    const fresh = (await gh.store.getAgent("a1"))!;
    expect([fresh.state, fresh.messageCount]).toEqual(["done", 3]);
    await gh.close();
  });
});
