/**
 * Retention: how a commit that ends a turn bounds an agent's stored history
 * (store/port.ts invariant `retention`). The memory store runs `planRetention`; the
 * Lua scripts (store/lua/includes/retention.lua) implement the same rules
 * step by step, and tests/store/store-conformance.ts checks both alike.
 *
 * Rules, applied after the commit's appends, with L = lastEventId, B = the
 * running total of UTF-8 bytes of events appended by commits, E = turns ended
 * so far (this one included), M = messageCount:
 *
 * 1. Checkpoint: when L - (the newest checkpoint's event id, else
 *    eventsTrimmedThrough) >= checkpointEvery, store a checkpoint
 *    {eventId: L, bytes: B, ended: E, messageIndex: M, snapshot}.
 * 2. Cut: when L - eventsTrimmedThrough > maxEvents or B - (bytes of the
 *    base checkpoint, else 0) > maxEventBytes, the log is cut at the oldest
 *    checkpoint newer than the base and older than L that brings both within
 *    the limits (the newest such one when none does): events through it are
 *    removed, it becomes the base (`eventsTrimmedThrough`), older checkpoints
 *    go. A checkpoint stored by this very commit is never the cut, so the
 *    ending turn's events always stay (and time travel can show the head).
 * 3. Turns: the records of ended turns (status, input, tool calls,
 *    idempotency entry) and their messages are dropped, oldest first, for
 *    every turn whose end index k satisfies k <= E - maxTurns and k <= the
 *    base checkpoint's `ended` (so every turn time travel can still reach
 *    keeps its input). Messages go up to the end of the last dropped turn
 *    (`messagesTrimmedThrough`).
 *
 * Bound: at most maxEvents + the events of one turn (a turn's steps are
 * bounded by stepLimit), at most maxEventBytes + one turn's bytes,
 * and the records of max(maxTurns, turns since the base) turns. Only events
 * appended by commits count toward `maxEventBytes` (the few logged by other
 * operations: enqueues, deliveries, cancels, count toward `maxEvents`).
 */
import type { RetentionLimits } from "./port.ts";
import { StoreInputError } from "./keys.ts";
import { DEFAULTS } from "../common/defaults.ts";

/** Defaults (docs/api.md, "Configuration"; DEFAULTS.retention in common/defaults.ts): about 2-4 MB of events, 200 turns' records. */
export const DEFAULT_RETENTION: RetentionLimits = DEFAULTS.retention;

/** The numbers a checkpoint is decided by (the snapshot is stored beside them). */
export interface CheckpointMark {
  eventId: number;
  bytes: number;
  ended: number;
  messageIndex: number;
}

/** Resolved limits whose `checkpointEvery` was derived from `maxEvents` (none was given). */
const derivedInterval = new WeakSet<RetentionLimits>();

/**
 * Limits with defaults filled in, checked: positive integers, and
 * `checkpointEvery` a quarter of `maxEvents` unless given.
 */
export function resolveRetention(given: Partial<RetentionLimits> | undefined): RetentionLimits {
  const maxEvents = given?.maxEvents ?? DEFAULT_RETENTION.maxEvents;
  const r: RetentionLimits = {
    maxEvents,
    maxEventBytes: given?.maxEventBytes ?? DEFAULT_RETENTION.maxEventBytes,
    maxTurns: given?.maxTurns ?? DEFAULT_RETENTION.maxTurns,
    checkpointEvery: given?.checkpointEvery ?? Math.max(1, Math.floor(maxEvents / 4)),
  };
  for (const [k, v] of Object.entries(r)) {
    if (!Number.isSafeInteger(v) || v < 1) throw new StoreInputError(`Cannot use retention.${k} = ${String(v)}: a positive integer is needed`);
  }
  if (given?.checkpointEvery === undefined) derivedInterval.add(r);
  return r;
}

/**
 * An agent's own limits laid over the process's (`base`, from
 * `resolveRetention`; null: the process keeps everything). The result is what
 * `resolveRetention` gives for the process's given limits with the agent's
 * laid over them: a `checkpointEvery` that neither gave is derived from the
 * merged `maxEvents` (a quarter), so an agent's `maxEvents` bounds its log as
 * the same number on createGatehouse does. A `checkpointEvery` the process
 * gave stays unless the agent gives its own.
 */
export function layerRetention(base: RetentionLimits | null, own: Partial<RetentionLimits>): RetentionLimits {
  if (!base) return resolveRetention(own);
  const merged: Partial<RetentionLimits> = { ...base, ...own };
  if (own.checkpointEvery === undefined && derivedInterval.has(base)) delete merged.checkpointEvery;
  return resolveRetention(merged);
}

export interface RetentionPlan {
  /** Store a checkpoint at this commit. */
  checkpoint: boolean;
  /** Index into the marks (after the new checkpoint is added) of the new base; -1: no cut. */
  cutAt: number;
  /** Drop ended turns with end index <= this (0: none). */
  dropTurnsThrough: number;
}

/**
 * The rules of the module comment. `marks` are the stored checkpoints,
 * oldest first (the first one is the base when `trimmedThrough > 0`);
 * `endedBase` is how many ended turns were dropped already.
 */
export function planRetention(
  limits: RetentionLimits,
  s: { marks: CheckpointMark[]; trimmedThrough: number; last: number; bytes: number; ended: number; endedBase: number },
): RetentionPlan {
  const newest = s.marks.length > 0 ? s.marks[s.marks.length - 1].eventId : s.trimmedThrough;
  const checkpoint = s.last - newest >= limits.checkpointEvery;
  const marks = checkpoint ? [...s.marks, { eventId: s.last, bytes: s.bytes, ended: s.ended, messageIndex: 0 }] : s.marks;
  const base = s.trimmedThrough > 0 ? marks[0] : null;
  const baseBytes = base ? base.bytes : 0;
  let cutAt = -1;
  if (s.last - s.trimmedThrough > limits.maxEvents || s.bytes - baseBytes > limits.maxEventBytes) {
    for (let i = 0; i < marks.length; i++) {
      const m = marks[i];
      if (m.eventId <= s.trimmedThrough || m.eventId >= s.last) continue;
      if (s.last - m.eventId <= limits.maxEvents && s.bytes - m.bytes <= limits.maxEventBytes) {
        cutAt = i;
        break;
      }
    }
    if (cutAt < 0) {
      for (let i = marks.length - 1; i >= 0; i--) {
        if (marks[i].eventId < s.last && marks[i].eventId > s.trimmedThrough) {
          cutAt = i;
          break;
        }
      }
    }
  }
  const newBase = cutAt >= 0 ? marks[cutAt] : base;
  const reach = Math.min(s.ended - limits.maxTurns, newBase ? newBase.ended : 0);
  return { checkpoint, cutAt, dropTurnsThrough: reach > s.endedBase ? reach : 0 };
}
