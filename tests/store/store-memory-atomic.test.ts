/**
 * All or nothing in the memory store (store/port.ts invariant `all-or-nothing`): an
 * exception at any step of any operation leaves the store exactly as it was,
 * and event ids stay dense.
 *
 * The store's test hook `faults` is called before every copy and every write
 * of an operation. For each operation below, the test runs it once per step
 * k = 1, 2, … on a fresh store brought to the same state, throwing at step k,
 * and compares the whole raw state (`memoryStoreState`) before and after;
 * it stops at the first k the operation no longer reaches, and checks that
 * the unfaulted run did change the state (so no case passes by doing nothing).
 */
import { describe, expect, it } from "vitest";
import { memoryStore, memoryStoreState } from "../../store/memory.ts";
import type { ClaimResult, CommitRequest, Store } from "../../store/port.ts";

const T0 = 1_700_000_000_000;
const LEASE = 10_000;
type Claimed = Extract<ClaimResult, { status: "claimed" }>;

class Fault extends Error {}

const dump = (s: Store) => JSON.stringify(memoryStoreState(s));

async function enqueue(s: Store, turnId: string, over: Record<string, unknown> = {}) {
  const r = await s.enqueueTask({
    agentId: "a1", agentName: "calc", workerTarget: "default", input: { q: turnId }, options: {}, turnId, now: T0, ...over,
  });
  if (r.status !== "enqueued") throw new Error(r.status);
}

async function claim(s: Store, now = T0 + 1): Promise<Claimed> {
  const c = await s.claim({ agentId: "a1", workerId: "w1", leaseMs: LEASE, now });
  if (c.status !== "claimed") throw new Error(c.status);
  return c;
}

function commitOf(c: Claimed, over: Partial<CommitRequest> = {}): CommitRequest {
  return {
    agentId: "a1", workerId: "w1", epoch: c.epoch, expectedVersion: c.head.version, turnId: c.head.activeTurnId,
    snapshot: { value: "running" }, state: "running", activeTurnId: c.head.activeTurnId, events: [], messages: [],
    recordToolCalls: [], resolveToolCalls: [], ackMailThrough: 0, release: null, leaseMs: LEASE, now: T0 + 2, ...over,
  };
}

/** An agent with turn_1 active and waiting for two external calls (deadline T0 + 100), turn_2 queued, mail pending. */
async function busy(s: Store) {
  await enqueue(s, "turn_1", { idempotencyKey: "k1" });
  await enqueue(s, "turn_2");
  const c = await claim(s);
  const tc = (id: string) => ({ turnId: "turn_1", toolCallId: id, name: "ask", args: { id }, external: true, deadline: T0 + 100 });
  const r = await s.commit(commitOf(c, { state: "waiting-tools", recordToolCalls: [tc("x1"), tc("x2")], release: { runnableAt: null } }));
  if (r.status !== "applied") throw new Error(r.status);
  await s.deliverToolResult({ agentId: "a1", turnId: "turn_1", toolCallId: "x1", outcome: { ok: true, value: 1 }, afterExecution: "continue", source: "http", now: T0 + 3 });
  return c;
}

interface Case {
  name: string;
  setup(s: Store): Promise<unknown>;
  op(s: Store, ctx: unknown): Promise<unknown>;
}

