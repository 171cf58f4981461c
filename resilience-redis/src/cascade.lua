-- resilience-redis: the G4 cascade detector shared by every process (part of the one script,
-- before quota_ops.lua). Opt-in per resource (`QuotaSpec::shared_cascade`): an observation
-- carries its settings (obs: ARGV 31 limited, 32 who (the agent, else ''), 33 agents that
-- switch sequential mode on (0: this process does not share the detector), 34 window ms,
-- 35 good responses that switch it off).
--
-- State, absent until used (every field of the state is decoded on every call): `cz`, who
-- -> when last limited (at most CZ_MAX, the oldest dropped first); `sm`, true in sequential
-- mode; `cgood`, good responses in a row since the block lifted. While `sm` is
-- on, an acquire waits while any call the script granted is in flight (quota_ops.lua): one
-- call at a time across every process, higher priorities first (the yield marks). It ends
-- after `clear` good responses outside a block, or with the quota window.

local CZ_MAX = 64

-- `limited`: the response was a rate limit; `good`: below 400 and not limited.
local function cascade_observe(limited, good, who, agents, window, clear, blocked)
  if limited then
    s.cz = s.cz or {}
    local n, oldest, oldest_t = 0, nil, nil
    for w, t in pairs(s.cz) do
      if now - t > window then
        s.cz[w] = nil
      else
        n = n + 1
        if w ~= who and (not oldest_t or t < oldest_t) then oldest, oldest_t = w, t end
      end
    end
    if not s.cz[who] then
      n = n + 1
      if n > CZ_MAX and oldest then
        s.cz[oldest] = nil
        n = n - 1
      end
    end
    s.cz[who] = now
    s.cgood = nil
    if not s.sm and n >= agents then
      s.sm = true
      -- Every express lane shuts until its process hears of it (as for a block).
      redis.call('PUBLISH', channel, 'b')
    end
  elseif good and s.sm and not blocked then
    s.cgood = (s.cgood or 0) + 1
    if s.cgood >= clear then
      s.sm, s.cgood, s.cz = nil, nil, nil
      -- Waiters held to one call at a time may all go.
      redis.call('PUBLISH', channel, 'q')
    end
  end
end
