-- A process without the shared rules, while another counts grants against them (live until
-- `paced_until`): its grants would not be counted in them. Its lease ends (its reservation
-- back to the pool, as at a leave; the reply shuts its express lane) and it is refused. The
-- state is saved as after any call: this one may have reaped leases or rolled the window.
local unpaced = (op == 'acq' and n_args <= 18) or (op == 'renew' and ARGV[17] ~= '1')
paced_caller = (op == 'acq' or op == 'renew' or op == 'pm') and not unpaced
-- The lease a refusal ended (its reply names it: it may be newer than the caller's epoch).
local ended_lease = 0
if unpaced and (s.paced_until or 0) > now then
  local l = decode(redis.call('HGET', K_L, node))
  if l and epoch > 0 and l.epoch == epoch then
    -- What it reports spending is settled first, as at a renewal.
    if l.win ~= s.win then l.reserved, l.win = 0, s.win end
    settle_report(l)
  elseif epoch > 0 then
    -- Refused before: once its ended lease would have expired, its report settles what
    -- that lease holds back (in degraded mode the whole reservation: the reply that ended
    -- it may have been lost, and the holder spent on offline), as at a rejoin. Without
    -- this it stayed held until the window ended.
    take_held()
  end
  if l then
    ended_lease = l.epoch
    retire(node, l)
  end
  status = 5
elseif op == 'acq' then
  -- Never from the last `keep` of the reservation: the express lane may have spent it
  -- without reporting yet, and paying an acquire from it could spend one unit twice.
  --
  -- Priority across processes: a P0 (P1) ask refused for want of quota marks `yield0`
  -- (`yield1`) for the asker's poll bound, within which it asks again; until the mark passes,
  -- every lower priority is refused (reason 5), so quota returned meanwhile goes to the
  -- waiting higher priority, whichever process it is in.
  local cost, prio, yield_ms = tonumber(ARGV[16]), tonumber(ARGV[17]), tonumber(ARGV[18])
  -- Redis lost the counts of the shared rules this process's grants are in: its report
  -- first (pacing_rebuild.lua).
  if n_args > 18 and report_owed(ARGV[23] == '1') then return report_reply() end
  join()
  -- Calls in flight may have dropped out since (unread).
  if s.pool < cost then pool_from_settled_readings() end
  local ahead = 0
  if prio >= 1 then ahead = s.yield0 end
  if prio >= 2 then ahead = math.max(ahead, s.yield1) end
  -- The shared G8 rules, if the resource has them (pacing.lua): judged before the quota, and
  -- counted only if the acquire is granted.
  local paced, pwait, pwhy, never = n_args > 18, 0, 0, false
  -- Refused by the rebuild's gate: no priority mark (below), since the asks no rule selects
  -- are not held up by the gate, and a waiting P0 create must not hold up every P1 read.
  local gated = false
  if paced then
    pwait, pwhy, never = pace_check(cost, prio)
  end
  -- While the quota rebuilds after a loss, a resource with shared rules pays nothing from
  -- reservations either: the rules' counts lack the reports of the processes not back yet.
  local from_reserve_ok = lease.reserved >= cost + keep and not (paced and recovering)
  if cost > s.limit or never then
    status, reason = 2, 4
  elseif now < s.block_until then
    status, reason, wait = 2, 1, s.block_until - now
  elseif pwait > 0 then
    status, reason, wait = 2, pwhy, pwait
    -- A settled grant wakes the waiters of the concurrency cap; the end of a rebuild's
    -- gate, those it refused.
    if pwhy == 7 then s.cw = 1 end
    if pwhy == 3 then s.starved, gated = 1, true end
  elseif s.sm and calls_in_flight() >= 1 then
    -- G4 sequential mode (cascade.lua): one call at a time; a settled grant wakes them.
    status, reason, wait = 2, 8, calls_wait(1)
    s.cw = 1
  elseif ahead > now and ((s.pool >= cost and not recovering) or from_reserve_ok) then
    -- Yielding only quota it could be paid: refused for want of quota, it is told the real
    -- reason and when the window resets (its waiter then comes back in its priority's G6
    -- window past the reset, not at the first ask after it with every other waiter).
    status, reason, wait = 2, 5, ahead - now
  else
    if s.pool >= cost and not recovering then
      s.pool = s.pool - cost
      took(cost)
      status = 1
    elseif from_reserve_ok then
      lease.reserved = lease.reserved - cost
      s.reserved = s.reserved - cost
      status, from_res = 1, 1
    elseif recovering then
      status, reason, wait = 2, 3, s.recover_until - now
    else
      status, reason = 2, 2
      -- A window no grant has anchored, too small for this ask (calls of the old one still
      -- on their way, held shares, took it at the roll): no grant would ever anchor it, and
      -- it would never end (as it was). Anchored now, to end no earlier than upstream's
      -- may, begun by the last of those calls to arrive (within a call bound). (Anchored at
      -- every roll instead, a call bound late, the first reset header moved every window
      -- earlier, and the live leases' reservations were carried as held into the next.)
      if s.reset_at == 0 then s.reset_at = now + 5 * s.slot_ms + s.window end
      wait = s.reset_at - now
      s.starved = 1
    end
    if status == 1 then
      if s.reset_at == 0 then s.reset_at = now + s.window end
      s.ledger = s.ledger + cost
      fly(cost)
      fly_call()
      top_up()
      if paced then
        pace_commit()
        s.paced_until = math.max(s.paced_until or 0, now + pace.keep)
      end
    end
  end
  -- Refused for want of quota (spent, recovering, itself yielding, or a concurrency slot):
  -- mark the wait.
  if status == 2 and (reason == 2 or reason == 3 or reason == 5 or reason == 7
      or reason == 8) and prio <= 1 and not gated then
    local f = (prio == 0) and 'yield0' or 'yield1'
    s[f] = math.max(s[f], now + yield_ms)
  end
elseif op == 'renew' then
  if report_owed(ARGV[16] == '1') then return report_reply() end
  join()
  top_up()
elseif op == 'pm' then
  -- Once: a report whose reply was lost finds the lease it made (or its node no longer
  -- owed), and only rejoins.
  local lost = lost_lease()
  -- The counts evicted again since the last loss was seen (a merge wrote them back): a new
  -- loss, every report asked for again, this one merged into what is left.
  if pace_counts_gone(redis.call('HGET', K_P, 'x')) then pace_counts_lost() end
  local owed = s.pr ~= nil and s.pr[node] == nil
  if (lost or owed) and not pace_merge(ARGV[16], ARGV[17], lost) then
    return redis.error_reply('resilience-redis: a shared-rule report that does not match '
      .. 'the rules sent with it (builds differ?)')
  end
  if lost or owed then pace_reported(node) end
  if lost then
    s.lm = s.lm or {}
    s.lm[node] = 1
  end
  join()
  top_up()
elseif op == 'rel' then
  local cost, gwin, gres = tonumber(ARGV[16]), tonumber(ARGV[17]), tonumber(ARGV[18])
  local gled, gat, gslot = tonumber(ARGV[19]), tonumber(ARGV[20]), tonumber(ARGV[21])
  -- The call will not be made: it is no longer in flight, whoever holds the lease now.
  local landed = land(cost, gat, gslot)
  if not current_lease() then
    status = 3
  elseif not landed and gled > 0 and gled <= s.applied then
    -- A reading of a later grant is applied, and it did not count this one as in flight
    -- (too old): it already counts its quota as left. Crediting it again would spend it
    -- twice. (Still in flight, it was subtracted from the reading: credit it.)
    status = 0
  elseif gwin == s.win then
    if gres == 1 then
      lease.reserved = lease.reserved + cost
      s.reserved = s.reserved + cost
    else
      local before = s.pool
      s.pool = math.min(s.limit, s.pool + cost)
      took(before - s.pool)
    end
    publish()
  end
  pool_from_settled_readings()
elseif op == 'obs' then
  local g_ledger, h_limit, h_rem = tonumber(ARGV[16]), tonumber(ARGV[17]), tonumber(ARGV[18])
  local h_reset, block_ms, exhausted = tonumber(ARGV[19]), tonumber(ARGV[20]), tonumber(ARGV[21])
  local gwin, reset_after, block_abs = tonumber(ARGV[22]), tonumber(ARGV[23]), tonumber(ARGV[24])
  local g_at, g_flight, g_cost = tonumber(ARGV[25]), tonumber(ARGV[26]), tonumber(ARGV[27])
  local g_slot = tonumber(ARGV[28])
  local backoff, backoff_cap = tonumber(ARGV[29]), tonumber(ARGV[30])
  local c_limited, c_who = ARGV[31] == '1', ARGV[32]
  local c_agents, c_window, c_clear = tonumber(ARGV[33]), tonumber(ARGV[34]), tonumber(ARGV[35])
  -- The response came back: the call has been counted upstream, if it ever will be. With
  -- none (a timeout, a connection reset), the request may still reach upstream until its
  -- call bound, after calls granted later: only the call is settled (the concurrency cap);
  -- its units stay in flight and drop out then, unread.
  local no_response = ARGV[36] == '1'
  local landed = land(no_response and 0 or g_cost, g_at, g_slot)
  -- G6 backoff (section 6: "wait at least one minute, then back off exponentially"):
  -- secondary limits in a row without retry-after, seen by any node, double the block up
  -- to the cap. Limits answered inside a block (calls in flight when it began) are the same
  -- limit, and good responses inside it say nothing new: only one outside a block starts
  -- the run over. A stale holder's limit still counts, as its block does.
  local blocked = now < s.block_until
  if backoff == 1 then
    if not blocked then s.strikes = s.strikes + 1 end
    local doublings = math.min(32, math.max(0, s.strikes - 1))
    block_ms = math.min(backoff_cap, block_ms * 2 ^ doublings)
  elseif backoff == 2 and not blocked then
    s.strikes = 0
  end
  -- G4 across processes (cascade.lua): who is the agent, else the process.
  if c_agents > 0 then
    if c_who == '' then c_who = node else c_who = node .. SEP .. c_who end
    cascade_observe(c_limited, backoff == 2, c_who, c_agents, c_window, c_clear, blocked)
  end
  if reset_after > 0 then h_reset = now + reset_after end
  -- Header values past any sane range are ignored, not stored: `%d` would wrap a limit
  -- above 2^63, and a reset read in the wrong unit would keep the window from ever rolling.
  if h_limit > 2 ^ 50 then h_limit = 0 end
  if h_rem > 2 ^ 50 then h_rem = -1 end
  if h_reset > now + 2 * s.window then h_reset = 0 end
  -- The units settled unread since a grant made at `at` in slot `k` (a release is a call not
  -- made): they may have reached upstream after its call, and its reading not count them.
  -- One settled before the grant was made had arrived before. Counted by slot (a whole slot
  -- if the grant's), so every one of this window and the last for a grant older than the
  -- slots, of a lost state, or none (a reading of no grant).
  local function unread_since(at, k)
    if other_state or at <= 0 or at < s.born or at < (s.slot_since or 0)
        or k > s.fl_at or k <= s.fl_at - 5 then
      return (s.un or 0) + (s.un0 or 0)
    end
    local n = 0
    if s.uu then
      for j = k, s.fl_at do n = n + s.uu[(j % 5) + 1] end
    end
    return n
  end
  -- The window's floor (`pool_from_settled_readings`), whoever read it: any reading is an
  -- upper bound of what is left. A call settled without one of a window not yet ended may
  -- have been counted unread (as the slots' drop-outs, quota.lua).
  if exhausted == 1 then
    s.mr = 0
  elseif h_rem >= 0 and not (h_reset > 0 and h_reset <= now) then
    local floor = h_rem - unread_since(g_at, g_slot)
    s.mr = math.min(s.mr or floor, floor)
  elseif landed and g_cost > 0 and not no_response then
    s.un = (s.un or 0) + g_cost
    s.uu = s.uu or {0, 0, 0, 0, 0}
    s.uu[(s.fl_at % 5) + 1] = s.uu[(s.fl_at % 5) + 1] + g_cost
    if s.mr then s.mr = math.max(0, s.mr - g_cost) end
  end
  block_to(math.max(block_abs, (block_ms > 0) and (now + block_ms) or 0))
  if not current_lease() then
    -- A stale holder's headers may describe quota it no longer owns: only its block counts.
    status = 3
  elseif gwin == s.win and not (h_reset > 0 and h_reset <= now) then
    if h_limit > 0 then s.limit = h_limit end
    -- A later reset is always taken: upstream's window began at its first call's arrival,
    -- after this one's first grant, and its header (whole seconds) is late by that and the
    -- rounding. Kept (within 2 s, as it was), the window rolled here while upstream's had
    -- up to 2 s to go, and what was granted then was spent in the old, spent window. An
    -- earlier one only past 2 s (the rounding of an unmoved reset).
    if h_reset > s.reset_at or (h_reset > 0 and s.reset_at - h_reset > 2000) then
      -- Earlier than a holder may have been told (a window from its last call, if none
      -- was anchored then): see what is kept held at a new window.
      local told = (s.reset_at > 0) and s.reset_at or (now + s.window)
      if h_reset < told then s.moved = 1 end
      s.reset_at = h_reset
    end
    if h_rem >= 0 then
      local gl, flight = g_ledger, g_flight
      if gl <= 0 then gl, flight = s.ledger, in_flight() end
      -- Not counted in the reading, maybe: calls granted after this one, and calls granted
      -- before it that were still in flight when it was granted (it may have overtaken them).
      local left = h_rem - (s.ledger - gl) - flight - s.reserved - s.held
      -- A reading without a grant has no place in the grant order (it may have been read
      -- upstream before calls already counted): it may lower the pool, never raise it.
      if g_ledger > 0 and gl >= s.applied then
        s.pool = math.max(0, math.min(left, s.limit))
        s.applied = gl
      else
        s.pool = math.max(0, math.min(s.pool, left))
      end
      cap_rebuilt()
    end
    if exhausted == 1 then s.pool = 0 end
    -- Nothing left upstream until the reset: a reservation or an express lane would spend
    -- into rejections (and risk a ban), so the resource blocks until then, on every node.
    if exhausted == 1 or h_rem == 0 then
      -- With no reset known (no header, no grant yet in this window), the window upstream
      -- began no later than now: it resets a window from now at the latest. Without this,
      -- nothing would ever roll the window, and the empty pool would stay empty for good.
      if s.reset_at == 0 then s.reset_at = now + s.window end
      local until_ = (h_reset > now) and h_reset or s.reset_at
      if until_ > now then block_to(until_) end
    end
  end
  pool_from_settled_readings()
elseif op == 'block' then
  local block_ms = tonumber(ARGV[16])
  block_to(now + block_ms)
  current_lease()
elseif op == 'leave' then
  -- With shared rules (ARGV 16 due, 17 the rules, 18 the log): a process owed a report of
  -- lost counts leaves it, merged now. Gone unreported, it was only dropped from those the
  -- rebuild waits for, and its grants were missing from the counts.
  -- The counts evicted since (a merge would write them back and hide it): seen first.
  if n_args >= 18 and pace_counts_gone(redis.call('HGET', K_P, 'x')) then pace_counts_lost() end
  if n_args >= 18 and report_owed(ARGV[16] == '1') then
    if not pace_merge(ARGV[17], ARGV[18], lost_lease()) then
      return redis.error_reply('resilience-redis: a shared-rule report that does not match '
        .. 'the rules sent with it (builds differ?)')
    end
    pace_reported(node)
  end
  if current_lease() then
    lease.hold = 0
    retire(node, lease)
    lease = nil
  else
    status = 3
  end
elseif op == 'snap' then
  current_lease()
else
  return redis.error_reply('resilience-redis: unknown op ' .. tostring(op))
end

-- The caller's lease record holds this reply's counter (the rollback check, quota.lua):
-- every reply whose counter the caller may keep, while the record exists.
if lease then
  lease.ops = s.ops
  redis.call('HSET', K_L, node, encode(lease))
else
  local l = decode(redis.call('HGET', K_L, node))
  if l then
    l.ops = s.ops
    redis.call('HSET', K_L, node, encode(l))
  end
end
cap_rebuilt()
redis.call('SET', K_Q, cmsgpack.pack(s))

return {status, reason, wait, lease and lease.epoch or ended_lease, s.win, s.ledger, from_res,
  lease and lease.reserved or 0, s.pool, s.limit, s.reset_at, now, s.members, s.ops,
  s.block_until, fresh, s.held, s.reserved, s.window, lease and (lease.exp - now) or 0,
  in_flight(), s.fl_at, s.sm and 1 or 0, s.id}
