//! The process backend: a managed `redis-server` on disk, killed with
//! SIGKILL, for machines without Docker.

use async_trait::async_trait;
use harness::server::{DataDir, ManagedServer, ServerKind, ServerOptions};

use crate::backend::{CrashBackend, CrashError};

/// A managed server with its data on a real disk (fsync is the point here)
/// and the real clock.
pub struct ProcessBackend {
    server: ManagedServer,
}

impl ProcessBackend {
    /// Starts a server of `server`'s kind (the default binary when `None`)
    /// with the durable preset plus `settings` (which win), recording its
    /// fsyncs so that it can also lose power.
    pub async fn start(
        server: Option<&ServerKind>,
        settings: &[(String, String)],
    ) -> Result<ProcessBackend, CrashError> {
        let mut options = ServerOptions::default()
            .on_server(server)
            .with_data_dir(DataDir::Disk)
            .with_virtual_clock(false)
            .with_fsync_tracking(true);
        for (k, v) in settings {
            options = options.with_config(k.clone(), v.clone());
        }
        let server = ManagedServer::start(options)
            .await
            .map_err(|e| CrashError(e.to_string()))?;
        Ok(ProcessBackend { server })
    }
}

#[async_trait]
impl CrashBackend for ProcessBackend {
    fn name(&self) -> &'static str {
        "process"
    }

    fn url(&self) -> String {
        self.server.url()
    }

    async fn kill(&mut self) -> Result<(), CrashError> {
        self.server.kill();
        Ok(())
    }

    async fn power_loss(&mut self) -> Result<(), CrashError> {
        self.server
            .power_loss()
            .map(|_| ())
            .map_err(|e| CrashError(e.to_string()))
    }

    async fn restart(&mut self) -> Result<(), CrashError> {
        self.server
            .restart()
            .await
            .map_err(|e| CrashError(e.to_string()))
    }

    async fn destroy(self: Box<Self>) -> Result<(), CrashError> {
        self.server
            .stop()
            .await
            .map_err(|e| CrashError(e.to_string()))
    }
}
