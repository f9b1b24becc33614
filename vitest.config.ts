/**
 * Two projects: `unit`, every test file that starts no external process
 * (`npm test`, the fast default), and `int`, the files named
 * `<name>.int.test.ts`, which start one (redis-server, deno, bun, workerd,
 * chromium, a child node process; `npm run test:int`). The file name alone
 * decides: a new `.int.test.ts` file joins `int` with no list to edit.
 * `npx vitest run <files>` runs the named files of either project.
 *
 * Tests import the package by its npm name (as users do); in this repository
 * the names resolve to the TypeScript source, not to dist/ (which exists
 * only after `npm run build`). The same map is in tsconfig.json (`paths`)
 * and deno.json (`imports`); tests/runtimes/package-consumer.int.test.ts checks that all
 * three agree with package.json's exports.
 */
import { fileURLToPath } from "node:url";
import { configDefaults, defineConfig } from "vitest/config";
import { HOOK_TIMEOUT_MS, TEST_TIMEOUT_MS } from "./tests/helpers/timeouts.ts";

/** The name ending of a test file that starts an external process. */
export const INT_SUFFIX = ".int.test.ts";

export const SOURCE_OF_SUBPATH: Record<string, string> = {
  "@gatehouse-runtime/core/redis": "redis.ts",
  "@gatehouse-runtime/core/workers": "workers.ts",
  "@gatehouse-runtime/core/node": "entry/serve-node.ts",
  "@gatehouse-runtime/core/deno": "entry/serve-deno.ts",
  "@gatehouse-runtime/core/bun": "entry/serve-bun.ts",
  "@gatehouse-runtime/core/ai-sdk": "ai-sdk.ts",
  "@gatehouse-runtime/core/mcp": "mcp.ts",
  "@gatehouse-runtime/core/inspect": "inspect.ts",
  "@gatehouse-runtime/core/replay": "replay.ts",
  "@gatehouse-runtime/core/ops": "ops.ts",
  "@gatehouse-runtime/core": "mod.ts",
};

export default defineConfig({
  test: {
    // Sized for two shared cores (tests/helpers/timeouts.ts says why).
    testTimeout: TEST_TIMEOUT_MS,
    hookTimeout: HOOK_TIMEOUT_MS,
    projects: [
      { extends: true, test: { name: "unit", exclude: [...configDefaults.exclude, `**/*${INT_SUFFIX}`] } },
      { extends: true, test: { name: "int", include: [`**/*${INT_SUFFIX}`] } },
    ],
  },
  resolve: {
    alias: Object.entries(SOURCE_OF_SUBPATH).map(([find, file]) => ({
      find: new RegExp(`^${find.replace(/[/-]/g, "\\$&")}$`),
      replacement: fileURLToPath(new URL(file, import.meta.url)),
    })),
  },
});
