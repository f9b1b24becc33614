/**
 * The Redis fixture of a test file (or of one `describe`): a private
 * redis-server (tests/helpers/redis-server.ts) started before the first test
 * and stopped, its dir removed, after the last.
 *
 * The handle answers as the `RedisServer` it stands for once the server is
 * up (in tests and hooks that run after the fixture's `beforeAll`); read
 * before that, it throws. Registered first, the fixture's `afterAll` runs
 * after the file's own (vitest and the Deno shim run `afterAll` hooks last
 * registered first), so clients and workers are closed while Redis is still up.
 *
 * @example
 * const redis = useRedisServer();                                      // --save "" --appendonly no
 * const durable = useRedisServer({ appendonly: true, appendfsync: "always" });
 * it("...", async () => {
 *   const store = redisStore({ url: redis.url, prefix: "t1" });
 *   await redis.restart();
 * });
 */
import { afterAll, beforeAll } from "vitest";
import { type RedisServer, type RedisServerOptions, startRedisServer } from "./redis-server.ts";

/** Starts a redis-server in `beforeAll`, stops it in `afterAll`; `timeoutMs` bounds the start (default: the hook timeout). */
export function useRedisServer(options: RedisServerOptions = {}, timeoutMs?: number): RedisServer {
  let server: RedisServer | undefined;
  beforeAll(async () => {
    server = await startRedisServer(options);
  }, timeoutMs);
  afterAll(async () => {
    await server?.stop();
  });
  const up = (): RedisServer => {
    if (!server) throw new Error("the redis-server of useRedisServer() starts in beforeAll: read it in tests and hooks");
    return server;
  };
  return {
    get port() {
      return up().port;
    },
    get url() {
      return up().url;
    },
    get dir() {
      return up().dir;
    },
    get running() {
      return up().running;
    },
    kill: (signal) => up().kill(signal),
    pause: () => up().pause(),
    resume: () => up().resume(),
    start: () => up().start(),
    restart: () => up().restart(),
    stop: () => up().stop(),
  };
}
