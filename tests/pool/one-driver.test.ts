/**
 * One driver (docs/architecture.md, "Inside actors/"; the header of
 * actors/pool/drive.ts): claims are taken and run one way, in actors/pool/,
 * whoever drives them (the pool's loops, `drain()`, a Workers drive). The
 * composition roots (gatehouse.ts, workers.ts) claim and run nothing
 * themselves: they check options, build the parts and hand work to them.
 *
 * Read from the sources (comments left out): every call of the store's
 * claim operations (`claimNext`, `claim`), of `runClaim` and of
 * `claimRunner` outside the store and the tests is in actors/pool/; one file
 * calls `claimNext` (the claim attempt on a target both drivers share); and
 * the roots import from actors/pool/ only the parts they build.
 */
import { readFileSync } from "node:fs";
import { dirname, join, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { trackedFiles } from "../helpers/tracked-files.ts";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "../..");
/** Folders that are not the engine: the store implements the operations, the rest only call them to test or measure. */
const SKIP = new Set(["node_modules", "tests", "docs", "dist", "store", "bench", "scripts", "examples"]);

/** The .ts files git tracks (tests/helpers/tracked-files.ts) outside the SKIP folders and dot folders. */
function engineFiles(): string[] {
  return trackedFiles(ROOT).filter((p) => {
    const parts = relative(ROOT, p).split(sep);
    return p.endsWith(".ts") && !SKIP.has(parts[0]) && !parts.some((s) => s.startsWith(".") || s === "node_modules");
  });
}

/** The code of a file without its comments. */
const code = (abs: string) =>
  readFileSync(abs, "utf8").replace(/\/\*[\s\S]*?\*\//g, "").replace(/^\s*\/\/.*$/gm, "");

const rel = (abs: string) => relative(ROOT, abs).split(sep).join("/");

/** The files whose code matches `re`, sorted. */
function callers(re: RegExp): string[] {
  return engineFiles().filter((f) => re.test(code(f))).map(rel).sort();
}

/** Modules of actors/pool/ a file imports. */
function poolImports(file: string): string[] {
  const src = code(join(ROOT, file));
  return [...src.matchAll(/^\s*(?:import|export)\b[^;]*?\bfrom\s*["']\.\/actors\/pool\/([^"']+)["']/gm)].map((m) => m[1]).sort();
}

describe("one driver", () => {
  it("claims are taken and run in actors/pool/ only", () => {
    const outside = (files: string[]) => files.filter((f) => !f.startsWith("actors/pool/"));
    const takers = callers(/\.claimNext\(|\bstore\.claim\(/);
    expect(takers.length).toBeGreaterThan(0);
    expect(outside(takers)).toEqual([]);
    const runners = callers(/(?<!function )\b(?:runClaim|claimRunner)\(/);
    expect(runners.length).toBeGreaterThan(0);
    expect(outside(runners)).toEqual([]);
  });

  it("one file calls claimNext: the claim attempt on a target the pool and a drive share", () => {
    expect(callers(/\.claimNext\(/)).toEqual(["actors/pool/claim-attempt.ts"]);
  });

  it("the composition roots import from actors/pool/ only the parts they build", () => {
    expect(poolImports("gatehouse.ts")).toEqual(["pool.ts", "watchdog-loop.ts", "watchdog.ts"]);
    expect(poolImports("workers.ts")).toEqual(["drive.ts", "target-lease.ts"]);
    for (const root of ["gatehouse.ts", "gatehouse-options.ts", "workers.ts"]) {
      expect(code(join(ROOT, root))).not.toMatch(/from\s*["']\.\/actors\/host\//);
    }
  });
});
