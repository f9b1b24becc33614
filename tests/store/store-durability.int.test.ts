/**
 * What "acknowledged" means on Redis (store/durability.ts; docs/store.md,
 * "Durability"): the comparison of the persistence a deployment asks for
 * with the server's `appendonly` / `appendfsync`, as a table; then the Redis
 * adapter's check against real redis-servers started with different
 * settings: a weaker server logs one `store_durability_weaker` warning with
 * its settings, one that keeps what is asked one `store_durability` info
 * line with the settings it checked, and one that
 * refuses CONFIG (renamed away, or an ACL user without it) logs one
 * `store_durability_unchecked` info line and still works. Last, the rule
 * for the suites that kill a redis-server and start it again: those that
 * check acknowledged work survived run it with `appendfsync always`.
 */
import { readFileSync } from "node:fs";
import { join, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigError } from "../../entry/config.ts";
import { prepareFromEnv } from "../../entry/startup.ts";
import { storeFromEnv } from "../../entry/store-from-env.ts";
import { defineAgent, scriptedModel } from "../../mod.ts";
import { redisStore } from "../../redis.ts";
import { checkDurability, type Durability, DURABILITY_LINES, type Persistence } from "../../store/durability.ts";
import { StoreInputError } from "../../store/keys.ts";
import { startRedisCluster } from "../helpers/redis-cluster.ts";
import { trackedFiles } from "../helpers/tracked-files.ts";
import { type RedisServer, startRedisServer } from "../helpers/redis-server.ts";

