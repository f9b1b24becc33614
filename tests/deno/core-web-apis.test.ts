/**
 * Core modules use Web APIs only. Runtime-specific code lives in `entry/`
 * (and in test or bench helpers). This test reads every `.ts` file in the
 * core folders and fails on:
 * - an import of a `node:*` module, or a `require(...)` call;
 * - a use of a runtime global: `process`, `Buffer`, `Deno`, `Bun`,
 *   `__dirname`, `__filename`, `setImmediate`, `global.`, or the `NodeJS.`
 *   type namespace;
 * - an import of a runtime-bound package (`RUNTIME_BOUND_PACKAGES`) from a
 *   file not listed in `RUNTIME_ADAPTERS`.
 * Comments and string contents are blanked first, so prose such as
 * "in-process tools" does not count; property names (`x.process`,
 * `{ process: 1 }`) are not globals and do not count either.
 */
import { readdir, readFile } from "node:fs/promises";
import { describe, expect, it } from "vitest";

export const CORE_FOLDERS = ["common", "errors", "machines", "actors", "store", "routes", "models", "tools", "agents", "verification", "verdicts", "contracts"] as const;

/**
 * npm packages that need more than Web APIs (ioredis opens TCP sockets
 * through node:net; the MCP SDK's stdio client spawns processes).
 */
const RUNTIME_BOUND_PACKAGES = ["ioredis", "@modelcontextprotocol/sdk/client/stdio.js"];

/**
 * Core files that import a runtime-bound package, each with the runtimes it
 * runs on. They are held to the same rules otherwise (no `node:*` import, no
 * runtime global): the package is their only tie to a runtime.
 */
const RUNTIME_ADAPTERS: Record<string, string> = {
  "store/redis.ts": "Node, Deno and Bun (ioredis: TCP sockets); not Workers, which use store/upstash.ts",
  "store/redis-live.ts": "the live channel of store/redis.ts (ioredis pub/sub); imported only by it",
  "tools/mcp/stdio.ts": "Node, Deno and Bun (a child process); loaded only for a stdio MCP server, never on Workers",
};

const ROOT = new URL("../../", import.meta.url);

async function listTs(dir: string): Promise<string[]> {
  let entries;
  try {
    entries = await readdir(new URL(dir + "/", ROOT), { withFileTypes: true });
  } catch {
    return []; // folder not created yet
  }
  const out: string[] = [];
  for (const e of entries) {
    const rel = `${dir}/${e.name}`;
    if (e.isDirectory()) out.push(...(await listTs(rel)));
    else if (e.name.endsWith(".ts")) out.push(rel);
  }
  return out.sort();
}

/**
 * Blanks comments and the contents of string/template literals (keeping
 * quotes, newlines and length so reported columns still make sense) and
 * returns the code plus the list of static import specifiers seen.
 */
