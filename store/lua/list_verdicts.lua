--[[
  list_verdicts: an agent's verdict records in write order, filtered.

  KEYS[1] verdict list of the agent   KEYS[2] verdicts hash
  ARGV[1] '1' to filter by turn, else '0'     ARGV[2] turnId
  ARGV[3] '1' to filter by status, else '0'   ARGV[4] status
  Returns: 'list ["<record text>", ...]' (each record as a JSON string)
]]
-- reads only: writes nothing.
-- @include head.lua

local by_turn, turn_id, by_status, status = ARGV[1] == '1', ARGV[2], ARGV[3] == '1', ARGV[4]
local out = {}
for _, entry in ipairs(redis.call('LRANGE', KEYS[1], 0, -1)) do
  local e = cjson.decode(entry)
  if (not by_turn or e[2] == turn_id) and (not by_status or e[3] == status) then
    out[#out + 1] = cjson.encode(redis.call('HGET', KEYS[2], e[1]))
  end
end
return 'list ' .. json_list(out)
