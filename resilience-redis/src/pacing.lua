-- resilience-redis: the G8 pacing rules shared by every process (part of the one script:
-- quota.lua, this, quota_ops.lua). Only an acquire of a resource given shared rules
-- (`QuotaSpec::shared_pacing`) sends them, after its own arguments:
-- ARGV 19 kind (0 read, 1 write, 2 create), 20 points, 21 endpoint ('' none), 22 the rules,
-- one MessagePack array: endpoint cap, concurrency cap (0 none), number of spacing rules,
-- then per spacing rule: name, selector, gap ms; then the number of window rules, then per
-- window rule: name, selector, measure, limit, span ms (window + margin), P0 headroom, per
-- endpoint (0/1).
-- Selector: 0 all, 1 writes, 2 creates. Measure: 0 requests, 1 points, 2 cost.
--
-- Their state (sent only with them, so a resource without rules never touches it):
-- KEYS[6], a hash: 'w' SEP rule -> ring (MessagePack), 'e' SEP rule SEP endpoint -> ring,
-- 'n' SEP rule -> number of endpoint rings, 's' SEP rule -> last selected grant (ms), 'k' ->
-- the lifetime of both keys (ms: the longest span or gap any process sent), 'x' -> when they
-- expire (ms). KEYS[7], a zset: rule SEP endpoint -> when that ring is idle (every bucket out
-- of its window), for eviction.
-- An acquire reads only the fields of the rules that select it (one HMGET) and writes them
-- back only if granted (one HSET; the expiry and the idle index move only when they must:
-- past half the lifetime, and when a ring's newest bucket moves).
--
-- A window rule is a ring of NB + 1 buckets of span / NB (rounded up) ms each. A grant counts
-- in the bucket of its time; an ask sums every bucket that overlaps the last span, so it
-- counts every grant of the window and, at most, one bucket's worth of older grants: the
-- limit holds in every window of `span`, and the over-approximation is at most a tenth of a
-- window (an ask may wait up to span / NB longer than an exact log would make it).
-- A per-endpoint rule keeps at most the endpoint cap of rings; idle ones are evicted to make
-- room, and past the cap endpoints share one overflow ring. A ring started while the
-- overflow ring holds counts is a copy of it: never less than what was counted for it.

local NB = 10
local SEP = '\0'
local OVERFLOW = '\1'
local K_P, K_I = KEYS[6], KEYS[7]

local function selects(sel, kind)
  return sel == 0 or (sel == 1 and kind >= 1) or (sel == 2 and kind == 2)
end

local function slot_of(k) return (k % (NB + 1)) + 2 end

-- A ring: newest bucket number, NB + 1 counts, and the newest bucket its idle time was
-- indexed at (per-endpoint rings).
local function new_ring(b)
  local rg = {b}
  for i = 2, NB + 2 do rg[i] = 0 end
  rg[NB + 3] = -1
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

-- Evicts up to 16 idle endpoint rings (of any rule): nothing of them is left in a window.
-- Not those of `ep`: another rule may have read one in this call, and would write it back.
local function evict_idle(ep)
  local idle = redis.call('ZRANGEBYSCORE', K_I, '-inf', d(now), 'LIMIT', 0, 16)
  for _, m in ipairs(idle) do
    local at = string.find(m, SEP, 1, true)
    local of = at and string.sub(m, at + 1)
    if of ~= ep then
      -- Only a ring that was there counts in 'n' (an index entry can outlive its ring).
      local gone = redis.call('HDEL', K_P, 'e' .. SEP .. m) == 1
      redis.call('ZREM', K_I, m)
      if gone and of and of ~= OVERFLOW then
        redis.call('HINCRBY', K_P, 'n' .. SEP .. string.sub(m, 1, at - 1), -1)
      end
    end
  end
end

-- The ring of a per-endpoint rule for an endpoint that has none: its own (counted in 'n',
-- a copy of the overflow ring), or the overflow ring past the cap. Returns the ring, its
-- member name, and whether it is new.
local function endpoint_ring(name, ep, b, cap)
  local nf = 'n' .. SEP .. name
  if (tonumber(redis.call('HGET', K_P, nf)) or 0) >= cap then
    evict_idle(ep)
  end
  local over_m = name .. SEP .. OVERFLOW
  local over = redis.call('HGET', K_P, 'e' .. SEP .. over_m)
  over = over and cmsgpack.unpack(over) or nil
  if (tonumber(redis.call('HGET', K_P, nf)) or 0) >= cap then
    return over or new_ring(b), over_m, false
  end
  return over or new_ring(b), name .. SEP .. ep, true
end

local pace = nil

-- The counts vanished while a grant still counts in them, the state did not: evicted alone
-- (they and the index are the only keys here with an expiry, so a `volatile-*` maxmemory
-- policy can take them) or deleted. As after a data loss (pacing_rebuild.lua), every
-- process whose grants may still count reports its log before it is judged again (`s.pr`,
-- the nodes that have, until the lost counts would have expired: `s.pr_until`), whether it
-- holds a lease now or comes back later (one that left). The asks the rules select are
-- refused until every lease holder has reported (`s.pl`, the gate: the nodes owed, emptied
-- by their report, their next call with nothing to report, or the end of their lease) or
-- the last of those leases would have expired. The hash exists again (until the counts
-- would have expired), so the loss is seen once; lost again, it is seen again and every
-- report asked for again (those merged went with it). `caller_due`: the caller that found
-- the loss has grants that may still count; it is owed too, so its ask is refused now and
-- its next call asked for the report (its lease, if new, is not in the leases hash yet).
local function pace_counts_lost(caller_due)
  local owed, last = {}, now
  local all = redis.call('HGETALL', K_L)
  for i = 1, #all, 2 do
    owed[all[i]] = 1
    local l = decode(all[i + 1])
    if l then last = math.max(last, l.exp) end
  end
  if caller_due then
    owed[node] = 1
    -- Its lease (maybe made by this call) lasts until then.
    last = math.max(last, now + ttl)
  end
  -- Never past the lost counts' own expiry: by then nothing of them counts any more, and a
  -- silent owed holder would refuse every selected ask for nothing.
  s.pl, s.pl_until = owed, math.min(last, s.paced_until)
  s.pr, s.pr_until = {}, s.paced_until
  -- `k` too (the longest a count lives): lost, an ask no rule selects would set the new
  -- hash to expire within its own short keep, before the counts merged into it.
  local k = math.max(1000, s.paced_until - now)
  redis.call('HSET', K_P, 'x', d(s.paced_until), 'k', d(k))
  redis.call('PEXPIREAT', K_P, d(s.paced_until))
  return k, s.paced_until
end

-- Whether the counts were lost since they were last written: gone while a grant still
-- counts in them (their expiry, 'x', never falls below `s.paced_until`).
local function pace_counts_gone(x)
  return not x and (s.paced_until or 0) > now
end

-- Ends the rebuild's gate once every lease holder owed has reported (waking the asks it
-- refused) or the last of their leases would have expired; forgets who reported once the
-- lost counts would have expired.
local function pace_gate_settle()
  if s.pl and next(s.pl) == nil then
    s.pl, s.pl_until = nil, nil
    publish()
  elseif s.pl and now >= s.pl_until then
    s.pl, s.pl_until = nil, nil
  end
  if s.pr and now >= s.pr_until then s.pr, s.pr_until = nil, nil end
