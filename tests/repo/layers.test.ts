/**
 * Layers read one way. Every .ts file outside tests/ and node_modules/ is
 * read, its relative imports are mapped folder -> folder (top-level folders;
 * "." is the files at the root: mod.ts, gatehouse.ts, gatehouse-options.ts, workers.ts, redis.ts), and every edge must be
 * in ALLOWED below. The same graph is drawn in docs/architecture.md; change
 * both together. A folder not listed here fails the test until it is placed.
 *
 * The core, bottom up: errors <- common <- contracts <- {machines, tools, store} <- models
 * <- verdicts <- agents <- verification <- actors <- routes <- "." (the
 * composition root). Tooling (entry, examples, scripts, bench) sits on top.
 *
 * Three finer rules, also drawn in docs/architecture.md:
 * - No file-level import cycle anywhere outside tests/ (type-only imports
 *   count: a cycle of types is still a knot a reader has to untie).
 * - Inside actors/, the subfolders read one way too (ACTORS_ALLOWED).
 * - A route imports from actors/ only the modules in ROUTE_ACTOR_IMPORTS;
 *   the rest of the engine it reaches through `RouteRuntime`.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, normalize, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { trackedFiles } from "../helpers/tracked-files.ts";

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

/**
 * actors/ subfolder -> the subfolders its files may import (besides itself). "actors" is a file
 * directly in actors/ (runtime.ts: clock, ids, logger); "pool" is the worker pool (actors/pool/).
 */
const ACTORS_ALLOWED: Record<string, readonly string[]> = {
  actors: [],
  observe: [],
  conversation: [],
  registry: ["actors"],
  claim: ["actors", "conversation", "observe", "registry"],
  delegation: ["actors", "claim"],
  steps: ["actors", "claim", "conversation", "delegation", "observe", "registry"],
  spend: ["actors", "claim", "steps"],
  host: ["actors", "claim", "conversation", "delegation", "observe", "registry", "spend", "steps"],
  replay: ["conversation"],
  pool: ["actors", "claim", "host", "replay", "spend"],
};

/**
 * The actors/ modules a route may import, and how: "type" (type-only imports) or "any". Everything
 * else of the engine a route reaches through `RouteRuntime` (routes/runtime.ts). docs/architecture.md
 * ("Layers") holds the same list.
 */
const ROUTE_ACTOR_IMPORTS: Record<string, "type" | "any"> = {
  "actors/runtime.ts": "type", // Clock, IdSource, Logger in RouteRuntime and the rate limiter
  "actors/pool/watchdog.ts": "type", // WatchdogTickResult, the answer of RouteRuntime.watchdogTick
  "actors/observe/metrics.ts": "any", // GET /metrics renders the process metrics
  "actors/observe/lane-gauges.ts": "any", // GET /metrics: the lane gauges from the store's concurrencyUsage
  "actors/replay/time-travel.ts": "any", // history, replay bundles, forks: the log replayed (pure)
  "actors/replay/commit-point.ts": "any", // history, forks: the commit an event belongs to (reads the log)
  "actors/host/turn-end.ts": "any", // reset: the writes that end a turn without running it
  "actors/replay/what-if.ts": "any", // the verifier what-if over a replayed point
  "actors/delegation/delegation.ts": "any", // DELETE of a child agent answers its parent's call
};

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "../..");
const SKIP = new Set(["node_modules", "tests", "docs", "dist"]);

