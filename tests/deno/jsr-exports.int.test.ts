/**
 * The JSR package shape under Deno: `@gatehouse/gatehouse` and
 * `@gatehouse/gatehouse/redis` (deno.json `name` + `exports`) resolve to the
 * same modules as the npm names `@gatehouse-runtime/core` and `@gatehouse-runtime/core/redis`
 * (deno.json `imports`); the root does not export the TCP adapter; the
 * adapter imported through the subpath writes to a real redis-server.
 *
 * Runs `deno run` on tests/deno/fixtures/jsr-imports.ts, so it checks Deno's
 * resolution whichever runner runs this file (vitest, deno test, bun test).
 */
import { spawnSync } from "node:child_process";
import process from "node:process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { useRedisServer } from "../helpers/redis.ts";

const root = fileURLToPath(new URL("../../", import.meta.url));

const redis = useRedisServer();

describe("JSR exports under Deno", () => {
  it("@gatehouse/gatehouse/redis is the TCP adapter of @gatehouse-runtime/core/redis, and it writes to Redis", () => {
    const r = spawnSync(
      join(root, "node_modules", ".bin", "deno"),
      ["run", "--allow-all", "tests/deno/fixtures/jsr-imports.ts"],
      { cwd: root, encoding: "utf8", env: { ...process.env, NO_COLOR: "1", GATEHOUSE_REDIS_URL: redis.url }, timeout: 60_000 },
    );
    expect(r.error).toBeUndefined();
    expect(r.status, r.stderr).toBe(0);
    const seen = JSON.parse(r.stdout.trim().split("\n").pop()!);
    expect(seen).toEqual({
      modExportsRedisStore: false,
      sameModule: true,
      sameAdapter: true,
      enqueued: { status: "enqueued", turnId: "t1" },
      agentName: "jsr-agent",
    });
  }, 60_000);
});
