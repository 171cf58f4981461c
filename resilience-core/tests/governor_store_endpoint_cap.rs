//! G8: per-endpoint windows stay bounded (memory/endpoints.rs, memory/rules.rs). The cap is
//! invisible in decisions by design (only idle windows are dropped), so a counting global
//! allocator watches the heap this test binary holds: it must stop growing with the number
//! of endpoints ever seen. Alone in its binary, so no other test allocates meanwhile.
#![allow(unsafe_code)] // a counting GlobalAlloc needs unsafe impl; it only delegates to System.

mod governor_support;

use governor_support::*;
use resilience_core::governor::{Measure, Priority, Request, Selector, WindowRule};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

struct Counting;

/// Bytes allocated and not yet freed.
static LIVE: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call delegates to `System` with the caller's arguments unchanged. The
// default `realloc` and `alloc_zeroed` go through `alloc` and `dealloc`, so they are counted.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Grants one read to each of `n` endpoints never seen before (`/e/{from}`, …), one a
/// second, each released at once; returns the most heap held after any of them.
fn new_endpoint_every_second(
    rig: &Rig,
    a: resilience_core::governor::AgentId,
    from: u32,
    n: u32,
) -> usize {
    let mut peak = 0;
    for i in from..from + n {
        rig.advance(S);
        let name = format!("/e/{i}");
        let g = go(rig.decide(a, &Request::read().with_endpoint(&name)));
        rig.gov.release(g);
        drop(name);
        peak = peak.max(LIVE.load(Ordering::Relaxed));
    }
    peak
}

/// G8: with a per-endpoint minute window and a new endpoint every second, at most a minute's
/// endpoints count at any time: once 1024 are tracked, the idle ones are dropped. So the heap
/// held while 8192 endpoints come and go is no larger than while the first 2048 did (each
/// stretch passes the cap at least once). Without the cap it would grow with every endpoint:
/// about four times as much after 8192 as after 2048.
#[test]
fn g8_heap_held_for_per_endpoint_windows_stops_growing_past_the_endpoint_cap() {
    let mut cfg = light_only();
    cfg.quota.limit = 1_000_000;
    cfg.pacing.windows.push(
        WindowRule::new("points", Selector::All, Measure::Points, 900, secs(60)).per_endpoint(),
    );
    let rig = Rig::new(cfg);
    let a = rig.agent("data", Priority::P1);
    let first = new_endpoint_every_second(&rig, a, 0, 2048);
    let later = new_endpoint_every_second(&rig, a, 2048, 6144);
    assert!(
        later <= first + first / 8,
        "heap peak {later} B over 8192 endpoints vs {first} B over the first 2048"
    );
}
