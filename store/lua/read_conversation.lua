--[[
  read_conversation: what the host builds the model's view from
  (store/port.ts invariant `retention`): the rolling summary, the logical index of
  the first retained message and the retained messages (user inputs filled
  in as read_messages does).

  KEYS[1] head: head hash
  KEYS[2] msgs: messages list
  KEYS[3] inputs: inputs hash
  KEYS[4] summary_key: summary string
  ARGV[1] from_summary: '1': only the messages from max(messagesTrimmedThrough, summary.through) on; '0': all kept
  Returns: 'conversation {"summary":{...}|null,"firstIndex":n,"messages":[...]}' | 'none'
]]
-- reads only: writes nothing.
-- @include head.lua
-- @include inputs.lua

-- Arguments, named in the order of the header (described in store/script/reads.ts).
local head, msgs, inputs, summary_key = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local from_summary = ARGV[1]

local v = redis.call('HMGET', head, 'agentId', 'messagesTrimmedThrough')
if not v[1] then
  return 'none'
end
local trimmed = tonumber(v[2]) or 0
local summary = redis.call('GET', summary_key) or 'null'
local from = trimmed
if from_summary == '1' and summary ~= 'null' then
  from = math.max(trimmed, tonumber(string.match(summary, '"through":(%d+)')) or 0)
end
local items = redis.call('LRANGE', msgs, from - trimmed, -1)
resolve_input_refs(items, inputs)
return 'conversation {"summary":' .. summary .. ',"firstIndex":' .. int(from) ..
  ',"messages":' .. json_list(items) .. '}'
