-- timeline.lua: prepended to every script after prelude.lua. The record's
-- field 'tl' (KEYS[1]) is the task's timeline, compact text that
-- taskstate/timeline/timeline.go decodes: entries '<kind><ms after createdAt>' with
-- ':<detail>' when there is one, each closed by ';'. Kinds:
--   s  an attempt started (detail '<attempt>@<worker>': claim.lua)
--   q  the task asked for input (detail: the request keys, ','-joined)
--   a  every pending answer arrived; the task resumes (detail: the keys)
--   l  the attempt's worker was lost; the task was taken back (detail: attempt)
--   x  a cancel was requested while the task ran
--   e  the task ended (detail: its final status)
-- The text stops growing at TIMELINE_MAX bytes except for the end entry, so
-- a task asked for input many times cannot grow its record without bound.
-- Call it before compact(): an ended record keeps a long 'tl' in its
-- companion like any long value.
-- Two short fields ride along, so a listing (list.go) reads them without
-- the timeline: 'startedAt' (unix ms of the first claim) and, at the end,
-- 'cost' from the receipt ('<reserved> <charged> <released>', as
-- create.lua first writes it for a priced call).
local TIMELINE_MAX = 2048

-- timeline_next: the timeline text tl (the record's 'tl': nil or false
-- when it has none) of a task created at createdAt with one entry added,
-- or nil when the text is full. A script that writes the record anyway
-- (claim, finish) puts it in its own HSET; the others call timeline.
local function timeline_next(createdAt, tl, kind, now, detail)
  local e = kind .. string.format('%d', tonumber(now) - tonumber(createdAt))
  if detail and detail ~= '' then e = e .. ':' .. string.gsub(detail, ';', ',') end
  tl = tl or ''
  if kind ~= 'e' and #tl + #e >= TIMELINE_MAX then return nil end
  return tl .. e .. ';'
end

-- cost_of: the record's 'cost' field from a receipt (JSON).
local function cost_of(receipt)
  local r = cjson.decode(receipt)
  return int(r.reserved) .. ' ' .. int(r.charged) .. ' ' .. int(r.released)
end

local function timeline(kind, now, detail)
  local f = redis.call('HMGET', KEYS[1], 'createdAt', 'tl')
  if not f[1] then return end
  local tl = timeline_next(f[1], f[2], kind, now, detail)
  if not tl then return end
  redis.call('HSET', KEYS[1], 'tl', tl)
  if kind == 's' then redis.call('HSETNX', KEYS[1], 'startedAt', now) end
  if kind == 'e' then
    local receipt = redis.call('HGET', KEYS[1], 'receipt')
    if receipt then redis.call('HSET', KEYS[1], 'cost', cost_of(receipt)) end
  end
end
