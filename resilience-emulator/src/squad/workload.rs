//! The work of a squad of agents: who calls what, in which order, with how much thinking.

use crate::request::{Kind, Priority};
use crate::server::Latency;
use std::time::Duration;

/// One API call an agent wants to make.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    /// HTTP method.
    pub method: &'static str,
    /// Path.
    pub path: String,
    /// How it counts against secondary limits.
    pub kind: Kind,
    /// Whether the agent sends `If-None-Match` with the validator it last saw for this path.
    pub conditional: bool,
}

impl Call {
    /// A GET.
    pub fn get(path: impl Into<String>) -> Self {
        Self::new("GET", path, Kind::Read)
    }

    /// A conditional GET (polling with ETags).
    pub fn poll(path: impl Into<String>) -> Self {
        Self {
            conditional: true,
            ..Self::get(path)
        }
    }

    /// A mutation of `kind`.
    pub fn new(method: &'static str, path: impl Into<String>, kind: Kind) -> Self {
        Self {
            method,
            path: path.into(),
            kind,
            conditional: false,
        }
    }
}

/// Calls made together after thinking for `think`; the step is done when all succeeded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// Time the agent spends before making the calls (reasoning, reading).
    pub think: Duration,
    /// Calls made concurrently.
    pub calls: Vec<Call>,
}

/// A unit of work that is finished when all its steps are, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Task {
    /// Name, for reports.
    pub name: String,
    /// Earliest start (a poller's schedule); zero for "as soon as the agent is free".
    pub not_before: Duration,
    /// Steps, run one after another.
    pub steps: Vec<Step>,
}

/// One agent: a name, a priority and tasks done one after another.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentScript {
    /// Name (also the `x-agent` header).
    pub name: String,
    /// Priority.
    pub priority: Priority,
    /// Tasks, in order.
    pub tasks: Vec<Task>,
}

/// Everything a run needs to know about the work.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workload {
    /// The agents, all sharing one token.
    pub agents: Vec<AgentScript>,
    /// Service time of the emulated API.
    pub latency: Latency,
    /// Blocks no client can foresee, `(start, length)`: GitHub's unexplained 403s.
    pub scripted_blocks: Vec<(Duration, Duration)>,
    /// When the run is stopped; tasks not done by then are unfinished.
    pub horizon: Duration,
    /// A step with a call given up on is rerun at the next multiple of this (Squad's
    /// reconciliation loop runs every 5 minutes); `None` abandons the task instead.
    pub reconcile_every: Option<Duration>,
}

impl Workload {
    /// All calls of the workload.
    pub fn calls(&self) -> impl Iterator<Item = &Call> {
        self.agents
            .iter()
            .flat_map(|a| &a.tasks)
            .flat_map(|t| &t.steps)
            .flat_map(|s| &s.calls)
    }

    /// Number of tasks.
    pub fn task_count(&self) -> usize {
        self.agents.iter().map(|a| a.tasks.len()).sum()
    }
}