type Line = { level: string; msg: string; fields: Record<string, unknown> };
function recorder() {
  const lines: Line[] = [];
  const at = (level: string) => (msg: string, fields: Record<string, unknown> = {}) => void lines.push({ level, msg, fields });
  return { lines, logger: { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") } };
}
const durabilityLines = (lines: Line[]) => lines.filter((l) => l.msg.startsWith("store_durability"));

describe("checkDurability (the comparison)", () => {
  const server = (appendonly: string | null, appendfsync: string | null): Persistence => ({ appendonly, appendfsync });
  const TABLE: Array<[Durability, Persistence, "meets" | "weaker" | "unknown"]> = [
    ["fsync-always", server("yes", "always"), "meets"],
    ["fsync-always", server("yes", "everysec"), "weaker"],
    ["fsync-always", server("yes", "no"), "weaker"],
    ["fsync-always", server("no", "always"), "weaker"],
    ["fsync-always", server("no", "everysec"), "weaker"],
    ["fsync-everysec", server("yes", "always"), "meets"],
    ["fsync-everysec", server("yes", "everysec"), "meets"],
    ["fsync-everysec", server("YES", "EverySec"), "meets"],
    ["fsync-everysec", server("yes", "no"), "weaker"],
    ["fsync-everysec", server("no", "everysec"), "weaker"],
    ["fsync-everysec", server("no", null), "weaker"],
    ["none", server("no", "everysec"), "meets"],
    ["none", server(null, null), "meets"],
    ["fsync-everysec", server(null, null), "unknown"],
    ["fsync-everysec", server("yes", null), "unknown"],
    ["fsync-always", server("yes", "sometimes"), "unknown"],
    ["fsync-always", server("maybe", "always"), "unknown"],
  ];
  it.each(TABLE)("wanted %s, server %j: %s", (wanted, p, outcome) => {
    expect(checkDurability(wanted, p).outcome).toBe(outcome);
  });

  it("a weaker server says what an acknowledged write may lose there", () => {
    expect(checkDurability("fsync-always", server("yes", "everysec"))).toEqual({
      outcome: "weaker",
      loses: "up to about 1 s of acknowledged writes on a host crash or power loss",
    });
    expect(checkDurability("fsync-everysec", server("yes", "no"))).toMatchObject({ loses: expect.stringMatching(/OS has not flushed/) });
    expect(checkDurability("fsync-everysec", server("no", "everysec"))).toMatchObject({ loses: expect.stringMatching(/RDB snapshot/) });
  });
});

describe("the Redis adapter's persistence check (real redis-servers)", () => {
  let noAof: RedisServer;
  let everysec: RedisServer;
  let always: RedisServer;
  let noConfig: RedisServer;
  beforeAll(async () => {
    [noAof, everysec, always, noConfig] = await Promise.all([
      startRedisServer(),
      startRedisServer({ appendonly: true, appendfsync: "everysec" }),
      startRedisServer({ appendonly: true, appendfsync: "always" }),
      startRedisServer({ appendonly: true, appendfsync: "always", args: ["--rename-command", "CONFIG", ""] }),
    ]);
  });
  afterAll(async () => {
    await Promise.all([noAof, everysec, always, noConfig].map((s) => s?.stop()));
  });

  /** Opens a store on `url`, runs its check and an operation, returns the lines it wrote. */
  async function check(url: string, opts: { durability?: Durability } = {}) {
    const { lines, logger } = recorder();
    const store = redisStore({ url, prefix: "durability", logger, ...opts });
    try {
      await store.checkEviction();
      expect(await store.getAgent("a1")).toBeNull();
      await store.checkEviction();
    } finally {
      await store.close();
    }
    return durabilityLines(lines);
  }

  it("appendonly no: one warning with the server's settings, the durability asked for, and what it loses", async () => {
    const lines = await check(noAof.url);
    expect(lines).toEqual([{
      level: "warn",
      msg: DURABILITY_LINES.weaker,
      fields: {
        appendonly: "no",
        appendfsync: "everysec",
        wanted: "fsync-always",
        loses: "every write since the last RDB snapshot (all of them without snapshots) when Redis restarts or crashes",
      },
    }]);
    expect(DURABILITY_LINES.weaker).toBe("store_durability_weaker");
  });

  it("appendonly yes, appendfsync always: one info line `store_durability` with the settings it checked, under the default (fsync-always) and fsync-everysec", async () => {
    const meets = (wanted: Durability) => [{
      level: "info", msg: DURABILITY_LINES.meets, fields: { appendonly: "yes", appendfsync: "always", wanted },
    }];
    expect(await check(always.url)).toEqual(meets("fsync-always"));
    expect(await check(always.url, { durability: "fsync-always" })).toEqual(meets("fsync-always"));
    expect(await check(always.url, { durability: "fsync-everysec" })).toEqual(meets("fsync-everysec"));
    expect(DURABILITY_LINES.meets).toBe("store_durability");
  });

  it("appendfsync everysec: a warning under the default (fsync-always), nothing for fsync-everysec", async () => {
    const lines = await check(everysec.url);
    expect(lines.map((l) => [l.level, l.msg, l.fields.appendonly, l.fields.appendfsync, l.fields.wanted, l.fields.loses])).toEqual([
      ["warn", "store_durability_weaker", "yes", "everysec", "fsync-always", "up to about 1 s of acknowledged writes on a host crash or power loss"],
    ]);
    expect(await check(everysec.url, { durability: "fsync-everysec" })).toEqual([{
      level: "info", msg: "store_durability", fields: { appendonly: "yes", appendfsync: "everysec", wanted: "fsync-everysec" },
    }]);
  });

  it("appendonly no is weaker than fsync-everysec too", async () => {
    const lines = await check(noAof.url, { durability: "fsync-everysec" });
    expect(lines.map((l) => [l.level, l.msg, l.fields.appendonly, l.fields.wanted])).toEqual([["warn", "store_durability_weaker", "no", "fsync-everysec"]]);
  });

  it("durability none reads nothing and writes nothing, even without the AOF", async () => {
    expect(await check(noAof.url, { durability: "none" })).toEqual([]);
  });

  it("CONFIG renamed away: one info line, no failure, the store works", async () => {
    const { lines, logger } = recorder();
    const store = redisStore({ url: noConfig.url, prefix: "durability", logger, durability: "fsync-always" });
    try {
      expect(await store.checkEviction()).toEqual({ policy: null });
      expect(await store.getAgent("a1")).toBeNull();
    } finally {
      await store.close();
    }
    expect(durabilityLines(lines)).toEqual([{
      level: "info",
      msg: "store_durability_unchecked",
      fields: { wanted: "fsync-always", reason: "the server refused CONFIG GET" },
    }]);
  });

  it("an ACL user without +config: one info line, no failure", async () => {
    const admin = new Redis(noAof.url);
    try {
      await admin.call("ACL", "SETUSER", "noconfig", "on", ">pw", "~*", "&*", "+@all", "-config");
      const lines = await check(noAof.url.replace("redis://", "redis://noconfig:pw@"));
      expect(lines.map((l) => [l.level, l.msg])).toEqual([["info", "store_durability_unchecked"]]);
    } finally {
      admin.disconnect();
    }
  });

  it("a logger without warn gets the warning as info", async () => {
    const infos: string[] = [];
    const store = redisStore({ url: noAof.url, prefix: "durability", logger: { info: (msg) => infos.push(msg) } });
    try {
      await store.checkEviction();
    } finally {
      await store.close();
    }
    expect(infos).toEqual(["store_durability_weaker"]);
  });

  it("a Redis Cluster: each master is read, a weaker one is named by node", async () => {
    const cluster = await startRedisCluster({ masters: 1 });
    const { lines, logger } = recorder();
    const store = redisStore({ clusterNodes: cluster.nodes, prefix: "durability", logger });
    try {
      await store.checkEviction();
    } finally {
      await store.close();
      await cluster.stop();
    }
    expect(durabilityLines(lines).map((l) => [l.level, l.msg, l.fields.appendonly, l.fields.node])).toEqual([
      ["warn", "store_durability_weaker", "no", `127.0.0.1:${cluster.servers[0].port}`],
    ]);
  }, 60_000);

  it("refuses a durability it does not know", () => {
    expect(() => redisStore({ url: noAof.url, durability: "fsync-sometimes" as Durability })).toThrow(StoreInputError);
  });

  describe("through the startup path (GATEHOUSE_DURABILITY)", () => {
    const agent = defineAgent({ name: "a", instructions: "x", model: scriptedModel([{ text: "ok" }]) });
    async function start(env: Record<string, string>) {
      const { lines, logger } = recorder();
      const { gatehouse, store } = await prepareFromEnv({ agents: [agent], env: { GATEHOUSE_REDIS_PREFIX: "durability", ...env }, redis: redisStore, logger });
      await gatehouse.close();
      await store.close();
      return durabilityLines(lines);
    }

    it("the default on an everysec server: the warning is logged at startup; the start goes on", async () => {
      const lines = await start({ GATEHOUSE_REDIS_URL: everysec.url });
      expect(lines.map((l) => [l.level, l.msg, l.fields.wanted])).toEqual([["warn", "store_durability_weaker", "fsync-always"]]);
    });

    it("GATEHOUSE_DURABILITY=fsync-everysec on an everysec server: one store_durability info line at startup", async () => {
      const lines = await start({ GATEHOUSE_REDIS_URL: everysec.url, GATEHOUSE_DURABILITY: "fsync-everysec" });
      expect(lines.map((l) => [l.level, l.msg, l.fields])).toEqual([
        ["info", "store_durability", { appendonly: "yes", appendfsync: "everysec", wanted: "fsync-everysec" }],
      ]);
    });

    it("the default on an appendfsync always server: one store_durability info line at startup", async () => {
      const lines = await start({ GATEHOUSE_REDIS_URL: always.url });
      expect(lines.map((l) => [l.level, l.msg, l.fields])).toEqual([
        ["info", "store_durability", { appendonly: "yes", appendfsync: "always", wanted: "fsync-always" }],
      ]);
    });

    it("a server that refuses CONFIG: the info line passes at startup, the start goes on", async () => {
      const lines = await start({ GATEHOUSE_REDIS_URL: noConfig.url });
      expect(lines.map((l) => [l.level, l.msg])).toEqual([["info", "store_durability_unchecked"]]);
    });

    it("an unknown GATEHOUSE_DURABILITY is refused by the parser and by storeFromEnv", async () => {
      await expect(start({ GATEHOUSE_REDIS_URL: always.url, GATEHOUSE_DURABILITY: "paranoid" })).rejects.toBeInstanceOf(ConfigError);
      await expect(storeFromEnv({ GATEHOUSE_REDIS_URL: always.url, GATEHOUSE_DURABILITY: "paranoid" }, { redis: redisStore }))
        .rejects.toBeInstanceOf(StoreInputError);
    });
  });
});

describe("suites that kill and restart a redis-server", () => {
  /** Suites that restart Redis to watch log lines or reconnects only, with nothing acknowledged to keep. */
  const NOTHING_TO_KEEP = new Set([
    "ops/ops-store-outage-lines.int.test.ts",
    "ops/ops-store-reconnect.int.test.ts",
    "ops/ops-worker-warnings.int.test.ts",
    "pool/worker-idle-redis.int.test.ts",
  ]);
  /** Every suite under tests/, by its path from there; a suite starts Redis with the fixture (tests/helpers/redis.ts) or the helper. */
  const TESTS = join(fileURLToPath(new URL("../..", import.meta.url)), "tests");
  const START = /(?:useRedisServer|startRedisServer)\(([^)]*)\)/g;
  const restarting = trackedFiles(TESTS)
    .map((p) => relative(TESTS, p).split(sep).join("/"))
    .filter((f) => f.endsWith(".test.ts"))
    .filter((f) => {
      const text = readFileSync(join(TESTS, f), "utf8");
      return /(?:useRedisServer|startRedisServer)\(/.test(text) && /\b(redis|server)\.(kill|restart)\(/.test(text);
    });

  it("start it with appendonly yes and appendfsync always when they check that acknowledged work survives", () => {
    const survival = restarting.filter((f) => !NOTHING_TO_KEEP.has(f));
    expect(survival).toEqual(expect.arrayContaining(["faults/faults-redis-restart.int.test.ts", "faults/faults-store-outage.int.test.ts", "docs/readme.int.test.ts"]));
    for (const f of survival) {
      const text = readFileSync(join(TESTS, f), "utf8");
      const starts = [...text.matchAll(START)].map((m) => m[1]);
      expect(starts.length, f).toBeGreaterThan(0);
      for (const args of starts) expect(args, `${f}: useRedisServer(${args})`).toMatch(/appendonly: true, appendfsync: "always"/);
    }
  });
});
