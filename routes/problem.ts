/**
 * Problem details (RFC 9457): the one error class of the HTTP surface. Route
 * code throws `ProblemError`; `app.onError` turns it into an
 * `application/problem+json` response, so every error has the same shape:
 * `{ type, title, status, detail, code, ...extra }`. `code` is stable and is
 * what clients branch on; `detail` is for humans and may change. No response
 * ever carries a stack trace or an internal error message.
 */
import { GatehouseError } from "../errors/base.ts";

/** Every code the routes answer with, its status and title (see docs/http.md). */
export const PROBLEMS = {
  malformed_json: { status: 400, title: "Malformed JSON body" },
  bad_request: { status: 400, title: "The HTTP request cannot be parsed or served" },
  validation_failed: { status: 400, title: "Request does not match the schema" },
  json_limit_exceeded: { status: 400, title: "JSON body nests too deep or holds too much" },
  invalid_agent_id: { status: 400, title: "Invalid agent id" },
  invalid_verdict_id: { status: 400, title: "Invalid verdict id" },
  invalid_tool_role: { status: 400, title: "Invalid tool role" },
  unauthorized: { status: 401, title: "Missing or invalid bearer token or signature" },
  forbidden: { status: 403, title: "The token does not reach this agent or verb" },
  not_found: { status: 404, title: "No such route" },
  turn_not_found: { status: 404, title: "Unknown turn" },
  agent_not_found: { status: 404, title: "Unknown agent" },
  verdict_not_found: { status: 404, title: "Unknown verdict" },
  event_not_found: { status: 404, title: "Unknown event" },
  tool_role_not_found: { status: 404, title: "Unknown tool role" },
  schedule_not_found: { status: 404, title: "Unknown schedule" },
  method_not_allowed: { status: 405, title: "Method not allowed on this route" },
  event_trimmed: { status: 410, title: "The event was removed by retention" },
  agent_definition_conflict: { status: 409, title: "Agent id is bound to another definition" },
  unknown_tool_call: { status: 409, title: "Unknown tool call" },
  turn_finished: { status: 409, title: "The turn has finished" },
  turn_cancelling: { status: 409, title: "A cancel of the turn is pending; the result was not taken" },
  not_external: { status: 409, title: "The tool call runs in-process; its result cannot be delivered" },
  delegated_call: { status: 409, title: "The tool call is answered by its child agent; its result cannot be delivered" },
  already_resolved: { status: 409, title: "The tool call was already resolved" },
  approval_pending: { status: 409, title: "The tool call waits for a person's approval" },
  approval_conflict: { status: 409, title: "The tool call's approval was decided otherwise" },
  not_awaiting_approval: { status: 409, title: "The tool call does not wait for approval" },
  not_active: { status: 409, title: "The agent has no active turn" },
  reset_conflict: { status: 409, title: "The agent kept changing during the reset" },
  turn_not_started: { status: 409, title: "The turn has not started" },
  turn_started: { status: 409, title: "The turn has started" },
  delivery_in_progress: { status: 409, title: "This signed message is being handled; retry shortly" },
  delivery_replayed: { status: 409, title: "This signed message was delivered to another route" },
  request_timeout: { status: 408, title: "The request did not arrive in time" },
  agent_exists: { status: 409, title: "An agent with this id exists" },
  schedule_limit: { status: 409, title: "The agent holds as many schedules as it may" },
  payload_too_large: { status: 413, title: "Request body too large" },
  unsupported_media_type: { status: 415, title: "Unsupported media type" },
  unknown_agent_definition: { status: 422, title: "Unknown agent definition" },
  invalid_concurrency_key: { status: 422, title: "The agent definition derived an invalid concurrency key from this task" },
  unknown_guardian: { status: 422, title: "Unknown guardian" },
  invalid_replay_bundle: { status: 422, title: "Not a replay bundle this version reads" },
  too_many_streams: { status: 429, title: "Too many open event streams" },
  too_many_delayed_tasks: { status: 429, title: "The agent holds as many delayed tasks as allowed" },
  rate_limited: { status: 429, title: "Too many requests" },
  headers_too_large: { status: 431, title: "Request header fields too large" },
  snapshot_unrestorable: { status: 500, title: "The agent's snapshot cannot be read" },
  history_diverged: { status: 500, title: "The event log does not replay" },
  internal_error: { status: 500, title: "Internal error" },
  method_not_implemented: { status: 501, title: "Unknown HTTP method" },
  store_unavailable: { status: 503, title: "The store is unreachable or did not answer in time" },
} as const satisfies Record<string, { status: number; title: string }>;

export type ProblemCode = keyof typeof PROBLEMS;

export const PROBLEM_CONTENT_TYPE = "application/problem+json";

/** `type` URIs are relative references into the error table of docs/http.md. */
export const problemType = (code: string) => `/docs/http#${code}`;

/**
 * @example
 * throw new ProblemError("agent_not_found", `Agent "a1" does not exist`);
 * // -> 404 application/problem+json { type, title, status: 404, detail, code: "agent_not_found" }
 */
export class ProblemError extends GatehouseError {
  declare readonly code: ProblemCode;
  readonly status: number;
  readonly title: string;
  /** Extra members of the problem object (e.g. `errors`, `boundTo`). */
  readonly extra: Record<string, unknown>;
  /** Extra response headers (e.g. `WWW-Authenticate`, `Allow`). */
  readonly headers: Record<string, string>;

  constructor(
    code: ProblemCode,
    detail: string,
    opts: { extra?: Record<string, unknown>; headers?: Record<string, string> } = {},
  ) {
    super(code, detail);
    this.name = "ProblemError";
    this.status = PROBLEMS[code].status;
    this.title = PROBLEMS[code].title;
    this.extra = opts.extra ?? {};
    this.headers = opts.headers ?? {};
  }

  /** The problem object (the response body). */
  toJSON(): Record<string, unknown> {
    const base = {
      type: problemType(this.code),
      title: this.title,
      status: this.status,
      detail: this.message,
      code: this.code,
    };
    // Standard members first; `extra` cannot override them.
    return { ...base, ...this.extra, ...base };
  }

  toResponse(): Response {
    return new Response(JSON.stringify(this.toJSON()), {
      status: this.status,
      headers: { ...this.headers, "content-type": PROBLEM_CONTENT_TYPE },
    });
  }
}

/** Seconds a client should wait before retrying after `store_unavailable`. */
export const STORE_RETRY_AFTER_SECONDS = 1;

/** 503 `store_unavailable` with `Retry-After`. */
export function storeUnavailable(detail: string): ProblemError {
  return new ProblemError("store_unavailable", detail, { headers: { "retry-after": String(STORE_RETRY_AFTER_SECONDS) } });
}
