/**
 * The what-if of one stored agent: reads its log and its turns' inputs and
 * hands them to verification/what-if.ts. Reads only (store reads), writes
 * nothing.
 */
import type { Store } from "../../store/port.ts";
import { whatIf, type WhatIfCandidate, type WhatIfCharge, type WhatIfRun, type WhatIfVerifier } from "../../verification/what-if.ts";
import { readEventsThrough } from "./time-travel.ts";

export type { WhatIfCandidate, WhatIfCharge, WhatIfRun, WhatIfVerifier };

export async function whatIfForAgent(
  store: Store,
  agentId: string,
  head: { agentName: string; lastEventId: number },
  verifier: WhatIfVerifier,
  bounds: { after?: number; max?: number; charge?: WhatIfCharge } = {},
): Promise<WhatIfRun> {
  const events = await readEventsThrough(store, agentId, head.lastEventId);
  return whatIf({
    verifier,
    events,
    agentId,
    agentName: head.agentName,
    inputOf: async (turnId) => (await store.getTurn(agentId, turnId))?.input ?? null,
    ...bounds,
  });
}
