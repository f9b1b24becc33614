/**
 * gatehouse: durable actor-model runtime for LLM agents. The root module
 * holds what an agent author needs (named exports only): definitions
 * (`defineAgent`, `defineTool`, `agentTool`, `handoff`, `defineGuardian`), the runtime
 * (`createGatehouse`, `createWorkersHandler`), stores (`memoryStore`,
 * `upstashStore`), models (`openaiCompatible`, `scriptedModel`), outcome
 * helpers (`ok`, `error`, `terminate`), auth from the environment, loggers,
 * and every error class (`GatehouseError` and its subclasses).
 *
 * The rest lives in subpaths: `@gatehouse-runtime/core/inspect` (the machine
 * as data, time travel, contract checks, verdict records),
 * `@gatehouse-runtime/core/replay` (replay bundles), `@gatehouse-runtime/core/ops`
 * (the Hono app over one's own runtime, problem codes, auth checks,
 * defaults), `@gatehouse-runtime/core/redis` (the TCP Redis adapter, the only
 * part that needs Node built-ins) and `@gatehouse-runtime/core/ai-sdk`.
 * No name is exported twice: what moved to a subpath is exported there only
 * (CHANGELOG.md says what moved where).
 *
 * Web APIs only (fetch, Request/Response, Web Crypto, streams): this module
 * bundles for Cloudflare Workers (tests/runtimes/workerd-bundle.test.ts fails on any
 * Node built-in).
 * @module
 */

// Definitions.
export { defineTool, terminate } from "./tools/define.ts";
export type { AnyTool, ApprovalContext, ToolConfig, ToolDefinition, ToolExecuteContext } from "./tools/define.ts";
export { defineAgent } from "./agents/define.ts";
export type { AgentConfig, AgentDefinition, AgentOutputConfig, AnyAgent } from "./agents/define.ts";
export { agentTool } from "./agents/agent-tool.ts";
export type { AgentToolDefinition, AgentToolOptions } from "./agents/agent-tool.ts";
export { handoff, lastUserMessage } from "./agents/handoff.ts";
export type { HandoffInputFilter, HandoffOptions, HandoffParameters, HandoffToolDefinition } from "./agents/handoff.ts";
export type { AgentSpendLimit, SpendLimit } from "./common/spend-limit.ts";
export type { DelegationSettings } from "./actors/delegation/delegation.ts";
export type { AgentRetention, MemoryPolicy, Summarizer } from "./agents/memory-policy.ts";
export { defineGuardian } from "./verdicts/guardian.ts";
export type { Guardian, GuardianConfig, GuardianReview, GuardianReviewContext } from "./verdicts/guardian.ts";
export type { Verifier, VerifyAgentContext, VerifyContext, VerifyExecutionContext } from "./common/verifier.ts";
export type { AttemptInfo, AttemptOutcome, VerificationHooks } from "./verification/gate.ts";
export type { ArrayDeliverable, Deliverable, ObjectDeliverable } from "./contracts/deliverable.ts";

// The runtime.
export { createGatehouse } from "./gatehouse.ts";
export type { Gatehouse, GatehouseOptions } from "./gatehouse.ts";
export { createWorkersHandler } from "./workers.ts";
export type {
  WorkersEnv,
  WorkersExecutionContext,
  WorkersHandler,
  WorkersHandlerOptions,
  WorkersScheduledController,
} from "./workers.ts";
export type { DriveBudget } from "./workers.ts";
export type { GatehouseApp } from "./routes/app-type.gen.ts";
export type { RouteAuth } from "./routes/runtime.ts";
export type { AuthVerb, QstashKeys, ScopedToken } from "./routes/auth/config.ts";
export { authFromEnv } from "./routes/auth/from-env.ts";
export type { Clock, IdSource, Logger } from "./actors/runtime.ts";
export { consoleLogger, silentLogger } from "./actors/runtime.ts";
export type { GuardianRegistry } from "./verdicts/registry.ts";
export type { VerdictLog } from "./verdicts/log.ts";

// Stores and models.
export { memoryStore } from "./store/memory.ts";
export { upstashStore } from "./store/upstash.ts";
export type { UpstashStoreOptions } from "./store/upstash.ts";
export type { ScriptStore } from "./store/lua-store.ts";
export type { Store } from "./store/port.ts";
export type { StoredEvent } from "./common/events.ts";
export type { Message } from "./common/message.ts";
export { scriptedModel } from "./models/scripted.ts";
export type { Script, ScriptContext } from "./models/scripted.ts";
export { openaiCompatible } from "./models/openai.ts";
export type { OpenAICompatibleOptions } from "./models/openai.ts";
export type { Model, ModelRequest, ModelResponse } from "./models/types.ts";

// Outcomes.
export type { Outcome, OutcomeErrorInput } from "./common/outcome.ts";
export { error, ok } from "./common/outcome.ts";

// Errors: every one extends GatehouseError and carries a stable `code`.
export { GatehouseError } from "./errors/base.ts";
export { DefinitionError, ModelError, SnapshotError, ToolError } from "./errors/errors.ts";
export { EvictionPolicyError, StoreInputError } from "./errors/store.ts";
export { HistoryDivergedError } from "./errors/history.ts";
export { VerdictError } from "./errors/verdict.ts";
export type { VerdictErrorCode } from "./errors/verdict.ts";
export { ReplayBundleError } from "./errors/replay.ts";
export { VerificationRejected } from "./verification/rejected.ts";
export { ProblemError } from "./routes/problem.ts";

