-- resilience-redis: rebuilding the shared G8 rules' counts after Redis lost its data (part of
-- the one script, after pacing.lua). Without it they would restart from zero, and in the
-- windows open at the loss the processes could together spend up to twice a rule's limit.
--
-- A process whose grants may still count in a rule sends '1' with its acquires, renewals
-- and leaves (acq: ARGV 23, renew and leave: ARGV 16; a leave sends its log along). If its
-- lease belongs to a state Redis has since lost, it is answered REPORT (status 4) before
-- anything is judged or joined, and sends its log ('pm':
-- ARGV 16 the rules, 17 the log), which is added to the counts before it rejoins. While
-- the quota rebuilds, the pool stays closed until every process the first rejoiner knew has
-- rejoined (quota.lua), and each rejoins only through its report: the counts hold every
-- such process's grants before the first new grant.
--
-- The log (pace_log.rs), one MessagePack array: the number of spacing rules, then the last
-- selected grant of each (server ms, 0 none); the number of window rules, then per rule the
-- number of its rings, then per ring: its endpoint ('' for a rule not per endpoint;
-- OVERFLOW for the process's own overflow ring, counted against every endpoint), its newest
-- bucket number, and the NB + 1 counts of buckets newest - NB .. newest; then the number of
-- the process's calls granted under the rules and not yet observed or released (with the
-- asks not answered). A last grant of 1
-- and a newest bucket 0 (never real) mean this script's now: asks whose answer the process
-- had not read when it reported; their grants, if any, were made before now.

-- Whether the caller holds a lease of a state Redis has since lost, and none of this one, and
-- has not reported to this one yet (`s.lm`: its report's reply may have been lost, and the
-- lease that report made reaped before it came back; merged again, its grants counted
-- twice). Forgotten once the counts no longer live: a report merged then adds nothing.
local function lost_lease()
  if s.lm and now >= (s.paced_until or 0) then s.lm = nil end
  return epoch > 0 and epoch < s.born * 1000 and not (s.lm and s.lm[node])
    and redis.call('HEXISTS', K_L, node) == 0
end

-- Whether the caller must report first: its lease belongs to a lost state, or the counts
-- were evicted and it has not reported since (pacing.lua, `pace_counts_lost`), lease or
-- not. `due`: it has grants that may still count; a node with none owes nothing more.
local function report_owed(due)
  if s.pr then pace_gate_settle() end
  if not due then
    pace_reported(node)
    return false
  end
  return lost_lease() or (s.pr ~= nil and s.pr[node] == nil)
end

-- Saves what this call changed before asking (it may have reaped leases or rolled the
-- window): the REPORT reply carries nothing else.
local function report_reply()
  redis.call('SET', K_Q, cmsgpack.pack(s))
  local r = {4}
  for i = 2, 24 do r[i] = 0 end
  return r
end

-- Adds a ring of the report (its counts from L[at], bucket `top - NB` first) to ring `rg`.
-- Buckets ahead of this server's newest (a failover to a host whose clock is behind) go
-- into the newest: dropped, the window could be spent again; there they count for a full
-- window from now, which is no shorter than they had left.
local function add_counts(rg, L, at, top)
  for k = math.max(top - NB, rg[1] - NB), top do
    local into = slot_of(math.min(k, rg[1]))
    rg[into] = rg[into] + L[at + k - (top - NB)]
  end
end

