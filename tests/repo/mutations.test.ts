/**
 * The mutation check (scripts/mutations.ts) stays runnable: every patch still
 * applies to the current tree and changes it, and every test file it names
 * exists. Running the mutations themselves takes about two minutes:
 * `npx tsx scripts/mutations.ts`.
 */
import { existsSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { MUTATIONS, moveAfter, replaceOnce } from "../../scripts/mutations.ts";

const root = new URL("../..", import.meta.url).pathname;

describe("scripts/mutations.ts", () => {
  it.each(MUTATIONS.map((m) => [m.id, m] as const))("mutation (%s) still applies and names existing tests", (_id, m) => {
    const src = readFileSync(root + m.file, "utf8");
    const patched = m.apply(src);
    expect(patched).not.toBe(src);
    for (const t of m.tests) expect(existsSync(root + t.file), t.file).toBe(true);
  });

  it("refuses a patch that does not apply exactly once", () => {
    expect(() => moveAfter("a b a", "a", "b")).toThrow(/found 2 times/);
    expect(() => moveAfter("a b", "x", "b")).toThrow(/moved block found 0 times/);
    expect(moveAfter("check\nwrite\n", "check\n", "write\n")).toBe("write\ncheck\n");
    expect(() => replaceOnce("x", "y", "z")).toThrow(/does not apply/);
  });
});
