//! A tiny capturing `tracing` subscriber for the breaker and governor tests (no extra
//! dependency), with an optional hook run on every event while the breaker's own code is
//! still on the stack.
// Shared by several test binaries, each using part of it.
#![allow(dead_code)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tracing::field::{Field, Visit};
use tracing::{span, Event, Level, Metadata, Subscriber};

#[derive(Debug, Clone)]
pub struct Captured {
    pub target: String,
    pub level: Level,
    pub fields: Vec<(String, String)>,
}

impl Captured {
    pub fn field(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

impl Visit for Captured {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.fields
            .push((field.name().into(), format!("{value:?}")));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.fields.push((field.name().into(), value.into()));
    }
}

type Hook = Box<dyn Fn(&Captured) + Send + Sync>;

struct Inner {
    events: Mutex<Vec<Captured>>,
    hook: Option<Hook>,
    hook_calls: AtomicUsize,
}

#[derive(Clone)]
pub struct Capture(Arc<Inner>);

impl Capture {
    pub fn new() -> Self {
        Self::build(None)
    }

    pub fn with_hook(hook: impl Fn(&Captured) + Send + Sync + 'static) -> Self {
        Self::build(Some(Box::new(hook)))
    }

    fn build(hook: Option<Hook>) -> Self {
        Self(Arc::new(Inner {
            events: Mutex::new(Vec::new()),
            hook,
            hook_calls: AtomicUsize::new(0),
        }))
    }

    /// Runs `f` with this subscriber as the thread's default.
    pub fn run<R>(&self, f: impl FnOnce() -> R) -> R {
        super::thread_subscriber::with_thread_subscriber(Sink(Arc::clone(&self.0)), f)
    }

    /// Breaker events whose message is `message`.
    pub fn named(&self, message: &str) -> Vec<Captured> {
        let events = self.0.events.lock().unwrap_or_else(|e| e.into_inner());
        events
            .iter()
            .filter(|e| {
                e.target == resilience_core::breaker::EVENT_TARGET
                    && e.field("message") == Some(message)
            })
            .cloned()
            .collect()
    }

    /// Events of any target whose message is `message`.
    pub fn with_message(&self, message: &str) -> Vec<Captured> {
        let events = self.0.events.lock().unwrap_or_else(|e| e.into_inner());
        events
            .iter()
            .filter(|e| e.field("message") == Some(message))
            .cloned()
            .collect()
    }

    pub fn len(&self) -> usize {
        self.0
            .events
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .len()
    }

    pub fn hook_calls(&self) -> usize {
        self.0.hook_calls.load(Ordering::SeqCst)
    }
}

struct Sink(Arc<Inner>);

impl Subscriber for Sink {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &span::Attributes<'_>) -> span::Id {
        span::Id::from_u64(1)
    }
    fn record(&self, _: &span::Id, _: &span::Record<'_>) {}
    fn record_follows_from(&self, _: &span::Id, _: &span::Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut captured = Captured {
            target: event.metadata().target().into(),
            level: *event.metadata().level(),
            fields: Vec::new(),
        };
        event.record(&mut captured);
        if let Some(hook) = &self.0.hook {
            hook(&captured);
            self.0.hook_calls.fetch_add(1, Ordering::SeqCst);
        }
        self.0
            .events
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(captured);
    }
    fn enter(&self, _: &span::Id) {}
    fn exit(&self, _: &span::Id) {}
}
