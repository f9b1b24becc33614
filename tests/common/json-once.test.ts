/**
 * common/json-once.ts: `encode(v, shape)` is `JSON.stringify(v)` byte for
 * byte whatever the value and the shape, and a shared object is stringified
 * once per memo however often it occurs.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { JsonOnce, SHARED, type Shape, SPLICE_MIN } from "../../common/json-once.ts";
import type { Message } from "../../common/message.ts";
import { keySpace } from "../../store/keys.ts";
import { scriptStore } from "../../store/lua-store.ts";
import type { CommitRequest } from "../../store/port.ts";
import { unwire } from "../../store/script/wire.ts";

const LONG_TEXT = "\u2028é\"".repeat(SPLICE_MIN);
const LONG_OBJECT = { z: "z".repeat(SPLICE_MIN), nested: { undef: undefined, n: -0 } };

/** Values JSON.stringify treats in every way it can: dropped, nulled, toJSON, boxed, class instances. */
const odd = fc.constantFrom<unknown>(
  undefined, () => 1, Symbol("s"), NaN, Infinity, -0, new Date(0), new Number(3), new String("x"), new Boolean(false),
  new Map([[1, 2]]), Object.create(null), { toJSON: () => ({ swapped: true }) }, "\u2028\"\\\n", "é\u{1F600}",
  // Long enough to be spliced (SPLICE_MIN), shared between places below.
  LONG_TEXT, LONG_OBJECT, [LONG_OBJECT, LONG_TEXT],
);
const leaf = fc.oneof(fc.jsonValue({ maxDepth: 1 }), odd);
const { value } = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    leaf,
    fc.array(tie("value"), { maxLength: 4 }),
    fc.dictionary(fc.constantFrom("args", "outcome", "data", "event", "toolCalls", "*", "0", "x", "__proto__"), tie("value"), { maxKeys: 4 }),
  ),
}));
const { shape } = fc.letrec((tie) => ({
  shape: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    fc.constant(SHARED as Shape),
    tie("shape").map((s) => [s] as Shape),
    fc.dictionary(fc.constantFrom("args", "outcome", "data", "event", "toolCalls", "*", "0", "x"), tie("shape"), { maxKeys: 3 }) as fc.Arbitrary<Shape>,
  ),
}));

describe("JsonOnce", () => {
  it("encodes exactly like JSON.stringify, for any value and any shape", () => {
    fc.assert(
      fc.property(value, shape, (v, s) => {
        expect(new JsonOnce().encode(v, s)).toBe(JSON.stringify(v));
      }),
      { numRuns: 3000, seed: 20261126 },
    );
  });

  it("gives JSON.stringify's text when the shared value repeats across one memo's encodings", () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 3 }), fc.jsonValue({ maxDepth: 2 }), fc.nat(2 * SPLICE_MIN), (value, other, pad) => {
        const memo = new JsonOnce();
        const args = { value, pad: "p".repeat(pad) };
        const call = { id: "c1", name: "work", args, external: false, deadline: 5 };
        const record = { turnId: "t", toolCallId: "c1", name: "work", args, agentId: "a" };
        const event = { type: "transition", data: { event: { toolCalls: [call, { ...call, args: other }] } } };
        expect(memo.encode(record, { args: SHARED })).toBe(JSON.stringify(record));
        expect(memo.encode(event, { data: { event: { toolCalls: [{ args: SHARED }] } } })).toBe(JSON.stringify(event));
      }),
      { numRuns: 500, seed: 7 },
    );
  });

  it("stringifies a shared object once however many places hold it", () => {
    let calls = 0;
    const args = { toJSON: () => (calls++, { n: 2, big: "x".repeat(SPLICE_MIN) }) };
    const memo = new JsonOnce();
    const call = { id: "c1", name: "work", args };
    const texts = [
      memo.encode({ toolCallId: "c1", args }, { args: SHARED }),
      memo.encode({ type: "tool_call", data: { args } }, { data: { args: SHARED } }),
      memo.encode({ data: { event: { toolCalls: [call] } } }, { data: { event: { toolCalls: [{ args: SHARED }] } } }),
      memo.encode({ role: "assistant", toolCalls: [call] }, { toolCalls: [{ args: SHARED }] }),
      memo.encode({ context: { pending: { c1: { args } } } }, { context: { pending: { "*": { args: SHARED } } } }),
    ];
    expect(calls).toBe(1);
    expect(memo.encoded).toBe(1);
    for (const t of texts) expect(t).toContain(`{"n":2,"big":"${"x".repeat(SPLICE_MIN)}"}`);
    // Without the memo each place encodes it again.
    calls = 0;
    JSON.stringify({ a: args, b: [args] });
    expect(calls).toBe(2);
  });

  it("a long string is shared by value; short values are left to the container's stringify", () => {
    const memo = new JsonOnce();
    const long = "q".repeat(SPLICE_MIN);
    memo.encode({ data: { deliverable: long } }, { data: { deliverable: SHARED } });
    memo.encode({ context: { output: long } }, { context: { output: SHARED } });
    expect(memo.encoded).toBe(1);
    memo.encode({ data: { deliverable: "short", outcome: { ok: true } } }, { data: { deliverable: SHARED, outcome: SHARED } });
    expect(memo.encoded).toBe(1); // small values are neither remembered nor spliced: their container's stringify writes them
  });

  it("a new memo encodes again (nothing outlives one encoding)", () => {
    const args = { n: 1 };
    const a = new JsonOnce();
    a.encode({ args }, { args: SHARED });
    args.n = 2;
    expect(new JsonOnce().encode({ args }, { args: SHARED })).toBe('{"args":{"n":2}}');
  });
});

