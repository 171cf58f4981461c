//! Compile-fail and compile-pass cases of `#[retry_service_operation]` and
//! `#[service_defaults]` (M1–M5, R3). One rule per file; each `.stderr` is reviewed, not just
//! regenerated (`TRYBUILD=overwrite cargo test --test ui`, then read the diff).
//!
//! The `.stderr` files are tied to the pinned toolchain (rust-toolchain.toml).

#[test]
#[cfg_attr(miri, ignore)]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/fail/*.rs");
    t.pass("tests/ui/pass/*.rs");
}
