//! Why a configuration value was rejected: [`ValueError`], one variant per kind of problem. Its
//! `Display` is the one-line reason that follows `path:line:col: `section.key`: ` in a
//! [`super::ConfigError`], which carries the value itself as [`super::ConfigError::reason`].
//!
//! Fields named `shown` hold the value with any user name and password replaced by `***`; fields
//! named `text` hold values that cannot carry credentials. No variant holds a password.

use std::fmt;
use std::net::IpAddr;

use crate::netguard::CidrError;

/// Why a value of the configuration (or a seed given on the command line) was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ValueError {
    /// An empty (or blank) string where text is required.
    #[error("must not be empty")]
    Empty,
    /// An empty name: of a `resolver.hosts` entry, a proxy chain or a proxy rule's host pattern.
    #[error("{0} must not be empty")]
    EmptyName(NameRole),
    /// A string with a character it may not hold (a User-Agent outside printable ASCII).
    #[error("must be printable ASCII, found {found:?} at character {at}")]
    NotPrintableAscii { found: char, at: usize },
    /// A control character where none is allowed (`service_name`).
    #[error("must not contain control characters, found {found:?} at character {at}")]
    ControlCharacter { found: char, at: usize },
    /// A NUL character in a path.
    #[error("must not contain a NUL character")]
    NulCharacter,
    /// A header secret (`authorization`, `cookie`) holding a character a header value may not;
    /// only its position is told.
    #[error(
        "must hold only visible ASCII characters, spaces and tabs (character {at} is not one; the value is not shown)"
    )]
    SecretCharacter { at: usize },

    /// An integer that does not fit any integer type.
    #[error("integer out of range")]
    IntegerOverflow,
    /// An integer below the smallest value allowed.
    #[error("{}", below_minimum(.min, .found))]
    BelowMinimum { min: u64, found: i128 },
    /// An integer above the largest value allowed.
    #[error("must be at most {max}, found {found}")]
    AboveMaximum { max: u64, found: i128 },

    /// A URL that is wrong for its role; see [`UrlProblem`].
    #[error("{}", url_message(.role, .shown, .problem))]
    Url {
        role: UrlRole,
        shown: String,
        problem: UrlProblem,
    },
    /// A proxy hop that is not `socks5://[user:pass@]host:port`; see [`HopProblem`].
    #[error("{}", hop_message(.shown, .problem))]
    ProxyHop { shown: String, problem: HopProblem },

    /// A regular expression that does not compile; `reason` is the regex crate's description.
    #[error("invalid regex `{pattern}`: {reason}")]
    Regex { pattern: String, reason: String },
    /// A word that is not one of the names a setting takes.
    #[error("unknown value `{text}`, expected one of {}", backticked(.expected))]
    UnknownName {
        text: String,
        expected: Vec<&'static str>,
    },
    /// A `[[sinks]]` name outside `[A-Za-z0-9_-]{1,64}`.
    #[error("`{text}` is not a sink name: use 1 to 64 letters, digits, `_` or `-`")]
    SinkName { text: String },
    /// A Kafka broker that is not `host:port`.
    #[error("`{text}` is not a broker address: write `host:port`")]
    Broker { text: String },
    /// A Kafka topic name Kafka refuses.
    #[error("`{text}` is not a topic name: use 1 to 249 of letters, digits, `.`, `_` and `-`")]
    Topic { text: String },
    /// A table name that is not `name` or `schema.name` of plain SQL identifiers.
    #[error("`{text}` is not a table name: write `name` or `schema.name` (letters, digits, `_`)")]
    TableName { text: String },
    /// A sink's URL that does not parse or has the wrong scheme; `shown` hides any password.
    #[error("`{shown}`: {reason}")]
    SinkUrl { shown: String, reason: String },
    /// A frontier backend other than `embedded` and `redis`.
    #[error("unknown backend `{text}`: use `embedded` or `redis`")]
    UnknownBackend { text: String },

    /// A `traps.strip_params` entry that is only `*`.
    #[error("`{text}` names no parameter (a `*` needs a prefix)")]
    NoParameterName { text: String },
    /// A `traps.strip_params` entry with a character a parameter name cannot hold.
    #[error("`{text}` is not a parameter name (`{}` not allowed; `*` only at the end)", .found.escape_default())]
    ParameterCharacter { text: String, found: char },

    /// A log filter without any directive.
    #[error("must not be empty (use a level such as `info`)")]
    NoLogDirective,
    /// A log directive that is not `level`, `target`, `target=level` or `target[span]=level`.
    #[error("invalid log directive `{directive}`")]
    LogDirective { directive: String },
    /// A `=level` without the target it applies to.
    #[error("invalid log directive `{directive}`: missing target")]
    LogDirectiveTarget { directive: String },
    /// A directive whose level is not a level.
    #[error("invalid log level `{level}` in `{directive}`, expected one of `{}`", LOG_LEVELS.join("`, `"))]
    LogLevel { level: String, directive: String },
    /// A bare word that is a near miss of a level.
    #[error("invalid log level `{word}`; did you mean `{suggestion}`?")]
    LogLevelTypo {
        word: String,
        suggestion: &'static str,
    },
    /// The pattern that checks log directives does not compile (a bug, never the user's fault).
    #[error("internal error in directive pattern: {reason}")]
    DirectivePattern { reason: String },

    /// Not an IP address.
    #[error("invalid IP address `{text}`")]
    IpAddress { text: String },
    /// Neither an IP address nor an `address/prefix` block.
    #[error("invalid IP address or CIDR `{text}`")]
    IpOrCidr { text: String },
    /// An `address/prefix` block whose prefix is too long for the family (or not a number).
    #[error("invalid CIDR `{text}`: prefix length must be 0 to {max}")]
    CidrPrefix { text: String, max: u8 },
    /// An address block of `security.allow_cidrs`.
    #[error(transparent)]
    AddressBlock(#[from] CidrError),
    /// A nameserver that is not `ip:port` or an IP address.
    #[error(
        "invalid nameserver `{text}`, expected ip:port such as `192.0.2.53:53` or `[2001:db8::53]:53`"
    )]
    Nameserver { text: String },
    /// A nameserver on port 0.
    #[error("invalid nameserver `{text}`: port must not be 0")]
    NameserverPortZero { text: String },
    /// A listen address that is not `ip:port`; `ip` is the address when only the port is missing.
    #[error(
        "invalid listen address `{text}`: {}; expected ip:port such as `127.0.0.1:9464` or `[::1]:9464` (\"\" = off)",
        listen_problem(.ip)
    )]
    ListenAddress { text: String, ip: Option<IpAddr> },

    /// Not a host name (`reason` from the URL parser when it gave one).
    #[error("invalid host name `{text}`{}", colon_reason(.reason))]
    HostName {
        text: String,
        reason: Option<url::ParseError>,
    },
    /// An IP address where a host name is required.
    #[error("`{text}` is an IP address, not a host name")]
    IpNotHostName { text: String },
    /// A proxy rule's host pattern with an empty label (`a..b`, `.a`).
    #[error("invalid host pattern `{text}`: empty label")]
    HostPatternEmptyLabel { text: String },
    /// A proxy rule's host pattern with a character a host pattern cannot hold.
    #[error(
        "invalid host pattern `{text}`: only letters, digits, `-`, `_`, `.` and `*` are allowed"
    )]
    HostPatternCharacter { text: String },
    /// A non-ASCII label with a `*` (it cannot be converted to its `xn--` form).
    #[error(
        "invalid host pattern `{text}`: a label with `*` must be ASCII (write the `xn--` form)"
    )]
    HostPatternWildcardLabel { text: String },
    /// A non-ASCII label that is not a valid host name label.
    #[error("invalid host pattern `{text}`: not a valid host name label")]
    HostPatternLabel { text: String },

    /// A WARC file name prefix that is empty or longer than 64 characters.
    #[error("must be 1 to 64 characters")]
    WarcPrefixLength,
    /// A WARC file name prefix with a character other than letters, digits, `.`, `_` and `-`.
    #[error("may hold only letters, digits, `.`, `_` and `-`")]
    WarcPrefixCharacter,
    /// A crawl name that is empty or longer than 64 characters.
    #[error("the crawl name must have 1 to 64 characters")]
    CrawlNameLength,
    /// A crawl name with a character other than letters, digits, `-`, `_` and `.`.
    #[error("invalid crawl name `{text}`: use letters, digits, `-`, `_` and `.`")]
    CrawlNameCharacter { text: String },
    /// A sentinel master name that is empty, too long, or holds spaces or control characters.
    #[error("invalid master name `{text}`: 1 to 128 printable characters without spaces")]
    MasterName { text: String },
    /// A sentinel URL on a unix socket (sentinels answer over TCP with the master's address).
    #[error("`{shown}`: a sentinel is reached over TCP (redis:// or rediss://), not a unix socket")]
    SentinelUnix { shown: String },
    /// A label name that Prometheus would not accept (`[[api.alert_actions]]` `host_label`, `labels`).
    #[error(
        "invalid label name `{text}`: use letters, digits and `_`, not starting with a digit (as Prometheus does)"
    )]
    LabelName { text: String },
    /// A chain named `direct`.
    #[error("`direct` is reserved (it means no proxy)")]
    ReservedChainName,
    /// A chain name with a character other than letters, digits, `-` and `_`.
    #[error("invalid chain name `{shown}`: use letters, digits, `-` and `_`")]
    ChainNameCharacter { shown: String },
    /// A reference to a chain that is not declared; `suggestion` is a declared name close to it.
    #[error("{}", unknown_chain(.shown, .suggestion))]
    UnknownChain {
        shown: String,
        suggestion: Option<String>,
    },

    /// A seed whose user name and password differ from the authorization already given for its
    /// origin (in `fetch.credentials` or by an earlier seed).
    #[error(
        "seed `{seed}`: its user name and password conflict with another authorization for origin `{origin}` (in `fetch.credentials` or an earlier seed)"
    )]
    SeedCredentialConflict { seed: String, origin: String },
}

