//! The two background tasks. Both hold only a weak reference between steps, so dropping the
//! last [`RedisQuota`](crate::RedisQuota) ends them (they are also aborted then).

use crate::quota::{CallError, Inner};
use crate::script::Op;
use futures_util::StreamExt;
use std::sync::Weak;
use std::time::Duration;

/// Renews every lease each heartbeat; while Redis is lost, tries to reconnect every
/// `reconnect_every` (jittered), and rejoins every resource (reporting what was spent
/// offline) *before* the new connection is used by anyone else.
pub(crate) async fn supervise(weak: Weak<Inner>) {
    loop {
        let (sleeper, lost, up, pause) = {
            let Some(inner) = weak.upgrade() else { return };
            let up = inner.link.is_up();
            let pause = if up {
                inner.cfg.heartbeat
            } else {
                jitter(inner.cfg.reconnect_every)
            };
            (inner.sleeper.clone(), inner.link.lost.clone(), up, pause)
        };
        if up {
            // Wake early when a call sees the connection drop.
            tokio::select! {
                () = sleeper.sleep(pause) => {}
                () = lost.notified() => {}
            }
        } else {
            sleeper.sleep(pause).await;
        }
        let Some(inner) = weak.upgrade() else { return };
        if inner.link.is_up() {
            for res in inner.resources() {
                // A lease given up is not renewed (that would start a new one): the next
                // acquire does.
                if res.local.lock().is_leaving() {
                    continue;
                }
                // A loss is noted by the call itself; a server error will show on the next
                // acquire too.
                let _ = inner.call(&res, Op::Renew).await;
            }
        } else {
            rejoin(&inner).await;
        }
    }
}

async fn rejoin(inner: &Inner) {
    let Ok((mut conn, generation)) = inner.link.open_conn().await else {
        return;
    };
    for res in inner.resources() {
        // A lease given up is not renewed (that would start a new one).
        let leaving = res.local.lock().is_leaving();
        let renewed = if leaving {
            Ok(())
        } else {
            inner
                .call_on(&mut conn, generation, &res, Op::Renew, None)
                .await
                .map(drop)
        };
        match renewed {
            Ok(()) | Err(CallError::Server(_)) => {}
            Err(CallError::Lost { .. }) => return,
        }
        // A block this process met while Redis was lost is every process's news.
        let left = res.local.lock().blocked_for(inner.clock.now());
        if let Some(left) = left {
            let ms = u64::try_from(left.as_millis()).unwrap_or(u64::MAX);
            match inner
                .call_on(&mut conn, generation, &res, Op::Block { ms }, None)
                .await
            {
                Ok(_) | Err(CallError::Server(_)) => {}
                Err(CallError::Lost { .. }) => return,
            }
        }
    }
    inner.link.install(conn, generation);
    inner.note_rejoined();
    for res in inner.resources() {
        res.wake.notify_waiters();
    }
}

/// Subscribes to every resource's channel and wakes the matching waiters. While Redis is
/// lost, waiters fall back on their jittered poll.
///
/// A subscription can die without its socket closing (a NAT or proxy that drops idle
/// connections): blocks published meanwhile would go unheard while the express lane stays
/// open. So the listener publishes a probe to a channel of its own every `io_timeout`
/// through the command connection; a probe nobody received, or one not heard back within
/// two periods, ends the subscription (shutting the lane) and subscribes again: a dead
/// subscription is noticed within three `io_timeout`s.
pub(crate) async fn listen(weak: Weak<Inner>) {
    loop {
        let (pattern, probe, sleeper, every, timeout, period) = {
            let Some(inner) = weak.upgrade() else { return };
            (
                format!("{}:ev:*", inner.cfg.prefix),
                probe_channel(&inner.cfg.prefix, &inner.cfg.node),
                inner.sleeper.clone(),
                inner.cfg.reconnect_every,
                inner.cfg.connect_timeout,
                inner.cfg.io_timeout,
            )
        };
        let subscribed = async {
            let inner = weak.upgrade()?;
            let mut ps = inner.link.pubsub().await.ok()?;
            drop(inner);
            ps.psubscribe(&pattern).await.ok()?;
            ps.subscribe(&probe).await.ok()?;
            Some(ps)
        };
        // Bounded: a dead socket would otherwise hang the subscription for good.
        if let Ok(Some(ps)) = tokio::time::timeout(timeout, subscribed).await {
            let mut stream = ps.into_on_message();
            if let Some(inner) = weak.upgrade() {
                // A block set while we were not subscribed went unheard: the express
                // lane opens only after a reply sent from now on.
                let now = inner.clock.now();
                for res in inner.resources() {
                    res.local.lock().heard_block(now);
                }
                inner.set_listening(true);
            }
            let mut tick = tokio::time::interval(period);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            let mut sent: u64 = 0;
            let mut heard: u64 = 0;
            loop {
                tokio::select! {
                    msg = stream.next() => {
                        let Some(msg) = msg else { break };
                        let Some(inner) = weak.upgrade() else { return };
                        if msg.get_channel_name() == probe {
                            let n = msg.get_payload::<u64>().unwrap_or(0);
                            heard = heard.max(n);
                            continue;
                        }
                        on_message(&inner, &msg);
                    }
                    _ = tick.tick() => {
                        let Some(inner) = weak.upgrade() else { return };
                        if heard + 1 < sent {
                            break; // a probe sent two periods ago never came back
                        }
                        match send_probe(&inner, &probe, sent + 1).await {
                            Some(0) => break, // the server has no subscriber for us
                            Some(_) => sent += 1,
                            None => {}        // the command link is down: nothing to learn
                        }
                    }
                }
            }
            // Blocks may now go unheard: shut the express lane until subscribed again.
            if let Some(inner) = weak.upgrade() {
                inner.set_listening(false);
            }
        }
        sleeper.sleep(jitter(every)).await;
    }
}

/// A resource's message: `b`, a block was set or extended; anything else, quota came back.
fn on_message(inner: &Inner, msg: &redis::Msg) {
    let channel = msg.get_channel_name();
    let Some(name) = channel.rsplit(':').next() else {
        return;
    };
    let block = msg.get_payload_bytes() == b"b";
    for res in inner.resources() {
        if &*res.name == name {
            if block {
                res.local.lock().heard_block(inner.clock.now());
            } else {
                res.wake.notify_waiters();
            }
        }
    }
}

/// This process's probe channel: outside the resources' pattern, so no one else hears it.
fn probe_channel(prefix: &str, node: &str) -> String {
    format!("{prefix}:probe:{node}")
}

/// Publishes probe `n`; how many subscribers received it, or `None` without a link.
async fn send_probe(inner: &Inner, channel: &str, n: u64) -> Option<u64> {
    let (mut conn, _) = inner.link.current()?;
    redis::cmd("PUBLISH")
        .arg(channel)
        .arg(n)
        .query_async::<u64>(&mut conn)
        .await
        .ok()
}

/// `d` × a uniform draw in [0.5, 1.5).
pub(crate) fn jitter(d: Duration) -> Duration {
    d.mul_f64(0.5 + fastrand::f64())
}
