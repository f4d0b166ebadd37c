//! The control API: JSON over HTTP/1.1 under `/v1`, to read a running crawl's state and steer it (pauses, per-host
//! politeness, URLs to add, queue drops, config reloads, alerts that act). `crawl-engine ctl` ([`crate::ctl`]) is
//! its client; Alertmanager posts its notifications to `/v1/alerts`.
//!
//! # Layout
//! - [`ops`]: the [`ops::CrawlOps`] trait the server calls, implemented over the actor tree by [`tree_ops`].
//! - [`dto`]: the JSON contract (also described by `engine/openapi.json`, served by [`openapi`]).
//! - [`routes`]: the endpoints. [`handler`]: one request to one answer (auth, limits, routing, errors).
//! - [`requests`]: request bodies and queries into validated inputs, through [`fields`]. [`answer`]: JSON answers.
//! - [`auth`]: the bearer token, compared in constant time. [`body`]: bodies read under a size cap.
//! - [`listener`]: the `[api]` section turned into a bound listener (token, TLS via [`tls`]).
//! - [`server`]: the listener served on a thread of its own. [`config_view`]: the running config, secrets masked.
//! - [`alerts`]: an Alertmanager notification carried out (`[[api.alert_actions]]`).

pub mod alerts;
pub mod answer;
pub mod auth;
pub mod body;
pub mod config_view;
pub mod dto;
pub mod fields;
pub mod handler;
pub mod listener;
pub mod openapi;
pub mod ops;
pub mod requests;
pub mod routes;
pub mod server;
pub mod tls;
pub mod tree_ops;
