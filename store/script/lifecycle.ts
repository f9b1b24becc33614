/**
 * Deletion and liveness of the script store (store/port.ts `Lifecycle`).
 * Each operation is a top-level function of the store's ScriptContext over
 * its script, described here (store/script/operation.ts).
 */
import type { Lifecycle } from "../port.ts";
import { int } from "./values.ts";
import { json, scriptOp } from "./operation.ts";
import { releaseFreed, withoutFreed } from "./key-slots.ts";
import type { ScriptContext } from "./context.ts";

/** store/lua/delete_agent.lua */
export const DELETE_AGENT = scriptOp({
  script: "delete_agent",
  keys: ["head", "turns", "deadlines", "agents_idx", "deleted"],
  argv: ["prefix", "agent_id", "now_str"],
  keysRest: "own_keys",
  words: ["deleted", "agent_not_found"],
}, (word, payload) => ({ status: word, ...(payload ? json<{ ckFreed: string }>(payload) : {}) }));

/** store/lua/ping.lua */
export const PING = scriptOp({
  script: "ping",
  keys: [],
  argv: [],
  words: ["pong"],
}, () => undefined);

/** The result type of the port method `K`. */
type Ret<K extends keyof Lifecycle> = ReturnType<NonNullable<Lifecycle[K]>>;

export async function deleteAgent(c: ScriptContext, agentId: string, now?: number): Ret<"deleteAgent"> {
  const { deps, keys, run } = c;
  const k = keys.agent(agentId);
  const at = now === undefined ? "0" : int(now, "now");
  // Every key under the agent's hash tag (calls hashes, delivery records), then one script deletes them all.
  const found = new Set<string>();
  let cursor = deps.scan ? "0" : "done";
  while (deps.scan && cursor !== "done") {
    const [next, batch] = await deps.scan(cursor, k.pattern);
    for (const key of batch) found.add(key);
    cursor = next === "0" ? "done" : next;
  }
  const fixed = [...k.headLong, k.tasks, k.delayed, k.mail, k.messages, k.events, k.idem, k.verdicts, k.inputs, k.ckpts, k.ended, k.summary, k.schedules];
  for (const key of fixed) found.add(key);
  found.delete(k.head);
  found.delete(k.turns);
  found.delete(k.deleted);
  const r = await run(DELETE_AGENT, {
    head: k.head, turns: k.turns, deadlines: k.home.deadlines, agents_idx: k.home.agents, deleted: k.deleted, own_keys: [...found],
    prefix: k.home.prefix, agent_id: agentId, now_str: at,
  });
  // A freed reservation of the sharded layout goes back to its key's slot (key-slots.ts).
  await releaseFreed(c, r.ckFreed, now ?? Date.now());
  return withoutFreed(r);
}

export async function ping(c: ScriptContext): Promise<void> {
  const { run } = c;
  await run(PING, {});
}
