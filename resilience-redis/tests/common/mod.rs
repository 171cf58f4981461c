//! Shared by the G7 integration tests: a throwaway redis-server, a proxy that can
//! silence its subscriptions or cut a process off, the worker process, in-process nodes,
//! and nodes under shared pacing rules.

pub mod node;
pub mod pacing;
pub mod proxy;
pub mod server;
pub mod worker;
