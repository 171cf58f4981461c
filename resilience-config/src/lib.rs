//! Configuration of the `resilience` framework: env vars, JSON per-service overrides,
//! validation and precedence with provenance (C1–C13).
