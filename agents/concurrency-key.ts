/**
 * The concurrency key and priority a new task is enqueued with (store/port.ts
 * invariants `concurrency-keys`, `fair-lanes`, `priorities`; checks in
 * common/concurrency.ts).
 *
 * Rule, the same for every way a task is enqueued (`POST …/tasks`, schedule
 * ticks, `POST /v1/chat`, `POST /v1/ag-ui`, a delegated child):
 * 1. a key the request gives is the task's key (checked by the route: a bad
 *    one is 400 `validation_failed` and nothing is enqueued);
 * 2. else, when the definition declares `concurrencyKey(task)`, its answer:
 *    a string is the key (checked: an invalid one throws
 *    `InvalidConcurrencyKey` and nothing is enqueued), null or undefined
 *    means none (the default lane);
 * 3. else a delegated child takes its parent turn's key (`parentKey`), so a
 *    tenant's children count against the tenant's limit; a definition that
 *    declares `concurrencyKey` decides for its children itself (it sees
 *    `parentKey` and may return it);
 * 4. else none.
 * A handoff changes the definition inside one turn of one agent: the turn's
 * task, and so its key and priority, stay.
 *
 * A definition's function is called once per enqueue attempt, with the task
 * as the request gives it; it must be pure and fast (no I/O: it runs on the
 * request's path). A throw fails the enqueue with that error.
 */
import { GatehouseError } from "../errors/base.ts";
import { concurrencyKeyProblem } from "../common/concurrency.ts";

/** What a definition's `concurrencyKey(task)` is given. */
export interface ConcurrencyKeyTask {
  /** The agent the task is for. */
  agentId: string;
  /** The definition's name. */
  agentName: string;
  /** The task's input (text or JSON), as enqueued. */
  input: unknown;
  /** Who enqueues: the token's name (routes/auth.ts), when the request came through an authenticated route. */
  by?: string;
  /** How the task comes: `task` (POST …/tasks), `schedule`, `chat` (POST /v1/chat, /v1/ag-ui), `delegation`. */
  via: "task" | "schedule" | "chat" | "delegation";
  /** A delegated child's parent turn's key (absent: no parent, or a parent without a key). */
  parentKey?: string;
}

/** `defineAgent({ concurrencyKey })`: the key of a task the request gives none, or null for none. */
export type ConcurrencyKeyOf = (task: ConcurrencyKeyTask) => string | null | undefined;

/** A definition's `concurrencyKey(task)` returned a value that is not a concurrency key: the enqueue fails. */
export class InvalidConcurrencyKey extends GatehouseError {
  declare readonly code: "invalid_concurrency_key";
  override readonly name = "InvalidConcurrencyKey";
  constructor(readonly agentName: string, message: string) {
    super("invalid_concurrency_key", message);
  }
}

/** The task's key by the rule above (undefined: the default lane). */
export function taskConcurrencyKey(
  def: { name: string; concurrencyKey?: ConcurrencyKeyOf },
  given: string | undefined,
  task: ConcurrencyKeyTask,
): string | undefined {
  if (given !== undefined) return given;
  if (typeof def.concurrencyKey !== "function") return task.parentKey;
  const key = def.concurrencyKey(task);
  if (key === null || key === undefined) return undefined;
  const problem = concurrencyKeyProblem(key);
  if (problem) {
    throw new InvalidConcurrencyKey(def.name, `Agent definition "${def.name}": concurrencyKey(task) returned a key that ${problem}; the task was not enqueued`);
  }
  return key;
}

/** The enqueue fields of a task's key and priority (absent ones left out). */
export function laneFields(key: string | undefined, priority: number | undefined): { concurrencyKey?: string; priority?: number } {
  return {
    ...(key !== undefined ? { concurrencyKey: key } : {}),
    ...(priority !== undefined && priority !== 0 ? { priority } : {}),
  };
}
