/**
 * Replay bundles: `GET /v1/agents/:agentId/export`, loadReplayBundle and
 * createReplayGatehouse. A run exported, sent through JSON and served from a fresh
 * memory store answers the agent, its events and its history at every event
 * exactly as the original did, and a bundle this version does not read is
 * refused whole.
 */
import { describe, expect, it } from "vitest";
import { memoryStore, ReplayBundleError } from "../../mod.ts";
import { createReplayGatehouse, loadReplayBundle } from "../../replay.ts";
import { memoryStoreState } from "../../store/memory.ts";
import { helperAgent, setup } from "../helpers/debug.ts";

describe("replay bundles", () => {
  it("exports a run that, served offline, answers the agent, its events and its history as the original", async () => {
    const { gh, call } = setup();
    await call("POST", "/v1/agents/a1/tasks", { agent: "helper", input: "hello" });
    await gh.drain();
    const events = await gh.store.readEvents("a1", 0, 1000);
    const tc = events.find((e) => e.type === "tool_call" && e.data.external === true)!;
    await call("POST", "/v1/agents/a1/tool-results", { turnId: tc.turnId, toolCallId: tc.data.toolCallId, outcome: { ok: true, value: "yes" } });
    await gh.drain();
    await call("POST", "/v1/agents/a1/tasks", { agent: "helper", input: { second: true } });
    await gh.drain();

    const exp = await call("GET", "/v1/agents/a1/export");
    expect(exp.status).toBe(200);
    const bundle = JSON.parse(JSON.stringify(exp.body));
    expect(bundle).toMatchObject({ schemaVersion: 1, agentId: "a1", agent: "helper" });
    expect(bundle.machine.meta.states.map((s: { name: string }) => s.name)).toContain("waiting-tools");
    expect(Object.keys(bundle.inputs)).toHaveLength(2);

    const offline = await createReplayGatehouse(bundle, { agents: [helperAgent()] });
    const get = async (path: string) => (await offline.fetch(new Request(`http://replay.test${path}`))).json();
    const { lastEventId } = (await gh.store.getAgent("a1"))!;
    const original = (await call("GET", "/v1/agents/a1")).body;
    const served = await get("/v1/agents/a1");
    expect(served).toEqual(original);
    expect(await get("/v1/agents/a1/events?limit=500")).toEqual((await call("GET", "/v1/agents/a1/events?limit=500")).body);
    for (let id = 1; id <= lastEventId; id++) {
      const h = await get(`/v1/agents/a1/history/${id}`);
      expect(h, `event ${id}`).toEqual((await call("GET", `/v1/agents/a1/history/${id}`)).body);
    }
    expect(await offline.store.getTurn("a1", events[0].turnId!)).toEqual(await gh.store.getTurn("a1", events[0].turnId!));
    // The offline copy is a store like any: a fork of it takes the pending call's result and finishes.
    const f = await offline.fetch(new Request("http://replay.test/v1/agents/a1/fork", {
      method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ atEventId: lastEventId, newAgentId: "f1" }),
    }));
    expect(f.status).toBe(201);
    await offline.close();
    await gh.close();
  });

  it("refuses bundles of another version or shape, or an id the store holds, and loads nothing", async () => {
    const { gh, call } = setup();
    await call("POST", "/v1/agents/a1/tasks", { agent: "helper", input: "hello" });
    const bundle = (await call("GET", "/v1/agents/a1/export")).body;
    const store = memoryStore();
    const empty = JSON.stringify(memoryStoreState(store));
    for (const bad of [{ ...bundle, schemaVersion: 2 }, { ...bundle, events: "x" }, null, { ...bundle, events: bundle.events.map((e: { id: number }) => ({ ...e, id: e.id + 1 })) }, { ...bundle, head: { ...bundle.head, agentId: "zz" } }]) {
      expect(() => loadReplayBundle(store, bad)).toThrow(ReplayBundleError);
      expect(JSON.stringify(memoryStoreState(store))).toBe(empty);
    }
    expect(() => loadReplayBundle(store, { ...bundle, schemaVersion: 2 })).toThrow(/schema version 2/);
    loadReplayBundle(store, bundle);
    expect(() => loadReplayBundle(store, bundle)).toThrow(/exists/);
    expect((await call("GET", "/v1/agents/nobody/export")).status).toBe(404);
    await gh.close();
  });

  it("refuses at load, with the part named, bundles whose agent could not be served (snapshot state, schema version, id)", async () => {
    const { gh, call } = setup();
    await call("POST", "/v1/agents/a1/tasks", { agent: "helper", input: "hello" });
    await gh.drain();
    const bundle = (await call("GET", "/v1/agents/a1/export")).body;
    const snap = bundle.head.snapshot;
    expect(snap).not.toBeNull();
    const crafted: Array<[string, unknown, RegExp]> = [
      ["head.snapshot", { ...bundle, head: { ...bundle.head, snapshot: { ...snap, value: "flying" } } }, /unknown state "flying"/],
      ["head.snapshot", { ...bundle, head: { ...bundle.head, snapshot: { ...snap, context: { ...snap.context, schemaVersion: 99 } } } }, /schema version 99/],
      ["head.snapshot", { ...bundle, head: { ...bundle.head, snapshot: { ...snap, context: null } } }, /no context/],
      ["head.state", { ...bundle, head: { ...bundle.head, state: "done" === snap.value ? "failed" : "done" } }, /not its snapshot's state/],
      ["head.state", { ...bundle, head: { ...bundle.head, snapshot: null, state: "flying" } }, /not a state/],
      ["agentId", { ...bundle, agentId: "../x", head: { ...bundle.head, agentId: "../x" } }, /must match/],
      ["agentId", { ...bundle, agentId: "..", head: { ...bundle.head, agentId: ".." } }, /must match/],
      ["checkpoint.snapshot", { ...bundle, checkpoint: { eventId: 1, at: 0, snapshot: { ...snap, value: 3 }, messageIndex: 0 }, events: bundle.events.slice(1) }, /unknown state 3/],
    ];
    for (const [field, bad, reason] of crafted) {
      const store = memoryStore();
      const empty = JSON.stringify(memoryStoreState(store));
      let err: unknown;
      try {
        loadReplayBundle(store, bad);
      } catch (e) {
        err = e;
      }
      expect(err, field).toBeInstanceOf(ReplayBundleError);
      expect((err as ReplayBundleError).field).toBe(field);
      expect((err as ReplayBundleError).code).toBe("invalid_replay_bundle");
      expect((err as Error).message).toMatch(reason);
      expect(JSON.stringify(memoryStoreState(store))).toBe(empty);
      await expect(createReplayGatehouse(bad)).rejects.toThrow(ReplayBundleError);
    }
    // The bundle as exported still loads and serves.
    const offline = await createReplayGatehouse(bundle);
    expect((await offline.fetch(new Request("http://replay.test/v1/agents/a1"))).status).toBe(200);
    await offline.close();
    await gh.close();
  });
});
