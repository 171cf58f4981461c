-- resilience-redis: the G8 pacing rules shared by every process (part of the one script:
-- quota.lua, this, quota_ops.lua). Only an acquire of a resource given shared rules
-- (`QuotaSpec::shared_pacing`) sends them, after its own arguments:
-- ARGV 19 kind (0 read, 1 write, 2 create), 20 points, 21 endpoint ('' none), 22 endpoint cap,
-- 23 concurrency cap (0 none), 24 number of spacing rules, then per spacing rule: name,
-- selector, gap ms; then the number of window rules, then per window rule: name, selector,
-- measure, limit, span ms (window + margin), P0 headroom, per endpoint (0/1).
-- Selector: 0 all, 1 writes, 2 creates. Measure: 0 requests, 1 points, 2 cost.
--
-- Their state is one more MessagePack string (KEYS[6], sent only with them), read and
-- written by acquires with rules only: {w = {rule = ring}, e = {rule = {n = count,
-- m = {endpoint = ring}}}, s = {rule = last selected grant, ms}}.
--
-- A window rule is a ring of NB + 1 buckets of span / NB (rounded up) ms each. A grant counts
-- in the bucket of its time; an ask sums every bucket that overlaps the last span, so it
-- counts every grant of the window and, at most, one bucket's worth of older grants: the
-- limit holds in every window of `span`, and the over-approximation is at most a tenth of a
-- window (an ask may wait up to span / NB longer than an exact log would make it).
-- Cost: NB + 2 numbers per ring, one ring per rule (per endpoint for per-endpoint rules, at
-- most the endpoint cap of them per rule; idle ones are evicted, and past the cap endpoints
-- share one overflow ring, started from which a later ring of its own is a copy: never less
-- than what was counted for it).

local NB = 10
local OVERFLOW = '\1'
local K_P = KEYS[6]

local function selects(sel, kind)
  return sel == 0 or (sel == 1 and kind >= 1) or (sel == 2 and kind == 2)
end

local function slot_of(k) return (k % (NB + 1)) + 2 end

local function new_ring(b)
  local rg = {b}
  for i = 2, NB + 2 do rg[i] = 0 end
  return rg
end

-- Moves the ring's newest bucket to `b` (never back: a clock stepped back counts in the newest).
local function advance(rg, b)
  local top = rg[1]
  if b > top then
    for k = top + 1, math.min(b, top + NB + 1) do rg[slot_of(k)] = 0 end
    rg[1] = b
  end
end

-- 0 if the window's count leaves `room`, else the ms until enough buckets leave the window.
local function ring_wait(rg, bw, span, room)
  local top = rg[1]
  local lo = math.max(top - NB, math.floor((now - span) / bw))
  local sum = 0
  for k = lo, top do sum = sum + rg[slot_of(k)] end
  if sum <= room then return 0 end
  for k = lo, top do
    sum = sum - rg[slot_of(k)]
    if sum <= room then return math.max(1, (k + 1) * bw + span - now) end
  end
  return math.max(1, (top + 1) * bw + span - now)
end

-- The ring of `ep` in a per-endpoint rule's map (bounded by `cap`, see above).
local function endpoint_ring(map, ep, b, cap)
  local rg = map.m[ep]
  if rg then return rg end
  local over = map.m[OVERFLOW]
  if map.n >= cap then
    for k, r in pairs(map.m) do
      if k ~= OVERFLOW and r[1] < b - NB then
        map.m[k] = nil
        map.n = map.n - 1
      end
    end
  end
  if over and over[1] < b - NB then
    map.m[OVERFLOW], over = nil, nil
  end
  if map.n >= cap then
    if not over then
      over = new_ring(b)
      map.m[OVERFLOW] = over
    end
    return over
  end
  rg = new_ring(b)
  if over then
    for i = 1, NB + 2 do rg[i] = over[i] end
  end
  map.m[ep] = rg
  map.n = map.n + 1
  return rg
end

