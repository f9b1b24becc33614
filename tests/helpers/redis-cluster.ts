/**
 * A private Redis Cluster for tests: `masters` redis-server processes in
 * cluster mode (no replicas) on free loopback ports, each with its own temp
 * dir and cluster config file, joined by `redis-cli --cluster create`, ready
 * when every node reports `cluster_state:ok`.
 *
 * @example
 * const cluster = await startRedisCluster({ masters: 3 });
 * const store = redisStore({ clusterNodes: cluster.nodes, prefix: "t1" });
 * await cluster.stop();
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { Redis } from "ioredis";
import { startRedisServer, type RedisServer } from "./redis-server.ts";

const run = promisify(execFile);

export interface RedisCluster {
  /** The masters, in slot order: the first owns the lowest slots. */
  readonly servers: RedisServer[];
  /** `redis://127.0.0.1:<port>` of every master (seed nodes). */
  readonly nodes: string[];
  /** Kills every server and removes their dirs. */
  stop(): Promise<void>;
}

async function clusterInfo(url: string): Promise<string> {
  const c = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await c.connect();
    return String(await c.call("CLUSTER", "INFO"));
  } finally {
    c.disconnect();
  }
}

export async function startRedisCluster(opts: { masters?: number; timeoutMs?: number } = {}): Promise<RedisCluster> {
  const masters = opts.masters ?? 3;
  const servers: RedisServer[] = [];
  const stop = async () => void (await Promise.all(servers.map((s) => s.stop())));
  try {
    for (let i = 0; i < masters; i++) {
      // The config file is relative to --dir, which each server has to itself.
      servers.push(await startRedisServer({ args: ["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "5000", "--cluster-announce-ip", "127.0.0.1"] }));
    }
    const addrs = servers.map((s) => `127.0.0.1:${s.port}`);
    if (masters === 1) {
      // redis-cli refuses a cluster of fewer than 3 masters: give the one node every slot itself.
      const c = new Redis(servers[0].url);
      await c.call("CLUSTER", "ADDSLOTSRANGE", "0", "16383");
      c.disconnect();
    } else {
      await run("redis-cli", ["--cluster", "create", ...addrs, "--cluster-replicas", "0", "--cluster-yes"], { timeout: 30_000 });
    }
    const deadline = Date.now() + (opts.timeoutMs ?? 30_000);
    for (const s of servers) {
      while (!(await clusterInfo(s.url)).includes("cluster_state:ok")) {
        if (Date.now() > deadline) throw new Error(`Redis Cluster on ports ${addrs.join(", ")} did not reach cluster_state:ok`);
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    return { servers, nodes: servers.map((s) => s.url), stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
