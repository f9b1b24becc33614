--[[
  list_queued_tasks: the first queued tasks of an agent, in queue order
  (store/port.ts invariant `delayed-tasks`). Mirrors memoryStore.listQueuedTasks.

  KEYS[1] tasks: tasks list
  KEYS[2] delayed: delayed zset (includes/queue.lua: the queue is the list, then the zset)
  ARGV[1] limit_text: at most this many (> 0)
  Returns: 'list [<InboxTask JSON>, ...]' (the task JSON of each entry, without input)
]]
-- reads only: writes nothing.
-- @include keys.lua
-- @include head.lua
-- @include queue.lua

-- Arguments, named in the order of the header (described in store/script/reads.ts).
local tasks, delayed = KEYS[1], KEYS[2]
local limit_text = ARGV[1]

local entries = first_tasks({ tasks = tasks, delayed = delayed }, tonumber(limit_text))
local items = {}
for i = 1, #entries do
  -- An entry is `<turnId JSON>\n<task JSON>`; JSON text never holds a raw newline.
  items[i] = string.sub(entries[i], string.find(entries[i], '\n', 1, true) + 1)
end
return 'list ' .. json_list(items)
