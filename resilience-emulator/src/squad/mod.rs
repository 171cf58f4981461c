//! The squad workload.
