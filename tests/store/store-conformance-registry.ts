/**
 * The tool registry part of the store conformance suite (store/port.ts
 * invariants `tool-registry` and `contract-validation`), run by tests/store/store-conformance.ts on every adapter.
 * `ctx()` hands out the current test's store, its peers (other clients on
 * the same data, when the adapter can open them) and the handle.
 */
import { describe, expect, it } from "vitest";
import type { ContractValidation } from "../../common/contract-validation.ts";
import type { Store } from "../../store/port.ts";
import { StoreInputError } from "../../store/keys.ts";

export interface RegistryContext {
  store: Store;
  clients(n: number): Promise<Store[]>;
  /** Stores a registry entry as given (an entry written by an older version). */
  putRawToolEntry?(role: string, entry: unknown): Promise<void>;
}

const T0 = 1_700_000_000_000;

export function toolRegistryConformance(ctx: () => RegistryContext): void {
  describe("tool registry (recordToolMethod, getToolRole, listToolRoles)", () => {
    it("records a role's method on its first call, and counts later calls without adding it again", async () => {
      const { store } = ctx();
      expect(await store.getToolRole("web_fetcher")).toBeNull();
      const first = await store.recordToolMethod({ role: "web_fetcher", method: "fetch_url", now: T0 });
      expect(first).toEqual({
        status: "recorded", added: "method",
        entry: { role: "web_fetcher", methods: ["fetch_url"], aliases: [], calls: 1, createdAt: T0, updatedAt: T0 },
      });
      const again = await store.recordToolMethod({ role: "web_fetcher", method: "fetch_url", now: T0 + 5 });
      expect(again.added).toBe("none");
      expect(again.entry).toMatchObject({ methods: ["fetch_url"], aliases: [], calls: 2, createdAt: T0, updatedAt: T0 + 5 });
      expect(await store.getToolRole("web_fetcher")).toEqual(again.entry);
    });

    it("adds a batch of calls at once (`calls`), also on the write that adds the method", async () => {
      const { store } = ctx();
      const first = await store.recordToolMethod({ role: "web_fetcher", method: "fetch_url", calls: 3, now: T0 });
      expect(first).toEqual({
        status: "recorded", added: "method",
        entry: { role: "web_fetcher", methods: ["fetch_url"], aliases: [], calls: 3, createdAt: T0, updatedAt: T0 },
      });
      const batch = await store.recordToolMethod({ role: "web_fetcher", method: "fetch_url", calls: 99, now: T0 + 5 });
      expect(batch.added).toBe("none");
      expect(batch.entry).toMatchObject({ methods: ["fetch_url"], calls: 102, updatedAt: T0 + 5 });
      const alias = await store.recordToolMethod({ role: "web_fetcher", method: "fetchUrl", calls: 2, now: T0 + 6 });
      expect([alias.added, alias.entry.calls]).toEqual(["alias", 104]);
      expect(await store.getToolRole("web_fetcher")).toEqual(alias.entry);
    });

    it("refuses `calls` that is not a positive integer with StoreInputError and writes nothing", async () => {
      const { store } = ctx();
      await store.recordToolMethod({ role: "parser", method: "parse", now: T0 });
      const before = await store.listToolRoles();
      for (const calls of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 53, "2" as unknown as number]) {
        await expect(store.recordToolMethod({ role: "parser", method: "parse", calls, now: T0 + 1 })).rejects.toThrow(StoreInputError);
        await expect(store.recordToolMethod({ role: "fresh", method: "fresh", calls, now: T0 + 1 })).rejects.toThrow(StoreInputError);
      }
      expect(await store.listToolRoles()).toEqual(before);
    });

    it("keeps another spelling of a known method as an alias (once), and a new method as a method", async () => {
      const { store } = ctx();
      await store.recordToolMethod({ role: "web_fetcher", method: "fetch_url", now: T0 });
      const alias = await store.recordToolMethod({ role: "web_fetcher", method: "fetchUrl", now: T0 + 1 });
      expect(alias.added).toBe("alias");
      expect(alias.entry.aliases).toEqual([{ alias: "fetchUrl", method: "fetch_url" }]);
      expect((await store.recordToolMethod({ role: "web_fetcher", method: "fetchUrl", now: T0 + 2 })).added).toBe("none");
      const fetch = await store.recordToolMethod({ role: "web_fetcher", method: "fetch", now: T0 + 3 });
      expect(fetch.added).toBe("method");
      expect(fetch.entry).toMatchObject({ methods: ["fetch_url", "fetch"], aliases: [{ alias: "fetchUrl", method: "fetch_url" }], calls: 4 });
    });

    it("keeps roles apart and lists them by name", async () => {
      const { store } = ctx();
      await store.recordToolMethod({ role: "web_fetcher", method: "fetch_url", now: T0 });
      await store.recordToolMethod({ role: "parser", method: "parse", now: T0 + 1 });
      // The same spelling under another role is that role's own method, not an alias.
      await store.recordToolMethod({ role: "parser", method: "fetchUrl", now: T0 + 2 });
      const list = await store.listToolRoles();
      expect(list.map((e) => [e.role, e.methods, e.aliases])).toEqual([
        ["parser", ["parse", "fetchUrl"], []],
        ["web_fetcher", ["fetch_url"], []],
      ]);
    });

    it("refuses a role or method that is not a tool name with StoreInputError and writes nothing", async () => {
      const { store } = ctx();
      await store.recordToolMethod({ role: "parser", method: "parse", now: T0 });
      const before = await store.listToolRoles();
      for (const bad of [{ role: "a b", method: "m" }, { role: "r", method: "" }, { role: "x".repeat(65), method: "m" }, { role: "r", method: "m\n" }]) {
        await expect(store.recordToolMethod({ ...bad, now: T0 + 1 })).rejects.toThrow(StoreInputError);
      }
      await expect(store.getToolRole("a:b")).rejects.toThrow(StoreInputError);
      expect(await store.listToolRoles()).toEqual(before);
    });

    it("loads an entry stored without methods (an older entry) and keeps its other fields when a method is recorded", async () => {
      const c = ctx();
      if (!c.putRawToolEntry) throw new Error("the adapter's handle must be able to store a raw registry entry");
      await c.putRawToolEntry("web_fetcher", { purpose: "fetch and extract content from URLs" });
      await c.putRawToolEntry("legacy_parser", { purpose: "parse pages", methods: ["parse"], aliases: [] });
      expect(await c.store.getToolRole("web_fetcher")).toEqual({
        role: "web_fetcher", purpose: "fetch and extract content from URLs", methods: [], aliases: [], calls: 0, createdAt: null, updatedAt: null,
      });
      const r = await c.store.recordToolMethod({ role: "web_fetcher", method: "fetch_url", now: T0 });
      expect(r.added).toBe("method");
      expect(r.entry).toMatchObject({ purpose: "fetch and extract content from URLs", methods: ["fetch_url"], calls: 1, createdAt: T0 });
      // A method the older entry lists is not added twice.
      expect((await c.store.recordToolMethod({ role: "legacy_parser", method: "parse", now: T0 })).entry.methods).toEqual(["parse"]);
      expect((await c.store.listToolRoles()).map((e) => e.role)).toEqual(["legacy_parser", "web_fetcher"]);
    });

    it("loses no method, alias or count under concurrent calls from several clients", async () => {
      const c = ctx();
      const clients = await c.clients(3);
      const methods = Array.from({ length: 12 }, (_, i) => `m${i}`);
      const calls = methods.flatMap((m, i) => [m, `M${i}`]); // each method and, racing it, another spelling
      // Every other write carries a batch of 3 calls (a flush of the registry writer).
      await Promise.all(calls.map((m, i) =>
        clients[i % clients.length].recordToolMethod({ role: "busy", method: m, ...(i % 2 === 1 ? { calls: 3 } : {}), now: T0 + i })
      ));
      const e = (await c.store.getToolRole("busy"))!;
      expect(e.calls).toBe(calls.length * 2);
      // Per form exactly one spelling is the method and the other its alias.
      expect(e.methods).toHaveLength(12);
      expect(e.aliases).toHaveLength(12);
      for (let i = 0; i < 12; i++) {
        const spellings = [`m${i}`, `M${i}`];
        const method = e.methods.find((m) => spellings.includes(m))!;
        expect(e.aliases).toContainEqual({ alias: spellings.find((s) => s !== method), method });
      }
    });
  });

  describe("contractValidation on resolved tool calls (invariant `contract-validation`)", () => {
    const cv: ContractValidation = {
      applied: true, passed: false, mismatch: "missing_required_key", expectedKeys: ["body"], actualKeys: ["status"],
    };
    async function pending(store: Store, external: boolean) {
      await store.enqueueTask({ agentId: "cv1", agentName: "calc", workerTarget: "default", input: "x", options: {}, turnId: "t1", now: T0 });
      const c = await store.claim({ agentId: "cv1", workerId: "w1", leaseMs: 10_000, now: T0 });
      if (c.status !== "claimed") throw new Error(c.status);
      const r = await store.commit({
        agentId: "cv1", workerId: "w1", epoch: c.epoch, expectedVersion: c.head.version, turnId: "t1", snapshot: { value: "waiting-tools" },
        state: "waiting-tools", activeTurnId: "t1", events: [], messages: [],
        recordToolCalls: [{ turnId: "t1", toolCallId: "c1", name: "fetch_url", args: {}, external, deadline: T0 + 100 }],
        resolveToolCalls: [], ackMailThrough: 0, release: null, leaseMs: 10_000, now: T0 + 1,
      });
      if (r.status !== "applied") throw new Error(r.status);
      return { epoch: c.epoch, version: r.version };
    }

    it("a delivered result keeps the given record, on the call and on its tool_result_received event", async () => {
      const { store } = ctx();
      await pending(store, true);
      const outcome = { ok: false as const, error: { type: "contract_violation", message: "no body", retryable: false } };
      const d = await store.deliverToolResult({
        agentId: "cv1", turnId: "t1", toolCallId: "c1", outcome, afterExecution: "continue", source: "http", contractValidation: cv, now: T0 + 2,
      });
      expect(d.status).toBe("accepted");
      expect((await store.getToolCalls("cv1", "t1"))[0].contractValidation).toEqual(cv);
      const ev = (await store.readEvents("cv1", 0, 100)).filter((e) => e.type === "tool_result_received");
      expect(ev.map((e) => e.data.contractValidation)).toEqual([cv]);
    });

    it("an in-process result resolved by a commit keeps its record; one without gets \"not applied\"", async () => {
      const { store } = ctx();
      const { epoch, version } = await pending(store, false);
      const r = await store.commit({
        agentId: "cv1", workerId: "w1", epoch, expectedVersion: version, turnId: "t1", snapshot: { value: "running" }, state: "running",
        activeTurnId: "t1", events: [], messages: [], recordToolCalls: [{ turnId: "t1", toolCallId: "c2", name: "parse", args: {}, external: false, deadline: T0 + 100 }],
        resolveToolCalls: [{ toolCallId: "c1", outcome: { ok: true, value: { body: "x" } }, afterExecution: "continue", contractValidation: { ...cv, passed: true, mismatch: null, actualKeys: ["body"] } }],
        ackMailThrough: 0, release: null, leaseMs: 10_000, now: T0 + 2,
      });
      expect(r.status).toBe("applied");
      const r2 = await store.commit({
        agentId: "cv1", workerId: "w1", epoch, expectedVersion: (r as { version: number }).version, turnId: "t1", snapshot: { value: "running" },
        state: "running", activeTurnId: "t1", events: [], messages: [], recordToolCalls: [],
        resolveToolCalls: [{ toolCallId: "c2", outcome: { ok: true, value: 1 }, afterExecution: "continue" }],
        ackMailThrough: 0, release: null, leaseMs: 10_000, now: T0 + 3,
      });
      expect(r2.status).toBe("applied");
      const calls = await store.getToolCalls("cv1", "t1");
      expect(calls.find((c) => c.toolCallId === "c1")!.contractValidation).toEqual({ ...cv, passed: true, mismatch: null, actualKeys: ["body"] });
      expect(calls.find((c) => c.toolCallId === "c2")!.contractValidation).toEqual({ applied: false, passed: true, mismatch: null, expectedKeys: [], actualKeys: [] });
    });
  });
}
