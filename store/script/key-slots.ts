/**
 * Concurrency limits on the sharded layout (store/port.ts invariant `concurrency-keys`; docs/store.md
 * "Concurrency keys and lanes"). A key's running count lives in the key's own slot
 * (`keys.keySlot(K)`: reservations, waiting lanes), so every script call stays in one slot:
 *
 * - a claim runs the home's script with the limits and the mark "\n" (`slotLimits`); at an agent of a
 *   limited key K the home answers `need K` (writing only a provisional park of lane K); `ck_reserve`
 *   reserves in K's slot, below the limit, or records the lane as waiting and answers the earliest
 *   lease end; the home's script runs again with the reservation (claims from lane K) or with the park;
 * - renewals renew the reservation first (`renewHeld`: the reservations this store's claims took),
 *   then the home; releases release in the home first, whose reply names the freed reservation
 *   (`ckFreed`), then in K's slot (`releaseFreed`), which answers the waiting lanes, rung with `ck_ring`.
 *
 * So the count in K's slot is never below the leases running under K: a crash between two calls
 * holds a slot until its lease end, never admits one more.
 */
import type { ClaimResult, ConcurrencyLimits } from "../port.ts";
import { limitOf } from "../lanes.ts";
import { json, scriptOp } from "./operation.ts";
import { wellFormedJson, wellFormedValue } from "../../common/well-formed.ts";
import type { ScriptContext } from "./context.ts";

/** store/lua/ck_reserve.lua */
export const CK_RESERVE = scriptOp({
  script: "ck_reserve",
  keys: ["running", "waiting"],
  argv: ["member", "until_str", "now_str", "limit_text", "waiter"],
  words: ["reserved", "full"],
}, (word, payload) => (word === "reserved" ? { status: "reserved" as const } : { status: "full" as const, until: Number(payload) }));

/** store/lua/ck_renew.lua */
export const CK_RENEW = scriptOp({
  script: "ck_renew",
  keys: ["running"],
  argv: ["member", "until_str", "now_str"],
  words: ["renewed", "absent"],
}, (word) => word);

/** store/lua/ck_release.lua */
export const CK_RELEASE = scriptOp({
  script: "ck_release",
  keys: ["running", "waiting"],
  argv: ["member"],
  words: ["released"],
}, (_word, payload) => json<string[]>(payload));

/** store/lua/ck_ring.lua */
export const CK_RING = scriptOp({
  script: "ck_ring",
  keys: ["ready"],
  argv: ["ck", "now_str"],
  words: ["rung"],
}, () => undefined);

/** The home's answer when a claim would run under a limited key: reserve in its slot first. */
export type Need = { status: "need"; key: string; ready: string };

/** A reservation a claim of this store took: the agent's epoch, the key and the member. */
interface Held {
  epoch: number;
  key: string;
  member: string;
}

/** Per store: the reservations its claims hold, by agent (bounded: the oldest are forgotten first). */
const heldBy = new WeakMap<ScriptContext, Map<string, Held>>();
const MAX_HELD = 100_000;

function held(c: ScriptContext): Map<string, Held> {
  let m = heldBy.get(c);
  if (!m) heldBy.set(c, (m = new Map()));
  return m;
}

/** Whether claims of this store count keys in their slots: the sharded layout with more than one home, with limits. */
export function countsInSlots(c: ScriptContext, limits: ConcurrencyLimits | undefined): boolean {
  return c.shards.length > 1 && limits !== undefined && Object.keys(limits).length > 0;
}

/** The limits argument of a counted claim: the limits and the mark "\n" with the reservation and the parks. */
export function slotLimits(limits: ConcurrencyLimits, reservation: string | undefined, parks: Record<string, number>): string {
  return wellFormedJson(JSON.stringify({ ...limits, "\n": { ...(reservation ? { r: reservation } : {}), ...(Object.keys(parks).length > 0 ? { p: parks } : {}) } }));
}

/**
 * A claim in one home with the limits counted in each key's slot: `claimHome` runs the home's script
 * with a limits argument (`slotLimits`). At most a few rounds: each refused key is parked in the home.
 */
