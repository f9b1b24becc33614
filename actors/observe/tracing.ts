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
