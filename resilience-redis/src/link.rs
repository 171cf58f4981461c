//! The connection to Redis: one multiplexed (pipelining) connection shared by every task of
//! the process, dropped on the first sign of loss and reopened by the supervisor.

use crate::error::{connect_reason, safe_url, RedisQuotaError};
use crate::script::script;
use parking_lot::Mutex;
use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, Client, ErrorKind, RedisError, ServerErrorKind};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;

pub(crate) struct Link {
    client: Client,
    /// The URL without its password.
    pub url: String,
    config: AsyncConnectionConfig,
    slot: Mutex<Option<(MultiplexedConnection, u64)>>,
    generation: AtomicU64,
    /// Wakes the supervisor when the connection is lost.
    pub lost: Arc<Notify>,
}

impl std::fmt::Debug for Link {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Link")
            .field("url", &self.url)
            .field("connected", &self.slot.lock().is_some())
            .finish_non_exhaustive()
    }
}

/// Whether an error means Redis is (for now) out of reach, as opposed to a bad request.
pub(crate) fn is_loss(e: &RedisError) -> bool {
    match e.kind() {
        ErrorKind::Server(k) => matches!(
            k,
            ServerErrorKind::BusyLoading
                | ServerErrorKind::MasterDown
                | ServerErrorKind::TryAgain
                | ServerErrorKind::ClusterDown
                | ServerErrorKind::ReadOnly
        ),
        // The script's own refusals (`resilience-redis: …`) are extension errors: answers,
        // not a lost link, so they must not send the process into degraded mode.
        ErrorKind::Parse | ErrorKind::Extension | ErrorKind::UnexpectedReturnType => false,
        _ => true,
    }
}

/// Whether a call that failed with a loss ([`is_loss`]) may have been run: it was written,
/// and no answer says it was not (a server that would not run scripts answers before it).
pub(crate) fn may_have_run(e: &RedisError) -> bool {
    !matches!(e.kind(), ErrorKind::Server(_))
}

impl Link {
    /// Opens the first connection and loads the script; an error names the URL.
    pub async fn open(
        url: &str,
        connect_timeout: Duration,
        io_timeout: Duration,
    ) -> Result<Self, RedisQuotaError> {
        let shown = safe_url(url);
        let client = Client::open(url).map_err(|e| RedisQuotaError::Connect {
            url: shown.clone(),
            reason: connect_reason(&e, true),
        })?;
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(connect_timeout))
            .set_response_timeout(Some(io_timeout));
        let link = Self {
            client,
            url: shown,
            config,
            slot: Mutex::new(None),
            generation: AtomicU64::new(0),
            lost: Arc::new(Notify::new()),
        };
        link.reconnect()
            .await
            .map_err(|e| RedisQuotaError::Connect {
                url: link.url.clone(),
                reason: connect_reason(&e, false),
            })?;
        Ok(link)
    }

    /// The live connection and its generation, if any.
    pub fn current(&self) -> Option<(MultiplexedConnection, u64)> {
        self.slot.lock().clone()
    }

    /// Drops connection `generation` (if still current) and wakes the supervisor.
    pub fn broken(&self, generation: u64) {
        let mut slot = self.slot.lock();
        if slot.as_ref().is_some_and(|(_, g)| *g == generation) {
            *slot = None;
            self.lost.notify_one();
        }
    }

    pub fn is_up(&self) -> bool {
        self.slot.lock().is_some()
    }

    /// Opens the connection and installs it at once.
    pub async fn reconnect(&self) -> Result<u64, RedisError> {
        let (conn, generation) = self.open_conn().await?;
        self.install(conn, generation);
        Ok(generation)
    }

    /// Opens a new connection, checks it and loads the script (so the hot path's EVALSHA
    /// hits), without installing it; returns it with its generation.
    pub async fn open_conn(&self) -> Result<(MultiplexedConnection, u64), RedisError> {
        let mut conn = self
            .client
            .get_multiplexed_async_connection_with_config(&self.config)
            .await?;
        let _: String = redis::cmd("PING").query_async(&mut conn).await?;
        script().load_async(&mut conn).await?;
        let generation = self.generation.fetch_add(1, Ordering::Relaxed) + 1;
        Ok((conn, generation))
    }

    /// Makes `conn` the connection every call uses.
    pub fn install(&self, conn: MultiplexedConnection, generation: u64) {
        *self.slot.lock() = Some((conn, generation));
    }

    /// A dedicated pub/sub connection.
    pub async fn pubsub(&self) -> Result<redis::aio::PubSub, RedisError> {
        self.client.get_async_pubsub().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn g7_a_server_that_would_not_run_the_script_is_a_loss_of_a_call_never_run() {
        let read_only = RedisError::from((
            ErrorKind::Server(ServerErrorKind::ReadOnly),
            "READONLY You can't write against a read only replica.",
        ));
        assert!(is_loss(&read_only) && !may_have_run(&read_only));
        let io = RedisError::from(std::io::Error::from(std::io::ErrorKind::ConnectionReset));
        assert!(is_loss(&io) && may_have_run(&io));
    }
}
