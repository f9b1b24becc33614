/**
 * Retention, memory store against the Lua scripts (store/retention.ts,
 * store/lua/includes/retention.lua): random runs of turns of random sizes
 * under random limits, applied to a memory store and to a Redis store side
 * by side; after every turn both must answer the same head, the same kept
 * events, the same base checkpoint, the same conversation, the same turn
 * records and the same number of idempotency entries. The conformance suite
 * pins chosen cases; this checks the two implementations of the rules
 * agree everywhere else.
 */
import fc from "fast-check";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { redisStore } from "../../redis.ts";
import { keySpace } from "../../store/keys.ts";
import { memoryStore, memoryStoreInternals } from "../../store/memory.ts";
import type { ClaimResult, Store } from "../../store/port.ts";
import { useRedisServer } from "../helpers/redis.ts";

const T0 = 1_700_000_000_000;
const server = useRedisServer();
let raw: Redis;
let n = 0;
beforeAll(async () => {
  raw = new Redis(server.url);
});
afterAll(async () => {
  raw?.disconnect();
});

type Claimed = Extract<ClaimResult, { status: "claimed" }>;

const turnArb = fc.record({
  events: fc.integer({ min: 0, max: 12 }),
  messages: fc.integer({ min: 0, max: 4 }),
  calls: fc.integer({ min: 0, max: 2 }),
  keyed: fc.boolean(),
  big: fc.boolean(),
  summary: fc.boolean(),
});
const limitsArb = fc.record({
  maxEvents: fc.integer({ min: 1, max: 40 }),
  maxEventBytes: fc.integer({ min: 200, max: 5_000 }),
  maxTurns: fc.integer({ min: 1, max: 4 }),
  checkpointEvery: fc.integer({ min: 1, max: 15 }),
});

type ValueOf<A> = A extends fc.Arbitrary<infer T> ? T : never;

async function turn(s: Store, i: number, t: ValueOf<typeof turnArb>, limits: ValueOf<typeof limitsArb>) {
  const now = T0 + i * 10;
  const turnId = `turn_${i}`;
  await s.enqueueTask({
    agentId: "a1", agentName: "calc", workerTarget: "default", input: `input ${i}`, options: {}, turnId, now,
    ...(t.keyed ? { idempotencyKey: `key ${i}` } : {}),
  });
  const c = await s.claim({ agentId: "a1", workerId: "w1", leaseMs: 10_000, now: now + 1 }) as Claimed;
  const head = (await s.getAgent("a1"))!;
  const r = await s.commit({
    agentId: "a1", workerId: "w1", epoch: c.epoch, expectedVersion: c.head.version, turnId,
    snapshot: { value: "done", turn: i }, state: "done", activeTurnId: null,
    events: Array.from({ length: t.events }, (_, k) => ({ type: "step", data: { k, pad: t.big ? "x".repeat(300) : "" } })),
    messages: [
      { role: "user", content: "", inputOf: turnId },
      ...Array.from({ length: t.messages }, (_, k) => ({ role: "assistant" as const, content: `m${i}.${k}` })),
    ],
    recordToolCalls: Array.from({ length: t.calls }, (_, k) => ({ turnId, toolCallId: `c${k}`, name: "ask", args: {}, external: true, deadline: now + 100 })),
    resolveToolCalls: [], ackMailThrough: 0, release: { runnableAt: null }, leaseMs: 10_000, now: now + 2,
    retention: limits,
    ...(t.summary ? { summary: { content: `up to ${head.messageCount}`, through: head.messageCount } } : {}),
  });
  expect(r.status).toBe("applied");
  return r;
}

async function view(s: Store, turns: number) {
  const statuses: unknown[] = [];
  for (let i = 0; i < turns; i++) {
    statuses.push(await s.getTurn("a1", `turn_${i}`));
    statuses.push((await s.getToolCalls("a1", `turn_${i}`)).map((c) => c.toolCallId));
  }
  return {
    head: await s.getAgent("a1"),
    events: await s.readEvents("a1", 0, 10_000),
    checkpoint: await s.readCheckpoint("a1"),
    conversation: await s.readConversation("a1"),
    fromSummary: await s.readConversation("a1", { fromSummary: true }),
    statuses,
  };
}

describe("retention: memory store and Lua scripts agree", () => {
  it("on random turns under random limits", async () => {
    let cuts = 0;
    let drops = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(turnArb, { minLength: 1, maxLength: 14 }), limitsArb, async (turns, limits) => {
        const prefix = `rd${++n}`;
        const mem = memoryStore();
        const red = redisStore({ url: server.url, prefix });
        try {
          for (let i = 0; i < turns.length; i++) {
            const a = await turn(mem, i, turns[i], limits);
            const b = await turn(red, i, turns[i], limits);
            expect(b).toEqual(a);
            const [vm, vr] = [await view(mem, i + 1), await view(red, i + 1)];
            expect(vr, `after turn ${i}`).toEqual(vm);
            expect(await raw.hlen(keySpace(prefix).agent("a1").idem)).toBe(memoryStoreInternals(mem)!.idempotencyEntries("a1"));
          }
          const h = (await mem.getAgent("a1"))!;
          if (h.eventsTrimmedThrough > 0) cuts++;
          if (h.messagesTrimmedThrough > 0) drops++;
        } finally {
          await red.close();
        }
      }),
      { numRuns: 40, seed: 20261128 },
    );
    expect(cuts).toBeGreaterThan(10);
    expect(drops).toBeGreaterThan(5);
  });
});
