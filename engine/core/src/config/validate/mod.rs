//! Value validators for configuration strings, one concept a file: URLs, network addresses, proxy
//! hops, names and patterns, the names of enum settings, free text, the log filter, and the
//! "did you mean" name matcher. Each validator returns the typed value or a [`ValueError`];
//! errors never contain a password.
//!
//! [`ValueError`]: super::ValueError

mod addresses;
mod choices;
mod log_filter;
mod names;
mod proxy_hop;
mod suggest;
mod text;
mod urls;

pub(super) use addresses::{ip, ip_or_cidr, listen_addr, nameserver};
pub(super) use choices::{
    alert_action, log_format, otlp_compression, otlp_protocol, resolve_at, resolver_mode, scope,
    select_policy,
};
pub(super) use log_filter::log_level;
pub(super) use names::{
    chain_name, chain_ref, host_name, host_pattern, label_name, strip_param, warc_prefix,
};
pub(super) use proxy_hop::proxy_hop;
pub(super) use suggest::closest;
pub(super) use text::{path, regex, service_name, user_agent};
pub(super) use urls::{doh_url, http_url, otlp_endpoint};
pub use urls::{hide_userinfo, seed_url};