end

-- Node `n` has reported its log since the loss (or has nothing left to report).
local function pace_reported(n)
  if s.pr then s.pr[n] = 1 end
  if s.pl then s.pl[n] = nil end
  pace_gate_settle()
end

-- Judges an acquire of `cost` at priority index `prio` against the rules. Returns the wait
-- (0: allowed), its reason (6 a window or spacing rule, 7 the concurrency cap, 3 the counts
-- are being rebuilt), and whether the ask can never pass (more units than a rule allows its
-- priority).
local function pace_check(cost, prio)
  local kind, points, ep = tonumber(ARGV[19]), tonumber(ARGV[20]), ARGV[21]
  local R = cmsgpack.unpack(ARGV[22])
  local epcap, cap = R[1], R[2]
  local wait, why, never, keep_ms = 0, 0, false, 1000
  -- Pass 1: the rules that select this ask, and the fields they need.
  local fields, spaced, wins = {'k', 'x'}, {}, {}
  local i = 3
  for _ = 1, R[i] do
    local name, sel, gap = R[i + 1], R[i + 2], R[i + 3]
    i = i + 3
    if selects(sel, kind) then
      fields[#fields + 1] = 's' .. SEP .. name
      spaced[#spaced + 1] = {f = #fields, gap = gap}
      keep_ms = math.max(keep_ms, gap)
    end
  end
  i = i + 1
  for _ = 1, R[i] do
    local name, sel, meas, lim = R[i + 1], R[i + 2], R[i + 3], R[i + 4]
    local span, head, per = R[i + 5], R[i + 6], R[i + 7] == 1
    i = i + 7
    local amt = (meas == 0) and 1 or ((meas == 1) and points or cost)
    if selects(sel, kind) and amt > 0 then
      -- P1/P2 may not use the P0 headroom.
      local room = lim - amt
      if prio > 0 then room = room - head end
      if room < 0 then
        never = true
      else
        local member = per and (name .. SEP .. ep) or nil
        fields[#fields + 1] = per and ('e' .. SEP .. member) or ('w' .. SEP .. name)
        wins[#wins + 1] = {f = #fields, name = name, member = member, amt = amt,
          room = room, span = span, bw = math.max(1, math.ceil(span / NB))}
        keep_ms = math.max(keep_ms, span + math.ceil(span / NB))
      end
    end
  end
  local vals = redis.call('HMGET', K_P, unpack(fields))
  -- The counts gone while a grant still counts in them: evicted (pacing_rebuild.lua).
  if pace_counts_gone(vals[2]) then vals[1], vals[2] = pace_counts_lost(ARGV[23] == '1') end
  -- Pass 2: judge them.
  for _, sp in ipairs(spaced) do
    local last = tonumber(vals[sp.f]) or 0
    sp.last = last
    if now < last + sp.gap then wait, why = math.max(wait, last + sp.gap - now), 6 end
  end
  for _, w in ipairs(wins) do
    local b = math.floor(now / w.bw)
    if vals[w.f] then
      w.rg = cmsgpack.unpack(vals[w.f])
    elseif w.member then
      w.rg, w.member, w.new = endpoint_ring(w.name, ep, b, epcap)
    else
      w.rg = new_ring(b)
    end
    advance(w.rg, b)
    local wt = ring_wait(w.rg, w.bw, w.span, w.room)
    if wt > 0 then wait, why = math.max(wait, wt), 6 end
  end
  -- The concurrency cap counts the calls granted and not yet settled (the in-flight slots
  -- of quota.lua), whatever they cost: a call nobody settles stops counting after the call
  -- bound.
  if why == 0 and cap > 0 and calls_in_flight() >= cap then
    wait, why = calls_wait(cap), 7
  end
  -- While the evicted counts are rebuilt from the reports, nothing is judged on them (an
  -- ask no rule selects is judged on none of them: not held up).
  pace_gate_settle()
  if s.pl and #spaced + #wins > 0 then wait, why = math.max(1, s.pl_until - now), 3 end
  local kept = tonumber(vals[1]) or 0
  pace = {fields = fields, spaced = spaced, wins = wins, keep = math.max(keep_ms, kept),
    grown = keep_ms > kept, expires = tonumber(vals[2]) or 0}
  return wait, why, never
end

-- Counts a granted acquire in every rule that selected it.
--
-- The keys must outlive every count in them: a grant counts until `now + keep` (its rule's
-- span and a bucket, or its gap), so their expiry never falls below that. It is moved
-- only when it would (then to `now + 1.5 keep`: at most one move per half lifetime).
local function pace_commit()
  local f = pace.fields
  local out = {'k', d(pace.keep)}
  local refresh = pace.grown or now + pace.keep > pace.expires
  local ttl = pace.keep + math.floor(pace.keep / 2)
  local indexed = false
  if refresh then
    out[#out + 1] = 'x'
    out[#out + 1] = d(now + ttl)
  end
  for _, sp in ipairs(pace.spaced) do
    out[#out + 1] = f[sp.f]
    out[#out + 1] = d(math.max(now, sp.last))
  end
  for _, w in ipairs(pace.wins) do
    local rg = w.rg
    rg[slot_of(rg[1])] = rg[slot_of(rg[1])] + w.amt
    if w.member and (rg[NB + 3] ~= rg[1] or w.new) then
      redis.call('ZADD', K_I, d((rg[1] + 1) * w.bw + w.span), w.member)
      indexed = true
      rg[NB + 3] = rg[1]
      if w.new then redis.call('HINCRBY', K_P, 'n' .. SEP .. w.name, 1) end
    end
    out[#out + 1] = w.member and ('e' .. SEP .. w.member) or f[w.f]
    out[#out + 1] = cmsgpack.pack(rg)
  end
  redis.call('HSET', K_P, unpack(out))
  -- Everything in them is out of every window (and spacing) once they expire. The index
  -- expires with the counts (a ZADD may have just made it, without a TTL).
  if refresh then
    redis.call('PEXPIRE', K_P, d(ttl))
    redis.call('PEXPIRE', K_I, d(ttl))
  elseif indexed then
    redis.call('PEXPIREAT', K_I, d(pace.expires))
  end
end
