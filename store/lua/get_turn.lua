--[[
  get_turn: where a turn is, and its input. Mirrors memoryStore.getTurn.

  KEYS[1] head hash   KEYS[2] tasks list   KEYS[3] turns hash   KEYS[4] idem hash
  KEYS[5] inputs hash
  ARGV[1] turnId (raw)   ARGV[2] turnId JSON
  Returns: 'turn {"status":"<status>"[,"input":...]}' | 'none' (unknown agent or turn)
]]
-- reads only: writes nothing.
-- @include head.lua
-- @include turns.lua

local h = read_head(KEYS[1], { 'agentId', 'activeTurnId' })
if not h then
  return 'none'
end
local st = turn_status({ tasks = KEYS[2], turns = KEYS[3], idem = KEYS[4] }, h.activeTurnId, ARGV[1], ARGV[2])
if not st then
  return 'none'
end
local input = redis.call('HGET', KEYS[5], ARGV[1])
return 'turn {"status":"' .. st .. '"' .. (input and (',"input":' .. input) or '') .. '}'
