-- resilience-redis: one atomic step of the shared quota (G7). Called by hash (EVALSHA).
--
-- KEYS (one hash tag, so one cluster slot): 1 state (a MessagePack string), 2 leases hash,
-- 3 lease expiry zset, 4 held hash (reservations of expired degraded leases), 5 rejoined set
-- (rebuild only).
-- ARGV: 1 op, 2 node, 3 epoch, 4 ttl_ms, 5 hold (the most of its reservation the node may
-- spend before reporting it: all in degraded mode, the express allowance, or 0), 6 limit,
-- 7 window_ms, 8 reserve share (per mille), 9 reserve max, 10 view reset_at, 11 view pool,
-- 12 view members, 13 offline or express spending to report, 14 local reservation (what
-- the node still holds, for a rebuild), 15 channel, 16.. per op (acq: cost, priority index,
-- yield ms; rel: cost, window, from reserve, ledger, granted ms, slot; obs: ledger, limit,
-- remaining, reset, block ms, exhausted, window, reset after, block until, granted ms, in
-- flight, cost, slot, backoff (0 none, 1 a secondary limit without retry-after: block ms is
-- the first block of a run, 2 a good response), backoff cap ms);
-- then, whatever the op (the last `TAIL`, read from the end): '1' if the caller's newest
-- reply was in G4 sequential mode, '1' if the caller can spend
-- nothing more from the lease it names (its own deadline for it had passed when it sent the
-- call: the report is its last word on an ended lease, `take_held`), the ids of the states the caller has
-- seen replaced (comma-separated, '' none), the counter (`ops`) of the caller's
-- newest reply, the id of the state it came from (0: none yet), the width of an in-flight
-- slot (a quarter of the call bound; the state's slots widen to the widest), and keep, the node's
-- express allowance (the most its lane may have spent without reporting).
-- An acquire may carry the resource's shared G8 pacing rules after its own arguments (see
-- pacing.lua, concatenated after this part, then quota_ops.lua, into one script).
-- Time is the server's (TIME), in ms. Every count is an integer < 2^53.

