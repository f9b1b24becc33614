import { memoryStore } from "../store/memory.ts";
import { storeConformance } from "./store-conformance.ts";

storeConformance("memory", async () => ({ store: memoryStore(), cleanup: async () => {} }));
