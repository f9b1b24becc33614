/**
 * `@gatehouse-runtime/core/ai-sdk`: any AI SDK language model as a gatehouse
 * model. A subpath of its own because it needs `@ai-sdk/provider` (an
 * optional peer dependency, installed with any AI SDK provider package):
 * programs that never import it install nothing more, and `mod.ts` stays
 * free of it. See docs/models.md.
 *
 * @example
 * import { createAnthropic } from "@ai-sdk/anthropic";
 * import { defineAgent } from "@gatehouse-runtime/core";
 * import { aiSdkModel } from "@gatehouse-runtime/core/ai-sdk";
 * const anthropic = createAnthropic({ apiKey: env.ANTHROPIC_API_KEY });
 * const agent = defineAgent({
 *   name: "support",
 *   instructions: "Answer the customer.",
 *   model: aiSdkModel(anthropic("claude-sonnet-4-5"), { pricing: { inputPerMTok: 3, outputPerMTok: 15 } }),
 *   tools: [lookup],
 * });
 * @module
 */
export { aiSdkModel, DEFAULT_AI_SDK_TIMEOUT_MS } from "./models/ai-sdk/model.ts";
export type { AiSdkLanguageModel, AiSdkModelOptions } from "./models/ai-sdk/model.ts";
