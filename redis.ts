/**
 * `@gatehouse-runtime/core/redis`: the store on Redis over TCP (ioredis), for long-running
 * Node, Deno and Bun workers. It is a subpath of its own because it needs
 * Node built-ins (`net`, `tls`, `events`, `process`): `mod.ts` stays Web-only, so it
 * bundles for Cloudflare Workers, and only programs that import this module
 * pull in ioredis. On the edge use `upstashStore` from `@gatehouse-runtime/core`.
 *
 * @example
 * import { createGatehouse } from "@gatehouse-runtime/core";
 * import { redisStore } from "@gatehouse-runtime/core/redis";
 * const store = redisStore("redis://127.0.0.1:6379");
 * await store.checkEviction();
 * const gh = createGatehouse({ agents, store });
 * @module
 */
import process from "node:process";
import { redisStore as open, type RedisStoreOptions } from "./store/redis.ts";
import type { ScriptStore } from "./store/lua-store.ts";

export type { RedisStoreOptions } from "./store/redis.ts";
export type { Durability } from "./store/durability.ts";

/**
 * The store on Redis over TCP (store/redis.ts): a `redis://` URL, or options (`url`, `clusterNodes` or an
 * ioredis `client`; `prefix`, `durability`, `logger`, ...). The script calls of one burst of microtasks leave in
 * one socket write (`process.nextTick` marks where a burst ends).
 */
export function redisStore(opts: string | RedisStoreOptions): ScriptStore {
  return open(opts, { afterBurst: (fn) => process.nextTick(fn) });
}