export async function claimCounted(
  c: ScriptContext,
  limits: ConcurrencyLimits,
  req: { now: number; leaseMs: number },
  claimHome: (limitsJson: string) => Promise<ClaimResult | Need>,
  named: boolean,
): Promise<ClaimResult> {
  // The keys as the scripts hold them (a lone surrogate sent as U+FFFD): the key a home names is looked up among these.
  limits = wellFormedValue(limits);
  const parks: Record<string, number> = {};
  let last: ClaimResult = { status: "empty" };
  for (let round = 0; round < 8; round++) {
    const r = await claimHome(slotLimits(limits, undefined, parks));
    if (r.status !== "need") return r;
    const { key, ready } = r;
    const slot = c.keys.keySlot(key);
    const member = `${ready}\n${crypto.randomUUID()}`;
    const res = await c.run(CK_RESERVE, {
      running: slot.running, waiting: slot.waiting, member, until_str: String(req.now + req.leaseMs), now_str: String(req.now),
      limit_text: String(limitOf(limits, key)), waiter: ready,
    });
    if (res.status === "full") {
      parks[key] = res.until;
      continue;
    }
    // A failed call leaves the reservation to run out at its lease end (the home may have taken it).
    const got = await claimHome(slotLimits(limits, `${key}\n${member}`, parks));
    if (got.status === "claimed" && got.head.currentTask?.concurrencyKey === key) {
      hold(c, got.agentId, { epoch: got.epoch, key, member });
      return got;
    }
    // The claim took nothing under the key (the lane emptied meanwhile): the reservation goes back.
    await releaseFreed(c, `${key}\n${member}`, req.now);
    if (got.status === "need") continue;
    if (named || got.status !== "empty") return got;
    last = got;
  }
  return last;
}

function hold(c: ScriptContext, agentId: string, h: Held): void {
  const m = held(c);
  m.delete(agentId);
  m.set(agentId, h);
  if (m.size > MAX_HELD) m.delete(m.keys().next().value!);
}

/** Gives a freed reservation `<K>\n<member>` back in K's slot and rings the lanes that waited for it. */
export async function releaseFreed(c: ScriptContext, freed: string | undefined, now: number): Promise<void> {
  if (freed === undefined) return;
  const nl = freed.indexOf("\n");
  const key = freed.slice(0, nl);
  const member = freed.slice(nl + 1);
  const slot = c.keys.keySlot(key);
  const waiters = await c.run(CK_RELEASE, { running: slot.running, waiting: slot.waiting, member });
  const m = held(c);
  for (const [agentId, h] of m) if (h.member === member) m.delete(agentId);
  await Promise.all(waiters.map((ready) => c.run(CK_RING, { ready, ck: key, now_str: String(now) })));
}

/**
 * Before the home extends the lease of `agentId` (a renewal, a commit that keeps or chains it) to
 * `until`: the reservation's score first. Answers the member renewed ('' : none this store knows;
 * the home then names one it holds, `renewNamed`), or null: the reservation is gone (released or run out).
 */
export async function renewHeld(c: ScriptContext, agentId: string, epoch: number, until: number, now: number): Promise<string | null> {
  const h = held(c).get(agentId);
  if (!h || h.epoch !== epoch) return "";
  return renewNamed(c, agentId, epoch, `${h.key}\n${h.member}`, until, now);
}

/** Renews the reservation `<K>\n<member>` the home named (its lease runs on it), kept for later renewals. */
export async function renewNamed(c: ScriptContext, agentId: string, epoch: number, ckHeld: string, until: number, now: number): Promise<string | null> {
  const nl = ckHeld.indexOf("\n");
  const key = ckHeld.slice(0, nl);
  const member = ckHeld.slice(nl + 1);
  const r = await c.run(CK_RENEW, { running: c.keys.keySlot(key).running, member, until_str: String(until), now_str: String(now) });
  if (r === "absent") {
    held(c).delete(agentId);
    return null;
  }
  hold(c, agentId, { epoch, key, member });
  return member;
}

/** After a commit: its freed reservation released, a chained claim under the same key keeping it (new epoch). */
export async function afterCommit(
  c: ScriptContext,
  agentId: string,
  r: { status: string; ckFreed?: string; chained?: ClaimResult },
  now: number,
): Promise<void> {
  const h = held(c).get(agentId);
  if (h && r.chained?.status === "claimed" && r.ckFreed === undefined && r.chained.head.currentTask?.concurrencyKey === h.key) {
    hold(c, agentId, { ...h, epoch: r.chained.epoch });
  }
  await releaseFreed(c, r.ckFreed, now);
}

/** A result without the freed reservation its script's reply carried. */
export function withoutFreed<T extends object>(r: T & { ckFreed?: string }): T {
  if (!("ckFreed" in r)) return r;
  const { ckFreed: _, ...rest } = r;
  return rest as T;
}
