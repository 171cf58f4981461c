//! Runs a workload: one async task per agent, one per call of a step, through a scheduler.

use super::scheduler::{CallInfo, Refusal, Scheduler};
use super::transport::Transport;
use super::workload::{AgentScript, Call, Workload};
use crate::request::{Priority, Request};
use parking_lot::Mutex;
use resilience_core::clock::Clock;
use resilience_core::sleep::AsyncSleeper;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// One logical call as the agent lived it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct CallRecord {
    /// Agent.
    pub agent: String,
    /// Its priority.
    pub priority: Priority,
    /// When the agent wanted to make the call (the start of its step, kept across
    /// reconciliation reruns).
    pub wanted: Duration,
    /// When the last attempt was sent (or, for a call refused outright, given up).
    pub sent: Duration,
    /// Whether it finally succeeded.
    pub ok: bool,
    /// Attempts sent.
    pub attempts: u32,
}

impl CallRecord {
    /// Time between wanting to call and (finally) calling.
    pub fn wait(&self) -> Duration {
        self.sent.saturating_sub(self.wanted)
    }
}

/// One task's outcome.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct TaskRecord {
    /// Agent.
    pub agent: String,
    /// Task name.
    pub name: String,
    /// Whether every call of every step succeeded.
    pub finished: bool,
    /// When it finished or was abandoned.
    pub end: Duration,
}

/// What the agents recorded.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Records {
    /// Every logical call.
    pub calls: Vec<CallRecord>,
    /// Every task.
    pub tasks: Vec<TaskRecord>,
}

/// Runs agents against a transport under a scheduler, on injected time.
pub struct Driver<S, T> {
    scheduler: Arc<S>,
    transport: Arc<T>,
    clock: Arc<dyn Clock>,
    sleeper: Arc<dyn AsyncSleeper>,
    token: String,
    records: Arc<Mutex<Records>>,
}

impl<S, T> std::fmt::Debug for Driver<S, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Driver")
            .field("token", &self.token)
            .finish_non_exhaustive()
    }
}

impl<S: Scheduler, T: Transport> Driver<S, T> {
    /// A driver whose agents all use `token`.
    pub fn new(
        scheduler: Arc<S>,
        transport: Arc<T>,
        clock: Arc<dyn Clock>,
        sleeper: Arc<dyn AsyncSleeper>,
        token: impl Into<String>,
    ) -> Self {
        Self {
            scheduler,
            transport,
            clock,
            sleeper,
            token: token.into(),
            records: Arc::default(),
        }
    }

    /// The records so far (for a live progress line).
    pub fn records(&self) -> Arc<Mutex<Records>> {
        self.records.clone()
    }

    /// Runs every agent of `workload` to the end (or the horizon) and returns the records.
    pub async fn run(&self, workload: &Workload) -> Records {
        let mut agents = tokio::task::JoinSet::new();
        for script in &workload.agents {
            let ctx = self.ctx(script, workload);
            let script = script.clone();
            agents.spawn(async move { run_agent(ctx, script).await });
        }
        while agents.join_next().await.is_some() {}
        self.records.lock().clone()
    }

    fn ctx(&self, script: &AgentScript, w: &Workload) -> AgentCtx<S, T> {
        AgentCtx {
            scheduler: self.scheduler.clone(),
            transport: self.transport.clone(),
            clock: self.clock.clone(),
            sleeper: self.sleeper.clone(),
            token: self.token.clone(),
            records: self.records.clone(),
            agent: Arc::from(script.name.as_str()),
            priority: script.priority,
            etags: Arc::default(),
            horizon: w.horizon,
            reconcile_every: w.reconcile_every,
        }
    }
}

struct AgentCtx<S, T> {
    scheduler: Arc<S>,
    transport: Arc<T>,
    clock: Arc<dyn Clock>,
    sleeper: Arc<dyn AsyncSleeper>,
    token: String,
    records: Arc<Mutex<Records>>,
    agent: Arc<str>,
    priority: Priority,
    /// Validators this agent has seen, per path.
    etags: Arc<Mutex<BTreeMap<String, String>>>,
    horizon: Duration,
    reconcile_every: Option<Duration>,
}

