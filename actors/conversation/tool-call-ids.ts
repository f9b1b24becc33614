/**
 * The tool-call ids a conversation has used, and the rule that gives each
 * call of a model step its id.
 *
 * The rule (unchanged from the whole-history scan it replaces): a model's id
 * is kept when it is a safe id (common/ids.ts) that no message of the host's
 * history carries and no earlier call of the same response took; otherwise
 * the call gets `call_<turn>_<step>_<i>`, and when that is taken too,
 * `call_<turn>_<step>_<i>_<n>`, n being the number of ids used so far. The
 * host's history is what the store still holds for the agent (retention
 * drops the oldest turns at a turn's end) from where the claim read it; the
 * model is shown a part of it (actors/conversation/memory.ts), so ids are unique within
 * both.
 *
 * Invariant: whenever the host assigns ids, `UsedToolCallIds` holds exactly
 * the ids of the `toolCalls` of the messages in its history array, each
 * counted once per message that carries it, so `has` and `size` answer what
 * a scan of the history would, in O(1) instead of O(history). It changes
 * only together with the history: `add` for each message appended, `drop`
 * for each message removed from the front (retention's trim). It belongs to
 * one claim at a time, like the actor (actors/conversation/cache.ts): `take` hands it to
 * a claim and the claim's last, resident `put` gives it back next to the very
 * messages it was kept for; a claim without one (cold start, cache miss)
 * builds it once from the messages it read.
 */
import type { Message } from "../../common/message.ts";
import { ID_PATTERN } from "../../common/ids.ts";

/** The ids that `assignToolCallIds` must not hand out again. */
export interface UsedIds {
  has(id: string): boolean;
  readonly size: number;
}

/** The tool-call ids of a history, kept as messages are appended and trimmed. */
export class UsedToolCallIds implements UsedIds {
  /** id → number of messages of the history that carry it. */
  readonly #count = new Map<string, number>();

  /** The ids of `messages` (one pass: on a cold start or cache miss, or for a cross-check). */
  static of(messages: readonly Message[]): UsedToolCallIds {
    const ids = new UsedToolCallIds();
    for (const m of messages) ids.add(m);
    return ids;
  }

  /** A message was appended to the history. */
  add(m: Message): void {
    if (!m.toolCalls) return;
    for (const c of m.toolCalls) this.#count.set(c.id, (this.#count.get(c.id) ?? 0) + 1);
  }

  /** A message left the history. */
  drop(m: Message): void {
    if (!m.toolCalls) return;
    for (const c of m.toolCalls) {
      const n = this.#count.get(c.id) ?? 0;
      if (n <= 1) this.#count.delete(c.id);
      else this.#count.set(c.id, n - 1);
    }
  }

  has(id: string): boolean {
    return this.#count.has(id);
  }

  get size(): number {
    return this.#count.size;
  }
}

/**
 * The ids of one model response's calls under the rule above; `used` is not
 * changed (the calls' ids enter it when the step's assistant message is
 * appended).
 *
 * @example
 * const used = UsedToolCallIds.of(history);
 * const ids = assignToolCallIds(res.toolCalls ?? [], used, "t1", 3); // ["call_a", "call_t1_3_1"]
 */
export function assignToolCallIds(calls: ReadonlyArray<{ id?: unknown }>, used: UsedIds, turnId: string, step: number): string[] {
  const taken = new Set<string>();
  const has = (id: string) => used.has(id) || taken.has(id);
  return calls.map((c, i) => {
    let id = typeof c.id === "string" && ID_PATTERN.test(c.id) && !has(c.id) ? c.id : `call_${turnId}_${step}_${i}`;
    if (has(id)) id = `call_${turnId}_${step}_${i}_${used.size + taken.size}`;
    if (!used.has(id)) taken.add(id);
    return id;
  });
}
