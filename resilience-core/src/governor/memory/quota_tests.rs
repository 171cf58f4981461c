//! G1: the quota estimate against a model server that counts calls as they arrive, with
//! calls arriving and answered in any order, read or unread, or released unmade.

use super::quota::{Answering, Quota};
use crate::governor::config::{AssumedQuota, TrafficLight};
use proptest::prelude::*;
use std::time::Duration;

#[derive(Debug, Clone)]
enum Op {
    /// Grant a call of this cost, if the estimate allows it.
    Grant(u64),
    /// The n-th call not yet arrived reaches the server (modulo their number).
    Arrive(usize),
    /// The n-th arrived call is answered, with its reading or without one.
    Answer(usize, bool),
    /// The n-th call not yet arrived is released unmade.
    Release(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (1u64..=3).prop_map(Op::Grant),
        3 => any::<usize>().prop_map(Op::Arrive),
        3 => (any::<usize>(), prop::bool::weighted(0.7)).prop_map(|(i, r)| Op::Answer(i, r)),
        1 => any::<usize>().prop_map(Op::Release),
    ]
}

/// A granted call: its cost and ledger, and its reading once it arrived.
struct Call {
    cost: u64,
    ledger: u64,
    reading: u64,
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    /// Whatever the order, the estimate never exceeds what the server has left less the
    /// calls still on their way to it, so no grant is ever one the server would refuse.
    #[test]
    fn g1_the_estimate_never_exceeds_what_is_left_less_the_calls_on_their_way(
        limit in 5u64..40,
        ops in prop::collection::vec(op(), 1..120),
    ) {
        let light = TrafficLight::default();
        let assumed = AssumedQuota { limit, window: Duration::from_secs(3600) };
        let mut q = Quota::new(&assumed, &light, 30 * 1_000_000_000);
        let (mut server, mut on_way, mut arrived) = (limit, Vec::<Call>::new(), Vec::<Call>::new());
        for op in ops {
            match op {
                Op::Grant(cost) if q.remaining >= cost => {
                    let ledger = q.charge(cost, 0);
                    on_way.push(Call { cost, ledger, reading: 0 });
                }
                Op::Grant(_) => {}
                Op::Arrive(i) if !on_way.is_empty() => {
                    let mut c = on_way.remove(i % on_way.len());
                    prop_assert!(server >= c.cost, "overspend: {} left, a call of {}", server, c.cost);
                    server -= c.cost;
                    c.reading = server;
                    arrived.push(c);
                }
                Op::Answer(i, read) if !arrived.is_empty() => {
                    let c = arrived.remove(i % arrived.len());
                    if read {
                        let _ = q.apply(None, Some(c.reading), None, None, Some(Answering { ledger: c.ledger, granted_at: 0, settled_unread: 0 }), Some(c.cost), 0, &light);
                    } else {
                        q.spent_unread(c.cost, 0);
                    }
                }
                Op::Release(i) if !on_way.is_empty() => {
                    let c = on_way.remove(i % on_way.len());
                    q.refund(c.cost);
                }
                _ => {}
            }
            let coming: u64 = on_way.iter().map(|c| c.cost).sum();
            prop_assert!(
                q.remaining + coming <= server,
                "estimate {} with {} on the way, {} left", q.remaining, coming, server
            );
        }
    }
}
