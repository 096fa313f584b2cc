-- timeline.lua: prepended to every script after prelude.lua. The record's
-- field 'tl' (KEYS[1]) is the task's timeline, compact text that
-- taskstate/timeline.go decodes: entries '<kind><ms after createdAt>' with
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
local TIMELINE_MAX = 2048

local function timeline(kind, now, detail)
  local f = redis.call('HMGET', KEYS[1], 'createdAt', 'tl')
  if not f[1] then return end
  local e = kind .. string.format('%d', tonumber(now) - tonumber(f[1]))
  if detail and detail ~= '' then e = e .. ':' .. string.gsub(detail, ';', ',') end
  local tl = f[2] or ''
  if kind ~= 'e' and #tl + #e >= TIMELINE_MAX then return end
  redis.call('HSET', KEYS[1], 'tl', tl .. e .. ';')
end
