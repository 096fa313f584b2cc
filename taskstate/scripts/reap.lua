-- reap.lua: finalize a task whose deadline passed: signal its worker to
-- stop, publish "expired" to listeners, delete the record (and its
-- companion KEYS[1]..':x', Keys.TaskExtra, prelude compact()) and drop it from
-- the owner's indexes. A task whose TTL was extended meanwhile is re-indexed
-- at its new deadline instead.
-- KEYS[1] task hash   KEYS[2] the owner's live index   KEYS[3] the owner's held index
-- KEYS[4] the owner's deadline index   KEYS[5] the owner's task index
-- KEYS[6] the owner's account   KEYS[7] the owner's holds   KEYS[8] the owner's ledger
-- ARGV[1] now (unix ms)   ARGV[2] task id   ARGV[3] events channel   ARGV[4] stops channel
-- Returns OK (reaped), NOT_FOUND (already gone; index cleaned), or ILLEGAL
-- (not expired yet; re-indexed). Either of the first two settles the
-- task's reservation as 'expired' (charging the usage metered so far):
-- a record Redis expired before the reaper came still settles from its hold.
-- A code that settled a reservation comes as {code, receipt, tool}
-- (prelude settled()).
local f = redis.call('HMGET', KEYS[1], 'status', 'createdAt', 'ttlMs')
if not f[1] then
  local receipt, tool = settle(KEYS[6], KEYS[7], KEYS[8], ARGV[2], 'expired', ARGV[1])
  ended(ARGV[2])
  redis.call('DEL', KEYS[1] .. ':x') -- the record went (expired or deleted): its companion too
  redis.call('ZREM', KEYS[4], ARGV[2])
  redis.call('ZREM', KEYS[5], ARGV[2])
  return settled(NOT_FOUND, receipt, tool)
end
if not expired(f[2], f[3], ARGV[1]) then
  if f[3] and f[3] ~= '' then
    redis.call('ZADD', KEYS[4], tonumber(f[2]) + tonumber(f[3]), ARGV[2])
  else
    redis.call('ZREM', KEYS[4], ARGV[2])
  end
  return ILLEGAL
end
local receipt, tool = settle(KEYS[6], KEYS[7], KEYS[8], ARGV[2], 'expired', ARGV[1])
ended(ARGV[2]) -- before the DEL: it reads the record's running slot
redis.call('DEL', KEYS[1], KEYS[1] .. ':x')
redis.call('ZREM', KEYS[4], ARGV[2])
redis.call('ZREM', KEYS[5], ARGV[2])
redis.call('PUBLISH', ARGV[3], 'expired')
redis.call('PUBLISH', ARGV[4], ARGV[2])
return settled(OK, receipt, tool)