export function stripSource(src: string): { code: string; specifiers: string[] } {
  let code = "";
  const specifiers: string[] = [];
  let i = 0;
  while (i < src.length) {
    const c = src[i];
    const n = src[i + 1];
    if (c === "/" && n === "/") {
      while (i < src.length && src[i] !== "\n") {
        code += " ";
        i++;
      }
    } else if (c === "/" && n === "*") {
      while (i < src.length && !(src[i] === "*" && src[i + 1] === "/")) {
        code += src[i] === "\n" ? "\n" : " ";
        i++;
      }
      code += "  ";
      i += 2;
    } else if (c === '"' || c === "'" || c === "`") {
      let j = i + 1;
      let body = "";
      while (j < src.length && src[j] !== c) {
        if (src[j] === "\\") {
          body += src[j] + (src[j + 1] ?? "");
          j += 2;
          continue;
        }
        body += src[j];
        j++;
      }
      // Specifier of `from "..."`, `import "..."` or `import("...")`.
      if (c !== "`" && /(?:\bfrom|\bimport|\bimport\s*\(|\brequire\s*\()\s*$/.test(code)) specifiers.push(body);
      code += c + body.replace(/[^\n]/g, " ") + c;
      i = j + 1;
    } else {
      code += c;
      i++;
    }
  }
  return { code, specifiers };
}

const GLOBAL = /(?<![\w$.])(process|Buffer|Deno|Bun|__dirname|__filename|setImmediate|global(?=\s*\.)|NodeJS(?=\s*\.)|require(?=\s*\())(?![\w$])(?!\s*:(?!:))/g;

export function findRuntimeUses(src: string): string[] {
  const { code, specifiers } = stripSource(src);
  const problems: string[] = [];
  for (const s of specifiers) if (s.startsWith("node:")) problems.push(`imports "${s}"`);
  const lines = code.split("\n");
  lines.forEach((line, idx) => {
    for (const m of line.matchAll(GLOBAL)) {
      // `process` as a declared local (`const process =`, a parameter) is not
      // the global, but shadowing it hides real uses; flag it all the same.
      problems.push(`line ${idx + 1}: uses ${m[1]}`);
    }
  });
  return problems;
}

describe("core modules use Web APIs only", () => {
  it("the checker flags node imports and runtime globals and ignores comments, strings and properties", () => {
    expect(findRuntimeUses(`import { x } from "node:fs";`)).toEqual([`imports "node:fs"`]);
    expect(findRuntimeUses(`const m = await import("node:crypto");`)).toEqual([`imports "node:crypto"`]);
    expect(findRuntimeUses(`const env = process.env.X;`)).toEqual(["line 1: uses process"]);
    expect(findRuntimeUses(`\nconst b = Buffer.from("x");`)).toEqual(["line 2: uses Buffer"]);
    expect(findRuntimeUses(`Deno.serve(h);`)).toEqual(["line 1: uses Deno"]);
    expect(findRuntimeUses(`Bun.serve({ fetch: h });`)).toEqual(["line 1: uses Bun"]);
    expect(findRuntimeUses(`let t: NodeJS.Timeout;`)).toEqual(["line 1: uses NodeJS"]);
    expect(findRuntimeUses(`const fs = require("fs");`)).toEqual(["line 1: uses require"]);
    expect(findRuntimeUses(`setImmediate(f);`)).toEqual(["line 1: uses setImmediate"]);
    expect(findRuntimeUses(`// runs in-process; process.env is read by entry/\nconst s = "process.env";`)).toEqual([]);
    expect(findRuntimeUses(`/* Buffer\n Deno */ const o = { process: 1 }; o.process; a.Buffer;`)).toEqual([]);
    expect(findRuntimeUses(`import { z } from "zod"; const r = new Request("http://x");`)).toEqual([]);
  });

  it("no core file imports node:* modules or touches runtime globals; runtime-bound packages only in listed adapters", async () => {
    const offenders: string[] = [];
    const boundFiles: string[] = [];
    let checked = 0;
    for (const dir of CORE_FOLDERS) {
      for (const file of await listTs(dir)) {
        checked++;
        const src = await readFile(new URL(file, ROOT), "utf8");
        for (const p of findRuntimeUses(src)) offenders.push(`${file}: ${p}`);
        const bound = stripSource(src).specifiers.filter((s) => RUNTIME_BOUND_PACKAGES.includes(s));
        if (bound.length > 0) boundFiles.push(file);
        if (bound.length > 0 && !(file in RUNTIME_ADAPTERS)) offenders.push(`${file}: imports runtime-bound ${bound.join(", ")} but is not in RUNTIME_ADAPTERS`);
      }
    }
    expect(checked).toBeGreaterThan(10);
    expect(offenders).toEqual([]);
    // The list stays true: every listed adapter exists and does import a runtime-bound package.
    expect(boundFiles.sort()).toEqual(Object.keys(RUNTIME_ADAPTERS).sort());
  });
});
