//! G4 cascade detector: enough distinct agents limited within the window switches on
//! sequential mode (one call in flight, priority order) until the limit clears: the block
//! has lifted and `clear_after` consecutive good responses came back, or the quota window
//! rolled over (with no traffic, no response would ever say so).

use super::super::config::Cascade as CascadeCfg;
use super::super::decision::AgentId;
use super::time::{ns, Nanos};
use std::collections::VecDeque;

#[derive(Debug, Clone, Default)]
pub(crate) struct Cascade {
    /// Each agent's latest limit within the window, oldest first: at most one entry per
    /// agent, so a storm of 429s costs one short scan each, not a growing log to sort.
    limited: VecDeque<(Nanos, AgentId)>,
    pub sequential: bool,
    good: u32,
}

impl Cascade {
    /// Records that `agent` was limited; returns true if this switched sequential mode on.
    pub fn limited(&mut self, agent: AgentId, now: Nanos, cfg: &CascadeCfg) -> bool {
        self.forget(now, cfg);
        // An agent limited within the window is counted once; its latest limit is the one
        // that keeps it in the window longest.
        self.limited.retain(|&(_, a)| a != agent);
        self.limited.push_back((now, agent));
        self.good = 0;
        if !self.sequential && self.limited.len() >= cfg.agents as usize {
            self.sequential = true;
            return true;
        }
        false
    }

    /// A good response at `now`; `clear` says the block has lifted. Returns true if this
    /// switched sequential mode off.
    pub fn good(&mut self, clear: bool, cfg: &CascadeCfg) -> bool {
        if !self.sequential || !clear {
            return false;
        }
        self.good += 1;
        if self.good >= cfg.clear_after {
            self.sequential = false;
            self.good = 0;
            self.limited.clear();
            return true;
        }
        false
    }

    /// A new quota window: the limit that started the cascade has cleared, whether or not
    /// any response said so (with no traffic none does). Returns true if this switched
    /// sequential mode off.
    pub fn new_window(&mut self) -> bool {
        let was = self.sequential;
        self.sequential = false;
        self.good = 0;
        self.limited.clear();
        was
    }

    /// Drops limits older than the window.
    pub fn forget(&mut self, now: Nanos, cfg: &CascadeCfg) {
        let window = ns(cfg.window);
        while self
            .limited
            .front()
            .is_some_and(|&(t, _)| now.saturating_sub(t) > window)
        {
            self.limited.pop_front();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    const S: Nanos = 1_000_000_000;

    #[test]
    fn g4_three_distinct_agents_within_30s_switch_on_sequential_mode() {
        let cfg = CascadeCfg::default();
        let mut c = Cascade::default();
        assert!(!c.limited(AgentId(1), 0, &cfg));
        assert!(!c.limited(AgentId(1), S, &cfg)); // the same agent again: still one
        assert!(!c.limited(AgentId(2), 10 * S, &cfg));
        assert!(c.limited(AgentId(3), 30 * S, &cfg));
        assert!(c.sequential);
    }

    #[test]
    fn g4_a_storm_of_limits_keeps_one_entry_per_agent() {
        let cfg = CascadeCfg::default();
        let mut c = Cascade::default();
        for i in 0..1000 {
            c.limited(AgentId(i % 2), i as Nanos, &cfg);
        }
        assert_eq!(c.limited.len(), 2);
        assert!(!c.sequential, "two agents are not a cascade");
        // Agent 0's first limit was at 0, its latest at 998: it stays counted until 30 s
        // after the latest.
        c.limited(AgentId(5), 30 * S + 500, &cfg);
        assert!(c.sequential);
    }

    #[test]
    fn g4_limits_spread_over_more_than_30s_do_not() {
        let cfg = CascadeCfg::default();
        let mut c = Cascade::default();
        c.limited(AgentId(1), 0, &cfg);
        c.limited(AgentId(2), 20 * S, &cfg);
        assert!(!c.limited(AgentId(3), 31 * S, &cfg));
        assert!(!c.sequential);
    }

    #[test]
    fn g4_clears_after_three_good_responses_once_the_block_lifted() {
        let cfg = CascadeCfg::default();
        let mut c = Cascade::default();
        for a in 0..3 {
            c.limited(AgentId(a), 0, &cfg);
        }
        assert!(!c.good(false, &cfg)); // still blocked: does not count
        assert!(!c.good(true, &cfg));
        assert!(!c.good(true, &cfg));
        assert!(c.good(true, &cfg));
        assert!(!c.sequential);
    }
}
