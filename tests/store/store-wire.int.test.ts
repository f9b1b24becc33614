/**
 * The commit arguments' wire codes (store/script/wire.ts,
 * store/lua/includes/wire.lua):
 * - the TypeScript and Lua lists of fragments are the same, in the same order;
 * - packing then unwiring gives any text without control characters back
 *   byte for byte (random texts made of fragments and other pieces, JSON
 *   texts), in TypeScript and in Lua on a real Redis (the same answers);
 * - the commit arguments of a turn of the benchmark agent are shorter
 *   packed (tests/store/event-log-migration.int.test.ts and the store conformance
 *   suites check that what Redis stores is what it stored before).
 */
import { readFileSync } from "node:fs";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import Redis from "ioredis";
import { FRAGMENTS, unwire, wireEvent, wireMessage, wireRecord, wireResolution } from "../../store/script/wire.ts";
import { useRedisServer } from "../helpers/redis.ts";

const LUA = readFileSync(new URL("../../store/lua/includes/wire.lua", import.meta.url), "utf8");
const luaFragments = () => [...LUA.matchAll(/^ {2}\[=\[(.*)\]=\],$/gm)].map((m) => m[1]);

const TYPES = ["step", "tool_call", "tool_result", "transition", "task", "chunk", "custom"];
const MACHINE_EVENTS = ["MODEL_STEP", "TOOL_RESULT", "TASK_STARTED", "CANCEL", undefined];
const packers = [
  ...TYPES.map((t) => (s: string) => wireEvent({ type: t, data: {} }, s)),
  ...MACHINE_EVENTS.map((m) => (s: string) => wireEvent({ type: "transition", data: { event: { type: m } } }, s)),
  wireRecord, wireResolution, wireMessage,
];

/** Texts without control characters, made mostly of the fragments (so every code gets used) and bits of JSON. */
const piece = fc.oneof(
  fc.constantFrom(...FRAGMENTS),
  fc.constantFrom('"', "{", "}", ",", ":", "[", "]", '"x"', "1", "null"),
  fc.string({ maxLength: 6 }).map((s) => s.replace(/[\x00-\x1f]/g, "")),
);
const text = fc.array(piece, { maxLength: 12 }).map((ps) => ps.join(""));

describe("wire codes", () => {
  it("the Lua list is the TypeScript list; codes fit in 1..31; fragments hold no control byte and no closing long bracket", () => {
    expect(luaFragments()).toEqual([...FRAGMENTS]);
    expect(FRAGMENTS.length).toBeLessThanOrEqual(31);
    expect(new Set(FRAGMENTS).size).toBe(FRAGMENTS.length);
    for (const f of FRAGMENTS) {
      expect(/[\x00-\x1f]/.test(f)).toBe(false);
      expect(f.includes("]=]")).toBe(false);
    }
  });

  it("packing then unwiring gives the text back (any text without control characters, every kind)", () => {
    fc.assert(fc.property(text, fc.nat(), (t, k) => {
      const packed = packers[k % packers.length](t);
      expect(unwire(packed)).toBe(t);
      expect(packed.length).toBeLessThanOrEqual(t.length);
    }), { numRuns: 3000, seed: 20261130 });
    fc.assert(fc.property(fc.jsonValue({ maxDepth: 3 }), fc.nat(), (v, k) => {
      const t = JSON.stringify({ type: TYPES[k % TYPES.length], data: v }).slice(1);
      expect(unwire(packers[k % packers.length](t))).toBe(t);
    }), { numRuns: 1000, seed: 20261131 });
  });

  it("packs the arguments of a step", () => {
    const tail = '"type":"step","data":{"phase":"started","step":1}}';
    expect(wireEvent({ type: "step" }, tail)).toBe("\x011}}");
    const result = '"type":"tool_result","data":{"toolCallId":"c1","name":"work","durationMs":0,"contractValidation":{"applied":false,"passed":true,"mismatch":null,"expectedKeys":[],"actualKeys":[]},"ref":1}}';
    expect(wireEvent({ type: "tool_result" }, result)).toBe('\x06"c1","name":"work","durationMs":0\x09,"ref":1}}');
    expect(wireMessage('{"role":"tool","toolCallId":"c1","content":"{\\"n\\":1}"}')).toBe('\x1b"c1"\x1f"{\\"n\\":1}"}');
  });
});

describe("wire codes in Lua (Redis)", () => {
  const server = useRedisServer();
  let raw: Redis;
  beforeAll(async () => {
    raw = new Redis(server.url);
  });
  afterAll(async () => {
    raw?.disconnect();
  });

  it("commit.lua's unwire answers what the TypeScript unwire does", async () => {
    const script = `${LUA}\nlocal out = {}\nfor i = 1, #ARGV do out[i] = unwire(ARGV[i]) end\nreturn out`;
    const samples = fc.sample(fc.tuple(text, fc.nat()), { numRuns: 400, seed: 20261132 }).map(([t, k]) => packers[k % packers.length](t));
    samples.push(FRAGMENTS.map((_, i) => String.fromCharCode(i + 1)).join("|"), "", "plain");
    const back = await raw.eval(script, 0, ...samples) as string[];
    expect(back).toEqual(samples.map(unwire));
  });
});
