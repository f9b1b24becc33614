/**
 * common/well-formed.ts (store/port.ts invariant `well-formed-text`): the
 * text form the script store sends (`wellFormedJson` of `JSON.stringify`)
 * is byte for byte the JSON of the value form the memory store keeps
 * (`wellFormedValue`), for any value with lone surrogates anywhere, keys
 * included; escaped pairs and escaped backslashes are left alone.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { hasLoneSurrogate, loneSurrogateAt, wellFormed, wellFormedJson, wellFormedValue } from "../../common/well-formed.ts";

const HI = "\ud800";
const LO = "\udfff";
/** Strings of UTF-16 units biased towards surrogates, backslashes and quotes. */
const text = fc.array(fc.oneof(
  fc.constantFrom(HI, LO, "\udbff", "\udc00", "😀", "\\", '"', "u", "d800", "\\ud800", "é"),
  fc.string({ maxLength: 3 }),
), { maxLength: 6 }).map((parts) => parts.join(""));
const { value } = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: "small" },
    text,
    fc.integer(),
    fc.constant(null),
    fc.boolean(),
    fc.array(tie("value"), { maxLength: 4 }),
    fc.dictionary(text, tie("value"), { maxKeys: 4 }),
  ),
}));

describe("well-formed text", () => {
  it("wellFormedJson(JSON.stringify(v)) is JSON.stringify(wellFormedValue(v)), and the result has no lone surrogate", () => {
    fc.assert(
      fc.property(value, (v) => {
        const fixed = wellFormedValue(v);
        const t = wellFormedJson(JSON.stringify(v));
        expect(t).toBe(JSON.stringify(fixed));
        expect(hasLoneSurrogate(t)).toBe(false);
        expect(/\\ud[89a-f]/.test(t.replaceAll("\\\\", ""))).toBe(false);
        expect(loneSurrogateAt(fixed)).toBeNull();
        // Nothing to replace: the same value back, not a copy.
        expect(wellFormedValue(fixed)).toBe(fixed);
      }),
      { seed: 30_001, numRuns: 2_000, interruptAfterTimeLimit: 20_000 },
    );
  }, 60_000);

  it("keeps pairs (raw and escaped) and escaped backslashes; replaces each lone unit", () => {
    expect(wellFormed(`a${HI}b${LO}😀`)).toBe("a\ufffdb\ufffd😀");
    expect(wellFormed(`${LO}${HI}`)).toBe("\ufffd\ufffd");
    expect(wellFormedJson('"\\ud83d\\ude00 \\\\ud800 \\ud800 \\uDC00"')).toBe('"\\ud83d\\ude00 \\\\ud800 \ufffd \ufffd"');
    expect(wellFormedJson('"\\udc00\\udc00"')).toBe('"\ufffd\ufffd"');
    expect(JSON.parse(wellFormedJson(JSON.stringify({ [`k${HI}`]: [`${LO}`] })))).toEqual({ "k\ufffd": ["\ufffd"] });
  });

  it("loneSurrogateAt names the first string or key holding one", () => {
    expect(loneSurrogateAt({ a: "ok", b: ["x", { c: `y${HI}` }] })).toEqual(["b", 1, "c"]);
    expect(loneSurrogateAt({ a: { [`k${LO}`]: 1 } })).toEqual(["a", "k\ufffd"]);
    expect(loneSurrogateAt(`${HI}`)).toEqual([]);
    expect(loneSurrogateAt({ a: "😀" })).toBeNull();
  });

  it("wellFormedValue copies only what changes and leaves a `__proto__` key an own key", () => {
    const same = { a: [1, "x"], b: { c: "y" } };
    const v = { keep: same, bad: `z${HI}`, ...JSON.parse('{"__proto__": "p\\ud800"}') };
    const out = wellFormedValue(v) as Record<string, unknown>;
    expect(out.keep).toBe(same);
    expect(out.bad).toBe("z\ufffd");
    expect(Object.hasOwn(out, "__proto__")).toBe(true);
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect(JSON.stringify(out)).toBe('{"keep":{"a":[1,"x"],"b":{"c":"y"}},"bad":"z\ufffd","__proto__":"p\ufffd"}');
  });
});
