//! Which experiment the squad demo runs on its workload.

use super::incident::{incident, outage};
use super::workload::Workload;
use std::fmt;
use std::str::FromStr;

/// A named squad experiment: the workload of the incident, with or without an outage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Scenario {
    /// The incident as it happened ([`incident`]): only the limits the squad trips itself.
    #[default]
    Incident,
    /// The incident's workload plus a 60 s block at minute 8 no client can foresee
    /// ([`outage`]): exercises the shared block and the paced release after it (G6).
    Outage,
}

impl Scenario {
    /// Every scenario, default first.
    pub const ALL: [Self; 2] = [Self::Incident, Self::Outage];

    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Self::Incident => "incident",
            Self::Outage => "outage",
        }
    }

    /// One line saying what the scenario is.
    pub fn describe(self) -> &'static str {
        match self {
            Self::Incident => "the incident as it happened: self-inflicted limits only",
            Self::Outage => "the incident's workload plus an unforeseeable 60 s block at minute 8",
        }
    }

    /// The scenario's workload for `seed`.
    pub fn workload(self, seed: u64) -> Workload {
        match self {
            Self::Incident => incident(seed),
            Self::Outage => outage(seed),
        }
    }
}

impl fmt::Display for Scenario {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A scenario name that is not one of [`Scenario::ALL`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownScenario(pub String);

impl fmt::Display for UnknownScenario {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<_> = Scenario::ALL.iter().map(|s| s.name()).collect();
        write!(
            f,
            "unknown scenario {:?}: expected one of {}",
            self.0,
            names.join(", ")
        )
    }
}

impl std::error::Error for UnknownScenario {}

impl FromStr for Scenario {
    type Err = UnknownScenario;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|sc| sc.name().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| UnknownScenario(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::squad::incident::{OUTAGE_LENGTH, OUTAGE_START};

    #[test]
    fn names_round_trip_and_unknown_names_are_a_typed_error() {
        for s in Scenario::ALL {
            assert_eq!(s.name().parse::<Scenario>(), Ok(s));
            assert_eq!(s.to_string(), s.name());
        }
        assert_eq!(" Outage ".parse::<Scenario>(), Ok(Scenario::Outage));
        let err = "storm".parse::<Scenario>().unwrap_err();
        assert_eq!(err, UnknownScenario("storm".into()));
        assert!(err.to_string().contains("incident, outage"), "{err}");
    }

    #[test]
    fn the_incident_has_no_scripted_block_and_the_outage_only_adds_one() {
        let (inc, out) = (Scenario::Incident.workload(3), Scenario::Outage.workload(3));
        assert!(inc.scripted_blocks.is_empty());
        assert_eq!(out.scripted_blocks, vec![(OUTAGE_START, OUTAGE_LENGTH)]);
        assert_eq!(
            Workload {
                scripted_blocks: Vec::new(),
                ..out
            },
            inc
        );
        assert_eq!(Scenario::default(), Scenario::Incident);
    }
}