local K_Q, K_L, K_E, K_H, K_R = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local op, node = ARGV[1], ARGV[2]
local epoch = tonumber(ARGV[3])
local ttl, hold_cap = tonumber(ARGV[4]), tonumber(ARGV[5])
local a_limit, a_window = tonumber(ARGV[6]), tonumber(ARGV[7])
local share, rmax = tonumber(ARGV[8]), tonumber(ARGV[9])
local v_reset, v_pool, v_members = tonumber(ARGV[10]), tonumber(ARGV[11]), tonumber(ARGV[12])
local spent_off, local_res = tonumber(ARGV[13]), tonumber(ARGV[14])
local channel = ARGV[15]
local keep = tonumber(ARGV[#ARGV])
local a_slot = tonumber(ARGV[#ARGV - 1])
local v_state = tonumber(ARGV[#ARGV - 2])
local v_ops = tonumber(ARGV[#ARGV - 3])
local v_gone = ARGV[#ARGV - 4]
local v_final = ARGV[#ARGV - 5] == '1'
local v_sequential = ARGV[#ARGV - 6] == '1'
-- The op's own arguments end here (they start at 16).
local TAIL = 7
local n_args = #ARGV - TAIL

-- The layout of the state, leases and arguments this script speaks. Builds that speak
-- another must not share a prefix: each would read the other's leases wrongly.
local PROTO = 17

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local now_us = tonumber(t[1]) * 1000000 + tonumber(t[2])

-- The state is one string, a MessagePack map (the fields are those of a new state, below):
-- one GET and one SET a call, and no per-field conversions in Lua. As a hash (protocol 4 and
-- older), its HMGET, parsing and HSET of changed fields took about 40% of a call's Redis time.
local s = {}
local raw = redis.pcall('GET', K_Q)
local function mismatch(held, why)
  return redis.error_reply(string.format('resilience-redis: protocol mismatch: %s holds '
    .. '%s state, this build speaks %d (%s); stop the other build or use another '
    .. 'prefix', K_Q, held, PROTO, why))
end
if type(raw) == 'table' then
  -- WRONGTYPE: a hash, as builds before protocol 5 kept it.
  return mismatch('protocol 4 or older', 'older build')
end
if raw then
  local ok, v = pcall(cmsgpack.unpack, raw)
  if not ok or type(v) ~= 'table' then return mismatch('unreadable', 'not this format') end
  s = v
  if s.proto ~= PROTO then
    return mismatch('protocol ' .. tostring(s.proto), 'builds differ')
  end
  -- Behind a reply the caller already had from it: this state rolled back (a failover to
  -- a replica that missed the last writes, a restore of an older copy). Its pool and
  -- leases are older than what was granted since: it is lost as a whole, and rebuilt from
  -- the processes' views as after a data loss (a new id: every lease of it reads as lost).
  -- Told by the state's counter, and by the caller's lease record, which holds the counter
  -- of the caller's last reply (only its own calls move it: other processes' calls since
  -- the rollback may have moved the state's past the caller's).
  -- A state the caller has seen replaced by another came back (a restore of an older copy):
  -- lost too. Spent on (as it was), it granted its quota again.
  local behind = false
  if v_state == s.id then
    local o = tonumber(string.match(redis.call('HGET', K_L, node) or '', ':(%d+)$'))
    -- A lease this state never issued (epochs come from its `seq` alone) is one of the lost
    -- writes too: a caller that joined after the copy has no record in it.
    behind = v_ops > s.ops or (o ~= nil and v_ops > o) or epoch > s.seq
  end
  -- Whatever state the call names (a stale call, made for a grant of a replaced state, names
  -- that one, with the newer state's counter).
  if not behind and v_gone ~= '' then
    behind = string.find(',' .. v_gone .. ',', string.format(',%d,', s.id), 1, true) ~= nil
  end
  if behind then s = {} end
end

-- A missing state is a first use, or a Redis that lost its data. A node that knew a live
-- window rebuilds it conservatively: the lowest pool any node saw, pool closed until every
-- node it knew has rejoined or one lease TTL has passed.
if not s.limit then
  local base = now * 1000
  s = {limit = a_limit, window = a_window, pool = a_limit, reset_at = 0, win = base,
    ledger = 0, applied = 0, block_until = 0, seq = base, ops = base, reserved = 0, held = 0,
    recover_until = 0, expect = 0, rebuilt = 0, starved = 0, members = 0, next_reap = 0,
    proto = PROTO, yield0 = 0, yield1 = 0, fl_at = 0, fl0 = 0, fl1 = 0, fl2 = 0, fl3 = 0,
    fl4 = 0, fc = {0, 0, 0, 0, 0}, slot_ms = math.max(1, a_slot), born = now, strikes = 0, moved = 0,
    cw = 0, id = now_us}
  -- Leases and held shares left by a lost state (its key alone evicted) are of no use to
  -- this one, which counts none of them: reaped, they would fill its pool.
  redis.call('DEL', K_L, K_E, K_H, K_R)
  if v_reset > now then
    s.reset_at = v_reset
    s.pool = math.max(0, math.min(v_pool, a_limit))
    s.recover_until = now + ttl
    s.expect = v_members
    -- Rebuilt from this view (`join`, `cap_rebuilt`).
    s.rebuilt, s.pool_rebuilt, s.vmin = s.win, s.win, v_pool
  end
end
s.ops = s.ops + 1

-- A caller whose newest reply came from another state holds a lease of a state Redis has
-- lost (a failover to an empty replica, a restart without persistence). Told by the state's
-- id, not by its clock: a new state on a host whose clock is behind the old one's counts its
-- epochs from a lower base, and such a lease could pass for one of its own. Epoch 1 is below
-- every state's base, so every test below reads it as a lease of a lost state (never the
-- caller's current one). Its grants' times and slots are the lost state's too (`land`).
local other_state = v_state ~= s.id
if epoch > 0 and other_state then epoch = 1 end
-- A caller that knew a lost state brings its G4 sequential mode: the cascade's limits did
-- not end with the data. Forgotten (as it was), every process went back
-- to calls side by side into limits still in force. Not from a view of a window that has
-- ended (that state's roll would have cleared it), and published as the
-- detector does, so the express lanes shut. (Its G6 block a process sends itself when it
-- rejoins, tasks.rs.)
if other_state and v_state ~= 0 and v_sequential and not s.sm
    and (v_reset == 0 or v_reset > now) then
  s.sm, s.cgood = true, nil
  redis.call('PUBLISH', channel, 'b')
end

local function d(x) return string.format('%d', x) end

-- What this state took from its pool itself (grants, reservations, held shares, net of
-- what came back), in the window it was born in: after a data loss, the pool of that
-- window never exceeds the lowest view a process of the lost state brought back (`vmin`)
-- less that (`cap_rebuilt`, at the end of every call). Readings cannot raise it past that:
-- they do not count the reservations of processes not back yet, which those adopt. Cut by
-- `limit - pool`, a reading or a limit header between two views
-- undid the later one's cut, and a cut past empty was forgotten. The
-- cost: until the window ends, quota the lowest view did not see (reserved by a process
-- that never comes back, returned after that view was taken) stays unused. Lifted on a
-- reading once every process was back, it overspent whichever way
-- "every process" was told: not lifted. Applied at every
-- credit to the pool, not only at the end of the call: quota put back earlier in a call (a
-- lease reaped at its start) was spent by the same call.
local function cap_rebuilt()
  -- (`vmin` is set only in the window the state was born in, and cleared at its roll.)
  if s.vmin then
    s.pool = math.max(0, math.min(s.pool, s.vmin - (s.took or 0)))
  end
end
local function took(n)
  -- Only the window the state was born in is ever rebuilt.
  if s.win ~= s.born * 1000 then return end
  s.took = (s.took or 0) + n
  if n < 0 then cap_rebuilt() end
end

-- Units granted and not yet settled (observed or released), in five slots by grant time
-- (slot `i` holds slot number i mod 5): a reading must not count them as left, because
-- their calls may not have reached the API yet. A unit nobody settles (a dropped grant, a
-- dead process, an express report) drops out after four to five slots: the call bound.
-- They survive a window's reset: a call granted before it may be counted after it.
-- The slot width is the state's (the longest call bound of its users, below), so processes
-- configured differently still number slots alike; a grant records its slot number, so a
-- server clock stepped back cannot make it settle another slot's units.
-- Beside the units, the same slots count the *calls* the script granted (`fc`, one array:
-- slot i at fc[i + 1]), whatever they cost (a conditional request costs 0): the shared
-- concurrency cap and the shared G4 sequential mode count those.
-- The same slots count the units settled unread, by when (`uu`, as `fc`): a call answered
-- without a reading, or dropped out unsettled, may have been counted upstream after any
-- call granted before it settled (`unread_since`, quota_ops.lua). Absent while all are 0
-- (the usual case: the state is packed at every call). Units settled unread count in this
-- window's `un`, in their slot's, and come off the window's floor (`mr`: they may have
-- arrived after the reading it was set by). (Written out here and in quota_ops.lua, not
-- as a function: a script's functions are made anew at every call.)
local slot_now = math.floor(now / s.slot_ms)
if slot_now > s.fl_at then
  local dropped = 0
  for k = s.fl_at + 1, math.min(slot_now, s.fl_at + 5) do
    dropped = dropped + s['fl' .. (k % 5)]
    s['fl' .. (k % 5)] = 0
    s.fc[(k % 5) + 1] = 0
    if s.uu then s.uu[(k % 5) + 1] = 0 end
  end
  s.fl_at = slot_now
  if s.uu and s.uu[1] + s.uu[2] + s.uu[3] + s.uu[4] + s.uu[5] == 0 then s.uu = nil end
  -- Dropped out unsettled: the calls may have been counted upstream, unread.
  if dropped > 0 then
    s.un = (s.un or 0) + dropped
    s.uu = s.uu or {0, 0, 0, 0, 0}
    s.uu[(slot_now % 5) + 1] = s.uu[(slot_now % 5) + 1] + dropped
    if s.mr then s.mr = math.max(0, s.mr - dropped) end
  end
end
-- A process whose call bound is longer than the one the slots were cut for: its calls may
-- be on their way for longer than they would count. The slots widen to its width (never
-- narrow): what they still count (advanced first: widened before, the slots that had
-- dropped out counted again) moves into the current slot, which counts
-- it for a whole (longer) call bound from now, and a grant made before (`slot_since`)
-- settles nothing (its slot number is of the old width): it drops out instead. Kept at the
-- first caller's width (as they were), a cap of 2 let a third call go
-- while 2 were on their way.
if a_slot > s.slot_ms then
  local units = s.fl0 + s.fl1 + s.fl2 + s.fl3 + s.fl4
  local calls = s.fc[1] + s.fc[2] + s.fc[3] + s.fc[4] + s.fc[5]
  local uu = s.uu or {0, 0, 0, 0, 0}
  local un = uu[1] + uu[2] + uu[3] + uu[4] + uu[5]
  s.slot_ms, s.slot_since = a_slot, now
  s.fl_at = math.floor(now / a_slot)
  s.fl0, s.fl1, s.fl2, s.fl3, s.fl4, s.fc = 0, 0, 0, 0, 0, {0, 0, 0, 0, 0}
  s['fl' .. (s.fl_at % 5)] = units
  s.fc[(s.fl_at % 5) + 1] = calls
  if un > 0 then
    s.uu = {0, 0, 0, 0, 0}
    s.uu[(s.fl_at % 5) + 1] = un
  else
    s.uu = nil
  end
end

local function in_flight()
  return s.fl0 + s.fl1 + s.fl2 + s.fl3 + s.fl4
end

local function calls_in_flight()
  local c = s.fc
  return c[1] + c[2] + c[3] + c[4] + c[5]
end

-- The ms until fewer than `cap` calls are in flight, if none is settled: the oldest slots
-- drop out after the call bound.
local function calls_wait(cap)
  local left, w = calls_in_flight(), s.slot_ms
  for k = s.fl_at - 4, s.fl_at do
    left = left - s.fc[(k % 5) + 1]
    if left < cap then
      w = (k + 5) * s.slot_ms - now
      break
    end
  end
  return math.max(1, w)
end

-- Counts `n` units as granted now (the current slot, even if the server's clock stepped back).
local function fly(n)
  local f = 'fl' .. (s.fl_at % 5)
  s[f] = s[f] + n
end

-- Counts a call the script granted now (with its units, `fly`).
local function fly_call()
  local i = (s.fl_at % 5) + 1
  s.fc[i] = s.fc[i] + 1
end

-- Settles `n` units granted at `at` (server ms; 0: unknown, left to drop out) and counted
-- in slot `k`. Returns whether they were still counted as in flight. A grant of a state Redis has
-- since lost settles nothing: its units are not here (the client sends no time for a grant
-- of another state than its newest reply's; one made before this state was born is too).
local function land(n, at, k)
  if other_state or at <= 0 or at < s.born or at < (s.slot_since or 0) then return false end
  if k > s.fl_at or k <= s.fl_at - 5 then return false end
  local f = 'fl' .. (k % 5)
  if s[f] < n then return false end
  s[f] = s[f] - n
  -- Only the script's grants carry a grant time: this was one call.
  local c = (k % 5) + 1
  if s.fc[c] > 0 then s.fc[c] = s.fc[c] - 1 end
  -- A waiter refused by the shared concurrency cap (pacing.lua) waits for this.
  if s.cw == 1 then
    redis.call('PUBLISH', channel, 'q')
    s.cw = 0
  end
  return true
end

local function publish()
  if s.starved == 1 then
    redis.call('PUBLISH', channel, 'q')
    s.starved = 0
  end
end

-- Within a window upstream's count only falls: a reading is an upper bound of what is left,
-- and counts every call answered with a reading (one counted after the call it was read on
-- would have read lower) and every call settled before its own was granted. The window's
-- floor (`mr`) is the lowest reading less what it may not count of the calls settled unread
-- (`unread_since`, and each settled unread since). So the pool is at least the floor less
-- the calls still in flight and what is reserved or held. Each grant's reading counts the
-- calls granted before it and in flight then as not yet counted (they may arrive after it);
-- when they arrived first that counted them twice, for good: a pool emptied that way stayed
-- empty until the reset, with nothing in flight whose reading could correct it. Not for a
-- state younger than a call bound (calls granted in a state Redis lost are in nobody's
-- count), nor while it rebuilds.
local function pool_from_settled_readings()
  if not s.mr or s.recover_until > 0 or now < s.born + 5 * s.slot_ms then return end
  local left = math.min(s.limit, s.mr) - in_flight() - s.reserved - s.held
  if left > s.pool then
    s.pool = left
    cap_rebuilt()
    publish()
  end
end

-- A held share: `h` units, and until when (server ms) its holder may spend from it offline.
local function held_at(hk)
  local h, u = string.match(redis.call('HGET', K_H, hk) or '', '^(%d+):?(%d*)$')
  if not h then return nil end
  return tonumber(h), tonumber(u) or 0
end

-- Holds `h` more under `hk` until `u`, beside what is held there already (a lease retired
-- while its share from a roll waits, a rejoin's rest): each counted once in `s.held`, so
-- the hash must count both (overwritten, `s.held` stayed above the hash for good).
local function hold_add(hk, h, u)
  local oh, ou = held_at(hk)
  if oh then h, u = h + oh, math.max(u, ou) end
  redis.call('HSET', K_H, hk, d(h) .. ':' .. d(u))
end

-- Raises the block; `b` tells every process to stop paying from its reservation without
-- asking (the express lane) until a reply says how long the block lasts.
local function block_to(until_)
  -- Capped at a day (or a window, if longer): a far-future date from upstream must not stop
  -- the resource for good; a longer block is met again and set again.
  until_ = math.min(until_, now + math.max(s.window, 86400000))
  if until_ > s.block_until then
    s.block_until = until_
    redis.call('PUBLISH', channel, 'b')
  end
end

-- Settles the offline or express spending the caller reports: it leaves the reservation,
-- and counts as granted (readings taken before it will be reconciled against it).
-- What the reservation cannot cover was reported after the window rolled (every
-- reservation is 0 then; the server never pays its own acquires from the last `keep`). It may
-- have been spent after the window's real end (another node's headers can move the reset
-- earlier than this node knew), so up to `keep` of it counts against the new window: at
-- worst that wastes quota spent in the old one, never spends a unit twice.
local function settle_report(l)
  local cut = math.min(spent_off, l.reserved)
  l.reserved = l.reserved - cut
  s.reserved = s.reserved - cut
  s.ledger = s.ledger + cut
  -- Held for this node past a reset earlier than it was told (the roll, below: under this
  -- lease) or at its rejoin (`take_held`: under 'r', for the lease before this one): the
  -- report is paid from it. The rest returns once nothing more can be spent from it
  -- offline: the rejoin's once the caller names this lease (it has heard of it); the
  -- roll's once this lease would have expired as its holder last heard, or at its leave
  -- (the holder stopped spending before it sent it; kept, it stayed held until the window
  -- ended). Returned at the first call naming the lease (as it was), a
  -- lost reply left the holder spending its old reservation offline, and its report found
  -- nothing to pay it from (spent twice). (A report of the older lease
  -- still on its way is paid below, as any late one.)
  if s.held > 0 then
    for _, hk in ipairs({node .. ':' .. d(l.epoch), node .. ':r'}) do
      local h, u = held_at(hk)
      if h then
        local paid = math.min(h, spent_off - cut)
        s.held, s.ledger, cut, h = s.held - paid, s.ledger + paid, cut + paid, h - paid
        local named = epoch == l.epoch
        -- The roll's share waits, past `u`, for a call sent after its caller saw a reply
        -- judged after the roll too (`v_ops`, ≥ `roll_ops`): a call sent before the caller
        -- was cut off, judged late, carries none of what it spent offline from its old
        -- reservation since (returned then, that report found nothing to pay it from).
        local seen = v_ops >= (s.roll_ops or 0)
        if named and ((now >= u and seen) or hk == node .. ':r' or op == 'leave') then
          s.held, s.pool = s.held - h, s.pool + h
          took(-h)
          redis.call('HDEL', K_H, hk)
          publish()
        elseif h == 0 then
          redis.call('HDEL', K_H, hk)
        else
          redis.call('HSET', K_H, hk, d(h) .. ':' .. d(u))
        end
      end
    end
  end
  local late = math.min(spent_off - cut, keep, s.pool)
  s.pool = s.pool - late
  took(late)
  s.ledger = s.ledger + late
  -- Their calls may still be on their way; nothing names them to settle them later.
  fly(cut + late)
end

-- A lease: epoch, reservation, the window it belongs to, hold (the most its holder may
-- have spent without reporting: all of it in degraded mode, the express allowance, or 0),
-- expiry (server ms), and the state's counter (`ops`) in the holder's last reply (the
-- rollback check, above).
local function decode(v)
  if not v then return nil end
  local e, r, w, o, x, c = string.match(v, '^(%d+):(%d+):(%d+):(%d+):(%d+):(%d+)$')
  if not e then return nil end
  local l = {epoch = tonumber(e), reserved = tonumber(r), win = tonumber(w), hold = tonumber(o),
    exp = tonumber(x), ops = tonumber(c)}
  l.raw = v
  return l
end

local function encode(l)
  return string.format('%d:%d:%d:%d:%d:%d', l.epoch, l.reserved, l.win, l.hold, l.exp, l.ops)
end

-- Renews a lease. Within the last sixteenth of a TTL the renewal is skipped (one write
-- less on the hot path); the reply says how long the lease really has left.
local function renew(n, l)
  if now + ttl - l.exp > ttl / 16 then
    l.exp = now + ttl
    redis.call('ZADD', K_E, d(l.exp), n)
  end
end

-- Ends a lease: its reservation goes back to the pool, except what the holder may have
-- spent without reporting (its hold); that is held until the holder reports what it
-- spent, or the window ends. A lease ended live (before it expired) may still be spent
-- from offline until it would have: a report is taken only after that (`take_held`).
local function retire(n, l)
  if l.win == s.win and l.reserved > 0 then
    local hold = math.min(l.hold, l.reserved)
    s.reserved = s.reserved - l.reserved
    if hold > 0 then
      -- With the lease's expiry, reaped or not: spending from it may have gone on until
      -- then (past a reset earlier than told too: the roll keeps what may have).
      hold_add(n .. ':' .. d(l.epoch), hold, l.exp)
      s.held = s.held + hold
    end
    if l.reserved > hold then
      s.pool = s.pool + l.reserved - hold
      took(hold - l.reserved)
      publish()
    end
  end
  -- Gone (left, reaped or refused): the rebuild of evicted rule counts no longer waits for
  -- its report (pacing.lua); it is still asked for one if it comes back.
  if s.pl then
    s.pl[n] = nil
    -- The last one owed: the gate ends, and the waiters it refused wake (a refusal at the
    -- gate marked them).
    if next(s.pl) == nil then
      s.pl, s.pl_until = nil, nil
      publish()
    end
  end
  redis.call('HDEL', K_L, n)
  redis.call('ZREM', K_E, n)
  s.members = math.max(0, s.members - 1)
end

-- A new window: every reservation and held share belonged to the old one. But if the reset
-- came earlier than some holder was told (a reset header moved it), that holder may go on
-- spending what it may spend unreported (its hold: all of its reservation in degraded mode,
-- the express allowance) past the real reset, in this window: that much stays held in
-- this window, in the held hash under the holder's lease, until the holder's report
-- settles it (`settle_report`, `take_held`) or the window ends. Not returned once the lease
-- would have expired: a holder cut off until then stops spending, but reports only after.
if s.reset_at > 0 and now >= s.reset_at then
  local moved = s.moved == 1
  -- Spending may have gone past the real reset (this one) until a lease would have expired,
  -- even one that has by now: the roll comes with the first call after the reset.
  local reset = s.reset_at
  s.pool, s.reset_at, s.win, s.ledger, s.applied = s.limit, 0, s.win + 1, 0, 0
  s.reserved, s.held, s.recover_until, s.expect, s.moved = 0, 0, 0, 0, 0
  s.took, s.vmin = nil, nil
  s.un0, s.un, s.mr = s.un, nil, nil
  -- A reply carrying this counter or a later one is judged after the roll (`settle_report`).
  s.roll_ops = s.ops
  -- G4: the limit that started a cascade has cleared with the window.
  s.sm, s.cgood, s.cz = nil, nil, nil
  -- An ended lease (expired, refused: quota_ops.lua, or left behind at a rejoin: 'r') may
  -- have been spent from offline until it would have expired, past the real reset too: its
  -- held share is kept held in this window, in the held hash, until its holder's report
  -- settles it (`take_held`, `settle_report`).
  -- By key: a live lease may have a share here from an earlier roll too (both count).
  local live, order = {}, {}
  local function keep_live(k, h, u)
    if live[k] then
      live[k] = {live[k][1] + h, math.max(live[k][2], u)}
    else
      live[k] = {h, u}
      order[#order + 1] = k
    end
  end
  if moved then
    local hs = redis.call('HGETALL', K_H)
    for i = 1, #hs, 2 do
      local h, u = string.match(hs[i + 1], '^(%d+):(%d+)$')
      if h and tonumber(u) > reset then keep_live(hs[i], tonumber(h), tonumber(u)) end
    end
  end
  redis.call('DEL', K_H, K_R)
  local all = redis.call('HGETALL', K_L)
  for i = 1, #all, 2 do
    local l = decode(all[i + 1])
    if l then
      local c = math.min(l.hold, l.reserved)
      if moved and c > 0 and l.exp > reset and l.win == s.win - 1 then
        keep_live(all[i] .. ':' .. d(l.epoch), c, l.exp)
      end
      l.reserved, l.win = 0, s.win
      redis.call('HSET', K_L, all[i], encode(l))
    end
  end
  local kept = 0
  for _, k in ipairs(order) do
    local h = math.min(live[k][1], s.limit - kept)
    if h > 0 then
      redis.call('HSET', K_H, k, d(h) .. ':' .. d(live[k][2]))
      kept = kept + h
    end
  end
  -- Calls granted in the old window and not yet settled may reach upstream after its reset,
  -- and count in this window there: out of its pool until a reading counts them (a call
  -- granted a moment before the reset, the herd woken at it taking the whole pool, was one
  -- too many).
  -- (A pool too small for the asks is anchored at its first refusal: quota_ops.lua.)
  s.pool, s.held = math.max(0, s.limit - kept - in_flight()), kept
  publish()
end
if s.recover_until > 0 and now >= s.recover_until then s.recover_until = 0 end
local recovering = s.recover_until > 0

-- Reap a bounded number of expired leases, at most every 50 ms (late reaping only keeps a
-- reservation out of the pool a little longer).
if now >= s.next_reap then
  s.next_reap = now + 50
  local dead = redis.call('ZRANGEBYSCORE', K_E, '-inf', d(now), 'LIMIT', 0, 16)
  for _, n in ipairs(dead) do
    local l = decode(redis.call('HGET', K_L, n))
    if l then retire(n, l) else redis.call('ZREM', K_E, n) end
  end
  if #dead == 16 then s.next_reap = now end
end

local lease = nil
local fresh = 0
-- The caller has the shared rules (set in quota_ops.lua). Back from a state Redis lost, it
-- starts the rebuild (nothing granted until the processes it knew have rejoined, each
-- through its report) even if the quota window it knew has ended: the rule windows need
-- not have. Started only on a live quota window (as it was), the first
-- process back was judged without the others' reports.
local paced_caller = false

-- Settles what the caller's ended lease (`epoch`) holds back with the report its call
-- carries; whether it held anything. What the report says was spent leaves the held share
-- at once (granted, and maybe still in flight). The rest returns to the pool once nothing
-- more can be spent from it offline (a lease ended live: once it would have expired), less
-- `keep`: another call of the old lease, sent before the last express spending, can reach
-- us first. `rejoin`: the holder is starting a new lease. Until it names that lease it may
-- not have heard of it (its reply lost) and go on spending from the old one: the rest is
-- kept for the node ('r'), where a report under either lease finds it (`settle_report`
-- returns it once the new lease is named). Carried with no holder named and returned when
-- the old lease would have expired (as it was), a holder cut off until then reported after,
-- and its spending came on top of a whole pool.
local function take_held(rejoin)
  -- Both shares may be there (a lease ended after a rejoin whose rest is still kept): the
  -- report is paid from the lease's, then the node's. Paid from one only (as it was), the
  -- rest of a report went unpaid.
  local found = {}
  for _, hk in ipairs({node .. ':' .. d(epoch), node .. ':r'}) do
    local h, u = held_at(hk)
    if h then
      found[#found + 1] = {hk, h, u}
      redis.call('HDEL', K_H, hk)
    end
  end
  if #found == 0 then return false end
  -- `keep` is held back once: the node's express lane spends at most that unreported, from
  -- whichever lease (held back per share, as it was, the pool stayed lower for nothing).
  local rest, withheld = spent_off, keep
  for _, e in ipairs(found) do
    local hk, h, live_until = e[1], e[2], e[3]
    local spent = math.min(h, rest)
    rest, h = rest - spent, h - spent
    s.held = s.held - spent
    s.ledger = s.ledger + spent
    fly(spent)
    -- Kept while the holder may still spend from it, or may have when it sent this call
    -- (a call sent before it went offline, judged after the lease's expiry, carries only
    -- the report taken then; returned at once, as it was, the spending after it came on
    -- top of the pool: 118 of 100).
    if h > 0 and (now < live_until or not v_final) then
      hold_add(rejoin and (node .. ':r') or hk, h, live_until)
    else
      local w = math.min(h, withheld)
      withheld = withheld - w
      s.held = s.held - h
      s.pool = s.pool + h - w
      took(w - h)
      publish()
    end
  end
  -- More than was held: spent after the window rolled, as in `settle_report`.
  local late = math.min(rest, keep, s.pool)
  s.pool = s.pool - late
  took(late)
  s.ledger = s.ledger + late
  fly(late)
  return true
end

-- Renews the caller's lease, or settles its old epoch and starts a new one (a new epoch).
-- A lease newer than the caller's epoch is the caller's own (node names are per process):
-- a call sent before it heard of its new lease. It keeps that lease; retiring it would
-- start another per call in flight, each holding back a share.
local function join()
  local l = decode(redis.call('HGET', K_L, node))
  if l and epoch > 0 and l.epoch >= epoch then
    if l.win ~= s.win then l.reserved, l.win = 0, s.win end
    settle_report(l)
    lease = l
  else
    if l then retire(node, l) end
    local adopt = 0
    if epoch > 0 then
      -- Only a lease of the lost state rebuilds or rejoins a rebuild: one of this state that
      -- expired had its reservation returned here (keeping it again would count it twice).
      local live = v_reset > now
      if not take_held(true) and (live or paced_caller)
          and redis.call('SISMEMBER', K_R, node) == 0
          and epoch < s.born * 1000 and (s.rebuilt == s.win or s.win == s.born * 1000) then
        if s.rebuilt ~= s.win then
          -- A lease of a state Redis has lost, and a view of a live window (or the shared
          -- rules, `paced_caller`), while the state that replaced it was made by a node
          -- that knew none (it joined before the window's first grant and heard nothing
          -- since, or is new): rebuild now. The pool stays closed until the nodes it knew
          -- have rejoined (the nodes already here count as rejoined).
          s.rebuilt = s.win
          s.recover_until, recovering = now + ttl, true
          s.expect = v_members
          local here = redis.call('HKEYS', K_L)
          for _, n in ipairs(here) do redis.call('SADD', K_R, n) end
        end
        -- (A view of a quota window that has ended says nothing of this one's.)
        if live then
          -- Rebuild. What this state has taken from its pool the node could not have
          -- seen: it counts against the pool the node saw (`cap_rebuilt`). Any node's view
          -- of a live window may be the newest one (a node that read a reset header the
          -- rebuilder never heard of names another reset): the lowest counts. Subtracted
          -- for the first view only (as it was), a lower view after it,
          -- or a first one after a rebuild started by a view whose window had ended, spent
          -- this state's grants again.
          s.vmin = math.min(s.vmin or v_pool, v_pool)
          if s.pool_rebuilt ~= s.win then
            -- The window ends no later than the first node back knew.
            if s.reset_at == 0 or v_reset < s.reset_at then
              s.reset_at, s.moved = v_reset, 1
            end
            s.pool_rebuilt = s.win
          end
          cap_rebuilt()
          -- The node keeps what it still holds (already outside every pool it saw), if its
          -- view is of the rebuilt window.
          -- Not one whose lease had expired as its holder knew (`v_final`): the lost
          -- state may have reaped it and put it back in the pool the views saw (adopted,
          -- as it was, it was counted twice).
          if v_reset == s.reset_at and not v_final then adopt = math.max(0, local_res) end
          -- What it spent offline came from its reservation, outside every pool: granted,
          -- and maybe still in flight.
          s.ledger = s.ledger + spent_off
          fly(spent_off)
        end
      end
    end
    -- Only a process that held a lease of the lost state counts as back: a new one (epoch 0)
    -- has nothing to report, and counted, it would open the pool before those that have.
    if s.rebuilt == s.win and epoch > 0 and epoch < s.born * 1000 then
      redis.call('SADD', K_R, node)
      s.expect = math.max(s.expect, v_members)
      if recovering and redis.call('SCARD', K_R) >= s.expect then
        s.recover_until, recovering = 0, false
      end
    end
    s.seq = s.seq + 1
    l = {epoch = s.seq, reserved = adopt, win = s.win, hold = hold_cap, exp = 0, ops = 0}
    s.reserved = s.reserved + adopt
    s.members = s.members + 1
    fresh = 1
    lease = l
  end
  lease.hold = hold_cap
  renew(node, lease)
end

-- Tops the caller's reservation up to its share of the pool (never while rebuilding).
local function top_up()
  if recovering or share <= 0 then return end
  local members = math.max(1, s.members)
  local target = math.min(rmax, math.floor(s.pool * share / 1000 / members))
  if lease.reserved * 2 < target then
    local take = math.min(target - lease.reserved, s.pool)
    lease.reserved = lease.reserved + take
    s.pool = s.pool - take
    took(take)
    s.reserved = s.reserved + take
  end
end

-- Reply: status, reason, wait_ms, epoch, win, ledger, from_reserve, reserved, pool, limit,
-- reset_at, now, members, ops, block_until, fresh, held, reserved total, window, lease
-- left, in flight (after the op: an acquire's grant included), the in-flight slot number,
-- sequential mode, the state's id.
local status, reason, wait, from_res = 0, 0, 0, 0

local function current_lease()
  local l = decode(redis.call('HGET', K_L, node))
  if l and l.epoch == epoch and epoch > 0 then
    if l.win ~= s.win then l.reserved, l.win = 0, s.win end
    settle_report(l)
    lease = l
    renew(node, l)
    return true
  end
  return false
end

