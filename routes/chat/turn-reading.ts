/**
 * One reading of an agent's event log as a turn's answer: the stored events
 * of one turn (and the live deltas of its model steps) become `TurnPart`s,
 * protocol-neutral: text parts, tool calls and their ends, approval
 * requests, gatehouse's own state (`turn`, `verdict`), the turn's end.
 * Pure: no store, no clock, no I/O. Each protocol encodes the same parts:
 * routes/chat/ui-stream.ts (the AI SDK UI message stream),
 * routes/chat/ag-ui-stream.ts (AG-UI events); routes/chat/stream.ts drives
 * either.
 *
 * Invariants:
 * - Only the turn's own events are read (`turnId` equal); everything else is
 *   skipped.
 * - The text of a step is the stored text (the `step` event of phase
 *   `planning`). Live deltas only show it early: a delta is written only for
 *   a step at or after `liveFromStep` whose stored text has not been read,
 *   and when the stored text arrives only what the deltas did not say is
 *   written. So when what the deltas said is a prefix of the stored text
 *   (heard from the step's start, in order: what routes/chat/stream.ts
 *   feeds), the step's text part, read to its end, is exactly its stored
 *   text, whether the reader heard all of the deltas, some, or none. Deltas
 *   that said something else (a retried model call) keep their part, which
 *   ends, and the stored text follows in a part of its own.
 * - A tool call is read once (`tool-call`), its approval request once
 *   (`approval-request`), and it ends exactly once: `tool-output`,
 *   `tool-error`, or `tool-denied` for a rejected approval (the call never
 *   ran; the error result the model gets for it is not read again).
 * - The reading ends (`finish`) when the turn ends (`task` event: `done`, or
 *   `failed` after an `error` part), or when it cannot go on without the
 *   outside: every call still open waits for a person's decision or for an
 *   external result (reason `tool-calls`; `waiting` names them). Every text
 *   part is ended before `finish`. The completion tool (`builtin`) is not a
 *   tool call: the turn's end says it.
 */
import type { StoredEvent } from "../../common/events.ts";

/** What one reading of a turn yields, in order (protocol-neutral). */
export type TurnPart =
  | { type: "step-start" }
  | { type: "step-end" }
  | { type: "text-start"; id: string }
  | { type: "text-delta"; id: string; delta: string }
  | { type: "text-end"; id: string }
  | { type: "tool-call"; toolCallId: string; toolName: string; input: unknown }
  | { type: "approval-request"; toolCallId: string }
  | { type: "tool-output"; toolCallId: string; output: unknown }
  | { type: "tool-error"; toolCallId: string; errorText: string }
  | { type: "tool-denied"; toolCallId: string }
  | { type: "turn"; data: TurnData }
  | { type: "verdict"; id: string; data: Record<string, unknown> }
  | { type: "error"; errorText: string }
  | { type: "finish"; reason: FinishReason; waiting: WaitingCall[] };

export type FinishReason = "stop" | "error" | "tool-calls";

/** A call the turn waits on when its reading ends with `tool-calls`. */
export interface WaitingCall {
  toolCallId: string;
  waits: "approval" | "external";
}

/** gatehouse's own state: where the turn is. */
export interface TurnData {
  agentId: string;
  turnId: string;
  status: "running" | "waiting" | "done" | "failed";
}

/** What an open call waits for: the host (running), a person, or an external result. */
export type Open = "running" | "approval" | "external";

/** A live delta as the live channel carries it (store/live.ts). */
export interface Delta {
  turnId: string;
  step: number;
  text: string;
}

export class TurnReading {
  readonly agentId: string;
  readonly turnId: string;
  /** Deltas of steps before this one are not written (their start may have been missed). */
  liveFromStep: number;
  /** The highest step number read from stored events. */
  maxStep = 0;
  /** True once `finish` was written. */
  finished = false;
  #open = new Map<string, Open>();
  #external = new Map<string, boolean>();
  #ended = new Set<string>();
  #builtin = new Set<string>();
  #stepOpen = new Set<number>();
  #stepStored = new Set<number>();
  /** Per step: the text part's id and what its deltas said. */
  #text = new Map<number, { id: string; said: string }>();

  constructor(agentId: string, turnId: string, liveFromStep = 1) {
    this.agentId = agentId;
    this.turnId = turnId;
    this.liveFromStep = liveFromStep;
  }