/** The .ts files git tracks under `dir` (tests/helpers/tracked-files.ts), outside the SKIP folders of `root` and dot folders. */
export function sourceFiles(dir: string, root = ROOT): string[] {
  return trackedFiles(dir).filter((p) => {
    const parts = relative(root, p).split(sep);
    return p.endsWith(".ts") && !SKIP.has(parts[0]) && !parts.some((s) => s.startsWith(".") || s === "node_modules");
  });
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

/** Relative imports with whether the statement is type-only (`import type`, `export type`). */
export function importStatements(src: string): { spec: string; typeOnly: boolean }[] {
  const out: { spec: string; typeOnly: boolean }[] = [];
  for (const m of src.matchAll(/^\s*(import|export)(\s+type\b)?[^;]*?\bfrom\s*["'](\.[^"']*)["']/gm)) {
    out.push({ spec: m[3], typeOnly: m[2] !== undefined });
  }
  for (const m of src.matchAll(/^\s*import\s*["'](\.[^"']*)["']/gm)) out.push({ spec: m[1], typeOnly: false });
  for (const m of src.matchAll(/\bimport\(\s*["'](\.[^"']*)["']\s*\)/g)) out.push({ spec: m[1], typeOnly: false });
  return out;
}

/** Strongly connected components with more than one file (or a file importing itself), each sorted. */
export function importCycles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  // Iterative Tarjan: the graph has a few hundred files, but recursion depth should not depend on it.
  for (const root of graph.keys()) {
    if (index.has(root)) continue;
    const work: { v: string; i: number }[] = [{ v: root, i: 0 }];
    index.set(root, next); low.set(root, next); next++; stack.push(root); onStack.add(root);
    while (work.length > 0) {
      const top = work[work.length - 1];
      const edges = (graph.get(top.v) ?? []).filter((w) => graph.has(w));
      if (top.i < edges.length) {
        const w = edges[top.i++];
        if (!index.has(w)) {
          index.set(w, next); low.set(w, next); next++; stack.push(w); onStack.add(w);
          work.push({ v: w, i: 0 });
        } else if (onStack.has(w)) low.set(top.v, Math.min(low.get(top.v)!, index.get(w)!));
        continue;
      }
      work.pop();
      if (work.length > 0) {
        const parent = work[work.length - 1].v;
        low.set(parent, Math.min(low.get(parent)!, low.get(top.v)!));
      }
      if (low.get(top.v) === index.get(top.v)) {
        const comp: string[] = [];
        let w: string;
        do { w = stack.pop()!; onStack.delete(w); comp.push(w); } while (w !== top.v);
        if (comp.length > 1 || (graph.get(top.v) ?? []).includes(top.v)) out.push(comp.sort());
      }
    }
  }
  return out;
}

/** file -> the files it imports (relative paths from the root, outside tests/). */
function fileGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of sourceFiles(ROOT)) {
    const targets = relativeImports(readFileSync(file, "utf8")).map((spec) => relative(ROOT, normalize(join(dirname(file), spec))));
    graph.set(relative(ROOT, file), [...new Set(targets)]);
  }
  return graph;
}

