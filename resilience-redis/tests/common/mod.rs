//! Shared by the G7 integration tests: a throwaway redis-server and the worker process.

pub mod server;
pub mod worker;
