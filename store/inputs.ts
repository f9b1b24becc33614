/**
 * A task's input is stored once per turn, in the agent's inputs record
 * (`inputs`, turnId -> input JSON), and referenced everywhere else:
 *
 * - the queued task and `currentTask` hold no input; a claim hands out the
 *   task with its input read from the inputs record;
 * - the `task_enqueued` event carries `inputBytes`, the `TASK_STARTED`
 *   transition its `turnId` (the input is `getTurn(agentId, turnId).input`);
 * - the conversation's user message of a turn is stored as
 *   `{ role: "user", content: "", inputOf: turnId }` and `readMessages`
 *   answers it with `content = inputText(input)`.
 *
 * Replaying the event log still reproduces every snapshot (the machine keeps
 * no input in its context); the transcript of a replay reads the input of
 * each `TASK_STARTED` through its turn id.
 */
import { safeJsonText } from "../common/json-bounds.ts";
import type { Message } from "../common/message.ts";

/** The user message text of a task input: a string as is, anything else as JSON (bounded: never overflows the stack). */
export const inputText = (input: unknown): string => (typeof input === "string" ? input : safeJsonText(input));

/** The stored form of a turn's user message (see the module comment). Key order matters: Lua matches it. */
export const inputRefMessage = (turnId: string): Message => ({ role: "user", content: "", inputOf: turnId });

const enc = new TextEncoder();
/** UTF-8 size of the input's JSON, logged in `task_enqueued`. */
export const inputBytes = (input: unknown): number => enc.encode(JSON.stringify(input) ?? "null").byteLength;
