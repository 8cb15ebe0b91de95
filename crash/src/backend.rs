//! Where the crash suite's server runs, and how it is killed.
use async_trait::async_trait;

/// Why a crash backend could not do its job. Messages say what to do.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct CrashError(pub String);

/// A Redis server that can be killed with SIGKILL and restarted on the same data.
#[async_trait]
pub trait CrashBackend: Send {
    /// `docker` or `process`.
    fn name(&self) -> &'static str;
    /// The URL stores connect to (the port stays the same across restarts).
    fn url(&self) -> String;
    /// SIGKILL the server now (no shutdown, no save).
    async fn kill(&mut self) -> Result<(), CrashError>;
    /// A simulated power cut: SIGKILL, then the append-only file cut back to
    /// its last fsync. Only backends that can see the server's syncs have it.
    async fn power_loss(&mut self) -> Result<(), CrashError> {
        Err(CrashError(format!(
            "the {} backend cannot simulate a power cut; the process backend can",
            self.name()
        )))
    }
    /// Start the same server again on the same data and wait until it answers PING
    /// (it answers LOADING while the AOF replays).
    async fn restart(&mut self) -> Result<(), CrashError>;
    /// Remove everything this backend created (container, volume, data dir).
    async fn destroy(self: Box<Self>) -> Result<(), CrashError>;
}
