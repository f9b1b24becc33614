/** Turns pinned to their definition version on a real Redis (tests/host/turn-versions-suite.ts): each deployment its own client, one prefix. */
import { describe } from "vitest";
import { redisStore } from "../../store/redis.ts";
import type { Store } from "../../store/port.ts";
import { useRedisServer } from "../helpers/redis.ts";
import { turnVersionSuite } from "./turn-versions-suite.ts";

const server = useRedisServer({}, 60_000);

describe("turn versions (Redis)", () => {
  let store: Store | undefined;
  const prefix = `tv${Date.now() % 100_000}`;
  turnVersionSuite(() => (store ??= redisStore({ url: server.url, prefix })), () => redisStore({ url: server.url, prefix }), async () => {
    await store?.close?.();
  });
});
