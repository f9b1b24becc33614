/** Approvals of agentTool calls and handoffs, handoff input filters, on the memory store (tests/host/approvals-anywhere-suite.ts). */
import { memoryStore } from "../../mod.ts";
import { approvalsAnywhereSuite } from "./approvals-anywhere-suite.ts";

approvalsAnywhereSuite("memory", () => memoryStore());
