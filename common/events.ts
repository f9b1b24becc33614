/** Entries of an agent's event log, as written by the host and the gate and read by the routes. */

export interface NewEvent {
  type: string;
  data: Record<string, unknown>;
}

/** An entry of the agent's append-only event log. Ids are 1, 2, 3, … per agent. */
export interface StoredEvent extends NewEvent {
  id: number;
  at: number;
  turnId: string | null;
}
