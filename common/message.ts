/** A conversation message, as the model sees it. */
export interface Message {
  role: "system" | "user" | "assistant" | "tool";
  content: string;
  toolCalls?: Array<{ id: string; name: string; args: unknown }>;
  toolCallId?: string;
  name?: string;
  /** Stored form only: this user message is the input of that turn (the store's readMessages fills `content`). */
  inputOf?: string;
}
