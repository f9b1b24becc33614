/**
 * A private Redis Cluster for tests: `masters` redis-server processes in
 * cluster mode on free loopback ports, each with its own temp dir and cluster
 * config file, joined by `redis-cli --cluster create`, ready when every node
 * reports `cluster_state:ok`. With `replicas: 1`, every master gets a replica
 * (`--cluster-replicas 1`, 2 x masters servers), so a killed master is
 * replaced by its replica after `nodeTimeoutMs` (`cluster-node-timeout`;
 * `waitForFailover` waits for it). It is ready only once every replica has
 * acknowledged a write of its master: from then on a killed master's writes
 * are on its replica (up to the last few milliseconds before the kill).
 *
 * @example
 * const cluster = await startRedisCluster({ masters: 3 });
 * const store = redisStore({ clusterNodes: cluster.nodes, prefix: "t1" });
 * await cluster.stop();
 *
 * const ha = await startRedisCluster({ masters: 3, replicas: 1, nodeTimeoutMs: 1_000 });
 * const victim = await ha.masterOf(0);       // the master serving slot 0
 * await victim.kill("SIGKILL");
 * await ha.waitForFailover(victim);          // its replica serves slot 0 now
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { Redis } from "ioredis";
import { startRedisServer, type RedisServer } from "./redis-server.ts";

const run = promisify(execFile);

export interface RedisCluster {
  /** Every server; without replicas the masters, in slot order (the first owns the lowest slots). */
  readonly servers: RedisServer[];
  /** `redis://127.0.0.1:<port>` of every server (seed nodes). */
  readonly nodes: string[];
  /** The server that is master of `slot` now (asked of a live node). */
  masterOf(slot: number): Promise<RedisServer>;
  /**
   * Waits until every live node reports `cluster_state:ok` and `dead` (killed) is no master
   * of any slot any more: its replica took over. Rejects after `timeoutMs` (default 30 s).
   */
  waitForFailover(dead: RedisServer, timeoutMs?: number): Promise<void>;
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

/** `CLUSTER NODES` of a live node: for each node, its port, flags and slot ranges. */
async function clusterNodes(url: string): Promise<Array<{ port: number; master: boolean; failed: boolean; slots: Array<[number, number]> }>> {
  const c = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await c.connect();
    const text = String(await c.call("CLUSTER", "NODES"));
    return text.trim().split("\n").map((line) => {
      const f = line.split(" ");
      const flags = f[2].split(",");
      const slots = f.slice(8).filter((r) => !r.startsWith("[")).map((r) => {
        const [a, b] = r.split("-").map(Number);
        return [a, b ?? a] as [number, number];
      });
      return { port: Number(f[1].split(":")[1].split("@")[0]), master: flags.includes("master"), failed: flags.some((x) => x.startsWith("fail")), slots };
    });
  } finally {
    c.disconnect();
  }
}

/**
 * When `server` is a master with replicas: writes a key of one of its own slots, waits (WAIT) until a
 * replica acknowledged it, and deletes the key. A replica does nothing.
 */
async function waitForStreaming(server: RedisServer, deadline: number): Promise<void> {
  const c = new Redis(server.url, { maxRetriesPerRequest: 1 });
  try {
    const info = String(await c.info("replication"));
    if (!info.includes("role:master") || info.includes("connected_slaves:0")) return;
    // A key of this master's slots: the others answer MOVED.
    let key = "";
    for (let i = 0; key === ""; i++) {
      const k = `startRedisCluster:ready:{${i}}`;
      if (await c.set(k, "1").then(() => true, (err: Error) => (err.message.startsWith("MOVED") ? false : Promise.reject(err)))) key = k;
    }
    while (Number(await c.call("WAIT", "1", "1000")) < 1) {
      if (Date.now() > deadline) throw new Error(`no replica of the master on port ${server.port} acknowledged a write`);
    }
    await c.del(key);
  } finally {
    c.disconnect();
  }
}

