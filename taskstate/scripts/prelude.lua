-- prelude.lua: prepended to every script, after the generated TRANSITIONS
-- table and return codes (OK, NOT_FOUND, ...: taskstate/errors.go).

local function allowed(from, to)
  local row = TRANSITIONS[from or '']
  return row ~= nil and row[to] == true
end

local function terminal(status)
  return status == 'completed' or status == 'failed' or status == 'cancelled'
end

-- expired: the task's ttlMs (empty = unlimited) has run out at now.
local function expired(createdAt, ttlMs, now)
  if not ttlMs or ttlMs == '' then return false end
  return tonumber(now) >= tonumber(createdAt) + tonumber(ttlMs)
end

-- free_slot: the task (KEYS[1], the record) gives back its place in the
-- running set of its queue, if a per-principal share counted it: the
-- record's 'slot' field names that set (Keys.Running, built by claim.go
-- and passed to claim.lua as a key; in the owner's hash tag, so the same
-- Cluster slot as KEYS[1]).
local function free_slot(id)
  local slot = redis.call('HGET', KEYS[1], 'slot')
  if slot then
    redis.call('ZREM', slot, id)
    redis.call('HDEL', KEYS[1], 'slot')
  end
end

-- ended: a task left the live set and the held index (KEYS[2] and KEYS[3] of
-- every script that can end one) and drops what only a run needs: its
-- arguments (or the object key holding them: the worker deletes that
-- object; worker/blobs.go), the creating client's capabilities, the handler's checkpoint
-- and which delivery held it when (KEYS[1], the record), which a finished
-- task would otherwise keep for the rest of its TTL; and its place in the
-- running set of its queue (free_slot).
-- It also returns the task's argument bytes to the owner's budget: the hash
-- KEYS[2]..':args' (Keys.ArgBytes, in the owner's hash tag, so the same
-- slot as KEYS[2]) holds each live task's argument bytes and their 'total';
-- create.lua adds to it. When the live set is empty the hash goes, so a
-- record Redis expired before the reaper saw it cannot leave bytes behind.
local function ended(id)
  free_slot(id)
  local ab = KEYS[2] .. ':args'
  local n = redis.call('HGET', ab, id)
  if n then
    redis.call('HDEL', ab, id)
    redis.call('HINCRBY', ab, 'total', -tonumber(n))
  end
  redis.call('ZREM', KEYS[2], id)
  if redis.call('ZCARD', KEYS[2]) == 0 then redis.call('DEL', ab) end
  redis.call('ZREM', KEYS[3], id)
  redis.call('HDEL', KEYS[1], 'arguments', 'argsRef', 'caps', 'checkpoint', 'running', 'heartbeat', 'cancelAt')
end

-- look_at: the held index (KEYS[3]) is to look at task id again by unix ms
-- due: an earlier time already there stays.
local function look_at(id, due)
  local cur = redis.call('ZSCORE', KEYS[3], id)
  if not cur or tonumber(cur) > tonumber(due) then redis.call('ZADD', KEYS[3], due, id) end
end

-- state_changed: the one way a script announces the task's new state on its
-- events channel (channel; KEYS[1] is the record, already written). It
-- counts the change in the record's 'version' and publishes the fields that
-- move with a state, so a listener can show each state once and in order
-- without reading the record; taskstate/events.go's DecodeEvent reads it:
-- {"version": n, "status": s, "statusMessage": m, "lastUpdatedAt": "ms", "cancel": "1"?}
local function state_changed(channel)
  local f = redis.call('HMGET', KEYS[1], 'status', 'statusMessage', 'lastUpdatedAt', 'cancel')
  local v = redis.call('HINCRBY', KEYS[1], 'version', 1)
  -- HMGET answers false for an absent field; "or nil" leaves it out.
  redis.call('PUBLISH', channel, cjson.encode({version = v, status = f[1], statusMessage = f[2] or nil,
    lastUpdatedAt = f[3] or nil, cancel = f[4] or nil}))
end

-- int: an integer amount as Redis argument text ('%d': tostring would
-- write 1e+15 for large ones).
local function int(n) return string.format('%d', n) end

-- settle: the one settlement of task id's reservation, at its terminal
-- transition (billing.go). acct, holds and ledger are the owner's
-- Keys.Account, Keys.Holds and Keys.Ledger; outcome is the task's end:
-- 'completed', 'cancelled' or 'expired' charge the metered usage, capped
-- at the reservation, and release the rest; 'failed' releases it all.
-- The hold's fields go with it, so a second call for the same task finds
-- none and does nothing: a task settles once. Returns the receipt (JSON)
-- to keep in the record and the tool, or nil when the task had no
-- reservation.
local function settle(acct, holds, ledger, id, outcome, now)
  local h = redis.call('HMGET', holds, 'r:' .. id, 'u:' .. id)
  if not h[1] then return nil end
  local reserved, rsv, tool = string.match(h[1], '^(%d+) (%S+) (.*)$')
  reserved = tonumber(reserved)
  local usage = tonumber(h[2] or '0')
  local charged = 0
  if outcome ~= 'failed' then charged = math.min(usage, reserved) end
  local released = reserved - charged
  redis.call('HDEL', holds, 'r:' .. id, 'u:' .. id)
  redis.call('HINCRBY', acct, 'reserved', int(-reserved))
  if released > 0 then redis.call('HINCRBY', acct, 'balance', int(released)) end
  if charged > 0 then redis.call('HINCRBY', acct, 'charged', int(charged)) end
  local kind = 'settle'
  if outcome == 'failed' then kind = 'release' end
  local eid = redis.call('XADD', ledger, '*', 'kind', kind, 'task', id, 'tool', tool, 'outcome', outcome,
    'reserved', int(reserved), 'charged', int(charged), 'released', int(released), 'usage', int(usage), 'at', now)
  local capped = ''
  if usage > reserved then capped = ',"capped":true' end
  return '{"reserved":' .. int(reserved) .. ',"charged":' .. int(charged) .. ',"released":' .. int(released) ..
    ',"usage":' .. int(usage) .. capped .. ',"entries":["' .. rsv .. '","' .. eid .. '"]}', tool
end

-- settle_task: settle for a task whose record KEYS[1] stays (finish,
-- cancel, claim, takeover: KEYS[4..6] are the owner's account, holds and
-- ledger) and keep the receipt in the record. Returns what settle does.
local function settle_task(id, outcome, now)
  local receipt, tool = settle(KEYS[4], KEYS[5], KEYS[6], id, outcome, now)
  if receipt then redis.call('HSET', KEYS[1], 'receipt', receipt) end
  return receipt, tool
end

-- settled: a script's return code with the settlement it made, for the
-- store's Options.Settled (settled.go): {code, receipt, tool}, or the code
-- alone when nothing settled.
local function settled(code, receipt, tool)
  if receipt then return {code, receipt, tool} end
  return code
end
