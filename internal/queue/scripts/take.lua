-- take.lua: fair_dequeue.lua (dequeue()), then the claim of the task whose
-- job it took (taskstate's claim_job, claimjob.lua), in one script: a worker's
-- job costs one round trip less (take.go). KEYS and ARGV[1..4] are
-- fair_dequeue.lua's; ARGV[5..16] taskstate.Store.ClaimArgs; ARGV[17] the
-- tools the worker serves on the queue, as ',key1,key2,'.
-- Returns nil (nothing to run), the job's message alone when its task is
-- left to the handler's claim (a payload of another shape, a tool not
-- served here, an attempt running: ClaimBeside decides that), or
-- {message, job id, the claim's reply}.
local msg, id = dequeue()
if not msg then return nil end
local owner, tid = string.match(msg, '{"o":"([^"\\]+)","id":"([^"\\]+)"')
local tool = string.match(msg, '","t":"([^"\\]+)"')
if not owner or not tool or not string.find(ARGV[17], ',' .. tool .. ',', 1, true) then return msg end
local seq = '0'
if id ~= tid then
  if string.sub(id, 1, #tid + 1) ~= tid .. '#' then return msg end
  seq = string.sub(id, #tid + 2)
  if not string.match(seq, '^%d+$') then return msg end
end
local r = claim_job(owner, tid, seq, 5)
if not r then return msg end
return {msg, id, r}
