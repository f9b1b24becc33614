/**
 * The request a route's request stands for. Middleware that has to replace
 * `c.req.raw` (the signed-request check hands the bytes it read on; an empty
 * optional body is dropped) records the original here, so whoever keyed
 * something on the incoming request (the Workers handler keys the bells a
 * request rings by it) finds it again from the replacement.
 */
import type { Context } from "hono";

const origins = new WeakMap<Request, Request>();

/** Replaces the request of `c` with `next`, which stands for the same incoming request. */
export function replaceRequest(c: Context, next: Request): void {
  origins.set(next, originalRequest(c.req.raw));
  c.req.raw = next;
}

/** The incoming request `req` stands for (itself when it was never replaced). */
export function originalRequest(req: Request): Request {
  return origins.get(req) ?? req;
}
