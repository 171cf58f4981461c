//! Shared by the G7 integration tests: a throwaway redis-server, a proxy that can
//! silence its subscriptions, and the worker process.

pub mod proxy;
pub mod server;
pub mod worker;
