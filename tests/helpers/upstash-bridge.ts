/**
 * The Upstash-compatible REST server of entry/upstash-rest.ts (the one
 * `gatehouse dev-redis-http` serves) for tests and benchmarks of
 * upstashStore() without the internet, with counters and a fault hook:
 *
 * Fault hook: `dropResponses(n, match?)` makes the next `n` matching requests
 * run their commands and then close the connection without answering. The
 * client sees a network error and retries a command that already ran, which
 * is how tests prove that a retried applied command causes no duplicate
 * effect.
 *
 * @example
 * const redis = await startRedisServer();
 * const bridge = await startUpstashBridge({ redisUrl: redis.url });
 * const store = upstashStore({ url: bridge.url, token: bridge.token });
 * bridge.dropResponses(1, (cmds) => cmds.some((c) => c[0].toUpperCase() === "EVALSHA"));
 * console.log(bridge.stats.commands, bridge.stats.byName.get("EVALSHA"), bridge.stats.dropped);
 * await bridge.close();
 */
import { startUpstashRest } from "../../entry/upstash-rest.ts";

export interface UpstashBridgeOptions {
  /** The Redis the bridge forwards to, e.g. `redis://127.0.0.1:<port>`. */
  redisUrl: string;
  /** Bearer token clients must send (default "test-token"). */
  token?: string;
}

export interface BridgeStats {
  /** HTTP requests answered or dropped. */
  requests: number;
  /** Redis commands run (each command of a pipeline counts once), as Upstash bills them. */
  commands: number;
  /** Commands run, by upper-case command name. */
  byName: Map<string, number>;
  /** Requests whose response was dropped by the fault hook. */
  dropped: number;
}

export interface UpstashBridge {
  /** Base URL, e.g. `http://127.0.0.1:<port>`. */
  readonly url: string;
  readonly token: string;
  readonly stats: BridgeStats;
  /**
   * The next `count` requests for which `match(commands)` is true (default:
   * every request) run their commands, then the connection is closed without
   * a response. `commands` holds the request's commands (one for `POST /`).
   */
  dropResponses(count: number, match?: (commands: string[][]) => boolean): void;
  /** Zeroes the stats. */
  resetStats(): void;
  close(): Promise<void>;
}

export async function startUpstashBridge(opts: UpstashBridgeOptions): Promise<UpstashBridge> {
  const stats: BridgeStats = { requests: 0, commands: 0, byName: new Map(), dropped: 0 };
  const faults: Array<{ left: number; match: (commands: string[][]) => boolean }> = [];
  const server = await startUpstashRest({
    redisUrl: opts.redisUrl,
    token: opts.token ?? "test-token",
    onRequest: () => void stats.requests++,
    afterCommands(commands) {
      for (const c of commands) {
        const name = c[0]!.toUpperCase();
        stats.commands++;
        stats.byName.set(name, (stats.byName.get(name) ?? 0) + 1);
      }
      const fault = faults.find((f) => f.left > 0 && f.match(commands));
      if (!fault) return;
      fault.left--;
      stats.dropped++;
      return "drop";
    },
  });
  return {
    url: server.url,
    token: server.token,
    stats,
    dropResponses(n, match = () => true) {
      faults.push({ left: n, match });
    },
    resetStats() {
      stats.requests = 0;
      stats.commands = 0;
      stats.byName.clear();
      stats.dropped = 0;
    },
    close: () => server.close(),
  };
}
