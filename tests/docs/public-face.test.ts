/**
 * The public face holds together: one error base, one reader of the
 * runtime's user agent, one table of defaults, every route declaring its
 * auth verb. Each check reads the source or the running code, so a second
 * copy, a class outside the base or an undeclared route fails here.
 */
import { readFileSync } from "node:fs";
import { dirname, join, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { trackedFiles } from "../helpers/tracked-files.ts";
import * as errors from "../../errors/index.ts";
import { GatehouseError } from "../../errors/base.ts";
import { ProblemError } from "../../routes/problem.ts";
import { VerificationRejected } from "../../verification/rejected.ts";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "../..");
const SKIP = new Set(["node_modules", "tests", "docs", "dist", "bench", "scripts", "examples"]);

/** The .ts files git tracks (tests/helpers/tracked-files.ts) outside the SKIP folders and dot folders. */
function sourceFiles(): string[] {
  return trackedFiles(ROOT).filter((p) => {
    const parts = relative(ROOT, p).split(sep);
    return p.endsWith(".ts") && !p.endsWith(".gen.ts") && !SKIP.has(parts[0]) && !parts.some((s) => s.startsWith(".") || s === "node_modules");
  });
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
    expect((await import("../../store/keys.ts")).StoreInputError).toBe(errors.StoreInputError);
    expect((await import("../../store/outage.ts")).StoreUnavailableError).toBe(errors.StoreUnavailableError);
    expect((await import("../../store/script-runner.ts")).EvictionPolicyError).toBe(errors.EvictionPolicyError);
    expect((await import("../../actors/replay/time-travel.ts")).EventTrimmedError).toBe(errors.EventTrimmedError);
    expect((await import("../../verdicts/errors.ts")).VerdictError).toBe(errors.VerdictError);
    expect((await import("../../routes/replay-bundle.ts")).ReplayBundleError).toBe(errors.ReplayBundleError);
    expect((await import("../../entry/config.ts")).ConfigError).toBe(errors.ConfigError);
    expect((await import("../../entry/startup.ts")).StartupError).toBe(errors.StartupError);
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
    "gatehouse-options.ts",
    "actors/pool/claim-failure.ts",
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
    const { ENV_VARIABLES } = await import("../../entry/config.ts");
    const { DEFAULTS } = await import("../../common/defaults.ts");
    const byName = new Map(ENV_VARIABLES.map((v) => [v.name, v.default]));
    expect(byName.get("GATEHOUSE_CONCURRENCY")).toBe(String(DEFAULTS.concurrency));
    expect(byName.get("GATEHOUSE_LEASE_MS")).toBe(String(DEFAULTS.leaseMs));
    expect(byName.get("GATEHOUSE_TOOL_TIMEOUT_MS")).toBe(String(DEFAULTS.toolTimeoutMs));
    expect(byName.get("GATEHOUSE_RETENTION_MAX_EVENTS")).toBe(String(DEFAULTS.retention.maxEvents));
    expect(byName.get("GATEHOUSE_RATE_LIMIT_PER_TOKEN")).toBe("1200/1m with auth, off without");
    expect(byName.get("GATEHOUSE_IDLE_POLL_MAX_MS")).toBe("5000 (1000 on TCP Redis)");
  });
});

