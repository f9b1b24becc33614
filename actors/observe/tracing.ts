/**
 * Spans through `@opentelemetry/api` only: a no-op until the application
 * registers an SDK (a TracerProvider), so core code stays free of exporters
 * and of Node built-ins. The tracer is named `gatehouse`; span names and
 * attributes are listed in docs/operations.md ("Tracing").
 *
 * The tracer is looked up at each span, so a provider registered after this
 * module loaded is still used.
 */
import { type Attributes, context, type Span, SpanStatusCode, trace } from "@opentelemetry/api";

export type { Span };

export const TRACER_NAME = "gatehouse";

/** Starts a span, as a child of `parent` when given. */
export function startSpan(name: string, attributes: Attributes, parent?: Span): Span {
  const ctx = parent ? trace.setSpan(context.active(), parent) : undefined;
  return trace.getTracer(TRACER_NAME).startSpan(name, { attributes }, ctx);
}

/** Ends a span with more attributes, and status ERROR when `error` is set. */
export function endSpan(span: Span, attributes: Attributes = {}, error?: string): void {
  span.setAttributes(attributes);
  if (error !== undefined) span.setStatus({ code: SpanStatusCode.ERROR, message: error });
  span.end();
}

/** The attributes every span of a claim carries. */
export function claimSpanIds(agentId: string, turnId: string | null): Record<string, string> {
  return { "gatehouse.agent_id": agentId, "gatehouse.turn_id": turnId ?? "" };
}

/**
 * Starts the span of one claim that works on a turn (a turn handed back or waiting for an external
 * tool shows as several); none when the claim works on no turn.
 */
export function startTurnSpan(
  a: { agentId: string; agentName: string; turnId: string | null; workerId: string; epoch: number },
): Span | undefined {
  if (a.turnId === null) return undefined;
  return startSpan("gatehouse.turn", {
    "gatehouse.agent_id": a.agentId, "gatehouse.agent": a.agentName, "gatehouse.turn_id": a.turnId,
    "gatehouse.worker_id": a.workerId, "gatehouse.epoch": a.epoch,
  });
}

/** Ends a claim's turn span with the state reached, the commits and the turn's tokens; `error`: why the attempt stopped. */
export function endTurnSpan(
  span: Span | undefined,
  a: { state: string; commits: number; inputTokens: number; outputTokens: number },
  error?: string,
): void {
  if (!span) return;
  endSpan(span, {
    "gatehouse.state": a.state, "gatehouse.commits": a.commits,
    "gen_ai.usage.input_tokens": a.inputTokens, "gen_ai.usage.output_tokens": a.outputTokens,
  }, error);
}
