//! The Squad incident as a workload: 9 agents start at once and open 10 pull requests.
//!
//! Roles follow the article (DESIGN §7): Picard is the lead (P0) reviewing every pull request
//! and taking architecture decisions; Ralph (P2) polls issues every 5 minutes and triages;
//! Data, Seven, B'Elanna, Troi, Neelix, Worf and Scribe (P1) each implement one or two of the
//! ten pull requests: read the code, branch, commit, open the PR, poll CI, answer review.
//!
//! Sizes are chosen to press on the limits the way the incident did: the builders' reading
//! burst exceeds 900 points a minute on the blob endpoint, so a squad that does not pace trips
//! GitHub's secondary limit by itself within the first minute, and its retries keep the penalty
//! box shut. Every limit it meets is self-inflicted: [`incident`] has no scripted block.
//! [`outage`] adds one 60-second block at minute 8 that no client can foresee.

use super::workload::{AgentScript, Call, Step, Task, Workload};
use crate::request::{Kind, Priority};
use crate::server::Latency;
use std::time::Duration;

const REPO: &str = "/repos/acme/squad";

/// When the [`outage`]'s block starts: minute 8, when the incident's 429s began.
pub const OUTAGE_START: Duration = Duration::from_secs(480);
/// How long the [`outage`]'s block lasts: GitHub's documented minimum wait.
pub const OUTAGE_LENGTH: Duration = Duration::from_secs(60);

/// The incident workload, as it happened: only the limits the squad trips itself, no
/// scripted block. `seed` varies the agents' thinking times (±20 %).
pub fn incident(seed: u64) -> Workload {
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut think = |secs: f64| Duration::from_secs_f64(secs * (0.8 + 0.4 * rng.f64()));
    let builders: [(&str, &[u32]); 7] = [
        ("data", &[101, 108]),
        ("seven", &[102, 109]),
        ("belanna", &[103, 110]),
        ("troi", &[104]),
        ("neelix", &[105]),
        ("worf", &[106]),
        ("scribe", &[107]),
    ];
    let mut agents = vec![picard(&mut think)];
    for (name, prs) in builders {
        let tasks = prs
            .iter()
            .map(|&pr| open_pr(name, pr, &mut think))
            .collect();
        agents.push(AgentScript {
            name: name.to_owned(),
            priority: Priority::P1,
            tasks,
        });
    }
    agents.push(ralph(&mut think));
    Workload {
        agents,
        latency: Latency::default(),
        scripted_blocks: Vec::new(),
        horizon: Duration::from_secs(3 * 3_600),
        reconcile_every: Some(Duration::from_secs(300)),
    }
}

/// The [`incident`] workload plus one block no client can foresee ([`OUTAGE_LENGTH`] from
/// [`OUTAGE_START`]): GitHub's unexplained 403s, to exercise the shared block and the paced
/// release after it (G6).
pub fn outage(seed: u64) -> Workload {
    Workload {
        scripted_blocks: vec![(OUTAGE_START, OUTAGE_LENGTH)],
        ..incident(seed)
    }
}

fn step(think: Duration, calls: Vec<Call>) -> Step {
    Step { think, calls }
}

fn blobs(prefix: &str, batch: u32, n: u32) -> Vec<Call> {
    (0..n)
        .map(|i| {
            // Commit-hash-like ids, so they share one endpoint template.
            let sha = format!("{:x}{:08x}", 0xb10b, (batch << 12) | i);
            Call::get(format!("{REPO}/git/blobs/{prefix}{sha}"))
        })
        .collect()
}

