import { memoryStore, memoryStoreCounts } from "../store/memory.ts";
import { storeConformance } from "./store-conformance.ts";

storeConformance("memory", async () => {
  const store = memoryStore();
  return { store, cleanup: async () => {}, idempotencyEntries: async (agentId) => memoryStoreCounts(store)!.idempotencyEntries(agentId) };
});
