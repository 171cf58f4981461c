//! Agent priorities.

use std::fmt;

/// How much an agent's calls matter when quota is scarce.
///
/// Ordered by importance: `P0 < P1 < P2`, so sorting puts critical work first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Priority {
    /// Critical (the squad's lead, Picard): passes the red light, released first after a block.
    P0 = 0,
    /// Standard: paced in red, slowed late in amber.
    P1 = 1,
    /// Background (the poller, Ralph): slowed first in amber, paused in red, promoted to
    /// [`P1`](Self::P1) after starving for [`TokenPool::promote_after`](super::TokenPool::promote_after).
    P2 = 2,
}

impl Priority {
    /// All priorities, most important first.
    pub const ALL: [Priority; 3] = [Priority::P0, Priority::P1, Priority::P2];

    /// 0 for P0, 1 for P1, 2 for P2: an index into per-priority settings.
    #[inline]
    pub const fn index(self) -> usize {
        self as usize
    }

    /// The priority with this index, if any.
    pub const fn from_index(i: usize) -> Option<Self> {
        match i {
            0 => Some(Self::P0),
            1 => Some(Self::P1),
            2 => Some(Self::P2),
            _ => None,
        }
    }
}

impl fmt::Display for Priority {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::P0 => "P0",
            Self::P1 => "P1",
            Self::P2 => "P2",
        })
    }
}