/// A builder implements pull request `pr` from reading the code to answering the review.
fn open_pr(agent: &str, pr: u32, think: &mut impl FnMut(f64) -> Duration) -> Task {
    let issue = pr - 100;
    let mut steps = Vec::new();
    // Read the code: 15 batches of 10 files.
    for batch in 0..15 {
        steps.push(step(think(1.0), blobs("", pr * 100 + batch, 10)));
    }
    steps.push(step(
        think(8.0),
        vec![
            Call::get(format!("{REPO}/issues/{issue}")),
            Call::get(format!("{REPO}/issues/{issue}/comments")),
        ],
    ));
    steps.push(step(
        think(4.0),
        vec![Call::new("POST", format!("{REPO}/git/refs"), Kind::Write)],
    ));
    let file = |k: u32| {
        Call::new(
            "PUT",
            format!("{REPO}/contents/src/{agent}/pr{pr}/f{k}.rs"),
            Kind::Write,
        )
    };
    for k in 0..6 {
        steps.push(step(think(8.0), vec![file(k)]));
    }
    steps.push(step(
        think(4.0),
        vec![Call::new(
            "POST",
            format!("{REPO}/pulls"),
            Kind::ContentCreating,
        )],
    ));
    for _ in 0..20 {
        let sha = format!("{:x}", 0xc0ffee00u32 + pr);
        steps.push(step(
            think(12.0),
            vec![Call::get(format!("{REPO}/commits/{sha}/check-runs"))],
        ));
    }
    steps.push(step(
        think(3.0),
        vec![Call::new(
            "POST",
            format!("{REPO}/issues/{pr}/comments"),
            Kind::ContentCreating,
        )],
    ));
    steps.push(step(
        think(30.0),
        vec![
            Call::get(format!("{REPO}/pulls/{pr}/comments")),
            Call::get(format!("{REPO}/pulls/{pr}/reviews")),
        ],
    ));
    for k in 6..9 {
        steps.push(step(think(8.0), vec![file(k)]));
    }
    let replies = (0..4)
        .map(|_| {
            Call::new(
                "POST",
                format!("{REPO}/pulls/{pr}/comments"),
                Kind::ContentCreating,
            )
        })
        .collect();
    steps.push(step(think(5.0), replies));
    Task {
        name: format!("{agent}: open PR #{pr}"),
        not_before: Duration::ZERO,
        steps,
    }
}

/// Picard reviews the ten pull requests and records an architecture decision for each.
fn picard(think: &mut impl FnMut(f64) -> Duration) -> AgentScript {
    let tasks = (101..=110)
        .map(|pr| {
            let mut steps = vec![
                step(think(10.0), vec![Call::get(format!("{REPO}/pulls/{pr}"))]),
                step(
                    think(5.0),
                    vec![Call::get(format!("{REPO}/pulls/{pr}/files"))],
                ),
            ];
            for batch in 0..6 {
                steps.push(step(think(4.0), blobs("", 90_000 + pr * 10 + batch, 10)));
            }
            steps.push(step(
                think(40.0),
                vec![Call::new(
                    "POST",
                    format!("{REPO}/pulls/{pr}/reviews"),
                    Kind::ContentCreating,
                )],
            ));
            for _ in 0..5 {
                steps.push(step(
                    think(6.0),
                    vec![Call::new(
                        "POST",
                        format!("{REPO}/pulls/{pr}/comments"),
                        Kind::ContentCreating,
                    )],
                ));
            }
            steps.push(step(
                think(10.0),
                vec![Call::get(format!("{REPO}/issues?labels=architecture"))],
            ));
            Task {
                name: format!("picard: review PR #{pr}"),
                not_before: Duration::ZERO,
                steps,
            }
        })
        .collect();
    AgentScript {
        name: "picard".to_owned(),
        priority: Priority::P0,
        tasks,
    }
}

/// Ralph polls every 5 minutes: the issue list (with ETags), each open issue, then triage.
fn ralph(think: &mut impl FnMut(f64) -> Duration) -> AgentScript {
    let tasks = (0..5u32)
        .map(|round| {
            let mut steps = vec![step(
                Duration::ZERO,
                vec![
                    Call::poll(format!("{REPO}/issues?state=open")),
                    Call::poll(format!("{REPO}/notifications")),
                ],
            )];
            for batch in 0..6u32 {
                let calls = (0..10)
                    .map(|i| Call::get(format!("{REPO}/issues/{}", 200 + batch * 10 + i)))
                    .collect();
                steps.push(step(think(2.0), calls));
            }
            let labels = (0..8)
                .map(|i| {
                    Call::new(
                        "POST",
                        format!("{REPO}/issues/{}/labels", 200 + i),
                        Kind::Write,
                    )
                })
                .collect();
            steps.push(step(think(5.0), labels));
            steps.push(step(
                think(3.0),
                vec![Call::new(
                    "POST",
                    format!("{REPO}/issues/{}/comments", 200 + round),
                    Kind::ContentCreating,
                )],
            ));
            Task {
                name: format!("ralph: poll round {round}"),
                not_before: Duration::from_secs(u64::from(round) * 300),
                steps,
            }
        })
        .collect();
    AgentScript {
        name: "ralph".to_owned(),
        priority: Priority::P2,
        tasks,
    }
}
