/**
 * The tool registry writer (actors/registry/writer.ts) on the memory store
 * with a fake clock and fake timers: the first call of a (role, method) is
 * written at once, later ones in one batched write per flush; a failed write
 * keeps its count; `stop()` writes what is pending; the overlap answer of
 * the first write still reaches the agent through the host's view.
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createRegistryWriter } from "../../actors/registry/writer.ts";
import { createToolRegistryView } from "../../actors/registry/claim-view.ts";
import { silentLogger } from "../../actors/runtime.ts";
import { defineAgent } from "../../agents/define.ts";
import type { RecordToolMethodRequest, Store } from "../../store/port.ts";
import { memoryStore } from "../../store/memory.ts";
import { defineTool } from "../../tools/define.ts";

const T0 = 1_700_000_000_000;

function fixture(flushMs: number | null = 5_000) {
  const inner = memoryStore();
  const writes: RecordToolMethodRequest[] = [];
  let failing = false;
  const store: Store = {
    ...inner,
    recordToolMethod(req) {
      writes.push(req);
      return failing ? Promise.reject(new Error("store down")) : inner.recordToolMethod(req);
    },
  };
  let now = T0;
  const clock = { now: () => now };
  const timers: Array<{ fn: () => void; at: number; cleared: boolean }> = [];
  const logs: Array<{ msg: string; fields?: Record<string, unknown> }> = [];
  const logger = { ...silentLogger, warn: (msg: string, fields?: Record<string, unknown>) => logs.push({ msg, fields }) };
  const writer = createRegistryWriter({
    store, clock, logger, flushMs,
    timers: {
      set: (fn, ms) => {
        const t = { fn, at: now + ms, cleared: false };
        timers.push(t);
        return t;
      },
      clear: (h) => void ((h as { cleared: boolean }).cleared = true),
    },
  });
  const live = () => timers.filter((t) => !t.cleared && t.at !== -1);
  /** Moves the fake time on and fires the timers that are due. */
  async function advance(ms: number) {
    now += ms;
    for (const t of live()) {
      if (t.at <= now) {
        t.at = -1;
        t.fn();
      }
    }
    // Let the flush the timer started finish.
    for (let i = 0; i < 10; i++) await Promise.resolve();
    await new Promise((r) => setTimeout(r, 0));
  }
  return { inner, store, writer, writes, logs, live, advance, setFailing: (f: boolean) => (failing = f) };
}