impl<S, T> Clone for AgentCtx<S, T> {
    fn clone(&self) -> Self {
        Self {
            scheduler: self.scheduler.clone(),
            transport: self.transport.clone(),
            clock: self.clock.clone(),
            sleeper: self.sleeper.clone(),
            token: self.token.clone(),
            records: self.records.clone(),
            agent: self.agent.clone(),
            priority: self.priority,
            etags: self.etags.clone(),
            horizon: self.horizon,
            reconcile_every: self.reconcile_every,
        }
    }
}

async fn run_agent<S: Scheduler, T: Transport>(ctx: AgentCtx<S, T>, script: AgentScript) {
    for task in script.tasks {
        let wait = task.not_before.saturating_sub(ctx.clock.now());
        if !wait.is_zero() {
            ctx.sleeper.sleep(wait).await;
        }
        let mut finished = true;
        'steps: for step in task.steps {
            ctx.sleeper.sleep(step.think).await;
            // Every call of the step is wanted from here, across reconciliation reruns.
            let wanted = ctx.clock.now();
            loop {
                if ctx.clock.now() >= ctx.horizon {
                    finished = false;
                    break 'steps;
                }
                let mut calls = tokio::task::JoinSet::new();
                for call in step.calls.iter().cloned() {
                    let ctx = ctx.clone();
                    calls.spawn(async move { run_call(&ctx, call, wanted).await });
                }
                let mut all_ok = true;
                while let Some(ok) = calls.join_next().await {
                    all_ok &= ok.unwrap_or(false);
                }
                if all_ok {
                    break;
                }
                // A call was given up: like Squad's reconciliation loop, rerun the step at
                // the next tick (or abandon the task if the workload has no loop).
                let Some(every) = ctx.reconcile_every.filter(|e| !e.is_zero()) else {
                    finished = false;
                    break 'steps;
                };
                let now = ctx.clock.now();
                let ticks = now.as_nanos() / every.as_nanos() + 1;
                let next = every.saturating_mul(u32::try_from(ticks).unwrap_or(u32::MAX));
                ctx.sleeper.sleep(next.saturating_sub(now)).await;
            }
        }
        ctx.records.lock().tasks.push(TaskRecord {
            agent: ctx.agent.to_string(),
            name: task.name,
            finished,
            end: ctx.clock.now(),
        });
    }
}

/// One logical call: acquire, send, report, and retry as the scheduler says.
async fn run_call<S: Scheduler, T: Transport>(
    ctx: &AgentCtx<S, T>,
    call: Call,
    wanted: Duration,
) -> bool {
    let info = CallInfo {
        agent: &ctx.agent,
        priority: ctx.priority,
        method: call.method,
        path: &call.path,
        kind: call.kind,
    };
    let mut attempts = 0;
    let mut sent = wanted;
    let ok = loop {
        if ctx.clock.now() >= ctx.horizon {
            break false;
        }
        let permit = match ctx.scheduler.acquire(info).await {
            Ok(p) => p,
            Err(Refusal::Later(d)) => {
                ctx.sleeper.sleep(d).await;
                continue;
            }
            Err(Refusal::GiveUp) => {
                sent = ctx.clock.now();
                break false;
            }
        };
        attempts += 1;
        sent = ctx.clock.now();
        let mut request = Request::new(
            ctx.token.as_str(),
            call.method,
            call.path.as_str(),
            &*ctx.agent,
            ctx.priority,
        )
        .with_kind(call.kind)
        .with_admitted(sent);
        if call.conditional {
            request.if_none_match = ctx.etags.lock().get(&call.path).cloned();
        }
        let response = ctx.transport.send(request).await;
        ctx.scheduler.complete(permit, info, &response);
        if response.is_success() {
            if let Some(etag) = response.header("etag") {
                ctx.etags.lock().insert(call.path.clone(), etag.to_owned());
            }
            break true;
        }
        match ctx.scheduler.retry_delay(info, attempts, &response) {
            Some(d) => ctx.sleeper.sleep(d).await,
            None => break false,
        }
    };
    ctx.records.lock().calls.push(CallRecord {
        agent: ctx.agent.to_string(),
        priority: ctx.priority,
        wanted,
        sent,
        ok,
        attempts,
    });
    ok
}
