/**
 * Under Deno, a failing test must fail: the shim turns a failed assertion, a
 * rejection, a timeout (its own or its describe's), a missing assertion
 * count, a failed un-awaited `rejects`, a throwing `beforeAll` (for every
 * test of its suite) and a throwing `afterEach` into a failed `Deno.test`,
 * keeps running the tests after them, and still runs `afterAll` after a
 * failed `beforeAll`.
 *
 * Runs `deno test` on tests/deno/fixtures/outcomes.fixture.ts, whose test
 * names start with the expected outcome (PASS/FAIL), and compares that with
 * the JUnit report. Runs under vitest and under Deno alike.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import process from "node:process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../../", import.meta.url));

function decodeXml(s: string): string {
  return s.replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&quot;/g, '"').replace(/&apos;/g, "'").replace(/&amp;/g, "&");
}

/** Test name -> passed?, from a Deno JUnit report. */
export function junitOutcomes(xml: string): Map<string, boolean> {
  const out = new Map<string, boolean>();
  const re = /<testcase name="([^"]*)"[^>]*?(\/>|>([\s\S]*?)<\/testcase>)/g;
  for (const m of xml.matchAll(re)) {
    const body = m[3] ?? "";
    out.set(decodeXml(m[1]), !/<(failure|error)\b/.test(body));
  }
  return out;
}

describe("deno shim outcomes", () => {
  it("reports each fixture test with the outcome its name states", () => {
    const dir = mkdtempSync(join(tmpdir(), "gatehouse-shim-"));
    try {
      const junit = join(dir, "report.xml");
      const r = spawnSync(
        join(root, "node_modules", ".bin", "deno"),
        ["test", "--allow-all", "--no-check", `--junit-path=${junit}`, "tests/deno/fixtures/outcomes.fixture.ts"],
        { cwd: root, encoding: "utf8", env: { ...process.env, NO_COLOR: "1" }, timeout: 60_000 },
      );
      expect(r.error).toBeUndefined();
      expect(r.status).not.toBe(0);
      expect(r.stdout).toContain("MARKER afterAll ran after a failed beforeAll");
      const outcomes = junitOutcomes(readFileSync(junit, "utf8"));
      expect(outcomes.size).toBe(12);
      for (const [name, passed] of outcomes) {
        const expected = / > PASS |^PASS /.test(name);
        expect({ name, passed }).toEqual({ name, passed: expected });
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