describe("registry writer", () => {
  it("writes the first call at once, counts the next 99 without a write, and one flush writes their sum", async () => {
    const f = fixture();
    const first = await f.writer.record("web_fetcher", "fetch_url");
    expect(first).toMatchObject({ added: "method", entry: { methods: ["fetch_url"], calls: 1 } });
    expect(f.writes).toHaveLength(1);
    expect(f.live()).toHaveLength(0); // nothing pending: no timer
    for (let i = 0; i < 99; i++) expect(await f.writer.record("web_fetcher", "fetch_url")).toBeNull();
    expect(f.writes).toHaveLength(1);
    expect(f.writer.pending).toBe(99);
    expect(f.live()).toHaveLength(1); // one timer for the whole batch
    await f.advance(4_999);
    expect(f.writes).toHaveLength(1);
    await f.advance(1);
    expect(f.writes.map((w) => [w.role, w.method, w.calls])).toEqual([["web_fetcher", "fetch_url", undefined], ["web_fetcher", "fetch_url", 99]]);
    expect(f.writer.pending).toBe(0);
    expect(await f.inner.getToolRole("web_fetcher")).toMatchObject({ methods: ["fetch_url"], calls: 100, updatedAt: T0 + 5_000 });
    expect(f.live()).toHaveLength(0);
  });

  it("writes one batch per (role, method), and the first call of another method at once", async () => {
    const f = fixture();
    await f.writer.record("web_fetcher", "fetch_url");
    await f.writer.record("web_fetcher", "fetch_url");
    await f.writer.record("parser", "parse");
    await f.writer.record("parser", "parse");
    await f.writer.record("parser", "parse");
    expect(f.writes.map((w) => w.method)).toEqual(["fetch_url", "parse"]);
    await f.writer.flush();
    expect(f.writes.slice(2).map((w) => [w.method, w.calls]).sort()).toEqual([["fetch_url", 1], ["parse", 2]]);
    expect((await f.inner.listToolRoles()).map((e) => [e.role, e.calls])).toEqual([["parser", 3], ["web_fetcher", 2]]);
    // Nothing pending: a flush writes nothing.
    await f.writer.flush();
    expect(f.writes).toHaveLength(4);
  });

  it("a failed flush keeps its counts, logs tool_registry_failed, and the next flush writes them", async () => {
    const f = fixture();
    await f.writer.record("web_fetcher", "fetch_url");
    for (let i = 0; i < 5; i++) await f.writer.record("web_fetcher", "fetch_url");
    f.setFailing(true);
    await f.advance(5_000);
    expect(f.logs.map((l) => [l.msg, l.fields?.calls])).toEqual([["tool_registry_failed", 5]]);
    expect(f.writer.pending).toBe(5);
    expect(f.live()).toHaveLength(1); // tried again at the next interval
    await f.writer.record("web_fetcher", "fetch_url");
    f.setFailing(false);
    await f.advance(5_000);
    expect(f.writes.at(-1)!.calls).toBe(6);
    expect((await f.inner.getToolRole("web_fetcher"))!.calls).toBe(7);
  });

  it("a failed first write throws, keeps its count, and the next call writes both at once", async () => {
    const f = fixture();
    f.setFailing(true);
    await expect(f.writer.record("web_fetcher", "fetch_url")).rejects.toThrow("store down");
    expect(f.writer.pending).toBe(1);
    f.setFailing(false);
    const r = await f.writer.record("web_fetcher", "fetch_url");
    expect(r).toMatchObject({ added: "method", entry: { calls: 2 } });
    expect(f.writes.at(-1)!.calls).toBe(2);
    expect(f.writer.pending).toBe(0);
  });

  it("calls made while the first write is in flight are counted, not written", async () => {
    const f = fixture();
    const all = await Promise.all(Array.from({ length: 10 }, () => f.writer.record("web_fetcher", "fetch_url")));
    expect(all.filter((r) => r !== null)).toHaveLength(1);
    expect(f.writes).toHaveLength(1);
    await f.writer.stop();
    expect((await f.inner.getToolRole("web_fetcher"))!.calls).toBe(10);
  });

  it("stop() clears the timer and writes what is pending; with flushMs null no timer is ever started", async () => {
    const f = fixture();
    await f.writer.record("web_fetcher", "fetch_url");
    await f.writer.record("web_fetcher", "fetch_url");
    await f.writer.record("web_fetcher", "fetch_url");
    expect(f.live()).toHaveLength(1);
    await f.writer.stop();
    expect(f.live()).toHaveLength(0);
    expect(f.writes.at(-1)!.calls).toBe(2);
    expect((await f.inner.getToolRole("web_fetcher"))!.calls).toBe(3);

    const g = fixture(null);
    for (let i = 0; i < 4; i++) await g.writer.record("parser", "parse");
    expect(g.live()).toHaveLength(0);
    await g.advance(60_000);
    expect(g.writes).toHaveLength(1);
    await g.writer.flush();
    expect((await g.inner.getToolRole("parser"))!.calls).toBe(4);
  });

  it("the first call that adds an alias still logs interface_overlap on the agent; its repeats log nothing", async () => {
    const f = fixture();
    const tool = (name: string) => defineTool({ name, role: "web_fetcher", description: "f", parameters: z.object({}), execute: () => ({}) });
    const agent = defineAgent({ name: "a", instructions: "x", model: { name: "m", generate: () => Promise.reject(new Error("unused")) }, tools: [tool("fetch_url"), tool("fetchUrl")] });
    const view = createToolRegistryView({ store: f.store, agent, clock: { now: () => T0 }, logger: silentLogger, agentId: "a1", writer: f.writer });
    const events: Array<[string, Record<string, unknown>]> = [];
    const emit = (type: string, data: Record<string, unknown>) => events.push([type, data]);
    await view.record("fetch_url", emit);
    await view.record("fetch_url", emit);
    expect(events).toEqual([]);
    await view.record("fetchUrl", emit);
    expect(events.map(([t, d]) => [t, d.method, d.overlaps])).toEqual([["interface_overlap", "fetchUrl", [{ methods: ["fetch_url", "fetchUrl"], kind: "alias" }]]]);
    await view.record("fetchUrl", emit);
    await view.record("fetchUrl", emit);
    expect(events).toHaveLength(1);
    expect(f.writes).toHaveLength(2);
    await f.writer.stop();
    expect(await f.inner.getToolRole("web_fetcher")).toMatchObject({ methods: ["fetch_url"], aliases: [{ alias: "fetchUrl", method: "fetch_url" }], calls: 5 });
  });
});
