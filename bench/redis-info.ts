/**
 * Server-side accounting for the benchmark, from `INFO commandstats` and
 * `INFO stats`. Redis counts a script call (EVALSHA/EVAL) once and every
 * command the script runs once more, under its own name; `scriptCalls` and
 * `innerCalls` keep the two apart.
 */

export interface RedisInfoClient {
  info(section: string): Promise<string>;
}

export interface CommandStats {
  calls: Map<string, number>;
  netInputBytes: number;
  netOutputBytes: number;
}

const SCRIPT_COMMANDS = new Set(["evalsha", "eval", "evalsha_ro", "eval_ro", "fcall"]);

export async function commandStats(client: RedisInfoClient): Promise<CommandStats> {
  const cs = await client.info("commandstats");
  const st = await client.info("stats");
  const calls = new Map<string, number>();
  for (const line of cs.split(/\r?\n/)) {
    const m = /^cmdstat_([^:]+):calls=(\d+)/.exec(line);
    if (m) calls.set(m[1].toLowerCase(), Number(m[2]));
  }
  const num = (k: string) => Number(new RegExp(`^${k}:(\\d+)`, "m").exec(st)?.[1] ?? 0);
  return { calls, netInputBytes: num("total_net_input_bytes"), netOutputBytes: num("total_net_output_bytes") };
}

export interface StatsDelta {
  calls: Map<string, number>;
  totalCalls: number;
  scriptCalls: number;
  netInputBytes: number;
  netOutputBytes: number;
}

/** The difference between two snapshots; INFO itself (the measuring) is left out. */
export function diffStats(a: CommandStats, b: CommandStats): StatsDelta {
  const calls = new Map<string, number>();
  for (const [k, v] of b.calls) {
    const d = v - (a.calls.get(k) ?? 0);
    if (d > 0 && k !== "info") calls.set(k, d);
  }
  let total = 0;
  let scripts = 0;
  for (const [k, v] of calls) {
    total += v;
    if (SCRIPT_COMMANDS.has(k)) scripts += v;
  }
  return {
    calls,
    totalCalls: total,
    scriptCalls: scripts,
    netInputBytes: b.netInputBytes - a.netInputBytes,
    netOutputBytes: b.netOutputBytes - a.netOutputBytes,
  };
}

/** CPU seconds the Redis server has used so far (user + system, INFO cpu). */
export async function redisCpuSeconds(client: RedisInfoClient): Promise<number> {
  const cpu = await client.info("cpu");
  const get = (k: string) => Number(new RegExp(`^${k}:([0-9.]+)`, "m").exec(cpu)?.[1] ?? 0);
  return get("used_cpu_user") + get("used_cpu_sys");
}
