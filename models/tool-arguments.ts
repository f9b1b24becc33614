/**
 * Tool call arguments as a model wrote them -> `args`, the same for every
 * adapter: parsed JSON; `{}` when empty; the raw text when it is not JSON.
 * Unparsable text is passed on, not wrapped or replaced: tool arguments must
 * be an object, so the host answers the call with an `invalid_arguments` tool
 * error the model can read and correct (wrapping the text in an object could
 * satisfy a schema whose fields are all optional or defaulted and run the
 * tool with made-up arguments).
 */
export function parseArguments(text: unknown): unknown {
  if (typeof text !== "string") return text ?? {};
  if (text.trim() === "") return {};
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
