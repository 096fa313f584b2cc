-- cancel.lua: a client asks to cancel the task (tasks/cancel).
-- KEYS[1] task hash   KEYS[2] the owner's live index   KEYS[3] the owner's held index
-- KEYS[4] the owner's account   KEYS[5] the owner's holds   KEYS[6] the owner's ledger
-- ARGV[1] now (unix ms)   ARGV[2] events channel   ARGV[3] task id   ARGV[4] stops channel
-- ARGV[5] cancel grace (ms)
-- A task is held while a delivery runs it ('running' is its attempt; claim
-- sets it, parking and resuming clear it); a task waiting for input is held
-- only when its delivery waits with it ('waiter', input.lua).
-- A task that ends here has its record rebuilt compact (prelude end_task(), compact():
-- long values move to its companion KEYS[1]..':x', Keys.TaskExtra).
-- Returns OK (flag set, "Cancelling" announced and the task id published on
-- the stops channel, again on a repeated cancel: the worker ends the task
-- "cancelled" at once; if it has not within the grace, because its worker
-- is gone, takeover.lua does: the held index is due then), CANCELLED (no
-- worker held the task, so it is "cancelled" now and its reservation
-- settled; {CANCELLED, receipt, tool} when it had a reservation: prelude
-- settled()), TERMINAL (already ended:
-- nothing written), NOT_FOUND or EXPIRED.
local f = redis.call('HMGET', KEYS[1], 'status', 'createdAt', 'ttlMs', 'running', 'cancel', 'waiter')
local status = f[1]
if not status then return NOT_FOUND end
if expired(f[2], f[3], ARGV[1]) then return EXPIRED end
if terminal(status) then return TERMINAL end
if not f[4] or f[4] == '0' or (status == 'input_required' and not f[6]) then
  if not allowed(status, 'cancelled') then return ILLEGAL end
  redis.call('HSET', KEYS[1], 'status', 'cancelled', 'statusMessage', 'Cancelled', 'cancel', 1,
    'lastUpdatedAt', ARGV[1])
  local receipt, tool = settle_task(ARGV[3], 'cancelled', ARGV[1])
  timeline('e', ARGV[1], 'cancelled')
  end_task(ARGV[3], ARGV[2])
  return settled(CANCELLED, receipt, tool)
end
if f[5] ~= '1' then
  redis.call('HSET', KEYS[1], 'cancel', 1, 'cancelAt', ARGV[1], 'statusMessage', 'Cancelling', 'lastUpdatedAt', ARGV[1])
  look_at(ARGV[3], tonumber(ARGV[1]) + tonumber(ARGV[5]))
  timeline('x', ARGV[1])
  state_changed(ARGV[2])
end
redis.call('PUBLISH', ARGV[4], ARGV[3])
return OK
