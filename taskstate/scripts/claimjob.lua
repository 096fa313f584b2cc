-- claimjob.lua: the body of claim_job(owner, id, seq, i), which a script of
-- another package (taskstate.NewScript) may call: runs claim.lua
-- (claim_body) for task id of owner tag
-- owner and its job seq, with ClaimArgs at ARGV[i..]: now (unix ms), the
-- patterns of the task's keys (claim.lua's KEYS[1..7]) and events channel,
-- in which \1 stands for the owner tag and \2 for the task id, then
-- lost-after (ms), the queue and the worker's id. No share: KEYS[7] is left
-- alone. Any running attempt holds the task ('*'): nil is returned then.
-- Not a script of its own: the script that dequeues the job
-- (internal/queue's take.lua) calls it.
local k0, a = KEYS, ARGV
local fill = {['\1'] = owner, ['\2'] = id}
local keys = {}
for k = 1, 7 do keys[k] = string.gsub(a[i + k], '[\1\2]', fill) end
local channel = string.gsub(a[i + 8], '[\1\2]', fill)
KEYS, ARGV = keys, {a[i], channel, id, seq, a[i + 9], '0', a[i + 10], a[i + 11], '*'}
local r = claim_body()
KEYS, ARGV = k0, a
if r[1] == HELD then return nil end
return r
