//! The Rate Governor (G1–G6, G8): one coordination layer that many agents consult before
//! calling a shared, rate-limited API, so the quota is spent in priority order with no
//! thundering herd and no cascade.
//!
//! (Full pattern documentation lands with the implementation.)

mod config;
mod decision;
mod facade;
mod memory;
mod observation;
mod permit;
mod priority;
mod request;
mod store;

pub use config::{
    AssumedQuota, Cascade, GovernorConfig, Leases, Measure, Pacing, Predictive, ResourceConfig,
    RetryWindows, Selector, SpacingRule, TokenPool, TrafficLight, WindowRule,
};
pub use decision::{
    AgentId, Decision, Grant, Refusal, RefusalKind, RefusalReason, ResourceId, Ticket, Wait,
    WaitReason,
};
pub use facade::{Governor, GovernorBuilder};
pub use memory::InProcessStore;
pub use observation::{LimitKind, Observation, ResetAt, RetryAfter};
pub use permit::Permit;
pub use priority::Priority;
pub use request::{Request, RequestKind};
pub use store::{GovernorError, GovernorStore, Now, ObserveOutcome, Snapshot, Zone};
