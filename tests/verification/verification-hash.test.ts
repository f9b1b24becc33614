/**
 * Canonical JSON and the candidate hash: the same value always gives the same
 * bytes, whatever the key order or number spelling, so a replayed candidate
 * is recognised and a different one never is.
 */
import { describe, expect, it } from "vitest";
import { sha256Hex } from "../../common/hex.ts";
import { candidateHash, canonicalJson } from "../../verification/hash.ts";

describe("canonicalJson", () => {
  it("sorts keys, at every depth, and writes no whitespace", () => {
    expect(canonicalJson({ b: 1, a: { d: [3, { z: 1, y: 2 }], c: null } })).toBe('{"a":{"c":null,"d":[3,{"y":2,"z":1}]},"b":1}');
    expect(canonicalJson({ b: 1, a: 2 })).toBe(canonicalJson({ a: 2, b: 1 }));
  });

  it("keeps array order (arrays are sequences, not sets)", () => {
    expect(canonicalJson([2, 1])).not.toBe(canonicalJson([1, 2]));
  });

  it("writes numbers in one form: 1, 1.0 and 1e0 are equal; -0 is 0; exponents as JavaScript prints them", () => {
    expect(canonicalJson(JSON.parse('{"n":1.0}'))).toBe('{"n":1}');
    expect(canonicalJson(JSON.parse('{"n":1e0}'))).toBe('{"n":1}');
    expect(canonicalJson(-0)).toBe("0");
    expect(canonicalJson(JSON.parse("-0.0"))).toBe("0");
    expect(canonicalJson(1e21)).toBe("1e+21");
    expect(canonicalJson(0.1 + 0.2)).toBe("0.30000000000000004");
  });

  it("orders unicode keys by UTF-16 code units and writes strings as JSON does", () => {
    // "z" (U+007A) < "é" (U+00E9) < "😀" (U+D83D U+DE00) < "ｚ" (U+FF5A): code-unit order, as RFC 8785.
    expect(canonicalJson({ "ｚ": 4, "😀": 3, "é": 2, z: 1 })).toBe('{"z":1,"é":2,"😀":3,"ｚ":4}');
    expect(canonicalJson("line\nquote\"tab\t")).toBe('"line\\nquote\\"tab\\t"');
    expect(canonicalJson("\ud800")).toBe('"\\ud800"'); // a lone surrogate is escaped, never emitted raw
  });

  it("does not normalize unicode: precomposed and decomposed strings are different candidates", () => {
    expect(canonicalJson("\u00e9")).not.toBe(canonicalJson("e\u0301"));
  });

  it("drops undefined members, writes undefined array items as null and honours toJSON", () => {
    expect(canonicalJson({ a: undefined, b: [undefined, 1] })).toBe('{"b":[null,1]}');
    expect(canonicalJson({ at: new Date(Date.UTC(2024, 0, 28)) })).toBe('{"at":"2024-01-28T00:00:00.000Z"}');
  });

  it("refuses values without a JSON form", () => {
    expect(() => canonicalJson(Number.NaN)).toThrow(TypeError);
    expect(() => canonicalJson({ x: Infinity })).toThrow(/non-finite/);
    expect(() => canonicalJson(1n)).toThrow(/bigint/);
    expect(() => canonicalJson({ f: () => 1 })).toThrow(/function/);
  });
});

describe("candidateHash", () => {
  it("is SHA-256 (Web Crypto) in lowercase hex", async () => {
    expect(await sha256Hex("abc")).toBe("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  });

  it("is the SHA-256 of the canonical JSON", async () => {
    expect(await candidateHash({ b: 1, a: [1, "x"] })).toBe(await sha256Hex('{"a":[1,"x"],"b":1}'));
  });

  it("is equal for equal candidates written differently, different for different ones", async () => {
    const h = await candidateHash(JSON.parse('{"summary":"ok","n":1.0,"tags":["a"],"meta":{"y":-0,"x":"é"}}'));
    expect(await candidateHash({ meta: { x: "é", y: 0 }, tags: ["a"], n: 1, summary: "ok" })).toBe(h);
    expect(await candidateHash({ meta: { x: "é", y: 0 }, tags: ["a"], n: 2, summary: "ok" })).not.toBe(h);
    expect(await candidateHash({ meta: { x: "e\u0301", y: 0 }, tags: ["a"], n: 1, summary: "ok" })).not.toBe(h);
    expect(h).toMatch(/^[0-9a-f]{64}$/);
  });
});
