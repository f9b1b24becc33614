/**
 * `@gatehouse-runtime/core/inspect`: looking at a running system without
 * changing it. The statechart as data (`describeMachine`, `machineConfig`,
 * `toMermaid`, `agentMachine`), time travel over an agent's log
 * (`historyAt`), the one contract check of a tool result (`checkOutcome`),
 * the tool registry's views (`toolRoleView`, `describeToolRole`,
 * `knownToolsBlock`) and verdict records (`GuardianVerdictSnapshot`,
 * `validateVerdict`, `createVerdictLog`, `createGuardianRegistry`,
 * `outputVerifierCode`).
 *
 * Web APIs only, like the root module. The root module exported these
 * names up to 0.1; now only this subpath does (CHANGELOG.md).
 * @module
 */
export { agentMachine } from "./machines/agent.ts";
export { describeMachine, machineConfig, toMermaid } from "./machines/definition.ts";
export type {
  ImplementationRef,
  MachineConfigJSON,
  MachineDefinition,
  MachineStateInfo,
  MachineTransition,
  StateConfigJSON,
  TransitionConfigJSON,
} from "./machines/definition.ts";
export type { AgentContext, AgentEvent, AgentState } from "./machines/types.ts";
export { historyAt } from "./actors/replay/time-travel.ts";
export type { HistoryPoint } from "./actors/replay/time-travel.ts";
export { EventTrimmedError, HistoryDivergedError } from "./errors/history.ts";
export { checkOutcome } from "./contracts/check.ts";
export type { CheckedOutcome, ContractedTool } from "./contracts/check.ts";
export { describeToolRole, knownToolsBlock, toolRoleView } from "./contracts/registry.ts";
export type { ToolRoleView } from "./contracts/registry.ts";
export type { ContractMismatch, ContractValidation, ToleratedKey } from "./common/contract-validation.ts";
export type { ToolAlias, ToolRoleEntry } from "./common/tool-registry.ts";
export type { AgentHead, ApprovalStatus, ToolCallApproval, ToolCallRecord } from "./store/types.ts";
export { outputVerifierCode } from "./verdicts/guardian.ts";
export { GuardianVerdictSnapshot, VERDICT_SCHEMA_VERSION, validateVerdict } from "./verdicts/snapshot.ts";
export type { NewVerdict, VerdictFlag, VerdictRecord, VerdictStatus } from "./verdicts/snapshot.ts";
export { createVerdictLog } from "./verdicts/log.ts";
export type { RecordResult, VerdictLog, VerdictQuery } from "./verdicts/log.ts";
export { createGuardianRegistry } from "./verdicts/registry.ts";
export type { GuardianAssignment, GuardianRegistry, RegisteredGuardian } from "./verdicts/registry.ts";