export async function startRedisCluster(
  opts: { masters?: number; replicas?: 0 | 1; nodeTimeoutMs?: number; timeoutMs?: number } = {},
): Promise<RedisCluster> {
  const masters = opts.masters ?? 3;
  const replicas = opts.replicas ?? 0;
  if (replicas > 0 && masters < 3) throw new Error("a Redis Cluster with replicas needs at least 3 masters");
  const servers: RedisServer[] = [];
  const stop = async () => void (await Promise.all(servers.map((s) => s.stop())));
  const nodeTimeout = String(opts.nodeTimeoutMs ?? 5000);
  try {
    for (let i = 0; i < masters * (1 + replicas); i++) {
      // The config file is relative to --dir, which each server has to itself.
      servers.push(await startRedisServer({ args: ["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", nodeTimeout, "--cluster-announce-ip", "127.0.0.1"] }));
    }
    const addrs = servers.map((s) => `127.0.0.1:${s.port}`);
    if (masters === 1) {
      // redis-cli refuses a cluster of fewer than 3 masters: give the one node every slot itself.
      const c = new Redis(servers[0].url);
      await c.call("CLUSTER", "ADDSLOTSRANGE", "0", "16383");
      c.disconnect();
    } else {
      await run("redis-cli", ["--cluster", "create", ...addrs, "--cluster-replicas", String(replicas), "--cluster-yes"], { timeout: 30_000 });
    }
    const deadline = Date.now() + (opts.timeoutMs ?? 30_000);
    for (const s of servers) {
      while (!(await clusterInfo(s.url)).includes("cluster_state:ok")) {
        if (Date.now() > deadline) throw new Error(`Redis Cluster on ports ${addrs.join(", ")} did not reach cluster_state:ok`);
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    // A replica that never synced with its master refuses to take over (its data age is unknown).
    for (const s of replicas > 0 ? servers : []) {
      for (;;) {
        const c = new Redis(s.url, { lazyConnect: true, maxRetriesPerRequest: 1 });
        let info = "";
        try {
          await c.connect();
          info = String(await c.info("replication"));
        } finally {
          c.disconnect();
        }
        if (info.includes("role:master") || info.includes("master_link_status:up")) break;
        if (Date.now() > deadline) throw new Error(`the replica on port ${s.port} did not sync with its master: ${info}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    // A replica that reports its link up has loaded its master's snapshot, but its master may not stream
    // writes to it yet (after a full sync it waits for the replica's first acknowledgement). A master
    // killed in that window takes every write since the snapshot with it, and the replica takes over with
    // the snapshot alone: an empty dataset here. Ready means each master's replica acknowledged a write.
    for (const s of replicas > 0 ? servers : []) await waitForStreaming(s, deadline);
    const live = () => servers.filter((s) => s.running);
    const masterOf = async (slot: number) => {
      const nodes = await clusterNodes(live()[0].url);
      const m = nodes.find((n) => n.master && !n.failed && n.slots.some(([a, b]) => slot >= a && slot <= b));
      const server = m && servers.find((s) => s.port === m.port);
      if (!server) throw new Error(`no live master serves slot ${slot}`);
      return server;
    };
    const waitForFailover = async (dead: RedisServer, timeoutMs = 30_000) => {
      const end = Date.now() + timeoutMs;
      for (;;) {
        let ok = true;
        try {
          for (const s of live()) if (!(await clusterInfo(s.url)).includes("cluster_state:ok")) ok = false;
          if (ok) {
            const nodes = await clusterNodes(live()[0].url);
            ok = !nodes.some((n) => n.port === dead.port && n.master && n.slots.length > 0);
          }
        } catch {
          ok = false;
        }
        if (ok) return;
        if (Date.now() > end) throw new Error(`Redis Cluster did not fail over from port ${dead.port} within ${timeoutMs} ms`);
        await new Promise((r) => setTimeout(r, 100));
      }
    };
    return { servers, nodes: servers.map((s) => s.url), masterOf, waitForFailover, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
