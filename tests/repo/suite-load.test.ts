/**
 * The suite holds on a busy machine (CI may share two cores with other
 * work): these checks keep the two things that made verdicts a coin toss
 * from coming back.
 *
 * - One default timeout for all three runners, sized for load
 *   (tests/helpers/timeouts.ts): vitest's config, the Deno shim and the Bun script
 *   read it; none falls back to the stock 5 s.
 * - Every property test (`fc.assert`, `fc.check`, `fc.sample`) runs on a
 *   fixed seed, so a run's cases, and the coverage checks some tests make
 *   over them, are the same on every machine (change the seed to explore).
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import config from "../../vitest.config.ts";
import { HOOK_TIMEOUT_MS, TEST_TIMEOUT_MS } from "../helpers/timeouts.ts";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

function testSources(dir = join(ROOT, "tests")): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...testSources(p));
    else if (/\.tsx?$/.test(name)) out.push(p);
  }
  return out;
}

/** The text of each call `fc.<fn>(...)` in `src`, up to its closing parenthesis. */
export function propertyCalls(src: string): string[] {
  const calls: string[] = [];
  const re = /\bfc\.(assert|check|sample)\(/g;
  for (let m = re.exec(src); m; m = re.exec(src)) {
    let depth = 0;
    let end = m.index + m[0].length - 1;
    for (; end < src.length; end++) {
      const ch = src[end];
      if (ch === "(") depth++;
      else if (ch === ")" && --depth === 0) break;
    }
    calls.push(src.slice(m.index, end + 1));
  }
  return calls;
}

describe("the suite on a busy machine", () => {
  it("the default timeouts leave room for two shared cores", () => {
    expect(TEST_TIMEOUT_MS).toBeGreaterThanOrEqual(30_000);
    expect(HOOK_TIMEOUT_MS).toBeGreaterThanOrEqual(TEST_TIMEOUT_MS);
  });

  it("vitest, the Deno shim and the Bun script use them", () => {
    expect(config.test?.testTimeout).toBe(TEST_TIMEOUT_MS);
    expect(config.test?.hookTimeout).toBe(HOOK_TIMEOUT_MS);
    const shim = readFileSync(join(ROOT, "tests/deno/vitest-shim.ts"), "utf8");
    expect(shim).toMatch(/const DEFAULT_TEST_TIMEOUT = TEST_TIMEOUT_MS;/);
    expect(shim).toMatch(/const DEFAULT_HOOK_TIMEOUT = HOOK_TIMEOUT_MS;/);
    const bun = readFileSync(join(ROOT, "scripts/test-bun.sh"), "utf8");
    expect(bun).toMatch(/TIMEOUT_MS="\$\(sed .*tests\/helpers\/timeouts\.ts/);
    expect(bun).toMatch(/bun test "\$\{TIMEOUT_ARGS\[@\]\}"/);
  });

  it("every property test runs on a fixed seed", () => {
    const unseeded: string[] = [];
    let calls = 0;
    for (const file of testSources()) {
      if (file.endsWith("suite-load.test.ts")) continue;
      const src = readFileSync(file, "utf8");
      for (const call of propertyCalls(src)) {
        calls++;
        if (!/\bseed:/.test(call)) unseeded.push(`${relative(ROOT, file)}: ${call.split("\n")[0]}`);
      }
    }
    expect(calls).toBeGreaterThan(10);
    expect(unseeded).toEqual([]);
  });

  it("finds a call's options however it is laid out", () => {
    const [a, b] = propertyCalls("fc.assert(fc.property(x, (v) => f(v)), { numRuns: 3 }); fc.sample(arb, { seed: 1 })");
    expect(a).toBe("fc.assert(fc.property(x, (v) => f(v)), { numRuns: 3 })");
    expect(/\bseed:/.test(a!)).toBe(false);
    expect(b).toBe("fc.sample(arb, { seed: 1 })");
  });
});
