//! Shared by the G7 integration tests: a throwaway redis-server, a proxy that can
//! silence its subscriptions or cut a process off, the worker process, and in-process nodes.

pub mod node;
pub mod proxy;
pub mod server;
pub mod worker;
