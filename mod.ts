/**
 * gatehouse: durable actor-model runtime for LLM agents. Public API (named exports only).
 *
 * Web APIs only (fetch, Request/Response, Web Crypto, streams): this module
 * bundles for Cloudflare Workers (tests/workerd-bundle.test.ts fails on any
 * Node built-in). The TCP Redis adapter needs Node built-ins and lives in the
 * subpath `@gatehouse-runtime/core/redis` (`redis.ts`).
 * @module
 */
export { defineTool, terminate } from "./tools/define.ts";
export type { AnyTool, ToolConfig, ToolDefinition, ToolExecuteContext } from "./tools/define.ts";
export { defineAgent } from "./agents/define.ts";
export type { AgentConfig, AgentDefinition, AgentOutputConfig, AnyAgent } from "./agents/define.ts";
export { agentTool } from "./agents/agent-tool.ts";
export type { AgentToolDefinition, AgentToolOptions } from "./agents/agent-tool.ts";
export type { AgentSpendLimit, SpendLimit } from "./common/spend-limit.ts";
export type { DelegationSettings } from "./actors/delegation/delegation.ts";
export type { AgentRetention, MemoryPolicy, Summarizer } from "./agents/memory-policy.ts";
export { DEFAULT_RETENTION } from "./store/retention.ts";
export { createGatehouse } from "./gatehouse.ts";
export type { Gatehouse, GatehouseOptions } from "./gatehouse.ts";
export { createWorkersHandler, DEFAULT_FETCH_BUDGET, DEFAULT_SCHEDULED_BUDGET, WORKERS_SSE } from "./workers.ts";
export type {
  WorkersEnv,
  WorkersExecutionContext,
  WorkersHandler,
  WorkersHandlerOptions,
  WorkersScheduledController,
} from "./workers.ts";
export type { WorkBudget } from "./actors/spend/budget.ts";
export { memoryStore } from "./store/memory.ts";
export { upstashStore } from "./store/upstash.ts";
export type { UpstashStoreOptions } from "./store/upstash.ts";
export type { ScriptStore } from "./store/lua-store.ts";
export { StoreInputError } from "./store/keys.ts";
export { EvictionPolicyError } from "./store/script-runner.ts";
export type { Store } from "./store/port.ts";
export { processLive } from "./store/live.ts";
export type { LiveChannel, LiveDelta, LiveGrew, LiveListener, LiveMessage } from "./store/live.ts";
export type { StoredEvent } from "./common/events.ts";
export type { Message } from "./common/message.ts";
export type { Outcome, OutcomeErrorInput } from "./common/outcome.ts";
export { error, ok } from "./common/outcome.ts";
export { checkOutcome } from "./contracts/check.ts";
export type { CheckedOutcome, ContractedTool } from "./contracts/check.ts";
export type { ArrayDeliverable, Deliverable, ObjectDeliverable } from "./contracts/deliverable.ts";
export { describeToolRole, knownToolsBlock, toolRoleView } from "./contracts/registry.ts";
export type { ToolRoleView } from "./contracts/registry.ts";
export type { ContractMismatch, ContractValidation, ToleratedKey } from "./common/contract-validation.ts";
export type { ToolAlias, ToolRoleEntry } from "./common/tool-registry.ts";
export type { AgentHead, ToolCallRecord } from "./store/types.ts";
export { scriptedModel } from "./models/scripted.ts";
export type { Script, ScriptContext } from "./models/scripted.ts";
export { openaiCompatible } from "./models/openai.ts";
export type { OpenAICompatibleOptions } from "./models/openai.ts";
export type { Model, ModelRequest, ModelResponse } from "./models/types.ts";
export { VerificationRejected } from "./verification/rejected.ts";
export type { Verifier, VerifyAgentContext, VerifyContext, VerifyExecutionContext } from "./common/verifier.ts";
export type { AttemptInfo, AttemptOutcome, VerificationHooks } from "./verification/gate.ts";
export { defineGuardian, outputVerifierCode } from "./verdicts/guardian.ts";
export type { Guardian, GuardianConfig, GuardianReview, GuardianReviewContext } from "./verdicts/guardian.ts";
export { GuardianVerdictSnapshot, VERDICT_SCHEMA_VERSION, validateVerdict } from "./verdicts/snapshot.ts";
export type { NewVerdict, VerdictFlag, VerdictRecord, VerdictStatus } from "./verdicts/snapshot.ts";
export { VerdictError } from "./verdicts/errors.ts";
export type { VerdictErrorCode } from "./verdicts/errors.ts";
export { createVerdictLog } from "./verdicts/log.ts";
export type { RecordResult, VerdictLog, VerdictQuery } from "./verdicts/log.ts";
export { createGuardianRegistry } from "./verdicts/registry.ts";
export type { GuardianAssignment, GuardianRegistry, RegisteredGuardian } from "./verdicts/registry.ts";
export { DefinitionError, ModelError, SnapshotError, ToolError } from "./errors/errors.ts";
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
export { createApp } from "./routes/app.ts";
export type { GatehouseApp, GatehouseSchema } from "./routes/app-type.gen.ts";
export { exportReplayBundle, loadReplayBundle, REPLAY_BUNDLE_SCHEMA_VERSION, ReplayBundleError } from "./routes/replay-bundle.ts";
export type { ReplayBundleV1 } from "./routes/replay-bundle.ts";
export { serveReplay } from "./replay.ts";
export { historyAt, HistoryDivergedError } from "./actors/replay/time-travel.ts";
export type { HistoryPoint } from "./actors/replay/time-travel.ts";
export type { RouteAuth, RouteLimits, RouteRuntime } from "./routes/runtime.ts";
export type { AuthVerb, QstashKeys, ScopedToken } from "./routes/auth/config.ts";
export { authFromEnv } from "./routes/auth/from-env.ts";
export { checkAuthConfig } from "./routes/auth/config.ts";
export { PROBLEMS, ProblemError, problemType } from "./routes/problem.ts";
export type { ProblemCode } from "./routes/problem.ts";
export type { AgentContext, AgentEvent, AgentState } from "./machines/types.ts";
export type { Clock, IdSource, Logger } from "./actors/runtime.ts";
export { consoleLogger, silentLogger } from "./actors/runtime.ts";
