/**
 * The environment parser shared by every entry (entry/config.ts): each
 * setting reaches createGatehouse's options, each bad value is a ConfigError
 * naming the variable (never a silent default), secrets stay out of
 * messages, and the documented tables list exactly the variables it reads.
 * Also the startup pieces that need no process: the one-line description of
 * each failure kind and the agents a module exports.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { ConfigError, configFromEnv, ENV_VARIABLES, nearestVariable } from "../../entry/config.ts";
import { agentsOfModule, describeStartupFailure, prepareFromEnv, STARTUP_EXIT_CODES, StartupError } from "../../entry/startup.ts";
import { defineAgent, DefinitionError, EvictionPolicyError, scriptedModel } from "../../mod.ts";

const agent = (name: string) => defineAgent({ name, instructions: "x", model: scriptedModel([{ text: "ok" }]) });

describe("configFromEnv", () => {
  it("defaults: port 8787 on 127.0.0.1, info logs, 5 s store bound, no option overridden", () => {
    expect(configFromEnv({})).toEqual({ port: 8787, hostname: "127.0.0.1", logLevel: "info", storeTimeoutMs: 5000, gatehouse: {}, unknown: [] });
  });

  it("sets every createGatehouse option an operator needs", () => {
    const c = configFromEnv({
      PORT: "0",
      HOST: "0.0.0.0",
      GATEHOUSE_LOG: "debug",
      GATEHOUSE_CONCURRENCY: "8",
      GATEHOUSE_LEASE_MS: "6000",
      GATEHOUSE_POLL_MS: "50",
      GATEHOUSE_IDLE_POLL_MAX_MS: "2000",
      GATEHOUSE_WATCHDOG_INTERVAL_MS: "500",
      GATEHOUSE_WATCHDOG_IDLE_MAX_MS: "20000",
      GATEHOUSE_MAX_BODY_BYTES: "1048576",
      GATEHOUSE_WHAT_IF_MAX_CANDIDATES: "50",
      GATEHOUSE_EXTERNAL_TOOL_TIMEOUT_MS: "120000",
      GATEHOUSE_TOOL_TIMEOUT_MS: "30000",
      GATEHOUSE_BEARER_TOKENS: "token-aaaaaaaaaaaaaaaa, token-bbbbbbbbbbbbbbbb",
      GATEHOUSE_STORE_TIMEOUT_MS: "2000",
    });
    expect(c).toEqual({
      port: 0,
      hostname: "0.0.0.0",
      logLevel: "debug",
      storeTimeoutMs: 2000,
      gatehouse: {
        concurrency: 8,
        leaseMs: 6000,
        pollMs: 50,
        idlePollMaxMs: 2000,
        watchdogIntervalMs: 500,
        watchdogIdleMaxMs: 20000,
        maxBodyBytes: 1048576,
        whatIfMaxCandidates: 50,
        externalToolTimeoutMs: 120000,
        toolTimeoutMs: 30000,
        storeTimeoutMs: 2000,
        auth: { bearerTokens: ["token-aaaaaaaaaaaaaaaa", "token-bbbbbbbbbbbbbbbb"] },
      },
      unknown: [],
    });
  });

  it("an empty value counts as unset", () => {
    expect(configFromEnv({ PORT: "", GATEHOUSE_LEASE_MS: " ", GATEHOUSE_BEARER_TOKENS: "" }).gatehouse).toEqual({});
  });

  const bad: Array<[Record<string, string>, RegExp]> = [
    [{ PORT: "80a" }, /^PORT="80a" is not a whole number \(expected 0 to 65535\)$/],
    [{ PORT: "70000" }, /^PORT=70000 is out of range/],
    [{ GATEHOUSE_LEASE_MS: "30s" }, /^GATEHOUSE_LEASE_MS="30s" is not a whole number/],
    [{ GATEHOUSE_LEASE_MS: "10" }, /^GATEHOUSE_LEASE_MS=10 is out of range \(expected 1000 to 86400000\)$/],
    [{ GATEHOUSE_CONCURRENCY: "0" }, /^GATEHOUSE_CONCURRENCY=0 is out of range/],
    [{ GATEHOUSE_CONCURRENCY: "-1" }, /^GATEHOUSE_CONCURRENCY="-1" is not a whole number/],
    [{ GATEHOUSE_WHAT_IF_MAX_CANDIDATES: "1001" }, /^GATEHOUSE_WHAT_IF_MAX_CANDIDATES=1001 is out of range/],
    [{ GATEHOUSE_WATCHDOG_INTERVAL_MS: "1.5" }, /^GATEHOUSE_WATCHDOG_INTERVAL_MS="1.5" is not a whole number/],
    [{ GATEHOUSE_LOG: "verbose" }, /^GATEHOUSE_LOG="verbose" is not a log level/],
    [{ GATEHOUSE_ALLOW_EVICTION: "yes" }, /^GATEHOUSE_ALLOW_EVICTION="yes" is not a switch/],
    [{ GATEHOUSE_REDIS_URL: "localhost:6379" }, /^GATEHOUSE_REDIS_URL is not a redis:\/\/ or rediss:\/\/ URL$/],
    [{ UPSTASH_REDIS_REST_URL: "https://x.upstash.io" }, /must be set together/],
    [{ GATEHOUSE_REDIS_URL: "redis://a", UPSTASH_REDIS_REST_URL: "https://b", UPSTASH_REDIS_REST_TOKEN: "t" }, /both set: choose one store/],
    [{ GATEHOUSE_REDIS_CLUSTER_NODES: "redis://a:1,not a node" }, /^GATEHOUSE_REDIS_CLUSTER_NODES is not a comma-separated list/],
    [{ GATEHOUSE_REDIS_CLUSTER_NODES: "a:1", GATEHOUSE_REDIS_URL: "redis://b" }, /^GATEHOUSE_REDIS_CLUSTER_NODES is set with another store/],
    [{ GATEHOUSE_REDIS_SHARDS: "300" }, /^GATEHOUSE_REDIS_SHARDS=300 is out of range \(expected 1 to 256\)$/],
    [{ GATEHOUSE_BEARER_TOKENS: "short" }, /^GATEHOUSE_BEARER_TOKENS: token 1 of 1 is not 16 to 4096 visible ASCII characters \(it has 5\)$/],
    [{ GATEHOUSE_BEARER_TOKENS: " , " }, /holds no token/],
    [{ GATEHOUSE_CONCURRENCY_LIMITS: "{user:42: 5}" }, /^GATEHOUSE_CONCURRENCY_LIMITS is not JSON/],
    [{ GATEHOUSE_CONCURRENCY_LIMITS: "{\"user:42\": 0}" }, /^GATEHOUSE_CONCURRENCY_LIMITS: limit of "user:42" must be a whole number from 1 to 1000000, got 0$/],
    [{ GATEHOUSE_CONCURRENCY_LIMITS: "{\"*\": 1.5}" }, /got 1.5/],
    [{ GATEHOUSE_CONCURRENCY_LIMITS: "[5]" }, /must be an object/],
    [{ GATEHOUSE_METRICS_LANES: "1001" }, /^GATEHOUSE_METRICS_LANES=1001 is out of range/],
  ];
  for (const [env, message] of bad) {
    it(`refuses ${JSON.stringify(env)} with a ConfigError naming the variable`, () => {
      let err: unknown;
      try {
        configFromEnv(env);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(ConfigError);
      expect((err as Error).message).toMatch(message);
      expect(Object.keys(env)).toContain((err as ConfigError).variable);
      expect((err as Error).message).not.toContain("\n");
    });
  }

  it("never prints a token or a Redis password", () => {
    const secret = "p4ssw0rd-not-to-print";
    expect(() => configFromEnv({ GATEHOUSE_BEARER_TOKENS: `${secret},x` })).toThrow(/token 2 of 2/);
    try {
      configFromEnv({ GATEHOUSE_BEARER_TOKENS: `${secret},x` });
    } catch (e) {
      expect((e as Error).message).not.toContain(secret);
    }
    try {
      configFromEnv({ GATEHOUSE_REDIS_URL: `http://u:${secret}@h` });
    } catch (e) {
      expect((e as Error).message).not.toContain(secret);
    }
  });

  it("reads scoped tokens, webhook secrets and QStash keys into auth (authFromEnv), and refuses bad ones without printing them", () => {
    const scoped = JSON.stringify([{ token: "tenant-token-0123456789", tenants: ["acme-"], verbs: ["read"] }]);
    const c = configFromEnv({
      GATEHOUSE_TOKENS: scoped,
      GATEHOUSE_BEARER_TOKENS: "token-aaaaaaaaaaaaaaaa",
      GATEHOUSE_WEBHOOK_SECRETS: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
      QSTASH_CURRENT_SIGNING_KEY: "sig_current_0123456789",
      QSTASH_NEXT_SIGNING_KEY: "sig_next_0123456789",
    });
    expect(c.unknown).toEqual([]);
    expect(c.gatehouse.auth).toEqual({
      bearerTokens: ["token-aaaaaaaaaaaaaaaa"],
      tokens: [{ token: "tenant-token-0123456789", tenants: ["acme-"], verbs: ["read"] }],
      webhookSecrets: ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"],
      qstash: { currentSigningKey: "sig_current_0123456789", nextSigningKey: "sig_next_0123456789" },
    });
    expect(configFromEnv({ GATEHOUSE_TOKEN: "one-more-token-0123456789" }).gatehouse.auth).toEqual({ tokens: ["one-more-token-0123456789"] });
    // The URL senders call the deployment by (a QStash token's sub), behind a proxy.
    expect(configFromEnv({ GATEHOUSE_TOKEN: "one-more-token-0123456789", GATEHOUSE_PUBLIC_URL: "https://api.example.com/gh" }).gatehouse.auth)
      .toEqual({ tokens: ["one-more-token-0123456789"], publicUrl: "https://api.example.com/gh" });
    for (const [env, variable] of [
      [{ GATEHOUSE_TOKEN: "one-more-token-0123456789", GATEHOUSE_PUBLIC_URL: "api.example.com" }, "GATEHOUSE_PUBLIC_URL"],
      [{ GATEHOUSE_TOKEN: "one-more-token-0123456789", GATEHOUSE_PUBLIC_URL: "https://api.example.com/?x=1" }, "GATEHOUSE_PUBLIC_URL"],
      [{ QSTASH_CURRENT_SIGNING_KEY: "sig_current_0123456789" }, "QSTASH_CURRENT_SIGNING_KEY"],
      [{ GATEHOUSE_TOKENS: "[not json" }, "GATEHOUSE_TOKENS"],
    ] as const) {
      expect(() => configFromEnv(env)).toThrow(ConfigError);
      try {
        configFromEnv(env);
      } catch (e) {
        expect((e as ConfigError).variable).toBe(variable);
      }
    }
    const secret = "short-secret";
    try {
      configFromEnv({ GATEHOUSE_TOKENS: secret });
      throw new Error("accepted");
    } catch (e) {
      expect(e).toBeInstanceOf(ConfigError);
      expect((e as Error).message).not.toContain(secret);
    }
  });

  it("reads the concurrency limits (JSON) and the lanes /metrics reports", () => {
    expect(configFromEnv({}).gatehouse.concurrencyLimits).toBeUndefined();
    expect(configFromEnv({ GATEHOUSE_CONCURRENCY_LIMITS: ' {"user:42": 5, "*": 10} ' }).gatehouse.concurrencyLimits).toEqual({ "user:42": 5, "*": 10 });
    expect(configFromEnv({ GATEHOUSE_METRICS_LANES: "5" }).gatehouse.metricsLanes).toBe(5);
  });

  it("reads the retention switch and limits", () => {
    expect(configFromEnv({}).gatehouse.retention).toBeUndefined();
    expect(configFromEnv({ GATEHOUSE_RETENTION: "off" }).gatehouse.retention).toBe(false);
    expect(configFromEnv({ GATEHOUSE_RETENTION_MAX_EVENTS: "500", GATEHOUSE_RETENTION_MAX_TURNS: "20" }).gatehouse.retention)
      .toEqual({ maxEvents: 500, maxTurns: 20 });
    expect(() => configFromEnv({ GATEHOUSE_RETENTION: "maybe" })).toThrow(/GATEHOUSE_RETENTION="maybe" is not a switch/);
    expect(() => configFromEnv({ GATEHOUSE_RETENTION: "off", GATEHOUSE_RETENTION_MAX_EVENTS: "5" })).toThrow(/choose one/);
    expect(() => configFromEnv({ GATEHOUSE_RETENTION_MAX_EVENT_BYTES: "10" })).toThrow(/GATEHOUSE_RETENTION_MAX_EVENT_BYTES=10 is out of range/);
  });

  it("reports unknown GATEHOUSE_* variables (typos) without failing", () => {
    expect(configFromEnv({ GATEHOUSE_LEASE: "5000", OTHER: "1" }).unknown).toEqual(["GATEHOUSE_LEASE"]);
  });

  it("suggests the variable an unknown GATEHOUSE_* name was probably meant to be", () => {
    expect(nearestVariable("GATEHOUSE_LEASE")).toBe("GATEHOUSE_LEASE_MS");
    expect(nearestVariable("GATEHOUSE_CONCURENCY")).toBe("GATEHOUSE_CONCURRENCY");
    expect(nearestVariable("gatehouse_log")).toBe("GATEHOUSE_LOG");
    expect(nearestVariable("GATEHOUSE_NOTHING_LIKE_IT")).toBeUndefined();
  });

  it("docs/api.md and docs/operations.md list every variable the parser reads", () => {
    for (const file of ["../../docs/api.md", "../../docs/operations.md"]) {
      const text = readFileSync(new URL(file, import.meta.url), "utf8");
      for (const v of ENV_VARIABLES) expect(text, `${file} names ${v.name}`).toContain(`\`${v.name}\``);
    }
  });
});

describe("startup", () => {
  it("describes each failure in one line with its exit code", () => {
    const cases: Array<[unknown, number]> = [
      [new ConfigError("GATEHOUSE_LOG=\"x\" is not a log level"), STARTUP_EXIT_CODES.config],
      [new DefinitionError("Two agents are named \"a\""), STARTUP_EXIT_CODES.agents],
      [new EvictionPolicyError("allkeys-lru"), STARTUP_EXIT_CODES.store],
      [new StartupError("listen", "port 1 on h is already in use"), STARTUP_EXIT_CODES.listen],
      [new TypeError("boom\n  at somewhere"), STARTUP_EXIT_CODES.unexpected],
    ];
    for (const [err, code] of cases) {
      const d = describeStartupFailure(err);
      expect(d.exitCode).toBe(code);
      expect(d.line).toMatch(/^gatehouse: cannot start: \S/);
      expect(d.line).not.toContain("\n");
    }
    expect(new Set(Object.values(STARTUP_EXIT_CODES)).size).toBe(5);
  });

  it("passes the environment's options to createGatehouse (bearer auth from GATEHOUSE_BEARER_TOKENS)", async () => {
    const { gatehouse, config } = await prepareFromEnv({
      agents: [agent("a")],
      env: { GATEHOUSE_BEARER_TOKENS: "token-aaaaaaaaaaaaaaaa" },
      logger: { debug() {}, info() {}, warn() {}, error() {} },
    });
    try {
      expect(config.gatehouse.auth).toEqual({ bearerTokens: ["token-aaaaaaaaaaaaaaaa"] });
      expect((await gatehouse.fetch(new Request("http://x/v1/machine"))).status).toBe(401);
      expect((await gatehouse.fetch(new Request("http://x/v1/machine", { headers: { authorization: "Bearer token-aaaaaaaaaaaaaaaa" } }))).status).toBe(200);
    } finally {
      await gatehouse.close();
    }
  });

  it("takes a module's agents: default, an agents array, or every exported definition", () => {
    const a = agent("a");
    const b = agent("b");
    expect(agentsOfModule({ default: [a, b] }, "m")).toEqual([a, b]);
    expect(agentsOfModule({ default: { agents: [a] } }, "m")).toEqual([a]);
    expect(agentsOfModule({ agents: [b], a }, "m")).toEqual([b]);
    expect(agentsOfModule({ a, b, helper: () => 1, n: 3 }, "m")).toEqual([a, b]);
    expect(() => agentsOfModule({ x: 1 }, "./m.js")).toThrow(/\.\/m\.js exports no agent/);
  });
});
