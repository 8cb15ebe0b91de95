//! A managed `redis-server` for tests.

use std::ops::{Deref, DerefMut};
use std::path::PathBuf;

use harness::server::{ManagedServer, ServerOptions};
use redis::aio::MultiplexedConnection;

/// A [`ManagedServer`] for a test: what the server can do is there through
/// `Deref`; what can fail panics with the server's error and the tail of
/// its log, which is how the test fails.
#[derive(Debug)]
pub struct TestServer {
    server: ManagedServer,
}

impl TestServer {
    /// The options a test server starts with: the durable preset on the
    /// wall clock (stores are asked for real time, as on a server nobody
    /// controls).
    pub fn options() -> ServerOptions {
        ServerOptions::default().with_virtual_clock(false)
    }

    /// A durable server on the wall clock ([`TestServer::options`]).
    pub async fn start() -> TestServer {
        TestServer::with(TestServer::options()).await
    }

    /// A server started with `options`.
    pub async fn with(options: ServerOptions) -> TestServer {
        match ManagedServer::start(options).await {
            Ok(server) => TestServer { server },
            Err(e) => panic!("the test server did not start: {e}"),
        }
    }

    /// A fresh connection of the test's own to the server.
    pub async fn admin(&self) -> MultiplexedConnection {
        self.server
            .admin()
            .await
            .unwrap_or_else(|e| panic!("no connection to the test server: {e}"))
    }

    /// Where a built-in store keeps its executions: a file in the server's
    /// own directory, gone with it.
    pub fn kept_db(&self) -> PathBuf {
        self.server.dir().join("kept.sqlite")
    }

    /// Kills the server and starts it again on the same port and data (it
    /// replays its append-only file).
    pub async fn restart(&mut self) {
        if let Err(e) = self.server.restart().await {
            panic!(
                "the test server did not restart: {e}\n{}",
                self.server.log_tail()
            );
        }
    }
}

impl Deref for TestServer {
    type Target = ManagedServer;

    fn deref(&self) -> &ManagedServer {
        &self.server
    }
}

impl DerefMut for TestServer {
    fn deref_mut(&mut self) -> &mut ManagedServer {
        &mut self.server
    }
}
