/**
 * A key space keeps the keys of the agents it was asked for last
 * (store/keys.ts `agent`). Invariant: a kept entry equals what a fresh key
 * space builds for the same id, on the unsharded and the sharded layout and
 * after the oldest entries were let go; an id that fails the check throws
 * every time (never kept); the entries cannot be changed by a caller.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type AgentKeys, keySpace, StoreInputError } from "../../store/keys.ts";

/** Everything a caller can read of an agent's keys, `calls` by its answers. */
const view = (k: AgentKeys) => ({ ...k, home: k.home.prefix, calls: [k.calls("t1"), k.calls("")] });

describe("agent keys, built once per id", () => {
  for (const shards of [undefined, 16]) {
    it(`a kept entry equals a fresh build (${shards ? "sharded" : "unsharded"})`, () => {
      const space = keySpace("kk", shards ? { shards } : {});
      fc.assert(
        fc.property(fc.array(fc.string({ minLength: 1, maxLength: 12 }).filter((s) => !/[{}\u0000-\u001f\u007f]/.test(s) && s !== "." && s !== ".."), { minLength: 1, maxLength: 30 }), (ids) => {
          for (const id of [...ids, ...ids]) {
            const kept = space.agent(id);
            expect(space.agent(id)).toBe(kept);
            expect(view(kept)).toEqual(view(keySpace("kk", shards ? { shards } : {}).agent(id)));
          }
        }),
        { numRuns: 200, seed: 20261128 },
      );
    });
  }

  it("lets the oldest go past its bound and builds them again the same", () => {
    const space = keySpace("kk");
    const first = space.agent("a0");
    for (let i = 1; i <= 5_000; i++) space.agent(`a${i}`);
    const again = space.agent("a0");
    expect(again).not.toBe(first);
    expect(view(again)).toEqual(view(first));
  });

  it("throws for a bad id every time, and the entries are frozen", () => {
    const space = keySpace("kk");
    for (let i = 0; i < 2; i++) expect(() => space.agent("a{b}")).toThrow(StoreInputError);
    const k = space.agent("a1");
    expect(Object.isFrozen(k)).toBe(true);
    expect(Object.isFrozen(k.headLong)).toBe(true);
    expect(() => {
      (k as { head: string }).head = "x";
    }).toThrow(TypeError);
  });
});