const CASES: Case[] = [
  { name: "enqueueTask (new agent)", setup: async () => null, op: (s) => enqueue(s, "turn_1", { idempotencyKey: "k" }) },
  { name: "enqueueTask (existing agent)", setup: busy, op: (s) => enqueue(s, "turn_3", { idempotencyKey: "k3" }) },
  {
    name: "deliverToolResult",
    setup: busy,
    op: (s) => s.deliverToolResult({ agentId: "a1", turnId: "turn_1", toolCallId: "x2", outcome: { ok: false, error: { type: "t", message: "m" } }, afterExecution: "continue", source: "http", now: T0 + 4 }),
  },
  { name: "recordToolMethod (new role)", setup: async () => null, op: (s) => s.recordToolMethod({ role: "web_fetcher", method: "fetch_url", now: T0 }) },
  {
    name: "recordToolMethod (alias)",
    setup: (s) => s.recordToolMethod({ role: "web_fetcher", method: "fetch_url", now: T0 }),
    op: (s) => s.recordToolMethod({ role: "web_fetcher", method: "fetchUrl", now: T0 + 1 }),
  },
  {
    name: "recordToolMethod (a batch of calls)",
    setup: (s) => s.recordToolMethod({ role: "web_fetcher", method: "fetch_url", now: T0 }),
    op: (s) => s.recordToolMethod({ role: "web_fetcher", method: "fetch_url", calls: 7, now: T0 + 1 }),
  },
  { name: "requestCancel", setup: busy, op: (s) => s.requestCancel({ agentId: "a1", reason: "stop", now: T0 + 4 }) },
  { name: "requestCancel (named turn)", setup: busy, op: (s) => s.requestCancel({ agentId: "a1", turnId: "turn_1", reason: "stop", now: T0 + 4 }) },
  { name: "cancelTask", setup: busy, op: (s) => s.cancelTask({ agentId: "a1", turnId: "turn_2", reason: "no", now: T0 + 4 }) },
  {
    name: "claim (takes a task)",
    setup: async (s) => {
      await enqueue(s, "turn_1");
      await enqueue(s, "turn_2");
    },
    op: (s) => claim(s),
  },
  { name: "claim (mail only)", setup: busy, op: (s) => claim(s, T0 + 5) },
  {
    name: "claimNext",
    setup: async (s) => {
      await enqueue(s, "turn_1");
      await s.enqueueTask({ agentId: "b2", agentName: "calc", workerTarget: "default", input: "x", options: {}, turnId: "turn_b", now: T0 - 1 });
      await s.claim({ agentId: "b2", workerId: "w9", leaseMs: LEASE, now: T0 });
    },
    op: (s) => s.claimNext({ workerTarget: "default", workerId: "w1", leaseMs: LEASE, now: T0 + 1 }),
  },
  {
    name: "renewLease",
    setup: (s) => enqueue(s, "turn_1").then(() => claim(s)),
    op: (s, c) => s.renewLease({ agentId: "a1", workerId: "w1", epoch: (c as Claimed).epoch, leaseMs: LEASE, now: T0 + 5 }),
  },
  {
    name: "commit (calls, messages, events, mail ack, turn end, release)",
    setup: async (s) => {
      await busy(s);
      return claim(s, T0 + 5);
    },
    op: (s, c) => {
      const cl = c as Claimed;
      return s.commit(commitOf(cl, {
        now: T0 + 6, state: "done", snapshot: { value: "done", big: [1, { x: "y" }] }, activeTurnId: null,
        events: [{ type: "transition", data: { n: 1 } }, { type: "task", data: { status: "done" } }],
        messages: [{ role: "tool", content: "1", toolCallId: "x1" }, { role: "assistant", content: "ok" }],
        ackMailThrough: cl.mail.at(-1)!.seq, release: { runnableAt: null },
      }));
    },
  },
  {
    name: "commit (records and resolves in-process calls, keeps the lease)",
    setup: async (s) => {
      await enqueue(s, "turn_1");
      const c = await claim(s);
      const tc = { turnId: "turn_1", toolCallId: "i1", name: "crunch", args: {}, external: false, deadline: T0 + 100 };
      const r = await s.commit(commitOf(c, { state: "waiting-tools", recordToolCalls: [tc] }));
      return { ...c, head: { ...c.head, version: (r as { version: number }).version } };
    },
    op: (s, c) => s.commit(commitOf(c as Claimed, {
      now: T0 + 3, state: "running",
      resolveToolCalls: [{ toolCallId: "i1", outcome: { ok: true, value: 2 }, afterExecution: "continue" }],
      recordToolCalls: [{ turnId: "turn_1", toolCallId: "i2", name: "crunch", args: { a: 1 }, external: false, deadline: T0 + 200 }],
      events: [{ type: "tool_result", data: {} }],
    })),
  },
  {
    name: "commit refused: tool_call_resolved (gives the agent back)",
    setup: async (s) => {
      await enqueue(s, "turn_1");
      const c = await claim(s);
      const tc = { turnId: "turn_1", toolCallId: "i1", name: "crunch", args: {}, external: false, deadline: T0 + 100 };
      const r = await s.commit(commitOf(c, { state: "waiting-tools", recordToolCalls: [tc] }));
      await s.deliverToolResult({ agentId: "a1", turnId: "turn_1", toolCallId: "i1", outcome: { ok: true, value: 0 }, afterExecution: "continue", source: "watchdog", now: T0 + 3 });
      return { ...c, head: { ...c.head, version: (r as { version: number }).version } };
    },
    op: (s, c) => s.commit(commitOf(c as Claimed, {
      now: T0 + 4, resolveToolCalls: [{ toolCallId: "i1", outcome: { ok: true, value: 2 }, afterExecution: "continue" }],
    })),
  },
  {
    name: "skipDueToolCall",
    setup: busy,
    op: (s) => s.skipDueToolCall({ agentId: "a1", turnId: "turn_1", toolCallId: "x2", retryAt: T0 + 9_000, reason: "error", now: T0 + 200 }),
  },
  {
    name: "putVerdict",
    setup: busy,
    op: (s) => s.putVerdict({ agentId: "a1", verdictId: "v1", turnId: "turn_1", status: "PASS", json: "{}" }),
  },
  {
    name: "commit ending a turn with retention (checkpoint, cut, dropped turns, summary)",
    setup: async (s) => {
      for (let i = 1; i <= 4; i++) {
        await enqueue(s, `turn_${i}`, { idempotencyKey: `k${i}`, now: T0 + i * 10 });
        const c = await claim(s, T0 + i * 10 + 1);
        if (i === 4) return c;
        const r = await s.commit(endTurn(c, i, T0 + i * 10 + 2));
        if (r.status !== "applied") throw new Error(r.status);
      }
    },
    op: (s, c) => s.commit(endTurn(c as Claimed, 4, T0 + 50)),
  },
  { name: "deleteAgent", setup: busy, op: (s) => s.deleteAgent("a1") },
];

