/**
 * The Deno shim must behave like vitest for everything the suites rely on:
 * this file runs under both runners (vitest directly, Deno through
 * tests/deno/vitest-shim.ts), so any difference in hook order, test options
 * or matcher semantics fails one of the two runs.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, test } from "vitest";

const log: string[] = [];

describe("hook order", () => {
  beforeAll(() => {
    log.push("outer beforeAll");
    return () => log.push("outer beforeAll teardown");
  });
  afterAll(() => {
    log.push("outer afterAll 1");
  });
  afterAll(() => {
    log.push("outer afterAll 2");
  });
  beforeEach(() => {
    log.push("outer beforeEach");
    return () => log.push("outer beforeEach teardown");
  });
  afterEach(() => {
    log.push("outer afterEach");
  });

  it("runs outer hooks around an outer test", () => {
    log.push("test 1");
    expect(log).toEqual(["outer beforeAll", "outer beforeEach", "test 1"]);
  });

  describe("inner", () => {
    beforeAll(async () => {
      await new Promise((r) => setTimeout(r, 1));
      log.push("inner beforeAll");
    });
    afterAll(() => {
      log.push("inner afterAll");
    });
    beforeEach(() => {
      log.push("inner beforeEach");
    });
    afterEach(() => {
      log.push("inner afterEach 1");
    });
    afterEach(() => {
      log.push("inner afterEach 2");
    });

    it("runs before-hooks outermost first", () => {
      log.push("test 2");
      expect(log.slice(-4)).toEqual(["inner beforeAll", "outer beforeEach", "inner beforeEach", "test 2"]);
    });

    it("ran after-hooks innermost first, in reverse registration order, then beforeEach teardowns", () => {
      expect(log.slice(3)).toEqual([
        "outer afterEach",
        "outer beforeEach teardown",
        "inner beforeAll",
        "outer beforeEach",
        "inner beforeEach",
        "test 2",
        "inner afterEach 2",
        "inner afterEach 1",
        "outer afterEach",
        "outer beforeEach teardown",
        "outer beforeEach",
        "inner beforeEach",
      ]);
    });
  });
});

describe("after a suite", () => {
  it("ran its afterAll hooks once, innermost suite first, in reverse registration order, then beforeAll teardowns", () => {
    expect(log.filter((l) => l.includes("afterAll") || l.includes("beforeAll teardown"))).toEqual([
      "inner afterAll",
      "outer afterAll 2",
      "outer afterAll 1",
      "outer beforeAll teardown",
    ]);
    expect(log.filter((l) => l.endsWith("beforeAll"))).toEqual(["outer beforeAll", "inner beforeAll"]);
  });
});

describe("test signatures", () => {
  it("accepts a timeout number as third argument", async () => {
    await new Promise((r) => setTimeout(r, 5));
    expect(true).toBe(true);
  }, 1_000);
  it("accepts an options object as second argument", { timeout: 1_000 }, () => {
    expect(1).toBe(1);
  });
  test("is also available as test()", () => {
    expect("test").toHaveLength(4);
  });
  it.each([[1, 2, 3], [2, 3, 5]])("it.each adds %i + %i = %i", (a, b, sum) => {
    expect(a + b).toBe(sum);
  });
});

describe("expect", () => {
  class Custom extends Error {}

  it("has vitest's equality matchers", () => {
    expect({ a: 1, b: [1, 2] }).toEqual({ a: 1, b: [1, 2] });
    expect({ a: 1, b: undefined }).toEqual({ a: 1 });
    expect(() => expect({ a: 1, b: undefined }).toStrictEqual({ a: 1 })).toThrow();
    expect({ a: 1, b: { c: 2, d: 3 } }).toMatchObject({ b: { c: 2 } });
    expect({ a: { b: 2 } }).toHaveProperty("a.b", 2);
    expect([1, 2, 3]).toContain(2);
    expect([{ x: 1 }]).toContainEqual({ x: 1 });
    expect("abc").toMatch(/b/);
    expect({ id: "x", n: 3 }).toEqual({ id: expect.any(String), n: expect.any(Number) });
    expect([1, 2, 3]).toEqual(expect.arrayContaining([3, 1]));
    expect({ a: 1, b: 2 }).toEqual(expect.objectContaining({ b: 2 }));
  });

  it("has vitest's value matchers", () => {
    expect(null).toBeNull();
    expect(0).toBeDefined();
    expect(undefined).toBeUndefined();
    expect(1).toBeTruthy();
    expect("").toBeFalsy();
    expect(3).toBeGreaterThan(2);
    expect(3).toBeGreaterThanOrEqual(3);
    expect(2).toBeLessThan(3);
    expect(0.1 + 0.2).toBeCloseTo(0.3);
    expect(new Custom("x")).toBeInstanceOf(Error);
    expect(2).not.toBe(3);
    expect([1]).not.toHaveLength(2);
  });

  it("has vitest's error and promise matchers", async () => {
    expect(() => {
      throw new Custom("boom here");
    }).toThrow(Custom);
    expect(() => {
      throw new Custom("boom here");
    }).toThrow(/boom/);
    expect(() => {
      throw new Custom("boom here");
    }).toThrowError("boom");
    await expect(Promise.reject(new Custom("no"))).rejects.toThrow("no");
    await expect(Promise.reject(new Custom("no"))).rejects.toBeInstanceOf(Custom);
    await expect(Promise.resolve(5)).resolves.toBe(5);
  });

  it("fails a failing assertion with an error", () => {
    let caught: unknown;
    try {
      expect(1).toBe(2);
    } catch (e) {
      caught = e;
    }
    expect(caught).toBeInstanceOf(Error);
    expect(String(caught)).toContain("expected 1 to be 2");
  });

  it("counts assertions for expect.assertions", () => {
    expect.assertions(2);
    expect(1).toBe(1);
    expect(2).toBe(2);
  });
});

describe("suite options", { timeout: 1_000 }, () => {
  it("a describe with an options object still runs its tests", async () => {
    await new Promise((r) => setTimeout(r, 5));
    expect("ran").toBe("ran");
  });
});
