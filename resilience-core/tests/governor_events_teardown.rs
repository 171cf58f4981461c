//! B8 for the governor during a thread's teardown: a governor call made from a thread-local's
//! destructor, after the store's own per-thread note buffer is gone, still logs only once the
//! resource's lock is released. Before, it emitted at once, under the lock: a subscriber that
//! calls the governor back (an agent shipping its alerts through a governed call) found the
//! resource locked by its own thread, and the thread hung in its teardown.
//!
//! Its own test binary: the subscriber is process-wide (a thread's own default subscriber
//! may be gone during its teardown too).

mod governor_support;

use resilience_core::governor::{Governor, ResourceConfig, ResourceId, EVENT_TARGET};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{mpsc, OnceLock};
use std::time::Duration;
use tracing::{span, Event, Metadata, Subscriber};

struct Rig {
    gov: Governor,
    core: ResourceId,
}

static RIG: OnceLock<Rig> = OnceLock::new();
static CALLED_BACK: AtomicU32 = AtomicU32::new(0);

fn rig() -> &'static Rig {
    RIG.get_or_init(|| {
        let gov = Governor::builder().seed(1).build().unwrap();
        let core = gov.add_resource("core", ResourceConfig::default()).unwrap();
        Rig { gov, core }
    })
}

/// Reads a snapshot of the resource (which takes its lock) from inside every governor event.
struct CallsBack;

impl Subscriber for CallsBack {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &span::Attributes<'_>) -> span::Id {
        span::Id::from_u64(1)
    }
    fn record(&self, _: &span::Id, _: &span::Record<'_>) {}
    fn record_follows_from(&self, _: &span::Id, _: &span::Id) {}
    fn event(&self, event: &Event<'_>) {
        if event.metadata().target() == EVENT_TARGET {
            let r = rig();
            assert!(r.gov.snapshot(r.core).is_some());
            CALLED_BACK.fetch_add(1, Ordering::SeqCst);
        }
    }
    fn enter(&self, _: &span::Id) {}
    fn exit(&self, _: &span::Id) {}
}

/// Notes a Retry-After (a logged G6 block) when dropped.
struct NotesOnDrop;

impl Drop for NotesOnDrop {
    fn drop(&mut self) {
        let r = rig();
        r.gov.note_retry_after(r.core, Duration::from_secs(5));
    }
}

thread_local! {
    static LATE: NotesOnDrop = const { NotesOnDrop };
}

#[test]
fn b8_g6_a_governor_call_from_a_thread_local_destructor_logs_after_the_unlock() {
    tracing::subscriber::set_global_default(CallsBack).expect("the only subscriber");
    rig();
    let (tx, rx) = mpsc::channel();
    let teardown = std::thread::spawn(|| {
        // Registered first, so destroyed last: after the store's note buffer, which the
        // call below sets up on this thread.
        LATE.with(|_| {});
        let r = rig();
        r.gov.note_retry_after(r.core, Duration::from_secs(1));
    });
    // Joined once its thread-locals are destroyed.
    std::thread::spawn(move || {
        let _ = tx.send(teardown.join().is_ok());
    });
    let ended = rx
        .recv_timeout(Duration::from_secs(20))
        .expect("the thread's teardown hung: the store logged under the resource's lock");
    assert!(ended, "the thread panicked");
    assert_eq!(
        CALLED_BACK.load(Ordering::SeqCst),
        2,
        "both blocks logged, the one from the destructor included"
    );
}