/// The levels a log directive may name.
pub(super) const LOG_LEVELS: [&str; 6] = ["trace", "debug", "info", "warn", "error", "off"];

/// What kind of name was empty in [`ValueError::EmptyName`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum NameRole {
    /// A `resolver.hosts` entry.
    HostName,
    /// The `<name>` of `[proxy.chains.<name>]`.
    ChainName,
    /// A `proxy.rules[].hosts` entry.
    HostPattern,
}

impl fmt::Display for NameRole {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            NameRole::HostName => "host name",
            NameRole::ChainName => "chain name",
            NameRole::HostPattern => "host pattern",
        })
    }
}

/// What a URL in [`ValueError::Url`] is for (it decides the schemes allowed and how the URL is
/// named in the message).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum UrlRole {
    /// A seed (`crawl.seeds`, `--seed`): http or https.
    Seed,
    /// A DNS-over-HTTPS endpoint: https.
    Doh,
    /// A `fetch.credentials[].origin`: http or https, scheme, host and port only.
    Origin,
    /// `observability.otlp_endpoint`: http or https with an explicit port.
    OtlpEndpoint,
    /// A `frontier.redis.urls` entry: redis, rediss or redis+unix.
    Redis,
}

impl UrlRole {
    /// How the URL is named when it does not parse.
    fn unparsed(self) -> &'static str {
        match self {
            UrlRole::Seed | UrlRole::Doh | UrlRole::OtlpEndpoint => "URL",
            UrlRole::Origin => "origin",
            UrlRole::Redis => "redis URL",
        }
    }

    fn schemes(self) -> &'static str {
        match self {
            UrlRole::Doh => "https",
            UrlRole::Redis => "redis, rediss or redis+unix",
            UrlRole::Seed | UrlRole::Origin | UrlRole::OtlpEndpoint => "http or https",
        }
    }
}

