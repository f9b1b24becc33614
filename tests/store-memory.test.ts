import { memoryStore, memoryStoreInternals } from "../store/memory.ts";
import { storeConformance } from "./store-conformance.ts";

storeConformance("memory", async () => {
  const store = memoryStore();
  return { store, cleanup: async () => {}, idempotencyEntries: async (agentId) => memoryStoreInternals(store)!.idempotencyEntries(agentId) };
});
