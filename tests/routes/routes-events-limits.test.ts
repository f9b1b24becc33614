/**
 * Bounded reads and fan-out of `GET /v1/agents/:agentId/events`: pages cut at
 * a byte budget (at least one event, `more` to read on) and caps on open SSE
 * streams per agent and per process (429 too_many_streams), with the slot
 * released however a stream ends.
 */
import { describe, expect, it } from "vitest";
import { createGatehouse, defineAgent, scriptedModel } from "../../mod.ts";
import type { GatehouseOptions } from "../../mod.ts";
import { EventsPage } from "../../routes/schemas.ts";

function setup(extra: Partial<GatehouseOptions> = {}) {
  const agent = defineAgent({ name: "echo", instructions: "", model: scriptedModel([{ text: "ok" }]) });
  const gh = createGatehouse({ agents: [agent], sse: { pollMs: 5 }, ...extra });
  const call = (method: string, path: string, body?: unknown, init: RequestInit = {}) =>
    gh.fetch(new Request(`http://gh.test${path}`, {
      method,
      headers: body === undefined ? {} : { "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
      ...init,
    }));
  const task = async (agentId: string, input: string) => {
    const res = await call("POST", `/v1/agents/${agentId}/tasks`, { agent: "echo", input });
    expect(res.status).toBe(202);
  };
  return { gh, call, task };
}

describe("events: pages bounded by bytes", () => {
  it("a page stops at the byte budget, holds at least one event, says more; paging visits every event once", async () => {
    const { gh, call, task } = setup({ maxEventPageBytes: 4_000 });
    for (let i = 0; i < 3; i++) await task("a1", `${i}:` + "x".repeat(3_000));
    await gh.drain();
    const total = (await gh.store.getAgent("a1"))!.lastEventId;
    const first = EventsPage.parse(await (await call("GET", "/v1/agents/a1/events?limit=500")).json());
    expect(first.events.length).toBeGreaterThanOrEqual(1);
    expect(first.events.length).toBeLessThan(total);
    expect(first.more).toBe(true);
    const size = first.events.reduce((n, e) => n + new TextEncoder().encode(JSON.stringify(e)).byteLength, 0);
    // Over budget only when one event alone is larger than the budget.
    if (first.events.length > 1) expect(size).toBeLessThanOrEqual(4_000);
    const ids: number[] = [];
    let after = 0;
    for (let guard = 0; guard < 100; guard++) {
      const page = EventsPage.parse(await (await call("GET", `/v1/agents/a1/events?after=${after}&limit=500`)).json());
      ids.push(...page.events.map((e) => e.id));
      after = page.nextAfter;
      if (!page.more) break;
    }
    expect(ids).toEqual(Array.from({ length: total }, (_, i) => i + 1));
  });

  it("one event larger than the budget comes alone", async () => {
    const { gh, call, task } = setup({ maxEventPageBytes: 100 });
    await task("a1", "y".repeat(5_000));
    await gh.drain();
    const page = EventsPage.parse(await (await call("GET", "/v1/agents/a1/events")).json());
    expect(page.events.map((e) => e.id)).toEqual([1]);
    expect(page.more).toBe(true);
  });

  it("an SSE write is bounded the same way: the stream still delivers every event", async () => {
    const { gh, call, task } = setup({ maxEventPageBytes: 2_000 });
    for (let i = 0; i < 3; i++) await task("a1", `${i}:` + "z".repeat(1_500));
    await gh.drain();
    const total = (await gh.store.getAgent("a1"))!.lastEventId;
    const ac = new AbortController();
    const res = await call("GET", "/v1/agents/a1/events?format=sse", undefined, { signal: ac.signal });
    const reader = res.body!.getReader();
    const dec = new TextDecoder();
    let text = "";
    let writes = 0;
    while ((text.match(/^id: /gm) ?? []).length < total) {
      const { value, done } = await reader.read();
      if (done) break;
      writes++;
      text += dec.decode(value);
    }
    expect((text.match(/^id: (\d+)$/gm) ?? []).map((l) => Number(l.slice(4)))).toEqual(Array.from({ length: total }, (_, i) => i + 1));
    expect(writes).toBeGreaterThan(1);
    ac.abort();
    await reader.cancel().catch(() => {});
  });
});

describe("events: caps on open streams", () => {
  const sse = (call: ReturnType<typeof setup>["call"], agentId: string) => {
    const ac = new AbortController();
    return call("GET", `/v1/agents/${agentId}/events?format=sse`, undefined, { signal: ac.signal }).then((res) => ({ res, ac }));
  };

  it("refuses streams beyond the per-agent and per-process caps with 429 and Retry-After; a closed stream frees its slot", async () => {
    const { gh, call, task } = setup({ sse: { pollMs: 5, maxStreamsPerAgent: 2, maxStreams: 3 } });
    for (const id of ["a1", "a2", "a3"]) await task(id, "hi");
    await gh.drain();
    const s1 = await sse(call, "a1");
    const s2 = await sse(call, "a1");
    expect([s1.res.status, s2.res.status]).toEqual([200, 200]);
    const third = await sse(call, "a1");
    expect(third.res.status).toBe(429);
    expect(third.res.headers.get("retry-after")).toBe("5");
    expect(third.res.headers.get("content-type")).toBe("application/problem+json");
    expect((await third.res.json()).code).toBe("too_many_streams");
    // JSON pages are not streams: never capped.
    expect((await call("GET", "/v1/agents/a1/events")).status).toBe(200);
    const s3 = await sse(call, "a2");
    expect(s3.res.status).toBe(200);
    const overall = await sse(call, "a3");
    expect(overall.res.status).toBe(429);
    await overall.res.body?.cancel();
    // A client that goes away frees its slot (request signal) ...
    s1.ac.abort();
    const s4 = await sse(call, "a1");
    expect(s4.res.status).toBe(200);
    // ... and so does a body that is cancelled.
    await s2.res.body!.cancel();
    const s5 = await sse(call, "a3");
    expect(s5.res.status).toBe(200);
    for (const s of [s3, s4, s5]) {
      s.ac.abort();
      await s.res.body?.cancel().catch(() => {});
    }
    // All slots free again.
    const again = await Promise.all([sse(call, "a1"), sse(call, "a1"), sse(call, "a2")]);
    expect(again.map((s) => s.res.status)).toEqual([200, 200, 200]);
    for (const s of again) {
      s.ac.abort();
      await s.res.body?.cancel().catch(() => {});
    }
  });
});
