/**
 * How the script store writes values into script arguments: JSON texts for
 * values the scripts store or compare, raw strings for identifiers that
 * become keys or index members, integers checked before the call.
 *
 * Once also per value: a commit holds the same object in several places (a
 * tool call's arguments in its record, its events, the assistant message
 * and the snapshot; a result in its resolution and its events), and its
 * arguments are built with one memo (common/json-once.ts, the shapes
 * below), so each such object is stringified once per commit. The texts are
 * those of `JSON.stringify`, byte for byte, with one change: every text
 * is well-formed (store/port.ts invariant `well-formed-text`,
 * common/well-formed.ts). `j` and the memo's `encode` replace each
 * lone-surrogate escape (`\ud800`, which Lua's `cjson.decode` refuses) by
 * U+FFFD, so the text is that of the value with its lone surrogates
 * replaced, exactly what the memory store keeps; ScriptContext (`run` and `call`) does the
 * same for raw surrogates in every argument and key, the last stop before
 * Redis.
 */
import type { CommitRequest, TurnEnd } from "../port.ts";
import { StoreInputError } from "../keys.ts";
import { compactSnapshot } from "../snapshot-form.ts";
import { JsonOnce, SHARED, type Shape } from "../../common/json-once.ts";
import { wellFormedJson } from "../../common/well-formed.ts";

/** `JSON.stringify(v)`, well-formed (a lone surrogate becomes U+FFFD). */
export const j = (v: unknown): string => {
  const t = JSON.stringify(v) as string | undefined;
  // JSON.stringify(undefined) is undefined: kept, as callers of the plain function saw it.
  return t === undefined ? (t as unknown as string) : wellFormedJson(t);
};

/** A JsonOnce whose texts are well-formed, as `j`'s are. */
export class WellFormedOnce extends JsonOnce {
  override encode(v: unknown, shape: Shape): string | undefined {
    const t = super.encode(v, shape);
    return t === undefined ? t : wellFormedJson(t);
  }
}
/** JSON of a non-empty object without its opening brace; a script prepends its own fields. */
export const tail = (obj: Record<string, unknown>) => j(obj).slice(1);

/**
 * Where one commit's values share objects (common/json-once.ts): a call's
 * `args`, a result's `outcome`, a finished turn's output.
 */
export const CALL: Shape = { args: SHARED };
export const RESOLUTION: Shape = { outcome: SHARED };
export const MESSAGE: Shape = { toolCalls: [CALL] };
/** By event type, where its data shares values; the other types share none. */
export const EVENTS: Record<string, Shape> = {
  tool_call: { data: CALL },
  tool_result: { data: RESOLUTION },
  transition: { data: { event: { toolCalls: [CALL], outcome: SHARED } } },
  task: { data: { deliverable: SHARED } },
};
export const SNAPSHOT: Shape = { context: { pending: { "*": CALL }, output: SHARED } };

/** The event tail of `tail({ type, data })`, through the commit's memo. */
export function eventTail(memo: WellFormedOnce, e: { type: string; data?: unknown }): string {
  const shape = Object.hasOwn(EVENTS, e.type) ? EVENTS[e.type] : undefined;
  return (shape ? memo.encode({ type: e.type, data: e.data }, shape)! : j({ type: e.type, data: e.data })).slice(1);
}

export function int(n: number, what: string): string {
  if (!Number.isSafeInteger(n)) throw new StoreInputError(`${what} must be an integer (ms), got ${n}`);
  return String(n);
}

/** The limits as commit.lua reads them: four positive integers (anything else is refused before the call). */
export function retentionArg(r: NonNullable<CommitRequest["retention"]>): string {
  const all = [["maxEvents", r.maxEvents], ["maxEventBytes", r.maxEventBytes], ["maxTurns", r.maxTurns], ["checkpointEvery", r.checkpointEvery]] as const;
  for (const [k, v] of all) {
    if (!Number.isSafeInteger(v) || v < 1) throw new StoreInputError(`Cannot use retention.${k} = ${String(v)}: a positive integer is needed`);
  }
  return all.map(([, v]) => String(v)).join(" ");
}

/** The TurnEnd as script arguments: snapshot, state, M, E, messages, event tails (includes/end_turn.lua). */
export function turnEndArgs(end: TurnEnd): string[] {
  const memo = new WellFormedOnce();
  return [
    memo.encode(compactSnapshot(end.snapshot ?? null), SNAPSHOT)!, j(end.state), String(end.messages.length), String(end.events.length),
    ...end.messages.map((m) => memo.encode(m, MESSAGE)!), ...end.events.map((e) => eventTail(memo, e)),
  ];
}

/** Order of Redis member comparison (bytes of UTF-8, so code points), not of UTF-16 units. */
export function byCodePoint(a: string, b: string): number {
  if (a === b) return 0;
  const x = [...a];
  const y = [...b];
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    if (x[i] !== y[i]) return x[i].codePointAt(0)! - y[i].codePointAt(0)!;
  }
  return x.length - y.length;
}

