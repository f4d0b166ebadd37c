//! Config reloads applied to the running tree, part by part: each actor is sent only the parts of the config that
//! changed ([`crawl_core::config::reload::Part`]). A reload that changes the log level alone sends nothing here; one
//! that leaves `[resolver]` alone keeps the resolver's DNS cache and its hijack probe's findings; one that leaves
//! `[proxy]` alone keeps every breaker as it is.
//!
//! The bogus-IP file is the one thing read again on every reload whatever changed: when its contents differ from
//! what the resolver runs with, the resolver is reconfigured as if `resolver.bogus_ips_file` had changed.

use super::error::TreeError;
use super::settings::{parse_settings, politeness_policy, scope_policy};
use crate::fetcher::http::{HttpClient, user_agent};
use crate::parser::logic::ParseSettings;
use crate::resolver::ipset::IpSet;
use crate::scheduler::Scheduler;
use actix::Addr;
use crawl_core::config::reload::Part;
use crawl_core::config::{Config, ProxyConfig};
use crawl_core::politeness::PolitenessPolicy;
use crawl_core::scope::ScopePolicy;
use std::collections::BTreeSet;
use std::sync::Arc;

/// What a config reload changes, built and checked before any of it is applied (a reload that fails here changes
/// nothing). `None`: that part did not change and is not touched.
pub struct Prepared {
    politeness: Option<PolitenessPolicy>,
    /// `fetch.concurrency`, with the politeness policy.
    concurrency: Option<usize>,
    scope: Option<Arc<ScopePolicy>>,
    parse: Option<ParseSettings>,
    user_agent: Option<http::HeaderValue>,
    resolver: Option<crate::resolver::setup::Parts>,
    proxy: Option<ProxyConfig>,
    recrawl: Option<crawl_core::config::RecrawlConfig>,
    bogus_file_changed: bool,
}

impl Prepared {
    /// The bogus-IP file's contents changed although the config names the same file (the resolver is reconfigured
    /// for it).
    pub fn bogus_file_changed(&self) -> bool {
        self.bogus_file_changed
    }
}

/// Applies config reloads to the running tree: the scheduler (politeness, scope), the parsers (scope, robots
/// product token), the HTTP clients (User-Agent), the resolver and the proxy-chain actor, each only for its parts.
///
/// It remembers the bogus IPs the resolver runs with; reloads go through one value (the reload task's).
#[derive(Clone)]
pub struct Reconfigurer {
    scheduler: Addr<Scheduler>,
    resolver: Addr<crate::resolver::Resolver>,
    proxy: Option<Addr<crate::proxy::actor::ProxyChains>>,
    parse: crate::live::Live<ParseSettings>,
    clients: Vec<HttpClient>,
    /// The bogus IPs (list and file) of the resolver's settings.
    bogus: IpSet,
}

impl Reconfigurer {
    /// The reconfigurer of a tree just started with a resolver running on `bogus`.
    pub(crate) fn new(
        scheduler: Addr<Scheduler>,
        resolver: Addr<crate::resolver::Resolver>,
        proxy: Option<Addr<crate::proxy::actor::ProxyChains>>,
        parse: crate::live::Live<ParseSettings>,
        clients: Vec<HttpClient>,
        bogus: IpSet,
    ) -> Reconfigurer {
        Reconfigurer {
            scheduler,
            resolver,
            proxy,
            parse,
            clients,
            bogus,
        }
    }

    /// Builds what `config` needs for the `changed` parts; any error rejects the reload.
    pub fn prepare(
        &self,
        config: &Config,
        changed: &BTreeSet<Part>,
    ) -> Result<Prepared, TreeError> {
        prepare(config, changed, &self.bogus)
    }

    /// Applies a prepared reload. Every step is infallible, so it is applied whole; parts that did not change are
    /// not touched.
    pub fn apply(&mut self, p: Prepared) {
        if let Some(parse) = p.parse {
            self.parse.store(parse);
        }
        if let Some(ua) = &p.user_agent {
            for c in &self.clients {
                c.set_user_agent(ua.clone());
            }
        }
        if p.politeness.is_some() || p.scope.is_some() || p.recrawl.is_some() {
            self.scheduler
                .do_send(crate::scheduler::messages::Reconfigure {
                    politeness: p.politeness,
                    concurrency: p.concurrency,
                    scope: p.scope,
                    recrawl: p.recrawl,
                });
        }
        if let Some(parts) = p.resolver {
            self.bogus = parts.ctx.bogus.clone();
            self.resolver
                .do_send(crate::resolver::messages::Reconfigure { parts });
        }
        if let (Some(config), Some(proxy)) = (p.proxy, &self.proxy) {
            proxy.do_send(crate::proxy::messages::Reconfigure { config });
        }
    }
}

/// What a reload to `config` sends for the `changed` parts, the resolver running with the `running` bogus IPs.
fn prepare(
    config: &Config,
    changed: &BTreeSet<Part>,
    running: &IpSet,
) -> Result<Prepared, TreeError> {
    let user_agent = if changed.contains(&Part::UserAgent) {
        Some(user_agent(&config.crawl.user_agent)?)
    } else {
        None
    };
    let scope = changed.contains(&Part::Scope).then(|| scope_policy(config));
    // The parsers hold the scope and the robots.txt product token together.
    let parse = (scope.is_some() || user_agent.is_some()).then(|| {
        let s = scope.clone().unwrap_or_else(|| scope_policy(config));
        parse_settings(config, s)
    });
    let mut bogus_file_changed = false;
    let resolver = if changed.contains(&Part::Resolver) {
        Some(crate::resolver::setup::build(config)?)
    } else if config.resolver.bogus_ips_file.is_some() {
        bogus_file_changed = crate::resolver::setup::bogus_set(&config.resolver)? != *running;
        if bogus_file_changed {
            Some(crate::resolver::setup::build(config)?)
        } else {
            None
        }
    } else {
        None
    };
    Ok(Prepared {
        politeness: changed
            .contains(&Part::Politeness)
            .then(|| politeness_policy(config)),
        concurrency: changed
            .contains(&Part::Politeness)
            .then_some(config.fetch.concurrency as usize),
        scope,
        parse,
        user_agent,
        resolver,
        proxy: changed.contains(&Part::Proxy).then(|| config.proxy.clone()),
        recrawl: changed
            .contains(&Part::Recrawl)
            .then(|| config.recrawl.clone()),
        bogus_file_changed,
    })
}

#[cfg(test)]
mod tests;
