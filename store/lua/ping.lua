--[[
  ping: one round trip through the script path (readiness).
  No keys, no arguments.
  Returns: 'pong'
]]
-- reads only: writes nothing.
return 'pong'
