-- finish.lua: a worker ends the task: completed (with result), failed (with
-- a JSON-RPC error) or cancelled.
-- KEYS[1] task hash   KEYS[2] the owner's live index   KEYS[3] the owner's held index
-- KEYS[4] the owner's account   KEYS[5] the owner's holds   KEYS[6] the owner's ledger
-- ARGV[1] now (unix ms)   ARGV[2] attempt   ARGV[3] target status
-- ARGV[4] payload field ('result', 'error' or '')   ARGV[5] payload (JSON)
-- ARGV[6] statusMessage   ARGV[7] events channel   ARGV[8] task id
-- An acknowledged cancel is kept: once the cancel flag is set, any outcome
-- is written as "cancelled" (without result or error) and CANCELLED returned.
-- The task's reservation, if any, settles here (prelude settle(): failed
-- releases it, the others charge the metered usage).
-- A completed task's result up to EVENT_RESULT_MAX bytes is in its event
-- (prelude announce), unless a reservation settled.
-- A task that ends here has its record rebuilt compact (prelude end_task(), compact():
-- long values move to its companion KEYS[1]..':x', Keys.TaskExtra).
-- Returns OK, CANCELLED (each as {code, receipt, tool} when a reservation
-- settled: prelude settled()), or NOT_FOUND, EXPIRED, TERMINAL, STALE, ILLEGAL (the
-- target is not a terminal status, or the table refuses): nothing is written then.
local f = redis.call('HMGET', KEYS[1], 'status', 'createdAt', 'ttlMs', 'attempt', 'cancel', 'version', 'tl', 'slot',
  'pending')
if not f[1] then return NOT_FOUND end
if expired(f[2], f[3], ARGV[1]) then return EXPIRED end
if terminal(f[1]) then return TERMINAL end
if (f[4] or '0') ~= ARGV[2] then return STALE end
if not terminal(ARGV[3]) or not allowed(f[1], ARGV[3]) then return ILLEGAL end
if f[5] == '1' and ARGV[3] ~= 'cancelled' then
  if not allowed(f[1], 'cancelled') then return ILLEGAL end
  redis.call('HSET', KEYS[1], 'status', 'cancelled', 'statusMessage', 'Cancelled', 'lastUpdatedAt', ARGV[1])
  local receipt, tool = settle_task(ARGV[8], 'cancelled', ARGV[1])
  timeline('e', ARGV[1], 'cancelled')
  end_task(ARGV[8], ARGV[7])
  return settled(CANCELLED, receipt, tool)
end
-- The outcome, the new version, the receipt and the timeline's end in
-- one HSET, announced from what this script knows (end_task's steps,
-- without its read-back).
local version = tonumber(f[6] or '0') + 1
local receipt, tool = settle(KEYS[4], KEYS[5], KEYS[6], ARGV[8], ARGV[3], ARGV[1])
local fields = {'status', ARGV[3], 'statusMessage', ARGV[6], 'lastUpdatedAt', ARGV[1], 'version', version}
-- stays: the record is known to stay compact, so compact() need not look:
-- it was a listpack, holds few fields (no input round added its 'pending'
-- and request fields: a listpack holds at most 512), and every value
-- written here is short.
local stays = false
if ARGV[4] ~= '' and #ARGV[5] > COMPACT_VALUE and is_compact() then
  -- A long payload into a compact record would make it a hashtable that
  -- compact() then rebuilds; it goes straight to the companion instead,
  -- and the record stays compact.
  set_extra(extra_entry(ARGV[4], ARGV[5]), redis.call('PEXPIRETIME', KEYS[1]))
  fields[#fields + 1] = 'x'
  fields[#fields + 1] = '1'
  stays = not f[9]
elseif ARGV[4] ~= '' then
  fields[#fields + 1] = ARGV[4]
  fields[#fields + 1] = ARGV[5]
end
if receipt then
  fields[#fields + 1] = 'receipt'; fields[#fields + 1] = receipt
  fields[#fields + 1] = 'cost'; fields[#fields + 1] = cost_of(receipt)
end
if f[2] then
  fields[#fields + 1] = 'tl'; fields[#fields + 1] = timeline_next(f[2], f[7], 'e', ARGV[1], ARGV[3])
end
if stays then
  for i = 2, #fields, 2 do
    if type(fields[i]) == 'string' and #fields[i] > COMPACT_VALUE then stays = false end
  end
end
redis.call('HSET', KEYS[1], unpack(fields))
ended(ARGV[8], f[8])
-- A short result of an unbilled task rides on the event (EVENT_RESULT_MAX):
-- it is all a waiting call answers with (a receipt joins it on read).
local result = nil
if ARGV[4] == 'result' and receipt == nil and #ARGV[5] <= EVENT_RESULT_MAX then result = ARGV[5] end
announce(ARGV[7], version, ARGV[3], ARGV[6], ARGV[1], f[5] or nil, result)
if not stays then compact() end
return settled(OK, receipt, tool)