impl fmt::Display for UrlRole {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            UrlRole::Seed => "URL",
            UrlRole::Doh => "DoH URL",
            UrlRole::Origin => "origin",
            UrlRole::OtlpEndpoint => "OTLP endpoint",
            UrlRole::Redis => "redis URL",
        })
    }
}

/// What is wrong with a URL of a [`ValueError::Url`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum UrlProblem {
    /// It does not parse.
    Syntax(url::ParseError),
    /// Its scheme is not one the role allows.
    Scheme { found: String },
    /// It has no scheme at all (a seed written as `www.example.org` or `localhost:8080/`); `suggestion` is the URL
    /// it most likely stands for, its user name and password hidden.
    NoScheme { suggestion: String },
    /// It has no host.
    NoHost,
    /// A `redis+unix` URL without the socket's path.
    NoSocketPath,
    /// It holds a user name or password where none is allowed.
    Credentials,
    /// It has no port where one is required.
    NoPort,
    /// Its port is 0.
    PortZero,
    /// It has a path where none is allowed.
    Path { path: String },
    /// It has a query or a fragment where none is allowed.
    QueryOrFragment,
    /// An origin with more than scheme, host and port.
    NotOrigin,
}

fn url_message(role: &UrlRole, shown: &str, problem: &UrlProblem) -> String {
    let role = *role;
    let why = match problem {
        UrlProblem::Syntax(e) => return format!("invalid {} `{shown}`: {e}", role.unparsed()),
        UrlProblem::Scheme { .. } if role == UrlRole::Redis => {
            return format!("redis URL `{shown}`: the scheme must be {}", role.schemes());
        }
        UrlProblem::Scheme { found } => format!("must use {}, found `{found}`", role.schemes()),
        UrlProblem::NoScheme { suggestion } => {
            format!("has no scheme; did you mean `{suggestion}`?")
        }
        UrlProblem::NoHost => "has no host".to_owned(),
        UrlProblem::NoSocketPath => "has no socket path".to_owned(),
        UrlProblem::Credentials if role == UrlRole::Origin => {
            "must not hold a user name or password (give them in `authorization`)".to_owned()
        }
        UrlProblem::Credentials => "must not contain credentials".to_owned(),
        UrlProblem::NoPort => "needs an explicit port, e.g. `http://127.0.0.1:4317`".to_owned(),
        UrlProblem::PortZero => "must not use port 0".to_owned(),
        UrlProblem::Path { path } => format!(
            "must not have a path, found `{path}` (the exporter adds the path of its protocol)"
        ),
        UrlProblem::QueryOrFragment => "must not have a query or fragment".to_owned(),
        UrlProblem::NotOrigin => {
            "must be only scheme, host and port, e.g. `https://intranet.example:8443`".to_owned()
        }
    };
    format!("{role} `{shown}` {why}")
}

