--[[
  read_messages: messages from an index on.

  KEYS[1] messages list
  ARGV[1] fromIndex (>= 0)
  Returns: 'list [Message JSON, ...]'
]]
-- reads only: writes nothing.
-- @include head.lua

return 'list ' .. json_list(redis.call('LRANGE', KEYS[1], ARGV[1], -1))