local pace = nil

-- Judges an acquire of `cost` at priority index `prio` against the rules. Returns the wait
-- (0: allowed), its reason (6 a window or spacing rule, 7 the concurrency cap), and whether
-- the ask can never pass (more units than a rule allows its priority).
local function pace_check(cost, prio)
  local kind, points, ep = tonumber(ARGV[19]), tonumber(ARGV[20]), ARGV[21]
  local epcap, cap = tonumber(ARGV[22]), tonumber(ARGV[23])
  local raw_p = redis.call('GET', K_P)
  local p = raw_p and cmsgpack.unpack(raw_p) or {w = {}, e = {}, s = {}}
  local wait, why, never, keep_ms = 0, 0, false, 1000
  local spaced, hits = {}, {}
  local i = 24
  for _ = 1, tonumber(ARGV[i]) do
    local name, sel, gap = ARGV[i + 1], tonumber(ARGV[i + 2]), tonumber(ARGV[i + 3])
    i = i + 3
    if selects(sel, kind) then
      local last = p.s[name] or 0
      if now < last + gap then wait, why = math.max(wait, last + gap - now), 6 end
      spaced[#spaced + 1] = name
      keep_ms = math.max(keep_ms, gap)
    end
  end
  i = i + 1
  for _ = 1, tonumber(ARGV[i]) do
    local name, sel, meas = ARGV[i + 1], tonumber(ARGV[i + 2]), tonumber(ARGV[i + 3])
    local lim, span, head = tonumber(ARGV[i + 4]), tonumber(ARGV[i + 5]), tonumber(ARGV[i + 6])
    local per = ARGV[i + 7] == '1'
    i = i + 7
    local amt = (meas == 0) and 1 or ((meas == 1) and points or cost)
    if selects(sel, kind) and amt > 0 then
      -- P1/P2 may not use the P0 headroom.
      local room = lim - amt
      if prio > 0 then room = room - head end
      if room < 0 then
        never = true
      else
        local bw = math.max(1, math.ceil(span / NB))
        local b = math.floor(now / bw)
        local rg
        if per then
          local map = p.e[name]
          if not map then
            map = {n = 0, m = {}}
            p.e[name] = map
          end
          rg = endpoint_ring(map, ep, b, epcap)
        else
          rg = p.w[name]
          if not rg then
            rg = new_ring(b)
            p.w[name] = rg
          end
        end
        advance(rg, b)
        local w = ring_wait(rg, bw, span, room)
        if w > 0 then wait, why = math.max(wait, w), 6 end
        hits[#hits + 1] = {rg, amt}
        keep_ms = math.max(keep_ms, span + bw)
      end
    end
  end
  -- The concurrency cap counts the grants not yet settled (the in-flight slots of
  -- quota.lua): a grant nobody settles stops counting after the call bound.
  if why == 0 and cap > 0 and in_flight() >= cap then
    local left, w = in_flight(), s.slot_ms
    for k = s.fl_at - 4, s.fl_at do
      left = left - s['fl' .. (k % 5)]
      if left < cap then
        w = (k + 5) * s.slot_ms - now
        break
      end
    end
    wait, why = math.max(1, w), 7
  end
  pace = {p = p, spaced = spaced, hits = hits, keep_ms = keep_ms}
  return wait, why, never
end

-- Counts a granted acquire in every rule that selected it.
local function pace_commit()
  local p = pace.p
  for _, h in ipairs(pace.hits) do
    local rg = h[1]
    rg[slot_of(rg[1])] = rg[slot_of(rg[1])] + h[2]
  end
  for _, name in ipairs(pace.spaced) do p.s[name] = math.max(now, p.s[name] or 0) end
  -- Everything in it is out of every window (and spacing) once it expires; the longest
  -- rule any process sent sets it.
  p.keep = math.max(p.keep or 0, pace.keep_ms)
  redis.call('SET', K_P, cmsgpack.pack(p), 'PX', d(p.keep))
end
