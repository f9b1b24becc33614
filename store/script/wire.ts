/**
 * Shorter commit arguments on the wire: JSON fragments that nearly every
 * commit sends (the openings of its event tails, the defaults of a tool
 * result's contract validation and of a turn's config, the keys of a tool
 * call's record and of its resolution, the openings of messages) travel as
 * one control byte each, and commit.lua puts them back before it stores
 * anything (store/lua/includes/wire.lua, `unwire`). What Redis stores, and
 * so what every reader reads, is unchanged: the codes live on the wire only.
 *
 * Invariants:
 * - Only texts of `JSON.stringify` are packed. They never hold a byte below
 *   0x20 (JSON escapes control characters in strings and writes no
 *   whitespace), so every such byte of a packed text is a code, and
 *   replacing each code by its fragment (`unwire`, one `string.gsub` in
 *   Lua) gives the text back byte for byte, whatever was replaced in
 *   whatever order.
 * - `FRAGMENTS[i]` is code i + 1, in the same order as the list in
 *   store/lua/includes/wire.lua (tests/store/store-wire.int.test.ts reads both and
 *   runs the Lua `unwire` on a real Redis). Codes are never renumbered: a
 *   worker and a script of different versions must agree (the script is
 *   loaded by its hash, so a changed list is a new script; a new fragment
 *   takes a free code).
 * - Cheap on the write path: per argument, a prefix check and, for texts
 *   of at most INNER_MAX characters, a few `indexOf`s of fixed strings
 *   chosen by the argument's kind (a transition's by its machine event's
 *   type; a long text keeps its inner fragments: they would save little and
 *   cost a search of the whole text each).
 */

/** The fragments; code = index + 1 (at most 31). */
export const FRAGMENTS = [
  // 1-8: openings of event tails (`"type":...,"data":{` and the first field).
  '"type":"step","data":{"phase":"started","step":',
  '"type":"step","data":{"phase":"planning","step":',
  '"type":"step","data":{"phase":"executing","step":',
  '"type":"step","data":{"phase":"completed","step":',
  '"type":"tool_call","data":{"step":',
  '"type":"tool_result","data":{"toolCallId":',
  '"type":"transition","data":{"seq":',
  '"type":"task","data":{"turnId":',
  // 9-18: within events.
  ',"contractValidation":{"applied":false,"passed":true,"mismatch":null,"expectedKeys":[],"actualKeys":[]}',
  ',"from":"running","to":"waiting-tools","event":{"type":"MODEL_STEP","at":',
  ',"from":"waiting-tools","to":"running","event":{"type":"TOOL_RESULT","at":',
  ',"event":{"type":"MODEL_STEP","at":',
  ',"event":{"type":"TOOL_RESULT","at":',
  ',"event":{"type":"TASK_STARTED","at":',
  ',"config":{"maxSteps":32,"completion":"submit_result","mustEndWith":[],"verifyMaxAttempts":5,"maxVerifierErrors":3}',
  ',"external":false,"deadline":',
  ',"usage":{"inputTokens":',
  ',"outputTokens":',
  // 19-20: a resolution.
  '{"status":"resolved","outcome":{"ok":true,"value":',
  ',"afterExecution":"continue","source":"inline","resolvedAt":',
  // 21-24: a tool call's record.
  '{"turnId":',
  ',"toolCallId":',
  ',"agentId":',
  ',"recordedAt":',
  // 25-28: openings of messages.
  '{"role":"assistant","content":"","toolCalls":[{"id":',
  '{"role":"assistant","content":',
  '{"role":"tool","toolCallId":',
  '{"role":"user","content":',
  // 29-31: within transitions and messages.
  ',"afterExecution":"continue"',
  ',"outcome":{"ok":true,"value":',
  ',"content":',
] as const;

const CODE = FRAGMENTS.map((_, i) => String.fromCharCode(i + 1));

/**
 * A kind of argument: the openings tried in order (the first that matches is replaced), then the inner
 * fragments (a longer fragment before one it contains). Numbers are indexes of FRAGMENTS.
 */
interface Kind {
  openings: readonly number[];
  inner: readonly number[];
}
const kind = (openings: number[], inner: number[]): Kind => ({ openings, inner });

const EVENT: Record<string, Kind> = {
  step: kind([0, 1, 2, 3], []),
  tool_call: kind([4], []),
  tool_result: kind([5], [8]),
  task: kind([7], [16, 17]),
};
/** Transitions by the type of the machine event they carry. */
const TRANSITION: Record<string, Kind> = {
  MODEL_STEP: kind([6], [9, 11, 15, 16, 17]),
  TOOL_RESULT: kind([6], [10, 12, 29, 28]),
  TASK_STARTED: kind([6], [13, 14]),
};
const OTHER_TRANSITION = kind([6], []);
const RECORD = kind([20], [21, 15, 22, 23]);
const RESOLUTION = kind([18], [19, 8]);
const MESSAGE = kind([24, 25, 26, 27], [30]);

/** Texts longer than this get their opening packed only. */
const INNER_MAX = 1024;

/** `text` with its opening and the first place of each inner fragment packed (a fragment found again stays: that is lossless too). */
function pack(text: string, k: Kind): string {
  let t = text;
  for (const i of k.openings) {
    if (t.startsWith(FRAGMENTS[i])) {
      t = CODE[i] + t.slice(FRAGMENTS[i].length);
      break;
    }
  }
  // A long text gains little from the inner fragments and costs a search of its length for each: left as it is.
  if (t.length > INNER_MAX) return t;
  for (const i of k.inner) {
    const at = t.indexOf(FRAGMENTS[i]);
    if (at >= 0) t = t.slice(0, at) + CODE[i] + t.slice(at + FRAGMENTS[i].length);
  }
  return t;
}

/** An event's tail (`"type":...` JSON without its opening brace, `tail`), packed. */
export function wireEvent(e: { type: string; data?: unknown }, tail: string): string {
  if (e.type === "transition") {
    const t = ((e.data as { event?: { type?: unknown } } | undefined)?.event)?.type;
    return pack(tail, typeof t === "string" && Object.hasOwn(TRANSITION, t) ? TRANSITION[t] : OTHER_TRANSITION);
  }
  const k = Object.hasOwn(EVENT, e.type) ? EVENT[e.type] : undefined;
  return k ? pack(tail, k) : tail;
}
/** A tool call's record JSON, packed. */
export const wireRecord = (json: string): string => pack(json, RECORD);
/** A resolution JSON, packed. */
export const wireResolution = (json: string): string => pack(json, RESOLUTION);
/** A message JSON, packed. */
export const wireMessage = (json: string): string => pack(json, MESSAGE);

/** What commit.lua's `unwire` does: every code back to its fragment. */
export function unwire(packed: string): string {
  return packed.replace(/[\x01-\x1f]/g, (c) => FRAGMENTS[c.charCodeAt(0) - 1] ?? c);
}
