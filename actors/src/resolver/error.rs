//! Errors of setting the resolver up. Lookups themselves never fail with an error: they end in an `Outcome`.

#[derive(Debug, thiserror::Error)]
pub enum ResolverError {
    #[error("resolver.bogus_ips: {0}")]
    Bogus(String),
    #[error("resolver.doh ca_file {path}: {detail}")]
    CaFile { path: String, detail: String },
    #[error("resolver.doh: {0}")]
    Doh(String),
}
