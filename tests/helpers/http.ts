/**
 * Requests to a gatehouse's app in process, the one way every suite builds
 * them: `jsonRequest` builds a `Request` (a JSON body when there is one, with
 * `content-type: application/json`), `send` hands it to anything with
 * `fetch(Request)` (a `Gatehouse`, a Hono app, a Workers handler) and reads
 * the answer's body once: JSON when it parses, else the text.
 *
 * @example
 * const res = await gh.fetch(jsonRequest("POST", "/v1/agents/a1/tasks", { agent: "echo", input: "hi" }));
 * const { status, json } = await send(gh, "GET", "/v1/agents/a1");
 * const post = (path: string, body: unknown) => jsonRequest("POST", path, body, {}, "http://w");
 */

/** The origin of a request when none is given. */
export const ORIGIN = "http://gh.test";

/** Anything that answers a `Request` (a gatehouse, a Hono app, a Workers handler bound to its env). */
export interface Fetches {
  fetch(req: Request): Response | Promise<Response>;
}

/** A request to `path` on `origin`; a `body` other than undefined is sent as JSON. */
export function jsonRequest(method: string, path: string, body?: unknown, headers: Record<string, string> = {}, origin = ORIGIN): Request {
  if (body === undefined) return new Request(`${origin}${path}`, { method, headers });
  return new Request(`${origin}${path}`, {
    method,
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
}

/** What `send` answers: the response, its status and its body (JSON when it parses, else the text). */
export interface Sent {
  res: Response;
  status: number;
  // deno-lint-ignore no-explicit-any
  json: any;
}

/** Sends `jsonRequest(method, path, body, headers, origin)` to `app` and reads the body. */
export async function send(
  app: Fetches,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
  origin = ORIGIN,
): Promise<Sent> {
  const res = await app.fetch(jsonRequest(method, path, body, headers, origin));
  const text = await res.text();
  let json: unknown = text;
  try {
    json = text === "" ? undefined : JSON.parse(text);
  } catch {
    // not JSON: the text
  }
  return { res, status: res.status, json };
}
