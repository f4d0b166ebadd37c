//! The `[api]` section made ready before the crawl starts: the token read, the certificate loaded, the address
//! bound. Every failure is a config error naming its key (exit 2), before anything is written.

use super::auth::Auth;
use super::handler::Api;
use super::ops::CrawlOps;
use super::server::ApiServer;
use super::tls;
use crate::error::EngineError;
use crate::reload::ReloadHandle;
use crawl_core::config::{ApiConfig, Secret, parse_token};
use std::net::{SocketAddr, TcpListener};
use std::path::Path;
use std::sync::Arc;

/// A bound API listener, not served yet.
#[derive(Clone)]
pub struct ApiListener {
    listener: Arc<TcpListener>,
    addr: SocketAddr,
    tls: Option<Arc<rustls::ServerConfig>>,
    token: Option<Secret>,
    max_body: u64,
}

impl std::fmt::Debug for ApiListener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiListener")
            .field("addr", &self.addr)
            .field("tls", &self.tls.is_some())
            .field("token", &self.token.is_some())
            .finish()
    }
}

impl ApiListener {
    /// None when the API is off; else the token read, the TLS config loaded and the address bound.
    pub fn open(config: &ApiConfig) -> Result<Option<ApiListener>, EngineError> {
        let Some(addr) = config.listen else {
            return Ok(None);
        };
        let token = config.token_file.as_deref().map(read_token).transpose()?;
        let tls = match (&config.cert_file, &config.key_file) {
            (Some(cert), Some(key)) => {
                Some(tls::server_config(cert, key).map_err(EngineError::Usage)?)
            }
            _ => None,
        };
        let listener = TcpListener::bind(addr).map_err(|e| {
            EngineError::Usage(format!(
                "api.listen: cannot listen on {addr}: {e} (use a free port, port 0 for any free port, or \"\" to \
                 turn the API off)"
            ))
        })?;
        let bound = listener
            .local_addr()
            .map_err(|e| EngineError::Usage(format!("api.listen: {addr}: {e}")))?;
        Ok(Some(ApiListener {
            listener: Arc::new(listener),
            addr: bound,
            tls,
            token,
            max_body: config.max_body_bytes,
        }))
    }

    /// The bound address (the real port when 0 was asked).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Serves the API on a thread of its own, asking `ops` and `reloads`.
    pub fn serve(
        &self,
        ops: Arc<dyn CrawlOps>,
        reloads: ReloadHandle,
    ) -> std::io::Result<ApiServer> {
        let auth = match &self.token {
            Some(t) => Auth::bearer(t.clone()),
            None => Auth::open(),
        };
        let api = Api::new(ops, Some(reloads), auth, self.max_body);
        ApiServer::start(self.listener.try_clone()?, self.tls.clone(), api)
    }
}

/// The bearer token in `path`.
pub fn read_token(path: &Path) -> Result<Secret, EngineError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| EngineError::Usage(format!("api.token_file: {}: {e}", path.display())))?;
    parse_token(&text)
        .map_err(|e| EngineError::Usage(format!("api.token_file: {}: {e}", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_api_is_opened_only_when_listen_is_set() {
        assert!(ApiListener::open(&ApiConfig::default()).unwrap().is_none());
        let config = ApiConfig {
            listen: Some("127.0.0.1:0".parse().unwrap()),
            ..ApiConfig::default()
        };
        let l = ApiListener::open(&config).unwrap().unwrap();
        assert_ne!(l.addr().port(), 0);
        // The port is held: a second listener on it is refused, naming the key.
        let taken = ApiConfig {
            listen: Some(l.addr()),
            ..ApiConfig::default()
        };
        let e = ApiListener::open(&taken).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(
            e.to_string().starts_with("api.listen: cannot listen on"),
            "{e}"
        );
    }

    #[test]
    fn a_bad_token_file_is_a_config_error_that_never_shows_the_token() {
        let dir = tempfile::tempdir().unwrap();
        let short = dir.path().join("short.token");
        std::fs::write(&short, "s3cret\n").unwrap();
        let config = ApiConfig {
            listen: Some("127.0.0.1:0".parse().unwrap()),
            token_file: Some(short.clone()),
            ..ApiConfig::default()
        };
        let e = ApiListener::open(&config).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        let text = e.to_string();
        assert!(
            text.starts_with("api.token_file: ") && text.contains("at least 16"),
            "{text}"
        );
        assert!(!text.contains("s3cret"), "{text}");
        let missing = dir.path().join("missing.token");
        assert!(
            read_token(&missing)
                .unwrap_err()
                .to_string()
                .starts_with("api.token_file: ")
        );
        let good = dir.path().join("good.token");
        std::fs::write(&good, "  0123456789abcdef0123\n").unwrap();
        assert_eq!(read_token(&good).unwrap().expose(), "0123456789abcdef0123");
    }
}