/** A commit that ends turn_i with two events, two messages and a tool call, under tight retention limits. */
function endTurn(c: Claimed, i: number, now: number): CommitRequest {
  return commitOf(c, {
    now, state: "done", activeTurnId: null, release: { runnableAt: null }, snapshot: { value: "done", turn: i },
    events: [{ type: "step", data: { i } }, { type: "task", data: { i } }],
    messages: [{ role: "user", content: "", inputOf: `turn_${i}` }, { role: "assistant", content: `a${i}` }],
    recordToolCalls: [{ turnId: `turn_${i}`, toolCallId: `c${i}`, name: "ask", args: {}, external: true, deadline: now + 100 }],
    retention: { maxEvents: 4, maxEventBytes: 1_000_000, maxTurns: 1, checkpointEvery: 2 },
    summary: { content: `s${i}`, through: 0 },
  });
}

describe("memory store: all or nothing", () => {
  for (const c of CASES) {
    it(`${c.name}: a throw at any step leaves the whole state as it was`, async () => {
      let steps = 0;
      for (let k = 1; ; k++) {
        let armed = false;
        let count = 0;
        const s = memoryStore({
          faults: () => {
            if (armed && ++count === k) throw new Fault(`step ${k}`);
          },
        });
        const ctx = await c.setup(s);
        const before = dump(s);
        armed = true;
        let threw = false;
        try {
          await c.op(s, ctx);
        } catch (err) {
          expect(err).toBeInstanceOf(Fault);
          threw = true;
        }
        armed = false;
        if (!threw) {
          // Step k was never reached: the operation has k - 1 steps, and ran whole.
          steps = k - 1;
          expect(dump(s)).not.toBe(before);
          break;
        }
        expect(dump(s)).toBe(before);
        // The store still works: the same operation now applies, and event ids are dense.
        await c.op(s, ctx);
        const h = await s.getAgent("a1");
        if (h) {
          const from = h.eventsTrimmedThrough;
          expect((await s.readEvents("a1", 0, 10_000)).map((e) => e.id)).toEqual(Array.from({ length: h.lastEventId - from }, (_, i) => from + i + 1));
        }
      }
      expect(steps).toBeGreaterThan(0);
    });
  }

  it("a task that cannot be copied (a BigInt 5,000 levels down) is refused with an exception and leaves nothing behind (no key, no event id)", async () => {
    const s = memoryStore();
    await enqueue(s, "turn_1");
    // The copy reaches the leaf only after walking the whole nesting (what a too-deep input does to a smaller stack).
    let deep: unknown = { leaf: 1n };
    for (let i = 0; i < 5_000; i++) deep = { d: deep };
    const before = dump(s);
    await expect(enqueue(s, "turn_2", { input: deep, idempotencyKey: "deep" })).rejects.toThrow();
    expect(dump(s)).toBe(before);
    // The key was not taken, the counter did not move: the next task gets event id 2 and pages read fine.
    await enqueue(s, "turn_3", { idempotencyKey: "deep" });
    expect((await s.readEvents("a1", 0, 100)).map((e) => [e.id, e.turnId])).toEqual([[1, "turn_1"], [2, "turn_3"]]);
  });

  it("a tool result that cannot be copied leaves the call pending and due, so a valid retry is accepted", async () => {
    const s = memoryStore();
    await busy(s);
    const bad = { toJSON() {
      throw new Error("cannot serialise");
    } };
    const before = dump(s);
    await expect(s.deliverToolResult({ agentId: "a1", turnId: "turn_1", toolCallId: "x2", outcome: { ok: true, value: bad }, afterExecution: "continue", source: "http", now: T0 + 4 }))
      .rejects.toThrow("cannot serialise");
    expect(dump(s)).toBe(before);
    expect(await s.dueToolCalls(T0 + 100, 10)).toEqual([{ agentId: "a1", turnId: "turn_1", toolCallId: "x2" }]);
    const ok = await s.deliverToolResult({ agentId: "a1", turnId: "turn_1", toolCallId: "x2", outcome: { ok: true, value: 2 }, afterExecution: "continue", source: "http", now: T0 + 5 });
    expect(ok.status).toBe("accepted");
  });
});
