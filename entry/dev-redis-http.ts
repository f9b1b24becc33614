/**
 * `gatehouse dev-redis-http`: the Upstash REST protocol (entry/upstash-rest.ts)
 * in front of a local Redis, so `upstashStore()` (and `wrangler dev` of a
 * Worker that uses it) runs without an Upstash account, like Upstash's own
 * `serverless-redis-http`.
 *
 *   gatehouse dev-redis-http [--port 8079] [--redis redis://127.0.0.1:6379] [--token gatehouse-dev] [--host 127.0.0.1]
 *
 * Starts only once the Redis answers PING (within 5 s: else one line, exit
 * code 4); a port in use is exit code 5, a bad argument exit code 2
 * (STARTUP_EXIT_CODES). Then prints the two variables a Worker's `.dev.vars`
 * (or the environment) needs and serves until SIGINT/SIGTERM.
 */
import { Redis } from "ioredis";
import { StartupError } from "./startup.ts";
import { startUpstashRest, type UpstashRestServer } from "./upstash-rest.ts";

export const DEV_REDIS_HTTP_USAGE =
  "usage: gatehouse dev-redis-http [--port 8079] [--redis redis://127.0.0.1:6379] [--token gatehouse-dev] [--host 127.0.0.1]";

export interface DevRedisHttpOptions {
  port: number;
  host: string;
  redisUrl: string;
  token: string;
}

const DEFAULTS: DevRedisHttpOptions = { port: 8079, host: "127.0.0.1", redisUrl: "redis://127.0.0.1:6379", token: "gatehouse-dev" };
const REDIS_TIMEOUT_MS = 5_000;

/** Reads the arguments after `dev-redis-http`; a StartupError ("config") names what is wrong. */
export function parseDevRedisHttpArgs(args: string[]): DevRedisHttpOptions {
  const o = { ...DEFAULTS };
  const flags: Record<string, keyof DevRedisHttpOptions> = { "--port": "port", "--host": "host", "--redis": "redisUrl", "--token": "token" };
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    const eq = arg.indexOf("=");
    const flag = eq > 0 ? arg.slice(0, eq) : arg;
    const key = flags[flag];
    if (!key) throw new StartupError("config", `dev-redis-http: unknown argument ${JSON.stringify(arg)} (${DEV_REDIS_HTTP_USAGE})`);
    const value = eq > 0 ? arg.slice(eq + 1) : args[++i];
    if (value === undefined || value === "") throw new StartupError("config", `dev-redis-http: ${flag} needs a value`);
    if (key === "port") {
      const n = Number(value);
      if (!/^\d+$/.test(value) || n > 65535) throw new StartupError("config", `dev-redis-http: --port ${JSON.stringify(value)} is not a port (0 to 65535)`);
      o.port = n;
    } else {
      o[key] = value;
    }
  }
  if (!/^rediss?:\/\//.test(o.redisUrl)) throw new StartupError("config", `dev-redis-http: --redis ${JSON.stringify(o.redisUrl)} must be a redis:// or rediss:// URL`);
  return o;
}

/** host:port of a Redis URL, never its user or password. */
function where(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}`;
  } catch {
    return "the given Redis";
  }
}

/** Connects to the Redis (PING within the bound), then serves the REST protocol in front of it. */
export async function startDevRedisHttp(o: DevRedisHttpOptions): Promise<UpstashRestServer> {
  const redis = new Redis(o.redisUrl, { enableAutoPipelining: false, lazyConnect: true, maxRetriesPerRequest: 1, retryStrategy: () => 200 });
  let lastError = "";
  redis.on("error", (err: Error) => void (lastError = err.message));
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    await Promise.race([
      redis.connect().then(() => redis.ping()),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error("timeout")), REDIS_TIMEOUT_MS);
      }),
    ]);
  } catch (err) {
    redis.disconnect();
    const timedOut = (err as Error).message === "timeout";
    const cause = lastError || (timedOut ? `no answer within ${REDIS_TIMEOUT_MS} ms` : (err as Error).message);
    throw new StartupError("store", `dev-redis-http: cannot reach redis at ${where(o.redisUrl)}: ${cause}`);
  } finally {
    clearTimeout(timer);
  }
  try {
    return await startUpstashRest({ redisUrl: o.redisUrl, redis, token: o.token, port: o.port, host: o.host });
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code === "EADDRINUSE") throw new StartupError("listen", `dev-redis-http: port ${o.port} on ${o.host} is already in use (EADDRINUSE); pass --port`);
    throw new StartupError("listen", `dev-redis-http: cannot listen on ${o.host}:${o.port}: ${(err as Error).message}`);
  }
}

/** The lines printed once it listens: where it is, and the variables to give upstashStore(). */
export function devRedisHttpBanner(server: UpstashRestServer, o: DevRedisHttpOptions): string {
  return [
    `dev-redis-http: Upstash REST on ${server.url} -> ${where(o.redisUrl)} (development only)`,
    `UPSTASH_REDIS_REST_URL=${server.url}`,
    `UPSTASH_REDIS_REST_TOKEN=${server.token}`,
    "",
  ].join("\n");
}