/** The actors/ subfolder of a file under actors/ ("actors": directly in it). */
const actorsFolderOf = (relPath: string): string => {
  const parts = relPath.split(sep);
  return parts.length > 2 ? parts[1] : "actors";
};

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
        violations.push(`folder "${from}" is not placed in the layer graph (tests/repo/layers.test.ts, docs/architecture.md)`);
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

  it("finds an import cycle, a self-import and none in a chain", () => {
    const cyclic = new Map([["a.ts", ["b.ts"]], ["b.ts", ["c.ts"]], ["c.ts", ["a.ts"]], ["d.ts", ["d.ts"]], ["e.ts", ["a.ts"]]]);
    expect(importCycles(cyclic)).toEqual(expect.arrayContaining([["a.ts", "b.ts", "c.ts"], ["d.ts"]]));
    expect(importCycles(cyclic)).toHaveLength(2);
    expect(importCycles(new Map([["a.ts", ["b.ts"]], ["b.ts", ["c.ts"]], ["c.ts", []]]))).toEqual([]);
    expect(importStatements('import type { A } from "./a.ts";\nexport { b } from "./b.ts";')).toEqual([
      { spec: "./a.ts", typeOnly: true }, { spec: "./b.ts", typeOnly: false },
    ]);
  });

  it("no file imports itself through a cycle (type-only imports count)", () => {
    const graph = fileGraph();
    expect(graph.size).toBeGreaterThan(100);
    const cycles = importCycles(graph).map((c) => c.join(" <-> "));
    expect(cycles).toEqual([]);
  });

  it("the actors/ subfolders import one way, as ACTORS_ALLOWED says", () => {
    const state = new Map<string, "open" | "done">();
    const loops: string[] = [];
    const visit = (n: string, path: string[]) => {
      if (state.get(n) === "done") return;
      if (state.get(n) === "open") return void loops.push([...path, n].join(" -> "));
      state.set(n, "open");
      for (const m of ACTORS_ALLOWED[n] ?? []) visit(m, [...path, n]);
      state.set(n, "done");
    };
    for (const n of Object.keys(ACTORS_ALLOWED)) visit(n, []);
    expect(loops).toEqual([]);

    const violations: string[] = [];
    const seen = new Set<string>();
    for (const [file, targets] of fileGraph()) {
      if (!file.startsWith(`actors${sep}`)) continue;
      const from = actorsFolderOf(file);
      seen.add(from);
      if (!ACTORS_ALLOWED[from]) violations.push(`actors subfolder "${from}" is not placed (ACTORS_ALLOWED, docs/architecture.md)`);
      for (const t of targets) {
        if (!t.startsWith(`actors${sep}`)) continue;
        const to = actorsFolderOf(t);
        if (to !== from && !(ACTORS_ALLOWED[from] ?? []).includes(to)) violations.push(`actors/${from} -> actors/${to}: ${file} imports ${t}`);
      }
    }
    expect(violations).toEqual([]);
    for (const f of ["claim", "host", "steps", "conversation", "delegation", "replay", "observe", "spend"]) expect(seen.has(f)).toBe(true);
  });

  // Steps decide and return what happened; the host applies and writes it (actors/host/apply.ts,
  // docs/architecture.md "Inside actors/: the stations of a wakeup").
  it("one module applies machine events: only actors/host/apply.ts calls applyEvent", () => {
    const callers: string[] = [];
    for (const file of sourceFiles(ROOT)) {
      const src = readFileSync(file, "utf8").replace(/^\s*(\/\/|\*|\/\*\*).*$/gm, "");
      if (/(?<!function\s)\bapplyEvent\s*\(/.test(src)) callers.push(relative(ROOT, file).split(sep).join("/"));
    }
    expect(callers).toEqual(["actors/host/apply.ts"]);
  });

  it("commits are built in at most two modules: the commit buffer and the host's apply", () => {
    // A module builds a commit when it books a write into the claim's commit (a CommitSink method) or
    // hands the store a commit request of its own.
    const SINK_WRITE = /\b(?:commit|buf|buffer|sink)\.(?:emit|append|addMessage|recordCall|resolveCall|ackMail|setSummary|endTurn|withdrawTurnEnd|abandon|withdrawToolCalls)\b/;
    const OWN_REQUEST = /\.commit\(\s*\{/;
    const builders: string[] = [];
    for (const file of sourceFiles(ROOT)) {
      const rel = relative(ROOT, file).split(sep).join("/");
      if (!rel.startsWith("actors/") && rel.includes("/")) continue;
      const src = readFileSync(file, "utf8").replace(/^\s*(\/\/|\*|\/\*\*).*$/gm, "");
      if (SINK_WRITE.test(src) || OWN_REQUEST.test(src)) builders.push(rel);
    }
    expect(builders.sort()).toEqual(["actors/claim/commit-buffer.ts", "actors/host/apply.ts"]);
  });

  it("nothing under actors/steps/ imports the store", () => {
    const violations: string[] = [];
    let files = 0;
    for (const file of sourceFiles(join(ROOT, "actors", "steps"))) {
      files++;
      for (const { spec } of importStatements(readFileSync(file, "utf8"))) {
        const target = relative(ROOT, normalize(join(dirname(file), spec))).split(sep).join("/");
        if (target.startsWith("store/")) violations.push(`${relative(ROOT, file)} imports ${target}`);
      }
    }
    expect(files).toBeGreaterThan(3);
    expect(violations).toEqual([]);
  });

  it("routes import from actors/ only the modules ROUTE_ACTOR_IMPORTS names, and only as it says", () => {
    const violations: string[] = [];
    let seen = 0;
    for (const file of sourceFiles(join(ROOT, "routes"))) {
      for (const { spec, typeOnly } of importStatements(readFileSync(file, "utf8"))) {
        const target = relative(ROOT, normalize(join(dirname(file), spec))).split(sep).join("/");
        if (!target.startsWith("actors/")) continue;
        seen++;
        const how = ROUTE_ACTOR_IMPORTS[target];
        if (!how) violations.push(`${relative(ROOT, file)} imports ${target}, which routes may not import`);
        else if (how === "type" && !typeOnly) violations.push(`${relative(ROOT, file)} imports ${target} for more than types`);
      }
    }
    expect(violations).toEqual([]);
    expect(seen).toBeGreaterThan(0);
  });
});

describe("the scan reads only files git tracks", () => {
  it("an untracked folder that imports the sources is not read; a tracked file is", () => {
    const root = mkdtempSync(join(tmpdir(), "gatehouse-layers-"));
    try {
      const git = (...args: string[]) => execFileSync("git", args, { cwd: root, stdio: "ignore" });
      git("init", "-q");
      mkdirSync(join(root, "common"));
      writeFileSync(join(root, "common", "a.ts"), 'export const a = 1;\n');
      git("add", "common/a.ts");
      // What a scratch folder does: imports the sources, against every layer rule.
      mkdirSync(join(root, "scratch"));
      writeFileSync(join(root, "scratch", "b.ts"), 'import { a } from "../common/a.ts";\nexport const b = a;\n');
      writeFileSync(join(root, "common", "c.ts"), 'import { b } from "../scratch/b.ts";\nexport const c = b;\n');
      expect(sourceFiles(root, root).map((p) => relative(root, p).split(sep).join("/"))).toEqual(["common/a.ts"]);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
