/**
 * What every chat protocol's encoder shares: it owns one reading of a turn
 * (routes/chat/turn-reading.ts), exposes the reading's position to the
 * stream loop (routes/chat/stream.ts), and turns each batch of parts the
 * reading answers into the protocol's chunks. A protocol writes only its
 * opening (`start`) and its `encode`.
 */
import type { StoredEvent } from "../../common/events.ts";
import type { Delta, Open, TurnPart, TurnReading } from "./turn-reading.ts";

export abstract class TurnEncoder<C> {
  readonly reading: TurnReading;

  constructor(reading: TurnReading) {
    this.reading = reading;
  }

  get agentId(): string {
    return this.reading.agentId;
  }
  get turnId(): string {
    return this.reading.turnId;
  }
  /** Deltas of steps before this one are not written (their start may have been missed). */
  get liveFromStep(): number {
    return this.reading.liveFromStep;
  }
  set liveFromStep(step: number) {
    this.reading.liveFromStep = step;
  }
  /** The highest step number read from stored events. */
  get maxStep(): number {
    return this.reading.maxStep;
  }
  /** True once the answer's end was written. */
  get finished(): boolean {
    return this.reading.finished;
  }

  /** The chunks that open an answer. */
  abstract start(): C[];

  /** The protocol's chunks of a batch of parts. */
  protected abstract encode(parts: TurnPart[]): C[];

  /** Calls already open when the reading starts mid-turn (a continuation): what each waits for. */
  seedOpen(calls: ReadonlyArray<{ toolCallId: string; waits: Open; external: boolean }>): void {
    this.reading.seedOpen(calls);
  }

  delta(d: Delta): C[] {
    return this.encode(this.reading.delta(d));
  }

  /** The chunks of one stored event (none for another turn's, or after the end). */
  event(e: StoredEvent): C[] {
    return this.encode(this.reading.event(e));
  }

  /** After a batch of events: the end when every open call waits for the outside. */
  settle(): C[] {
    return this.encode(this.reading.settle());
  }
}
