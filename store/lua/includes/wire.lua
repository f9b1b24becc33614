--[[
  The commit arguments' wire codes (store/script/wire.ts): a JSON text the
  worker packed holds a byte 1..31 in place of the fragment of that code.
  JSON texts hold no byte below 0x20 of their own, so `unwire` gives the
  text back byte for byte; a text without codes passes unchanged. The list
  is FRAGMENTS of wire.ts, in the same order (code = position).
]]
local WIRE_FRAGMENTS = {
  [=["type":"step","data":{"phase":"started","step":]=],
  [=["type":"step","data":{"phase":"planning","step":]=],
  [=["type":"step","data":{"phase":"executing","step":]=],
  [=["type":"step","data":{"phase":"completed","step":]=],
  [=["type":"tool_call","data":{"step":]=],
  [=["type":"tool_result","data":{"toolCallId":]=],
  [=["type":"transition","data":{"seq":]=],
  [=["type":"task","data":{"turnId":]=],
  [=[,"contractValidation":{"applied":false,"passed":true,"mismatch":null,"expectedKeys":[],"actualKeys":[]}]=],
  [=[,"from":"running","to":"waiting-tools","event":{"type":"MODEL_STEP","at":]=],
  [=[,"from":"waiting-tools","to":"running","event":{"type":"TOOL_RESULT","at":]=],
  [=[,"event":{"type":"MODEL_STEP","at":]=],
  [=[,"event":{"type":"TOOL_RESULT","at":]=],
  [=[,"event":{"type":"TASK_STARTED","at":]=],
  [=[,"config":{"maxSteps":32,"completion":"submit_result","mustEndWith":[],"verifyMaxAttempts":5,"maxVerifierErrors":3}]=],
  [=[,"external":false,"deadline":]=],
  [=[,"usage":{"inputTokens":]=],
  [=[,"outputTokens":]=],
  [=[{"status":"resolved","outcome":{"ok":true,"value":]=],
  [=[,"afterExecution":"continue","source":"inline","resolvedAt":]=],
  [=[{"turnId":]=],
  [=[,"toolCallId":]=],
  [=[,"agentId":]=],
  [=[,"recordedAt":]=],
  [=[{"role":"assistant","content":"","toolCalls":[{"id":]=],
  [=[{"role":"assistant","content":]=],
  [=[{"role":"tool","toolCallId":]=],
  [=[{"role":"user","content":]=],
  [=[,"afterExecution":"continue"]=],
  [=[,"outcome":{"ok":true,"value":]=],
  [=[,"content":]=],
}
local WIRE_BY_CODE = {}
for i = 1, #WIRE_FRAGMENTS do
  WIRE_BY_CODE[string.char(i)] = WIRE_FRAGMENTS[i]
end

-- The text a packed argument stands for.
local function unwire(text)
  return (string.gsub(text, '[\1-\31]', WIRE_BY_CODE))
end