describe("a commit's script arguments", () => {
  it("are JSON.stringify's texts, and a call's arguments and a result are stringified once per commit", async () => {
    let argsCalls = 0;
    let valueCalls = 0;
    const big = "w".repeat(4 * SPLICE_MIN);
    const args = { toJSON: () => (argsCalls++, { query: big }) };
    const value = { toJSON: () => (valueCalls++, { page: big }) };
    const outcome = { ok: true as const, value };
    const call = { id: "c1", name: "search", args, external: false, deadline: 9 };
    const req: CommitRequest = {
      agentId: "a1", workerId: "w1", epoch: 1, expectedVersion: 2, turnId: "t1", state: "waiting-tools", activeTurnId: "t1",
      snapshot: { status: "active", value: "waiting-tools", historyValue: {}, context: { pending: { c1: { name: "search", args, external: false, deadline: 9 } }, output: null }, children: {} },
      recordToolCalls: [{ turnId: "t1", toolCallId: "c1", name: "search", args, external: false, deadline: 9 }],
      resolveToolCalls: [{ toolCallId: "c0", outcome, afterExecution: "continue" }],
      messages: [{ role: "assistant", content: "", toolCalls: [{ id: "c1", name: "search", args }] } as Message],
      events: [
        { type: "tool_result", data: { toolCallId: "c0", outcome } },
        { type: "transition", data: { seq: 1, from: "waiting-tools", to: "running", event: { type: "TOOL_RESULT", outcome } } },
        { type: "tool_call", data: { toolCallId: "c1", args } },
        { type: "transition", data: { seq: 2, from: "running", to: "waiting-tools", event: { type: "MODEL_STEP", toolCalls: [call] } } },
      ],
      ackMailThrough: 0, release: null, leaseMs: 1000, now: 5,
    };
    let sent: string[] = [];
    const store = scriptStore({
      kind: "redis", keys: keySpace("t"),
      run: (_name, _keys, argv) => {
        sent = argv;
        return Promise.resolve('applied {"version":3,"lastEventId":4,"messagesTrimmedThrough":0}');
      },
      checkEviction: () => Promise.resolve({ policy: null }), close: () => Promise.resolve(),
    });
    await store.commit(req);
    expect(argsCalls).toBe(1);
    expect(valueCalls).toBe(1);
    // Every text is what JSON.stringify writes (toJSON counted apart), once the
    // wire codes (store/script/wire.ts) are put back as commit.lua does.
    const j = JSON.stringify;
    argsCalls = valueCalls = 0;
    sent = sent.map(unwire);
    expect(sent).toContain(j(req.snapshot));
    expect(sent).toContain(j({ ...req.recordToolCalls[0], agentId: "a1", recordedAt: 5 }));
    expect(sent).toContain(j(req.messages[0]));
    for (const e of req.events) expect(sent).toContain(j({ type: e.type, data: e.data }).slice(1));
    expect(sent.filter((a) => a.includes(big)).length).toBe(8);
    // Encoding the same places one by one calls toJSON each time (the resolution not re-encoded here).
    expect(argsCalls + valueCalls).toBe(7);
  });
});
