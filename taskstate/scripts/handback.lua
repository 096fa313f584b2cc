-- handback.lua: a worker that does not serve the task's tool gives the
-- task's job back (worker/handback.go), or, when no live worker serves
-- the tool, ends the task failed.
-- KEYS[1] task hash   KEYS[2] the owner's live index   KEYS[3] the owner's held index
-- KEYS[4] the owner's account   KEYS[5] the owner's holds   KEYS[6] the owner's ledger
-- ARGV[1] now (unix ms)   ARGV[2] events channel   ARGV[3] task id
-- ARGV[4] the job's sequence number (Record.Resumes)
-- ARGV[5] '' to hand the job back, or the error (JSON) to fail the task
-- with   ARGV[6] that failure's statusMessage
-- A task that ends here has its record rebuilt compact (prelude end_task(), compact():
-- long values move to its companion KEYS[1]..':x', Keys.TaskExtra).
-- Returns {OK, seq}: handed back: the task is not claimed and nothing a
-- client sees changes; job seq (a new sequence number, as a takeover
-- issues, so a late delivery of the job handed back claims nothing) is the
-- one to enqueue in its place. {OK, 0}: the task failed ({OK, 0, receipt,
-- tool} when its reservation was released: settled.go). {CANCELLED} (with
-- receipt and tool when it had a reservation): a cancel was requested
-- before, the task is now "cancelled", as claim.lua would end it. Or
-- {code}: NOT_FOUND, EXPIRED, TERMINAL, STALE (not the task's current
-- job), ILLEGAL (not working, or a delivery holds it: this one is a
-- duplicate); nothing is written then.
local f = redis.call('HMGET', KEYS[1], 'status', 'cancel', 'createdAt', 'ttlMs', 'resumes', 'running')
local status = f[1]
if not status then return {NOT_FOUND} end
if expired(f[3], f[4], ARGV[1]) then return {EXPIRED} end
if terminal(status) then return {TERMINAL} end
if (f[5] or '0') ~= ARGV[4] then return {STALE} end
if status ~= 'working' or (f[6] and f[6] ~= '0') then return {ILLEGAL} end
if f[2] == '1' then
  redis.call('HSET', KEYS[1], 'status', 'cancelled', 'statusMessage', 'Cancelled', 'lastUpdatedAt', ARGV[1])
  local receipt, tool = settle_task(ARGV[3], 'cancelled', ARGV[1])
  timeline('e', ARGV[1], 'cancelled')
  end_task(ARGV[3], ARGV[2])
  return {CANCELLED, receipt, tool}
end
if ARGV[5] == '' then
  return {OK, redis.call('HINCRBY', KEYS[1], 'resumes', 1)}
end
if not allowed(status, 'failed') then return {ILLEGAL} end
redis.call('HSET', KEYS[1], 'status', 'failed', 'statusMessage', ARGV[6], 'error', ARGV[5],
  'lastUpdatedAt', ARGV[1])
local receipt, tool = settle_task(ARGV[3], 'failed', ARGV[1])
timeline('e', ARGV[1], 'failed')
end_task(ARGV[3], ARGV[2])
return {OK, 0, receipt, tool}