/// What is wrong with a proxy hop of a [`ValueError::ProxyHop`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum HopProblem {
    /// Not `scheme://...` at all.
    Form,
    /// A scheme other than `socks5`.
    Scheme { found: String },
    /// A path, query or fragment after the port.
    PathQueryOrFragment,
    /// `user@` without `:password`.
    CredentialsForm,
    /// A `%` not followed by two hexadecimal digits in the user name or password.
    PercentEncoding,
    /// A user name or password that is not UTF-8 once decoded.
    CredentialsUtf8,
    /// A user name or password outside 1 to 255 bytes (RFC 1929).
    CredentialLength { what: &'static str },
    /// `[` without `]`.
    UnclosedBracket,
    /// A bracketed host that is not an IPv6 address.
    Ipv6Address { text: String },
    /// An IPv6 address without brackets.
    Ipv6Brackets,
    /// No host before the port.
    MissingHost,
    /// A host that is not a valid host name (`reason` from the URL parser when it gave one).
    Host {
        host: String,
        reason: Option<url::ParseError>,
    },
    /// No port.
    MissingPort,
    /// Port 0.
    PortZero,
    /// A port that is not a number from 1 to 65535.
    Port { text: String },
}

fn hop_message(shown: &str, problem: &HopProblem) -> String {
    let why = match problem {
        HopProblem::Scheme { found } => {
            let hint = if found.eq_ignore_ascii_case("socks5h") {
                " (write `socks5` and set `resolve = \"remote\"`)"
            } else {
                ""
            };
            return format!("proxy hop `{shown}` must use socks5, found `{found}`{hint}");
        }
        HopProblem::Form => "expected `socks5://[user:pass@]host:port`".to_owned(),
        HopProblem::PathQueryOrFragment => "must not have a path, query or fragment".to_owned(),
        HopProblem::CredentialsForm => {
            "credentials need a user name and a password (`user:pass@`)".to_owned()
        }
        HopProblem::PercentEncoding => "invalid percent-encoding in the credentials".to_owned(),
        HopProblem::CredentialsUtf8 => "the credentials are not valid UTF-8".to_owned(),
        HopProblem::CredentialLength { what } => format!("the {what} must be 1 to 255 bytes"),
        HopProblem::UnclosedBracket => "unclosed `[` in the host".to_owned(),
        HopProblem::Ipv6Address { text } => format!("invalid IPv6 address `{text}`"),
        HopProblem::Ipv6Brackets => {
            "write IPv6 addresses in brackets, e.g. `[::1]:1080`".to_owned()
        }
        HopProblem::MissingHost => "missing host".to_owned(),
        HopProblem::Host { host, reason } => {
            format!("invalid host `{host}`{}", colon_reason(reason))
        }
        HopProblem::MissingPort => "missing port".to_owned(),
        HopProblem::PortZero => "port must not be 0".to_owned(),
        HopProblem::Port { text } => format!("invalid port `{text}`"),
    };
    format!("invalid proxy hop `{shown}`: {why}")
}

fn below_minimum(min: &u64, found: &i128) -> String {
    if *min == 1 {
        format!("must be greater than 0, found {found}")
    } else if *found < 0 {
        format!("must not be negative, found {found}")
    } else {
        format!("must be at least {min}, found {found}")
    }
}

fn backticked(names: &[&str]) -> String {
    let names: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    names.join(", ")
}

fn listen_problem(ip: &Option<IpAddr>) -> &'static str {
    match ip {
        Some(IpAddr::V4(_)) => "missing port",
        Some(IpAddr::V6(_)) => "missing port (IPv6 addresses go in brackets)",
        None => "not an IP address and port",
    }
}

fn colon_reason(reason: &Option<url::ParseError>) -> String {
    reason.map(|e| format!(": {e}")).unwrap_or_default()
}

fn unknown_chain(shown: &str, suggestion: &Option<String>) -> String {
    match suggestion {
        Some(best) => format!("unknown chain `{shown}`; did you mean `{best}`?"),
        None => {
            format!("unknown chain `{shown}` (declare `[proxy.chains.{shown}]` or use `direct`)")
        }
    }
}
