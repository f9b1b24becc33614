/**
 * Worker warnings say what happened in our words (actors/pool/store-error.ts):
 * a store call given up by ioredis while Redis is down is logged as "store
 * unavailable: …", with the client's own error attached as `cause`
 * ({ name, message }) rather than as the line's text. Real redis-server,
 * killed while the pool polls; a client with `maxRetriesPerRequest: 1`, so
 * ioredis gives commands up after two reconnect attempts.
 */
import { describe, expect, it } from "vitest";
import { Redis } from "ioredis";
import { createGatehouse, defineAgent, scriptedModel } from "../../mod.ts";
import { redisStore } from "../../redis.ts";
import { describeStoreError } from "../../actors/pool/store-error.ts";
import { StoreUnavailableError } from "../../store/outage.ts";
import { waitFor } from "../helpers/processes.ts";
import { useRedisServer } from "../helpers/redis.ts";

const redis = useRedisServer();

const agent = defineAgent({ name: "a", instructions: "x", model: scriptedModel([{ text: "ok" }]) });

describe("worker warnings", () => {
  it("a claim attempt given up by ioredis while Redis is down: 'store unavailable', the raw error as cause", async () => {
    const lines: Array<{ level: string; msg: string; fields: Record<string, unknown> }> = [];
    const at = (level: string) => (msg: string, fields: Record<string, unknown> = {}) => void lines.push({ level, msg, fields });
    const client = new Redis(redis.url, { maxRetriesPerRequest: 1 });
    client.on("error", () => {});
    const g = createGatehouse({
      agents: [agent],
      store: redisStore({ client, prefix: "warnings" }),
      logger: { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") },
      pollMs: 50,
      idlePollMaxMs: 100,
    });
    try {
      g.startWorker();
      await new Promise((r) => setTimeout(r, 300));
      await redis.kill("SIGKILL");
      const line = await waitFor(
        "a worker loop warning",
        () => lines.find((l) => l.msg === "worker loop error" && (l.fields.cause as { name?: string })?.name === "MaxRetriesPerRequestError"),
        20_000,
      );
      expect(line.level).toBe("warn");
      expect(line.fields.error).toBe("store unavailable: Redis stayed unreachable through the client's reconnect attempts; the command was given up");
      expect(String(line.fields.error)).not.toMatch(/maxRetriesPerRequest/);
      expect((line.fields.cause as { message: string }).message).toMatch(/max retries per request/i);
      // No line of the pool carries the raw text as its error.
      for (const l of lines) expect(String(l.fields.error ?? "")).not.toMatch(/MaxRetriesPerRequest|max retries per request/i);
    } finally {
      await g.stopWorker();
      await redis.start();
      client.disconnect();
    }
  }, 60_000);

  it("describeStoreError: outages in our words with the cause; other errors as they are", () => {
    const timedOut = new StoreUnavailableError("The redis store did not answer claimNext within 3000 ms");
    expect(describeStoreError(timedOut, "redis")).toEqual({
      error: "store unavailable: The redis store did not answer claimNext within 3000 ms",
      cause: { name: "StoreUnavailableError", message: "The redis store did not answer claimNext within 3000 ms" },
    });
    const closed = new Error("Connection is closed.");
    expect(describeStoreError(closed, "redis")).toEqual({
      error: "store unavailable: the connection to Redis is down",
      cause: { name: "Error", message: "Connection is closed." },
    });
    const reply = Object.assign(new Error("ERR unknown command"), { name: "ReplyError" });
    expect(describeStoreError(reply, "redis")).toEqual({ error: "ReplyError: ERR unknown command" });
    expect(describeStoreError(new TypeError("boom"), "memory")).toEqual({ error: "TypeError: boom" });
  });
});