  /** The parts that open a reading: the turn, running. */
  start(): TurnPart[] {
    return [this.#turn("running")];
  }

  /** Calls already open when the reading starts mid-turn (a continuation): what each waits for. */
  seedOpen(calls: ReadonlyArray<{ toolCallId: string; waits: Open; external: boolean }>): void {
    for (const c of calls) {
      this.#open.set(c.toolCallId, c.waits);
      this.#external.set(c.toolCallId, c.external);
    }
  }

  delta(d: Delta): TurnPart[] {
    if (this.finished || d.turnId !== this.turnId || d.text === "") return [];
    if (d.step < this.liveFromStep || this.#stepStored.has(d.step)) return [];
    const out = this.#openStep(d.step);
    const part = this.#textPart(d.step, out);
    part.said += d.text;
    out.push({ type: "text-delta", id: part.id, delta: d.text });
    return out;
  }

  /** The chunks of one stored event (none for another turn's, or after `finish`). */
  event(e: StoredEvent): TurnPart[] {
    if (this.finished || e.turnId !== this.turnId) return [];
    const d = e.data as Record<string, any>;
    switch (e.type) {
      case "step":
        return this.#step(d);
      case "tool_call":
        return this.#toolCall(d);
      case "approval_requested":
        this.#open.set(d.toolCallId, "approval");
        return [{ type: "approval-request", toolCallId: d.toolCallId }];
      case "approval_decided":
        return this.#decided(d);
      case "transition":
        return this.#transition(d.event ?? {});
      case "verdict_recorded":
        return [{ type: "verdict", id: String(d.verdictId), data: { ...d } }];
      case "task":
        return this.#end(d);
      default:
        return [];
    }
  }

  /**
   * After a batch of events: when every open call waits for the outside,
   * the answer ends here (`finish`, reason `tool-calls`); the next request
   * continues the turn.
   */
  settle(): TurnPart[] {
    if (this.finished || this.#open.size === 0) return [];
    for (const w of this.#open.values()) if (w === "running") return [];
    return this.#finish("tool-calls", "waiting");
  }

  #turn(status: TurnData["status"]): TurnPart {
    return { type: "turn", data: { agentId: this.agentId, turnId: this.turnId, status } };
  }

  #openStep(step: number): TurnPart[] {
    if (this.#stepOpen.has(step)) return [];
    this.#stepOpen.add(step);
    return [{ type: "step-start" }];
  }

  #textPart(step: number, out: TurnPart[]): { id: string; said: string } {
    let part = this.#text.get(step);
    if (!part) {
      part = { id: `${this.turnId}:text:${step}`, said: "" };
      this.#text.set(step, part);
      out.push({ type: "text-start", id: part.id });
    }
    return part;
  }

  #step(d: Record<string, any>): TurnPart[] {
    const step = Number(d.step);
    this.maxStep = Math.max(this.maxStep, step);
    if (d.phase === "started") return this.#openStep(step);
    if (d.phase === "completed") {
      const out = this.#closeText(step);
      if (this.#stepOpen.delete(step)) out.push({ type: "step-end" });
      return out;
    }
    if (d.phase !== "planning") return [];
    this.#stepStored.add(step);
    const out = this.#openStep(step);
    const text = typeof d.text === "string" ? d.text : "";
    const heard = this.#text.get(step);
    if (heard && !text.startsWith(heard.said)) {
      // The deltas told another text (a retried call): the stored text gets a part of its own.
      out.push({ type: "text-end", id: heard.id });
      const id = `${heard.id}:stored`;
      if (text !== "") out.push({ type: "text-start", id }, { type: "text-delta", id, delta: text }, { type: "text-end", id });
      this.#text.delete(step);
      return out;
    }
    if (text === "" && !heard) return out;
    const part = this.#textPart(step, out);
    const rest = text.slice(part.said.length);
    if (rest !== "") out.push({ type: "text-delta", id: part.id, delta: rest });
    return [...out, ...this.#closeText(step)];
  }

  #closeText(step: number): TurnPart[] {
    const part = this.#text.get(step);
    if (!part) return [];
    this.#text.delete(step);
    return [{ type: "text-end", id: part.id }];
  }

  #toolCall(d: Record<string, any>): TurnPart[] {
    if (d.builtin === true) {
      this.#builtin.add(d.toolCallId);
      return [];
    }
    this.#external.set(d.toolCallId, d.external === true);
    return [{ type: "tool-call", toolCallId: d.toolCallId, toolName: d.name, input: d.args ?? {} }];
  }

  #decided(d: Record<string, any>): TurnPart[] {
    const id = d.toolCallId as string;
    if (this.#ended.has(id)) return [];
    if (d.decision === "approved") {
      this.#open.set(id, this.#external.get(id) ? "external" : "running");
      return [];
    }
    this.#open.delete(id);
    this.#ended.add(id);
    if (d.decision === "rejected") return [{ type: "tool-denied", toolCallId: id }];
    return [{ type: "tool-error", toolCallId: id, errorText: "approval_timeout: nobody decided before the approval's deadline" }];
  }

  #transition(ev: Record<string, any>): TurnPart[] {
    if (ev.type === "MODEL_STEP") {
      for (const c of ev.toolCalls ?? []) {
        if (this.#builtin.has(c.id) || this.#ended.has(c.id)) continue;
        this.#external.set(c.id, c.external === true);
        if (!this.#open.has(c.id)) this.#open.set(c.id, c.approval ? "approval" : c.external ? "external" : "running");
      }
      return [];
    }
    if (ev.type !== "TOOL_RESULT") return [];
    const id = ev.toolCallId as string;
    this.#open.delete(id);
    if (this.#ended.has(id) || this.#builtin.has(id)) return [];
    this.#ended.add(id);
    const o = ev.outcome ?? {};
    if (o.ok === true) return [{ type: "tool-output", toolCallId: id, output: o.value ?? null }];
    return [{ type: "tool-error", toolCallId: id, errorText: `${o.error?.type ?? "error"}: ${o.error?.message ?? ""}` }];
  }

  #end(d: Record<string, any>): TurnPart[] {
    if (d.status === "done") return this.#finish("stop", "done");
    const err = d.error ?? {};
    return [{ type: "error", errorText: `${err.reason ?? "failed"}: ${err.message ?? ""}` }, ...this.#finish("error", "failed")];
  }

  #finish(reason: FinishReason, status: TurnData["status"]): TurnPart[] {
    const out: TurnPart[] = [];
    const waiting: WaitingCall[] = [];
    if (reason === "tool-calls") for (const [toolCallId, w] of this.#open) if (w !== "running") waiting.push({ toolCallId, waits: w });
    for (const step of [...this.#text.keys()]) out.push(...this.#closeText(step));
    if (this.#stepOpen.size > 0) out.push({ type: "step-end" });
    this.#stepOpen.clear();
    this.finished = true;
    out.push(this.#turn(status), { type: "finish", reason, waiting });
    return out;
  }
}

