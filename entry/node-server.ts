/**
 * The Node HTTP server of a gatehouse app: @hono/node-server's request
 * listener on `node:http`, with every error Node or the adapter raises
 * before the app runs answered as `application/problem+json` (never an empty
 * body), and client disconnects kept out of the error log.
 *
 * - Node's HTTP parser refuses a request (bad `Content-Length`, an unknown
 *   method, a malformed request line or header): the `clientError` event
 *   answers 400 `bad_request`, 501 `method_not_implemented`, 431
 *   `headers_too_large` or 408 `request_timeout` and closes the connection.
 * - The adapter cannot build a URL (no or invalid `Host`, `*` as path): 400
 *   `bad_request` through its `errorHandler`.
 * - A client that goes away (connection reset, aborted upload) is logged at
 *   info level, not as an error.
 *
 * @example
 * const server = createNodeServer(gh.app.fetch, logger);
 * server.listen(8787, "127.0.0.1");
 */
import { createServer, type Server } from "node:http";
import type { Socket } from "node:net";
import { getRequestListener, RequestError } from "@hono/node-server";
import type { Logger } from "../actors/runtime.ts";
import { PROBLEMS, ProblemError, problemType } from "../ops.ts";

type Fetch = (req: Request) => Response | Promise<Response>;

const REASONS: Record<number, string> = {
  400: "Bad Request",
  408: "Request Timeout",
  431: "Request Header Fields Too Large",
  501: "Not Implemented",
};

/** The problem Node's parser error maps to; `start` is the first bytes of the request. */
export function parserProblem(code: string | undefined, start = ""): keyof typeof PROBLEMS {
  switch (code) {
    case "HPE_INVALID_METHOD":
      // A well-formed method token Node does not know is 501; bytes that are no request line are 400.
      return /^[A-Z][A-Z-]{0,31} \S+ HTTP\/1\.[01]\r?\n/.test(start) ? "method_not_implemented" : "bad_request";
    case "HPE_HEADER_OVERFLOW":
      return "headers_too_large";
    case "ERR_HTTP_REQUEST_TIMEOUT":
      return "request_timeout";
    default:
      return "bad_request";
  }
}

function answerClientError(err: Error & { code?: string }, socket: Socket, logger: Logger) {
  // The client is gone (reset, closed mid-request): nothing to answer and nothing wrong with the server.
  if (err.code === "ECONNRESET" || err.code === "EPIPE" || !socket.writable) {
    logger.info("client disconnected", { code: err.code });
    socket.destroy();
    return;
  }
  const raw = (err as { rawPacket?: Uint8Array }).rawPacket;
  const code = parserProblem(err.code, raw ? Buffer.from(raw).toString("latin1", 0, 256) : "");
  const { status, title } = PROBLEMS[code];
  const body = JSON.stringify({
    type: problemType(code),
    title,
    status,
    detail: `The request could not be parsed (${err.code ?? "unknown error"})`,
    code,
  });
  logger.info("request refused by the HTTP parser", { code: err.code });
  socket.end(
    `HTTP/1.1 ${status} ${REASONS[status]}\r\ncontent-type: application/problem+json\r\n` +
      `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
}

export function createNodeServer(fetch: Fetch, logger: Logger): Server {
  const listener = getRequestListener(fetch, {
    errorHandler(err) {
      if (err instanceof RequestError) {
        return new ProblemError("bad_request", `The request cannot be served: ${err.message}`).toResponse();
      }
      logger.error("request failed in the HTTP adapter", { error: String(err) });
      return new ProblemError("internal_error", "An internal error occurred").toResponse();
    },
  });
  // Without a Host header Node would answer 400 itself, with an empty body; the adapter refuses it instead.
  const server = createServer({ requireHostHeader: false }, listener);
  server.on("clientError", (err: Error & { code?: string }, socket: Socket) => answerClientError(err, socket, logger));
  return server;
}
