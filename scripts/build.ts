/**
 * `npm run build` (and `prepack`): the npm package's JavaScript and
 * declarations in dist/, from the same .ts source Deno and JSR use.
 *
 * - tsc -p tsconfig.build.json emits ESM .js (relative `.ts` imports
 *   rewritten to `.js` by `rewriteRelativeImportExtensions`) and .d.ts for
 *   every module reachable from the package's entries (mod.ts, redis.ts,
 *   ai-sdk.ts, mcp.ts, inspect.ts, replay.ts, ops.ts and the entry/ modules named in the exports map), plus
 *   tools/mcp/stdio.ts, which mcp.ts loads by a computed specifier only for a
 *   stdio MCP server (tsconfig.build.json lists it).
 * - tsc leaves `.ts` in the declarations' relative specifiers; they are
 *   rewritten to `.js` here, so every TypeScript version and resolution mode
 *   that reads the package finds the declarations next to the JavaScript.
 * - The CLI (`bin`) is made executable.
 * tests/runtimes/package-consumer.int.test.ts packs the result and uses it from fresh projects.
 */
import { execFileSync } from "node:child_process";
import { chmodSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const dist = join(root, "dist");
rmSync(dist, { recursive: true, force: true });
execFileSync(process.execPath, [join(root, "node_modules/typescript/bin/tsc"), "-p", join(root, "tsconfig.build.json")], {
  stdio: "inherit",
});

const SPECIFIER = /(\bfrom\s*|\bimport\(\s*)(["'])(\.{1,2}\/[^"']*?)\.ts\2/g;
let files = 0;
function walk(dir: string) {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) walk(p);
    else if (e.name.endsWith(".d.ts")) {
      const src = readFileSync(p, "utf8");
      const out = src.replace(SPECIFIER, (_m, lead: string, q: string, path: string) => `${lead}${q}${path}.js${q}`);
      if (out !== src) writeFileSync(p, out);
      files++;
    }
  }
}
walk(dist);
chmodSync(join(dist, "entry/cli.js"), 0o755);
console.log(`dist/: ${files} declaration files; bin dist/entry/cli.js`);
