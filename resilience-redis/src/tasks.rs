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
        match inner.call_on(&mut conn, generation, &res, Op::Renew).await {
            Ok(_) | Err(CallError::Server(_)) => {}
            Err(CallError::Lost) => return,
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
pub(crate) async fn listen(weak: Weak<Inner>) {
    loop {
        let (pattern, sleeper, every, timeout) = {
            let Some(inner) = weak.upgrade() else { return };
            (
                format!("{}:ev:*", inner.cfg.prefix),
                inner.sleeper.clone(),
                inner.cfg.reconnect_every,
                inner.cfg.connect_timeout,
            )
        };
        let pubsub = {
            let Some(inner) = weak.upgrade() else { return };
            tokio::time::timeout(timeout, inner.link.pubsub()).await
        };
        if let Ok(Ok(mut ps)) = pubsub {
            if ps.psubscribe(&pattern).await.is_ok() {
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
                while let Some(msg) = stream.next().await {
                    let Some(inner) = weak.upgrade() else { return };
                    let channel = msg.get_channel_name();
                    let Some(name) = channel.rsplit(':').next() else {
                        continue;
                    };
                    // `b`: a block was set or extended; anything else: quota came back.
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
                // Blocks may now go unheard: shut the express lane until subscribed again.
                if let Some(inner) = weak.upgrade() {
                    inner.set_listening(false);
                }
            }
        }
        sleeper.sleep(jitter(every)).await;
    }
}

/// `d` × a uniform draw in [0.5, 1.5).
pub(crate) fn jitter(d: Duration) -> Duration {
    d.mul_f64(0.5 + fastrand::f64())
}
