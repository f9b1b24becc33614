import { describe, expect, it } from "vitest";
import { memoryStore, memoryStoreInternals, memoryStoreState } from "../../store/memory.ts";
import type { Store } from "../../store/port.ts";
import { memoryStateReader } from "../helpers/store-state.ts";
import { storeConformance } from "./store-conformance.ts";
import { admissionConformance } from "./store-admission-conformance.ts";

admissionConformance("memory", async () => ({ store: memoryStore(), cleanup: async () => {} }));

storeConformance("memory", async () => {
  const store = memoryStore();
  return {
    store,
    state: memoryStateReader(store),
    cleanup: async () => {},
    idempotencyEntries: async (agentId) => memoryStoreInternals(store)!.idempotencyEntries(agentId),
    putRawToolEntry: async (role, entry) => memoryStoreInternals(store)!.putRawToolEntry(role, entry),
    cutEvents: async (agentId, through) => memoryStoreInternals(store)!.cutEvents(agentId, through),
  };
});

describe("memoryStoreState (tests only)", () => {
  it("is a deep copy, survives a { ...store } wrapper, and is refused for other stores", async () => {
    const store = memoryStore();
    await store.enqueueTask({ agentId: "a1", agentName: "calc", workerTarget: "default", input: { n: 1 }, options: {}, turnId: "t1", now: 1 });
    const wrapped: Store = { ...store };
    const d = memoryStoreState(wrapped);
    expect(d.agents.map(([id]) => id)).toEqual(["a1"]);
    expect(d.ready).toEqual([["default", [["a1", 1]]]]);
    const inputs = d.agents[0][1].inputs as Array<[string, { n: number }]>;
    expect(inputs).toEqual([["t1", { n: 1 }]]);
    inputs[0][1].n = 2;
    expect((memoryStoreState(store).agents[0][1].inputs as Array<[string, { n: number }]>)[0][1].n).toBe(1);
    expect(() => memoryStoreState({ ...store, kind: "redis" } as Store & { kind: "redis" })).not.toThrow();
    expect(() => memoryStoreState({ kind: "redis" } as unknown as Store)).toThrow(/needs a memoryStore/);
  });

  it("the state reader of the tests sees every record of the agent and only its index entries", async () => {
    const store = memoryStore();
    const state = memoryStateReader(store);
    const enqueue = (agentId: string, turnId: string, now: number) =>
      store.enqueueTask({ agentId, agentName: "calc", workerTarget: "default", input: 1, options: {}, turnId, now });
    await enqueue("a1", "t1", 1);
    const s1 = await state("a1");
    await enqueue("b1", "t2", 2);
    expect(await state("a1")).toEqual(s1);
    await enqueue("a1", "t3", 3);
    const s2 = await state("a1");
    expect(s2).not.toEqual(s1);
    expect(s2.ready).toEqual({ default: 1 });
    await store.putVerdict({ agentId: "a1", verdictId: "v1", turnId: "t1", status: "PASS", json: "{}" });
    expect(Object.keys((await state("a1")).verdicts)).toEqual(["v1"]);
    expect(await state("nobody")).toEqual({ records: {}, ready: {}, deadlines: {}, verdicts: {} });
  });
});
