/**
 * Layers read one way. Every .ts file outside tests/ and node_modules/ is
 * read, its relative imports are mapped folder -> folder (top-level folders;
 * "." is the files at the root: mod.ts, gatehouse.ts, workers.ts, redis.ts), and every edge must be
 * in ALLOWED below. The same graph is drawn in docs/architecture.md; change
 * both together. A folder not listed here fails the test until it is placed.
 *
 * The core, bottom up: errors <- common <- contracts <- {machines, tools, store} <- models
 * <- verdicts <- agents <- verification <- actors <- routes <- "." (the
 * composition root). Tooling (entry, examples, scripts, bench) sits on top.
 */
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, normalize, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

/** folder -> the folders its files may import (besides itself). */
const ALLOWED: Record<string, readonly string[]> = {
  errors: [],
  common: ["errors"],
  machines: ["common", "errors"],
  contracts: ["common", "errors"],
  tools: ["common", "contracts", "errors"],
  store: ["common", "errors"],
  models: ["common", "errors", "tools"],
  verdicts: ["common", "errors", "store"],
  agents: ["common", "errors", "models", "tools", "verdicts"],
  verification: ["agents", "common", "errors", "machines", "verdicts"],
  actors: ["agents", "common", "contracts", "errors", "machines", "models", "store", "tools", "verification"],
  routes: ["actors", "agents", "common", "contracts", "errors", "machines", "store", "verdicts"],
  ".": ["actors", "agents", "common", "contracts", "errors", "machines", "models", "routes", "store", "tools", "verdicts", "verification"],
  // Tooling: runtime entries, examples, maintenance scripts, the benchmark.
  entry: [".", "actors", "common", "contracts", "errors", "examples", "store"],
  examples: [".", "agents", "common", "models", "tools", "verification"],
  scripts: [".", "common", "examples", "store", "tests"],
  bench: [".", "store", "tests"],
  // Tool configuration at the root (vitest.config.ts): not a module of the package.
  config: ["tests"],
};

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
const SKIP = new Set(["node_modules", "tests", "docs", "dist"]);

function sourceFiles(dir: string, out: string[] = []): string[] {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    if (e.name.startsWith(".") || e.name === "node_modules") continue;
    const p = join(dir, e.name);
    if (e.isDirectory()) {
      if (dir === ROOT && SKIP.has(e.name)) continue;
      sourceFiles(p, out);
    } else if (e.name.endsWith(".ts")) out.push(p);
  }
  return out;
}

/** Relative specifiers of static imports/re-exports (statement starts only, so doc comments do not count) and dynamic imports. */
export function relativeImports(src: string): string[] {
  const specs: string[] = [];
  const patterns = [
    /^\s*(?:import|export)\b[^;]*?\bfrom\s*["'](\.[^"']*)["']/gm,
    /^\s*import\s*["'](\.[^"']*)["']/gm,
    /\bimport\(\s*["'](\.[^"']*)["']\s*\)/g,
  ];
  for (const re of patterns) for (const m of src.matchAll(re)) specs.push(m[1]);
  return specs;
}

const folderOf = (relPath: string) =>
  relPath.includes(sep) ? relPath.split(sep)[0] : /\.config\.ts$/.test(relPath) ? "config" : ".";

/** folder -> imported folder -> "file: specifier" examples. */
function actualGraph(): Map<string, Map<string, string[]>> {
  const graph = new Map<string, Map<string, string[]>>();
  for (const file of sourceFiles(ROOT)) {
    const from = folderOf(relative(ROOT, file));
    if (!graph.has(from)) graph.set(from, new Map());
    for (const spec of relativeImports(readFileSync(file, "utf8"))) {
      const to = folderOf(relative(ROOT, normalize(join(dirname(file), spec))));
      if (to === from) continue;
      const edges = graph.get(from)!;
      edges.set(to, [...(edges.get(to) ?? []), `${relative(ROOT, file)}: ${spec}`]);
    }
  }
  return graph;
}

const show = (g: Record<string, readonly string[]>) =>
  Object.keys(g).sort().map((k) => `  ${k.padEnd(12)} -> ${g[k].length ? [...g[k]].sort().join(", ") : "(nothing)"}`).join("\n");

describe("folder layering", () => {
  it("parses static, re-export, side-effect and dynamic relative imports, not bare ones or comments", () => {
    const src = [
      'import { a } from "../common/json.ts";',
      "import type {\n  B,\n  C,\n} from './x/y.ts';",
      'export { d } from "../store/port.ts";',
      'import "./side.ts";',
      'const m = await import("../routes/app.ts");',
      'import { z } from "zod";',
      ' * see import { q } from "../nowhere.ts" in a doc comment',
    ].join("\n");
    expect(relativeImports(src).sort()).toEqual(["../common/json.ts", "../routes/app.ts", "../store/port.ts", "./side.ts", "./x/y.ts"].sort());
  });

  it("the allowed graph has no cycle", () => {
    const state = new Map<string, "open" | "done">();
    const cycles: string[] = [];
    const visit = (n: string, path: string[]) => {
      if (state.get(n) === "done") return;
      if (state.get(n) === "open") return void cycles.push([...path, n].join(" -> "));
      state.set(n, "open");
      for (const m of ALLOWED[n] ?? []) visit(m, [...path, n]);
      state.set(n, "done");
    };
    for (const n of Object.keys(ALLOWED)) visit(n, []);
    expect(cycles).toEqual([]);
  });

  it("every import between folders is an allowed edge", () => {
    const graph = actualGraph();
    const actual: Record<string, string[]> = {};
    for (const [from, edges] of graph) actual[from] = [...edges.keys()];
    console.log(`allowed folder imports:\n${show(ALLOWED)}\nactual folder imports:\n${show(actual)}`);

    const violations: string[] = [];
    for (const [from, edges] of graph) {
      const allowed = ALLOWED[from];
      if (!allowed) {
        violations.push(`folder "${from}" is not placed in the layer graph (tests/layers.test.ts, docs/architecture.md)`);
        continue;
      }
      for (const [to, where] of edges) {
        if (!allowed.includes(to)) violations.push(`${from} -> ${to} is not allowed: ${where.join("; ")}`);
      }
    }
    expect(violations).toEqual([]);
    // The walk saw the core folders (a broken walk would pass vacuously).
    for (const f of ["common", "machines", "store", "actors", "routes", "verification", "verdicts", "agents"]) {
      expect(graph.has(f)).toBe(true);
    }
  });
});
