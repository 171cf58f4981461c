//! A loopback TCP proxy in front of the test's redis-server that can make its pub/sub
//! connections silently dead: their replies stop coming while the sockets stay open (what a
//! NAT or a proxy that drops idle connections does to a subscription), or cut every
//! connection off (a partition between one process and Redis, the others still reaching it).

#![allow(dead_code)]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

pub struct Proxy {
    /// `redis://127.0.0.1:<port>` of the proxy.
    pub url: String,
    freeze: Arc<AtomicBool>,
    cut: Arc<AtomicBool>,
    accept: tokio::task::JoinHandle<()>,
}

impl Proxy {
    /// Listens on a free loopback port and forwards every connection to `target` (a
    /// `redis://host:port` URL without credentials).
    pub async fn start(target: &str) -> Self {
        let addr = target
            .trim_start_matches("redis://")
            .split('/')
            .next()
            .expect("host:port")
            .to_owned();
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let url = format!("redis://{}", listener.local_addr().expect("addr"));
        let freeze = Arc::new(AtomicBool::new(false));
        let cut = Arc::new(AtomicBool::new(false));
        let (f, c) = (freeze.clone(), cut.clone());
        let accept = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                if c.load(Ordering::SeqCst) {
                    continue; // refused: dropped at once
                }
                let Ok(server) = TcpStream::connect(&addr).await else {
                    continue;
                };
                tokio::spawn(pipe(client, server, f.clone(), c.clone()));
            }
        });
        Self {
            url,
            freeze,
            cut,
            accept,
        }
    }

    /// From now on no pub/sub connection (one that has sent a SUBSCRIBE) gets a byte more
    /// from the server, new ones included; every socket stays open.
    pub fn freeze_pubsub(&self) {
        self.freeze.store(true, Ordering::SeqCst);
    }

    /// Closes every connection and refuses new ones until [`restore`](Self::restore).
    pub fn cut(&self) {
        self.cut.store(true, Ordering::SeqCst);
    }

    /// Accepts connections again.
    pub fn restore(&self) {
        self.cut.store(false, Ordering::SeqCst);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

async fn pipe(client: TcpStream, server: TcpStream, freeze: Arc<AtomicBool>, cut: Arc<AtomicBool>) {
    let (mut cr, mut cw) = client.into_split();
    let (mut sr, mut sw) = server.into_split();
    let pubsub = Arc::new(AtomicBool::new(false));
    let flag = pubsub.clone();
    let cut2 = cut.clone();
    let up = tokio::spawn(async move {
        let mut buf = vec![0; 16 * 1024];
        while let Ok(n @ 1..) = cr.read(&mut buf).await {
            if cut2.load(Ordering::SeqCst) {
                break;
            }
            if buf[..n]
                .windows(9)
                .any(|w| w.eq_ignore_ascii_case(b"SUBSCRIBE"))
            {
                flag.store(true, Ordering::SeqCst);
            }
            if sw.write_all(&buf[..n]).await.is_err() {
                break;
            }
        }
    });
    let mut buf = vec![0; 16 * 1024];
    loop {
        if cut.load(Ordering::SeqCst) {
            break;
        }
        if freeze.load(Ordering::SeqCst) && pubsub.load(Ordering::SeqCst) {
            // Silent, not closed: hold the socket and forward nothing.
            tokio::time::sleep(Duration::from_millis(10)).await;
            if up.is_finished() {
                break;
            }
            continue;
        }
        let read = tokio::time::timeout(Duration::from_millis(10), sr.read(&mut buf)).await;
        match read {
            Ok(Ok(n @ 1..)) => {
                // Read before the freeze, arrived after it: lost, as on a dead link.
                let frozen = freeze.load(Ordering::SeqCst) && pubsub.load(Ordering::SeqCst);
                if !frozen && cw.write_all(&buf[..n]).await.is_err() {
                    break;
                }
            }
            Ok(_) => break,
            Err(_) => {} // nothing to forward yet: look at the freeze again
        }
    }
    up.abort();
}
