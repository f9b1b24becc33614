/**
 * The public face holds together: one error base, one reader of the
 * runtime's user agent, one table of defaults, every route declaring its
 * auth verb. Each check reads the source or the running code, so a second
 * copy, a class outside the base or an undeclared route fails here.
 */
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import * as errors from "../errors/index.ts";
import { GatehouseError } from "../errors/base.ts";
import { ProblemError } from "../routes/problem.ts";
import { VerificationRejected } from "../verification/rejected.ts";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
const SKIP = new Set(["node_modules", "tests", "docs", "dist", "bench", "scripts", "examples"]);

function sourceFiles(dir = ROOT, out: string[] = []): string[] {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    if (e.name.startsWith(".")) continue;
    const p = join(dir, e.name);
    if (e.isDirectory()) {
      if (dir === ROOT && SKIP.has(e.name)) continue;
      sourceFiles(p, out);
    } else if (e.name.endsWith(".ts") && !e.name.endsWith(".gen.ts")) out.push(p);
  }
  return out;
}

const sources = () => sourceFiles().map((f) => ({ file: relative(ROOT, f), text: readFileSync(f, "utf8") }));

describe("one error base", () => {
  it("no class of the package extends Error but GatehouseError", () => {
    const direct = sources().flatMap(({ file, text }) =>
      [...text.matchAll(/class\s+(\w+)\s+extends\s+Error\b/g)].map((m) => `${file}: ${m[1]}`)
    );
    expect(direct).toEqual(["errors/base.ts: GatehouseError"]);
  });

  it("every error is a GatehouseError with a stable string code and keeps its name", () => {
    const made: Error[] = [
      new errors.DefinitionError("x"),
      new errors.ToolError({ type: "t", message: "x" }),
      new errors.ModelError("x"),
      new errors.SnapshotError("x"),
      new errors.PromptError("x"),
      new errors.StoreInputError("x"),
      new errors.StoreUnavailableError("x"),
      new errors.StoreReplyError("x"),
      new errors.EvictionPolicyError("allkeys-lru"),
      new errors.EventTrimmedError(1, 2, "a"),
      new errors.HistoryDivergedError(1, "x"),
      new errors.VerdictError("invalid_verdict", "f", "x"),
      new errors.ReplayBundleError("x", "agentId"),
      new errors.ConfigError("x", "PORT"),
      new errors.StartupError("config", "x"),
      new ProblemError("agent_not_found", "x"),
      new VerificationRejected({ message: "x", code: "tests_failed" }),
    ];
    for (const e of made) {
      expect(e).toBeInstanceOf(GatehouseError);
      expect(e).toBeInstanceOf(Error);
      expect(typeof (e as GatehouseError).code).toBe("string");
      expect((e as GatehouseError).code).toMatch(/^[a-z][a-z0-9_]*$/);
      expect(e.name).toBe(e.constructor.name);
    }
    expect((made[0] as errors.DefinitionError).code).toBe("invalid_definition");
    expect((made[12] as errors.ReplayBundleError).field).toBe("agentId");
    expect((made[14] as errors.StartupError).exitCode).toBe(2);
    expect((made[16] as VerificationRejected).code).toBe("tests_failed");
  });

  it("the old homes still export the same classes", async () => {
    expect((await import("../store/keys.ts")).StoreInputError).toBe(errors.StoreInputError);
    expect((await import("../store/outage.ts")).StoreUnavailableError).toBe(errors.StoreUnavailableError);
    expect((await import("../store/script-runner.ts")).EvictionPolicyError).toBe(errors.EvictionPolicyError);
    expect((await import("../actors/time-travel.ts")).EventTrimmedError).toBe(errors.EventTrimmedError);
    expect((await import("../verdicts/errors.ts")).VerdictError).toBe(errors.VerdictError);
    expect((await import("../routes/replay-bundle.ts")).ReplayBundleError).toBe(errors.ReplayBundleError);
    expect((await import("../entry/config.ts")).ConfigError).toBe(errors.ConfigError);
    expect((await import("../entry/startup.ts")).StartupError).toBe(errors.StartupError);
  });
});

describe("one reader of the runtime", () => {
  it("navigator.userAgent is read in common/runtime.ts only", () => {
    const readers = sources().filter(({ text }) => /navigator\??\.userAgent|"Cloudflare-Workers"/.test(text)).map((s) => s.file);
    expect(readers).toEqual(["common/runtime.ts"]);
  });
});

describe("one table of defaults", () => {
  /** The files that read defaults: none may write one of its own. */
  const READERS = [
    "gatehouse.ts",
    "actors/claim-failure.ts",
    "entry/config.ts",
    "entry/serve-node.ts",
    "entry/serve-deno.ts",
    "entry/serve-bun.ts",
    "store/retention.ts",
    "store/redis.ts",
    "routes/rate-limit.ts",
    "routes/what-if.ts",
  ];
  const code = (file: string) =>
    readFileSync(join(ROOT, file), "utf8").replace(/\/\*[\s\S]*?\*\//g, "").replace(/^\s*\/\/.*$/gm, "");

  it("no reader falls back to a number literal", () => {
    const found = READERS.flatMap((f) => [...code(f).matchAll(/\?\?\s*\d[\d_]*/g)].map((m) => `${f}: ${m[0]}`));
    expect(found).toEqual([]);
  });

  it("no default constant of a reader is a number literal", () => {
    const found = READERS.flatMap((f) =>
      [...code(f).matchAll(/export const (DEFAULT_\w+|CLUSTER_SHARDS)(?::[^=]+)?\s*=\s*(\d[\d_]*|Object\.freeze\(\{\s*\w+:\s*\d)/g)]
        .map((m) => `${f}: ${m[1]}`)
    );
    expect(found).toEqual([]);
  });

  it("the environment table's defaults are written from the table", async () => {
    // A switch's "0" (GATEHOUSE_ALLOW_EVICTION) is no number of the table.
    expect([...code("entry/config.ts").matchAll(/default:\s*"[1-9][^"]*"/g)].map((m) => m[0])).toEqual([]);
    const { ENV_VARIABLES } = await import("../entry/config.ts");
    const { DEFAULTS } = await import("../common/defaults.ts");
    const byName = new Map(ENV_VARIABLES.map((v) => [v.name, v.default]));
    expect(byName.get("GATEHOUSE_CONCURRENCY")).toBe(String(DEFAULTS.concurrency));
    expect(byName.get("GATEHOUSE_LEASE_MS")).toBe(String(DEFAULTS.leaseMs));
    expect(byName.get("GATEHOUSE_TOOL_TIMEOUT_MS")).toBe(String(DEFAULTS.toolTimeoutMs));
    expect(byName.get("GATEHOUSE_RETENTION_MAX_EVENTS")).toBe(String(DEFAULTS.retention.maxEvents));
    expect(byName.get("GATEHOUSE_RATE_LIMIT_PER_TOKEN")).toBe("1200/1m with auth, off without");
    expect(byName.get("GATEHOUSE_IDLE_POLL_MAX_MS")).toBe("5000 (1000 on TCP Redis)");
  });
});