describe("route access declared with each route", () => {
  /** The hand-written table the declarations replaced, kept as the oracle of today's behaviour. */
  function handWritten(method: string, path: string) {
    const m = /^\/v1\/agents\/([^/]+)(\/.*)?$/.exec(path);
    const read = method === "GET" || method === "HEAD";
    // Named events name no agent: the caller's tenants filter the waits it reaches (routes/named-events.ts).
    if (method === "POST" && path === "/v1/events") return { verb: "deliver", global: false, signable: true };
    if (m) {
      let agentId: string;
      try {
        agentId = decodeURIComponent(m[1]);
      } catch {
        agentId = m[1];
      }
      const rest = m[2] ?? "";
      if (read) return { verb: "read", agentId, global: false, signable: false };
      if (method === "POST" && rest === "/tasks") return { verb: "enqueue", agentId, global: false, signable: true };
      if (method === "POST" && rest === "/tool-results") return { verb: "deliver", agentId, global: false, signable: true };
      if (method === "POST" && rest === "/cancel") return { verb: "cancel", agentId, global: false, signable: true };
      if (method === "POST" && rest === "/events/session") return { verb: "read", agentId, global: false, signable: false };
      if (method === "POST" && rest === "/what-if") return { verb: "replay", agentId, global: false, signable: false };
      if (method === "POST" && rest === "/approvals") return { verb: "approve", agentId, global: false, signable: false };
      if (method === "DELETE" && /^\/tasks\/[^/]+$/.test(rest)) return { verb: "cancel", agentId, global: false, signable: false };
      if ((method === "PUT" || method === "PATCH" || method === "DELETE") && /^\/schedules\/[^/]+$/.test(rest)) return { verb: "enqueue", agentId, global: false, signable: false };
      return { verb: "admin", agentId, global: false, signable: false };
    }
    // The chat routes: the body names the agent of POST /v1/chat and POST /v1/ag-ui (the route checks the token's tenants).
    if (method === "POST" && path === "/v1/chat") return { verb: "enqueue", global: false, signable: false };
    if (method === "POST" && path === "/v1/ag-ui") return { verb: "enqueue", global: false, signable: false };
    const chat = /^\/v1\/chat\/([^/]+)\/(stream|messages)$/.exec(path);
    if (read && chat) {
      let agentId: string;
      try {
        agentId = decodeURIComponent(chat[1]);
      } catch {
        agentId = chat[1];
      }
      return { verb: "read", agentId, global: false, signable: false };
    }
    if (read && path === "/v1/agents") return { verb: "read", global: false, signable: false };
    // Versions and turn counts; a tenant-limited token's counts cover its prefixes' agents (routes/versions.ts).
    if (read && path === "/v1/versions") return { verb: "read", global: false, signable: false };
    if (read && (path === "/v1/machine" || path === "/openapi.json")) return { verb: "read", global: false, signable: false };
    if (read && (path === "/v1/tools" || /^\/v1\/tools\/[^/]+$/.test(path))) return { verb: "read", global: true, signable: false };
    if (read && /^\/v1\/verdicts\/[^/]+$/.test(path)) return { verb: "read", global: true, signable: false };
    return { verb: "admin", global: true, signable: false };
  }

  async function loaded() {
    const { createGatehouse, defineAgent, scriptedModel } = await import("../../mod.ts");
    // A built app has called every route module, so every route is declared.
    const gh = createGatehouse({ agents: [defineAgent({ name: "a", instructions: "x", model: scriptedModel([{ text: "x" }]) })] });
    await gh.close();
    return await import("../../routes/auth/access.ts");
  }

  it("every route registered on the app declared its access", async () => {
    const { declaredAccess } = await loaded();
    const { AUTH_VERBS } = await import("../../routes/auth/config.ts");
    const doc = JSON.parse(readFileSync(join(ROOT, "docs/openapi.json"), "utf8")) as { paths: Record<string, Record<string, unknown>> };
    const documented = Object.entries(doc.paths).flatMap(([p, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${p}`)).sort();
    const declared = declaredAccess();
    expect(declared.map((d) => `${d.method} ${d.path}`).sort()).toEqual(expect.arrayContaining(documented));
    for (const d of declared) {
      const verb = typeof d.access === "string" ? d.access : d.access.verb;
      expect(verb === "public" || (AUTH_VERBS as readonly string[]).includes(verb), `${d.method} ${d.path}: ${verb}`).toBe(true);
    }
  });

  it("the table made of the declarations answers as the hand-written one did", async () => {
    const { declaredAccess, requirementOf } = await loaded();
    const ids = ["a1", "t1:agent.x", "a%2Fb", "%zz", "caf%C3%A9"];
    const samples = new Set<string>([
      "/", "/v1", "/v1/agents", "/v1/agents/", "/v1/agents/a1/", "/v1/agents/a1/tasks/", "/v1/agents/a1/tasks/t/x",
      "/v1/agents/a1/unknown", "/v1/agents/a1/events/session/x", "/v1/tools/", "/v1/tools/r/x", "/v1/verdicts",
      "/v1/verdicts/v/x", "/v1/machine/", "/healthz", "/readyz", "/metrics", "/debug", "/debug/agents/a1", "/nope",
      "/openapi.json", "/v1/watchdog/tick", "/v1/watchdog", "/v1/versions",
    ]);
    for (const d of declaredAccess()) {
      for (const id of ids) samples.add(d.path.replace("{agentId}", id).replace(/\{[A-Za-z]+\}/g, "x1"));
    }
    expect(samples.size).toBeGreaterThan(60);
    const methods = ["GET", "HEAD", "POST", "DELETE", "PUT", "PATCH", "OPTIONS"];
    for (const path of samples) {
      for (const method of methods) {
        expect(requirementOf(method, path), `${method} ${path}`).toEqual(handWritten(method, path));
      }
    }
  });
});

describe("a small root, subpaths, no deprecated alias", () => {
  /** The public modules (package.json exports, but the entry files and the AI SDK adapter's optional peer). */
  const PUBLIC = ["mod.ts", "inspect.ts", "replay.ts", "ops.ts", "redis.ts", "workers.ts"];
  const subpaths = async () => ({
    inspect: await import("../../inspect.ts"),
    replay: await import("../../replay.ts"),
    ops: await import("../../ops.ts"),
  }) as Record<string, Record<string, unknown>>;

  it("the root holds about 25 values besides the errors", async () => {
    const mod = await import("../../mod.ts") as Record<string, unknown>;
    const current = Object.keys(mod);
    const errors = current.filter((k) => typeof mod[k] === "function" && (mod[k] as { prototype?: unknown }).prototype instanceof Error);
    expect(current.length - errors.length).toBeLessThanOrEqual(25);
    expect(errors.length).toBeGreaterThanOrEqual(10);
  });

  it("no public module exports a @deprecated name (TypeScript's reading)", async () => {
    const ts = (await import("typescript")).default;
    const options = { allowImportingTsExtensions: true, noEmit: true, module: ts.ModuleKind.ESNext, moduleResolution: ts.ModuleResolutionKind.Bundler, target: ts.ScriptTarget.ES2022, strict: true, skipLibCheck: true };
    const files = PUBLIC.map((f) => join(ROOT, f));
    const program = ts.createProgram(files, options);
    const checker = program.getTypeChecker();
    const deprecatedAt = (sym: import("typescript").Symbol | undefined) => (sym?.declarations ?? []).some((d) => ts.getJSDocDeprecatedTag(d) !== undefined);
    const found: string[] = [];
    let exported = 0;
    for (const file of files) {
      const moduleSymbol = checker.getSymbolAtLocation(program.getSourceFile(file)!)!;
      for (const sym of checker.getExportsOfModule(moduleSymbol)) {
        exported++;
        const target = sym.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(sym) : sym;
        if (deprecatedAt(sym) || deprecatedAt(target)) found.push(`${relative(ROOT, file)}: ${sym.name}`);
      }
    }
    expect(exported).toBeGreaterThan(100);
    expect(found).toEqual([]);
  }, 60_000);

  it("every name CHANGELOG.md says moved out of the root is gone from it and exported by its subpath", async () => {
    const log = readFileSync(join(ROOT, "CHANGELOG.md"), "utf8");
    const moved = [...log.matchAll(/^\| `(\w+)` \| `@gatehouse-runtime\/core` \| `@gatehouse-runtime\/core\/(\w+)` \|$/gm)].map((m) => [m[1], m[2]] as const);
    expect(moved.length).toBeGreaterThanOrEqual(60);
    const mod = await import("../../mod.ts") as Record<string, unknown>;
    const subs = await subpaths();
    let values = 0;
    for (const [name, subpath] of moved) {
      expect(name in mod, `${name} still in the root`).toBe(false);
      expect(subs[subpath], subpath).toBeDefined();
      if (name in subs[subpath]) values++; // else a type
    }
    expect(values).toBeGreaterThanOrEqual(25);
  });
});

describe("one naming rule for the public functions (docs/architecture.md, \"Naming\")", () => {
  const KINDS: Record<string, { pattern: RegExp; names: string[] }> = {
    definition: { pattern: /^define[A-Z]/, names: ["defineAgent", "defineTool", "defineGuardian"] },
    "long-lived object": {
      pattern: /^create[A-Z]/,
      names: ["createGatehouse", "createWorkersHandler", "createReplayGatehouse", "createApp", "createVerdictLog", "createGuardianRegistry", "createProcessLive"],
    },
    adapter: {
      pattern: /^[a-z]+[A-Za-z]*(Model|Store|Logger|Tool|Compatible)$/,
      names: ["openaiCompatible", "scriptedModel", "aiSdkModel", "memoryStore", "upstashStore", "redisStore", "consoleLogger", "agentTool"],
    },
    outcome: { pattern: /^(ok|error|terminate)$/, names: ["ok", "error", "terminate"] },
    "author value": { pattern: /^(handoff|lastUserMessage)$/, names: ["handoff", "lastUserMessage"] },
    operation: {
      pattern: /^(check|describe|to|validate|export|load|history|auth|known|tool|output|problem|machine)[A-Za-z]*$/,
      names: [
        "checkOutcome", "describeMachine", "toMermaid", "machineConfig", "historyAt", "validateVerdict", "exportReplayBundle",
        "loadReplayBundle", "authFromEnv", "checkAuthConfig", "describeToolRole", "toolRoleView", "knownToolsBlock",
        "outputVerifierCode", "problemType",
      ],
    },
  };

  it("every exported function has a kind, and its name follows the kind's pattern", async () => {
    const modules = [
      await import("../../mod.ts"), await import("../../inspect.ts"), await import("../../replay.ts"), await import("../../ops.ts"),
      await import("../../redis.ts"), await import("../../ai-sdk.ts"),
    ] as Record<string, unknown>[];
    const kindOf = new Map(Object.entries(KINDS).flatMap(([kind, k]) => k.names.map((n) => [n, kind] as const)));
    const unplaced: string[] = [];
    for (const m of modules) {
      for (const [name, v] of Object.entries(m)) {
        if (typeof v !== "function" || /^[A-Z]/.test(name)) continue; // classes
        const kind = kindOf.get(name);
        if (!kind) unplaced.push(name);
        else expect(name, `${name} (${kind})`).toMatch(KINDS[kind].pattern);
      }
    }
    expect([...new Set(unplaced)]).toEqual([]);
  });
});
