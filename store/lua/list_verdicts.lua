--[[
  list_verdicts: an agent's verdict records in write order, filtered.

  KEYS[1] verdict_list: verdict list of the agent
  KEYS[2] verdicts: verdicts hash
  ARGV[1] by_turn_flag: '1' to filter by turn, else '0'
  ARGV[2] turn_id: turnId
  ARGV[3] by_status_flag: '1' to filter by status, else '0'
  ARGV[4] status: status
  Returns: 'list ["<record text>", ...]' (each record as a JSON string)
]]
-- reads only: writes nothing.
-- @include head.lua

-- Arguments, named in the order of the header (described in store/script/side-stores.ts).
local verdict_list, verdicts = KEYS[1], KEYS[2]
local by_turn_flag, turn_id, by_status_flag, status = ARGV[1], ARGV[2], ARGV[3], ARGV[4]

local by_turn, by_status = by_turn_flag == '1', by_status_flag == '1'
local out = {}
for _, entry in ipairs(redis.call('LRANGE', verdict_list, 0, -1)) do
  local e = decode_stored(entry)
  if type(e) == 'table' and (not by_turn or e[2] == turn_id) and (not by_status or e[3] == status) then
    out[#out + 1] = cjson.encode(redis.call('HGET', verdicts, e[1]))
  end
end
return 'list ' .. json_list(out)
