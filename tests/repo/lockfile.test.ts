/**
 * `npm ci` on a fresh clone needs a lockfile that lists every optional
 * dependency of every locked package, including other platforms' builds
 * that the registry reachable here does not serve. scripts/lock-platforms.ts
 * adds them after `npm install`; this test fails when a dependency change
 * was locked without it (CONTRIBUTING.md, "npm ci and this repository's lockfile").
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

type Entry = { version?: string; optionalDependencies?: Record<string, string>; os?: string[] };
const lock = JSON.parse(readFileSync(new URL("../../package-lock.json", import.meta.url), "utf8")) as {
  packages: Record<string, Entry>;
};

describe("package-lock.json", () => {
  it("lists every optional dependency of every locked package (npm ci accepts it)", () => {
    const missing: string[] = [];
    for (const [key, entry] of Object.entries(lock.packages)) {
      for (const [dep, version] of Object.entries(entry.optionalDependencies ?? {})) {
        const found = lock.packages[`${key ? `${key}/` : ""}node_modules/${dep}`] ?? lock.packages[`node_modules/${dep}`];
        if (!found) missing.push(`${dep}@${version} (of ${key || "the root"})`);
      }
    }
    expect(missing, "run: npx tsx scripts/lock-platforms.ts").toEqual([]);
  });

  it("names the package as published", () => {
    expect((lock as unknown as { name: string }).name).toBe("@gatehouse-runtime/core");
  });
});
