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

-- int: an integer amount as Redis argument text ('%d': tostring would
-- write 1e+15 for large ones).
local function int(n) return string.format('%d', n) end

-- free_slot: the task (KEYS[1], the record) gives back its place in the
-- running set of its queue, if a per-principal share counted it: the
-- record's 'slot' field names that set (Keys.running, built by claim.go
-- and passed to claim.lua as a key; in the owner's hash tag, so the same
-- Cluster slot as KEYS[1]).
-- slot is the record's 'slot' when the caller read it already (false:
-- none), nil to read it here.
local function free_slot(id, slot)
  if slot == nil then slot = redis.call('HGET', KEYS[1], 'slot') end
  if slot then
    redis.call('ZREM', slot, id)
    redis.call('HDEL', KEYS[1], 'slot')
  end
end

-- ended: a task left the live index and the held index (KEYS[2] and KEYS[3]
-- of every script that can end one) and drops what only a run needs: its
-- arguments (or the object key holding them: the worker deletes that
-- object; worker/blobs.go), the creating client's capabilities, the handler's checkpoint
-- and which delivery held it when (KEYS[1], the record), which a finished
-- task would otherwise keep for the rest of its TTL; and its place in the
-- running set of its queue (free_slot).
-- The live index (Keys.Live, a hash in the owner's hash tag) holds each
-- live task's argument bytes and their 'total' (create.lua adds to it), so
-- leaving it returns the task's bytes to the owner's budget. When no live
-- task is left the hash goes, 'total' with it, so a record Redis expired
-- before the reaper saw it cannot leave bytes behind.
local function ended(id, slot)
  free_slot(id, slot)
  local e = redis.call('HMGET', KEYS[2], id, 'total')
  if e[1] then
    local left = tonumber(e[2] or '0') - tonumber(e[1])
    -- left is 0 when no live task with arguments is left: one without
    -- (argument bytes 0) keeps the hash.
    if left <= 0 and redis.call('HLEN', KEYS[2]) <= 2 then
      redis.call('DEL', KEYS[2])
    else
      redis.call('HDEL', KEYS[2], id)
      redis.call('HSET', KEYS[2], 'total', int(math.max(left, 0)))
    end
  end
  redis.call('ZREM', KEYS[3], id)
  redis.call('HDEL', KEYS[1], 'arguments', 'argsRef', 'caps', 'checkpoint', 'running', 'heartbeat', 'cancelAt', 'waiter')
end

-- Redis keeps a hash as a compact listpack only while every field name and
-- value is at most hash-max-listpack-value bytes (default 64) and it has at
-- most hash-max-listpack-entries fields (default 512); one longer value
-- turns it into a hashtable for good, about 70 bytes more per field. While
-- a task runs its record holds long values (arguments, caps, checkpoint);
-- once it ended, compact() rebuilds it as a listpack and moves what is
-- longer into its companion key (Keys.TaskExtra).
local COMPACT_VALUE = 64
local COMPACT_FIELDS = 480

-- is_compact: Redis keeps the record KEYS[1] as a listpack.
local function is_compact()
  local enc = redis.pcall('OBJECT', 'ENCODING', KEYS[1])
  return enc == 'listpack' or enc == 'ziplist'
end

-- extra_entry: one field as the companion holds it.
local function extra_entry(k, v) return #k .. ':' .. k .. #v .. ':' .. v end

-- set_extra: the companion of KEYS[1] holds text and expires at the
-- record's expiry at (PEXPIRETIME: unix ms above 0, else none). Absolute
-- times: a relative PTTL re-applied can land a millisecond off.
local function set_extra(text, at)
  if at > 0 then
    redis.call('SET', KEYS[1] .. ':x', text, 'PXAT', at)
  else
    redis.call('SET', KEYS[1] .. ':x', text)
  end
end

-- compact: rebuild the record of a task that ended (KEYS[1]) so a default
-- redis.conf keeps it compact: every field whose name or value is longer
-- than COMPACT_VALUE bytes (the result, error, receipt, a long
-- statusMessage, input requests and answers), and input fields once
-- COMPACT_FIELDS are kept (the record's other fields, about 20, then still
-- fit under 512), moves into the companion string KEYS[1]..':x'
-- (Keys.TaskExtra: same hash tag, so the same Cluster slot), each as
-- '<len>:<name><len>:<value>' (record.go's mergeExtra reads it back); the
-- record keeps the rest, a fresh hash (so a listpack again), and the field
-- 'x' saying its companion exists. Both keep the record's expiry to the
-- millisecond (a script's clock stands still). A record Redis still keeps
-- compact is left as it is: every value fits the server's limit (a raised
-- hash-max-listpack-value, or a task that never held a long value), and a
-- companion would only cost a key. Redis 6 calls the encoding 'ziplist';
-- a server that does not answer OBJECT ENCODING (miniredis) gets the
-- rebuild. Called last, after state_changed(), by end_task(). A companion
-- finish.lua already wrote (the record's field 'x') is kept and added to.
local function compact()
  if is_compact() then return end
  local all = redis.call('HGETALL', KEYS[1])
  if #all == 0 then return end
  local keep, moved, fields, had = {}, {}, 0, false
  for i = 1, #all, 2 do
    local k, v = all[i], all[i + 1]
    -- The input check only past COMPACT_FIELDS: a new string per field
    -- would cost more than the rest of the loop.
    if k == 'x' then
      had = true -- finish.lua put the result in the companion already
    elseif #k > COMPACT_VALUE or #v > COMPACT_VALUE or
        (fields >= COMPACT_FIELDS and (string.sub(k, 1, 4) == 'req:' or string.sub(k, 1, 4) == 'ans:')) then
      moved[#moved + 1] = extra_entry(k, v)
    else
      keep[#keep + 1] = k
      keep[#keep + 1] = v
      fields = fields + 1
    end
  end
  local at = redis.call('PEXPIRETIME', KEYS[1])
  redis.call('DEL', KEYS[1])
  if #moved > 0 or had then
    keep[#keep + 1] = 'x'
    keep[#keep + 1] = '1'
  end
  if #moved > 0 then
    local prior = ''
    if had then prior = redis.call('GET', KEYS[1] .. ':x') or '' end
    set_extra(prior .. table.concat(moved), at)
  end
  redis.call('HSET', KEYS[1], unpack(keep))
  if at > 0 then redis.call('PEXPIREAT', KEYS[1], at) end
end

-- look_at: the held index (KEYS[3]) is to look at task id again by unix ms
-- due: an earlier time already there stays.
local function look_at(id, due)
  local cur = redis.call('ZSCORE', KEYS[3], id)
  if not cur or tonumber(cur) > tonumber(due) then redis.call('ZADD', KEYS[3], due, id) end
end

-- announce: the one event format of a state change, published on the
-- task's events channel; taskstate/events/event.go's Decode reads it:
-- {"version": n, "status": s, "statusMessage": m, "lastUpdatedAt": "ms", "cancel": "1"?,
--  "result": {...}?}
-- A script that writes the new state itself (with 'version' = v, the
-- record's count of changes) and knows these fields calls it directly
-- (claim, progress: no read-back on the worker's hot path); the others
-- call state_changed. result is the raw JSON of a completed task's result
-- when finish.lua carries it (EVENT_RESULT_MAX): a waiting call answers
-- from the event without reading the record.
local function announce(channel, v, status, statusMessage, lastUpdatedAt, cancel, result)
  local ev = cjson.encode({version = v, status = status, statusMessage = statusMessage,
    lastUpdatedAt = lastUpdatedAt, cancel = cancel})
  if result then ev = string.sub(ev, 1, -2) .. ',"result":' .. result .. '}' end
  redis.call('PUBLISH', channel, ev)
end

-- state_changed: a script announces the task's new state (KEYS[1], the
-- record, already written): it counts the change in the record's
-- 'version' and publishes the fields that move with a state, so a
-- listener can show each state once and in order without reading the
-- record.
local function state_changed(channel)
  local f = redis.call('HMGET', KEYS[1], 'status', 'statusMessage', 'lastUpdatedAt', 'cancel')
  local v = redis.call('HINCRBY', KEYS[1], 'version', 1)
  -- HMGET answers false for an absent field; "or nil" leaves it out.
  announce(channel, v, f[1], f[2] or nil, f[3] or nil, f[4] or nil)
end

-- end_task: the close of every script that ends a task whose record stays
-- (finish, cancel, claim's cancel branch, takeover): it leaves the live index
-- and held index (ended), announces its final state on channel
-- (state_changed) and is rebuilt compact (compact).
local function end_task(id, channel)
  ended(id)
  state_changed(channel)
  compact()
end

-- settle: the one settlement of task id's reservation, at its terminal
-- transition (billing.go). acct, holds and ledger are the owner's
-- Keys.account, Keys.Holds and Keys.ledger; outcome is the task's end:
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