-- The members (rule SEP endpoint) of every ring a per-endpoint rule keeps.
local function rings_of(name)
  local out, pre = {}, name .. SEP
  for _, m in ipairs(redis.call('ZRANGE', K_I, 0, -1)) do
    if string.sub(m, 1, #pre) == pre then out[#out + 1] = string.sub(m, #pre + 1) end
  end
  return out
end

-- Adds a log to the rules' counts. False if the log does not match the rules. `lost`: the
-- log is of a lease of a state Redis lost (not of counts evicted from this one).
local function pace_merge(rules, log, lost)
  local okr, R = pcall(cmsgpack.unpack, rules)
  local okl, L = pcall(cmsgpack.unpack, log)
  if not (okr and okl and type(R) == 'table' and type(L) == 'table') then return false end
  local epcap = R[1]
  local out, keep_ms = {}, 1000
  local i, j = 3, 1
  if L[j] ~= R[i] then return false end
  for n = 1, R[i] do
    local name, gap = R[i + 1], R[i + 3]
    i = i + 3
    keep_ms = math.max(keep_ms, gap)
    local last = tonumber(L[j + n]) or 0
    if last == 1 then last = now end
    local f = 's' .. SEP .. name
    if last > 0 and last + gap > now
        and last > (tonumber(redis.call('HGET', K_P, f)) or 0) then
      out[#out + 1] = f
      out[#out + 1] = d(last)
    end
  end
  j = j + L[j] + 1
  i = i + 1
  if L[j] ~= R[i] then return false end
  for _ = 1, R[i] do
    local name, span, per = R[i + 1], R[i + 5], R[i + 7] == 1
    i = i + 7
    local bw = math.max(1, math.ceil(span / NB))
    local b = math.floor(now / bw)
    keep_ms = math.max(keep_ms, span + bw)
    j = j + 1
    for _ = 1, L[j] do
      local ep, top, at = L[j + 1], L[j + 2], j + 3
      if top == 0 then top = b end
      j = j + 3 + NB
      if top + NB >= b then
        -- The rings the counts go to: the rule's one ring; the endpoint's (its own, or the
        -- overflow past the cap, as an acquire would find it); or, for the process's own
        -- overflow, every ring the rule keeps, since those counts could be any endpoint's.
        local eps = {ep}
        if not per then
          eps = {false}
        elseif ep == OVERFLOW then
          eps = rings_of(name)
          local has = false
          for _, e in ipairs(eps) do has = has or e == OVERFLOW end
          if not has then eps[#eps + 1] = OVERFLOW end
        end
        for _, e in ipairs(eps) do
          local member = e and (name .. SEP .. e) or nil
          local f = member and ('e' .. SEP .. member) or ('w' .. SEP .. name)
          local v = redis.call('HGET', K_P, f)
          local rg, new = nil, false
          if v then
            rg = cmsgpack.unpack(v)
          elseif e and e ~= OVERFLOW then
            rg, member, new = endpoint_ring(name, e, b, epcap)
            f = 'e' .. SEP .. member
          else
            rg = new_ring(b)
          end
          advance(rg, b)
          add_counts(rg, L, at, top)
          if member then
            -- Idle when its newest bucket leaves the window (as pace_commit indexes it).
            redis.call('ZADD', K_I, d((rg[1] + 1) * bw + span), member)
            rg[NB + 3] = rg[1]
            if new then redis.call('HINCRBY', K_P, 'n' .. SEP .. name, 1) end
          end
          redis.call('HSET', K_P, f, cmsgpack.pack(rg))
        end
      end
    end
  end
  -- Its calls in flight: granted in the state Redis lost, they are not counted in this one
  -- (a report to the same state, after an eviction, is of calls it counts). The concurrency
  -- cap and sequential mode count them for a call bound from now, no shorter than they had
  -- left. Forgotten (as they were), the cap let as many more go at once.
  -- Told by the lease the report is for, not by the caller's view: a reply naming no lease
  -- (a snapshot, an observe) moves the view to this state before the report is asked for.
  local flying = L[j + 1]
  if type(flying) ~= 'number' then return false end
  if lost and flying > 0 then
    local c = (s.fl_at % 5) + 1
    s.fc[c] = s.fc[c] + flying
  end
  keep_ms = math.max(keep_ms, tonumber(redis.call('HGET', K_P, 'k')) or 0)
  -- Never earlier than a grant counted before still counts (a process with longer rules),
  -- nor than the counts were set to live (a merge never shortens their life).
  local until_ = math.max(now + keep_ms, s.paced_until or 0,
    tonumber(redis.call('HGET', K_P, 'x')) or 0)
  out[#out + 1] = 'k'
  out[#out + 1] = d(keep_ms)
  out[#out + 1] = 'x'
  out[#out + 1] = d(until_)
  redis.call('HSET', K_P, unpack(out))
  redis.call('PEXPIREAT', K_P, d(until_))
  redis.call('PEXPIREAT', K_I, d(until_))
  -- A process without the rules is refused while these counts are live (quota_ops.lua).
  s.paced_until = math.max(s.paced_until or 0, now + keep_ms)
  return true
end
