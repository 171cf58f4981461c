//! An agent registered while a resource is being added must be known to that resource (G5:
//! every registered agent holds a lease on every resource; G2: and its share of the pool).
//! `add_resource` gave the new resource the agents it read, then published it; a `register`
//! in between walked the published resources without it, so the new resource never learnt
//! that agent and refused it `Unregistered` forever.

mod governor_support;

use governor_support::light_only;
use resilience_core::governor::{
    Decision, Governor, GovernorConfig, Priority, RefusalReason, Request,
};
use std::sync::{Arc, Barrier};
use std::thread;

const ROUNDS: u64 = 300;
const RESOURCES: usize = 24;
const AGENTS: usize = 24;

#[test]
fn g5_g2_an_agent_registered_while_a_resource_is_added_is_known_to_it() {
    for round in 0..ROUNDS {
        let config = GovernorConfig {
            max_resources: RESOURCES as u32,
            ..GovernorConfig::default()
        };
        let gov = Arc::new(
            Governor::builder()
                .config(config)
                .seed(round)
                .build()
                .unwrap(),
        );
        let start = Arc::new(Barrier::new(3));
        let adder = {
            let (gov, start) = (gov.clone(), start.clone());
            thread::spawn(move || {
                start.wait();
                (0..RESOURCES)
                    .map(|i| gov.add_resource(&format!("r{i}"), light_only()).unwrap())
                    .collect::<Vec<_>>()
            })
        };
        let registrars: Vec<_> = (0..2)
            .map(|t| {
                let (gov, start) = (gov.clone(), start.clone());
                thread::spawn(move || {
                    start.wait();
                    (0..AGENTS / 2)
                        .map(|i| gov.register(&format!("a{t}-{i}"), Priority::P1).unwrap())
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let resources = adder.join().unwrap();
        let agents: Vec<_> = registrars
            .into_iter()
            .flat_map(|r| r.join().unwrap())
            .collect();
        for &r in &resources {
            for &a in &agents {
                match gov.decide(a, r, &Request::read()) {
                    Decision::Refuse(refusal) if refusal.reason == RefusalReason::Unregistered => {
                        panic!("round {round}: agent {a:?} unknown to resource {r:?}")
                    }
                    Decision::Go(grant) => gov.release(grant),
                    _ => {}
                }
            }
        }
    }
}
