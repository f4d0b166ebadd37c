//! Builds the resolver's settings, detection context and DoH client from the validated config.

use super::doh::{DohClient, DohEndpoint};
use super::error::ResolverError;
use super::ipset::IpSet;
use super::logic::DetectCtx;
use super::lookup::Settings;
use super::plain;
use crawl_core::config::{Config, ResolverConfig};
use std::collections::{HashMap, HashSet};
use std::net::IpAddr;

/// Parses /etc/hosts: `ip name [alias..]`, `#` comments; junk lines are skipped.
pub fn parse_hosts(text: &str) -> HashMap<String, Vec<IpAddr>> {
    let mut out: HashMap<String, Vec<IpAddr>> = HashMap::new();
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or("");
        let mut words = line.split_whitespace();
        let Some(ip) = words.next().and_then(|w| w.parse::<IpAddr>().ok()) else {
            continue;
        };
        for name in words {
            let name = name.trim_end_matches('.').to_ascii_lowercase();
            let ips = out.entry(name).or_default();
            if !ips.contains(&ip) {
                ips.push(ip);
            }
        }
    }
    out
}

/// Everything the resolver actor starts with.
pub struct Parts {
    pub settings: Settings,
    pub ctx: DetectCtx,
    pub doh: Option<DohClient>,
}

/// The bogus IPs of `[resolver]`: the `bogus_ips` list and the contents of `bogus_ips_file` (read now; errors name
/// the file).
pub fn bogus_set(r: &ResolverConfig) -> Result<IpSet, ResolverError> {
    let mut bogus =
        IpSet::from_entries(r.bogus_ips.iter()).map_err(|e| ResolverError::Bogus(e.to_string()))?;
    if let Some(path) = &r.bogus_ips_file {
        let more = IpSet::load_file(path)
            .map_err(|e| ResolverError::Bogus(format!("{}: {e}", path.display())))?;
        bogus.extend_from(&more);
    }
    Ok(bogus)
}

/// Reads the bogus-IP file and DoH CA files; errors name the file.
pub fn build(config: &Config) -> Result<Parts, ResolverError> {
    let r = &config.resolver;
    let bogus = bogus_set(r)?;
    // The system's resolver configuration: /etc/resolv.conf servers and /etc/hosts names (config hosts win).
    let system = r.nameservers.is_empty();
    let nameservers = if system {
        plain::system_nameservers()
    } else {
        r.nameservers.clone()
    };
    let mut hosts: HashMap<String, Vec<IpAddr>> = if system {
        std::fs::read_to_string("/etc/hosts")
            .map(|t| parse_hosts(&t))
            .unwrap_or_default()
    } else {
        HashMap::new()
    };
    for (k, v) in &r.hosts {
        hosts.insert(k.trim_end_matches('.').to_ascii_lowercase(), v.clone());
    }
    let mut endpoints = Vec::with_capacity(r.doh.len());
    for e in &r.doh {
        let ca_pem = match &e.ca_file {
            Some(p) => Some(std::fs::read(p).map_err(|err| ResolverError::CaFile {
                path: p.display().to_string(),
                detail: err.to_string(),
            })?),
            None => None,
        };
        endpoints.push(DohEndpoint {
            url: e.url.clone(),
            bootstrap: e.bootstrap,
            ca_pem,
        });
    }
    let doh = if endpoints.is_empty() {
        None
    } else {
        Some(DohClient::new(endpoints, r.timeout).map_err(|e| ResolverError::Doh(e.to_string()))?)
    };
    let settings = Settings {
        mode: r.mode,
        nameservers,
        hosts,
        hold_on: r.hold_on,
        timeout: r.timeout,
        attempts: r.attempts,
        min_ttl: r.min_ttl,
        max_ttl: r.max_ttl,
        negative_ttl: r.negative_ttl,
        hijack_probe: r.hijack_probe,
    };
    let ctx = DetectCtx {
        bogus,
        hijack: HashSet::new(),
        non_public_suspicious: !config.security.allow_private_networks,
        allow_cidrs: config.security.allow_cidrs.clone(),
    };
    Ok(Parts { settings, ctx, doh })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_file_lines() {
        let h = parse_hosts(
            "127.0.0.1 localhost vm\n::1 localhost ip6-localhost # c\n# x\nbad line\n10.0.0.1 A.Example.\n",
        );
        assert_eq!(
            h["localhost"],
            vec![
                IpAddr::from([127, 0, 0, 1]),
                "::1".parse::<IpAddr>().unwrap()
            ]
        );
        assert_eq!(h["vm"], vec![IpAddr::from([127, 0, 0, 1])]);
        assert_eq!(h["a.example"], vec![IpAddr::from([10, 0, 0, 1])]);
        assert!(!h.contains_key("bad"));
    }
}
