//! The state every handler receives: the engine and the configuration, shared by reference.

use std::sync::Arc;

use mycorrhizal_engine::Engine;

use crate::config::Config;

#[derive(Clone)]
pub struct AppState {
    pub engine: Engine,
    pub config: Arc<Config>,
}

impl AppState {
    pub fn new(engine: Engine, config: Config) -> Self {
        AppState {
            engine,
            config: Arc::new(config),
        }
    }

    /// Runs blocking engine work (redb reads, snapshots) off the async threads.
    pub async fn blocking<T: Send + 'static>(
        &self,
        work: impl FnOnce(&mycorrhizal_engine::Engine) -> T + Send + 'static,
    ) -> Result<T, crate::error::ApiError> {
        let engine = self.engine.clone();
        tokio::task::spawn_blocking(move || work(&engine))
            .await
            .map_err(crate::error::ApiError::internal)
    }
}
