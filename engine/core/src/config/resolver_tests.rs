//! Tests of the `[resolver]` section: its values, `[[resolver.doh]]` tables, `hosts`, and
//! every error at its exact line:column.

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use super::tests::{errors, ok, only_error};
use super::*;

fn ip(s: &str) -> IpAddr {
    s.parse().expect("ip literal")
}

#[test]
fn modes_by_name() {
    for (name, mode) in [
        ("detect", ResolverMode::Detect),
        ("plain", ResolverMode::Plain),
    ] {
        let c = ok(&format!("[resolver]\nmode = {name:?}\n"));
        assert_eq!(c.resolver.mode, mode);
        assert_eq!(mode.as_str(), name);
        assert_eq!(mode.to_string(), name);
        assert!(!mode.needs_doh());
    }
    let doh = "[[resolver.doh]]\nurl = \"https://dns.example/dns-query\"\n";
    for (name, mode) in [
        ("doh", ResolverMode::Doh),
        ("doh-first", ResolverMode::DohFirst),
    ] {
        let c = ok(&format!("[resolver]\nmode = {name:?}\n{doh}"));
        assert_eq!(c.resolver.mode, mode);
        assert_eq!(mode.as_str(), name);
        assert!(mode.needs_doh());
    }
    let (l, c, m, k) = only_error("[resolver]\nmode = \"dot\"\n");
    assert_eq!((l, c, k), (2, 1, ErrorKind::InvalidValue));
    assert_eq!(
        m,
        "`resolver.mode`: unknown value `dot`, expected one of `detect`, `doh`, `doh-first`, `plain`"
    );
}

#[test]
fn doh_modes_need_an_endpoint() {
    let (l, c, m, k) = only_error("[resolver]\nattempts = 1\nmode = \"doh\"\n");
    assert_eq!((l, c, k), (3, 1, ErrorKind::InvalidValue));
    assert_eq!(
        m,
        "`resolver.mode`: mode `doh` needs at least one `[[resolver.doh]]` endpoint"
    );
    let (_, _, m, _) = only_error("[resolver]\nmode = \"doh-first\"\ndoh = []\n");
    assert!(m.contains("mode `doh-first` needs"), "{m}");
    // A rejected endpoint is reported once, not again as a missing one.
    let (l, c, m, _) =
        only_error("[resolver]\nmode = \"doh\"\n[[resolver.doh]]\nurl = \"http://dns.example/\"\n");
    assert_eq!((l, c), (4, 1));
    assert_eq!(
        m,
        "`resolver.doh[0].url`: DoH URL `http://dns.example/` must use https, found `http`"
    );
}

#[test]
fn nameservers() {
    let c = ok("[resolver]\nnameservers = [\"127.0.0.1:5353\", \"::1\", \"[::1]:53\"]\n");
    let ns: Vec<String> = c
        .resolver
        .nameservers
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(ns, ["127.0.0.1:5353", "[::1]:53", "[::1]:53"]);

    let (l, c, m, k) =
        only_error("[resolver]\nnameservers = [\"1.1.1.1:53\", \"dns.example:53\"]\n");
    assert_eq!((l, c, k), (2, 30, ErrorKind::InvalidValue));
    assert_eq!(
        m,
        "`resolver.nameservers[1]`: invalid nameserver `dns.example:53`, expected ip:port such as `192.0.2.53:53` or `[2001:db8::53]:53`"
    );
    let (_, _, m, _) = only_error("[resolver]\nnameservers = [\"1.1.1.1:0\"]\n");
    assert_eq!(
        m,
        "`resolver.nameservers[0]`: invalid nameserver `1.1.1.1:0`: port must not be 0"
    );
    let (_, _, m, _) = only_error("[resolver]\nnameservers = [\"1.1.1.1:99999\"]\n");
    assert!(m.contains("invalid nameserver `1.1.1.1:99999`"), "{m}");
}

#[test]
fn bogus_ips_and_file() {
    let c = ok("[resolver]\nbogus_ips = [\" 10.0.0.0/8 \", \"::/0\", \"192.0.2.1\"]\n");
    assert_eq!(c.resolver.bogus_ips, ["10.0.0.0/8", "::/0", "192.0.2.1"]);
    for (bad, msg) in [
        (
            "10.0.0.0/33",
            "invalid CIDR `10.0.0.0/33`: prefix length must be 0 to 32",
        ),
        (
            "2001:db8::/129",
            "invalid CIDR `2001:db8::/129`: prefix length must be 0 to 128",
        ),
        (
            "10.0.0.0/",
            "invalid CIDR `10.0.0.0/`: prefix length must be 0 to 32",
        ),
        (
            "10.0.0.0/x",
            "invalid CIDR `10.0.0.0/x`: prefix length must be 0 to 32",
        ),
        ("10.0.0", "invalid IP address or CIDR `10.0.0`"),
        (
            "example.com/24",
            "invalid IP address or CIDR `example.com/24`",
        ),
    ] {
        let (l, c, m, k) = only_error(&format!("[resolver]\nbogus_ips = [{bad:?}]\n"));
        assert_eq!((l, c, k), (2, 14, ErrorKind::InvalidValue), "{bad}");
        assert_eq!(m, format!("`resolver.bogus_ips[0]`: {msg}"));
    }
    assert_eq!(
        ok("[resolver]\nbogus_ips_file = \"\"\n")
            .resolver
            .bogus_ips_file,
        None
    );
    let c = ok("[resolver]\nbogus_ips_file = \"lists/bogus.txt\"\n");
    assert_eq!(
        c.resolver.bogus_ips_file,
        Some(PathBuf::from("lists/bogus.txt"))
    );
    let (_, _, m, _) = only_error("[resolver]\nbogus_ips_file = \" \"\n");
    assert_eq!(m, "`resolver.bogus_ips_file`: must not be empty");
}

#[test]
fn numbers_and_ttl_pair() {
    let c = ok("[resolver]\nhold_on_ms = 0\nmin_ttl_s = 60\nmax_ttl_s = 60\nnegative_ttl_s = 0\n");
    assert_eq!(c.resolver.hold_on, Duration::ZERO);
    assert_eq!(c.resolver.min_ttl, c.resolver.max_ttl);
    assert_eq!(c.resolver.negative_ttl, Duration::ZERO);

    let (l, c, m, k) = only_error("[resolver]\nmax_ttl_s = 10\nmin_ttl_s = 20\n");
    assert_eq!((l, c, k), (3, 1, ErrorKind::InvalidValue));
    assert_eq!(
        m,
        "`resolver.min_ttl_s` (20) must not exceed `resolver.max_ttl_s` (10)"
    );
    // Only max written, below the default min: reported at max.
    let (l, c, m, _) = only_error("[resolver]\nmax_ttl_s = 5\n");
    assert_eq!((l, c), (2, 1));
    assert!(
        m.starts_with("`resolver.min_ttl_s` (30) must not exceed"),
        "{m}"
    );

    let (_, _, m, _) = only_error("[resolver]\ntimeout_ms = 0\n");
    assert_eq!(m, "`resolver.timeout_ms`: must be greater than 0, found 0");
    let (_, _, m, _) = only_error("[resolver]\nattempts = 0\n");
    assert_eq!(m, "`resolver.attempts`: must be greater than 0, found 0");
    let (_, _, m, _) = only_error("[resolver]\nhijack_probe = \"yes\"\n");
    assert_eq!(
        m,
        "`resolver.hijack_probe`: expected a boolean, found string"
    );
    let (_, _, m, _) = only_error("[resolver]\nhold_on = 5\n");
    assert_eq!(
        m,
        "unknown key `resolver.hold_on`; did you mean `hold_on_ms`?"
    );
}

#[test]
fn hosts_overrides() {
    let c = ok(concat!(
        "[resolver.hosts]\n",
        "\"Printer.Example.\" = \"192.0.2.9\"\n",
        "\"bücher.example\" = [\"2001:db8::1\", \"192.0.2.1\"]\n",
        "localhost-2 = \"127.0.0.2\"\n",
    ));
    let h = &c.resolver.hosts;
    assert_eq!(h.len(), 3);
    assert_eq!(h["printer.example"], [ip("192.0.2.9")]);
    assert_eq!(
        h["xn--bcher-kva.example"],
        [ip("2001:db8::1"), ip("192.0.2.1")]
    );
    assert_eq!(h["localhost-2"], [ip("127.0.0.2")]);
}

#[test]
fn hosts_errors_are_positioned() {
    let (l, c, m, k) = only_error("[resolver]\nhosts = { \"a.example\" = \"192.0.2.300\" }\n");
    assert_eq!((l, c, k), (2, 11, ErrorKind::InvalidValue));
    assert_eq!(
        m,
        "`resolver.hosts.\"a.example\"`: invalid IP address `192.0.2.300`"
    );

    let (l, c, m, _) = only_error("[resolver.hosts]\n\"a.example\" = [\"192.0.2.1\", \"nope\"]\n");
    assert_eq!((l, c), (2, 29));
    assert_eq!(
        m,
        "`resolver.hosts.\"a.example\"[1]`: invalid IP address `nope`"
    );

    let (l, c, m, k) = only_error("[resolver.hosts]\nb.example = \"192.0.2.1\"\n");
    assert_eq!((l, c, k), (2, 1, ErrorKind::WrongType));
    assert_eq!(
        m,
        "`resolver.hosts.b`: expected a string or an array of strings, found table (quote names that contain dots)"
    );

    let (_, _, m, k) = only_error("[resolver.hosts]\nx = 5\n");
    assert_eq!(k, ErrorKind::WrongType);
    assert_eq!(
        m,
        "`resolver.hosts.x`: expected a string or an array of strings, found integer"
    );
    let (_, _, m, _) = only_error("[resolver.hosts]\nx = [5]\n");
    assert_eq!(m, "`resolver.hosts.x[0]`: expected a string, found integer");
    let (_, _, m, _) = only_error("[resolver.hosts]\nx = []\n");
    assert_eq!(m, "`resolver.hosts.x`: must not be empty");

    let (l, c, m, _) = only_error(
        "[resolver.hosts]\n\"a.example\" = \"192.0.2.1\"\n\"A.Example.\" = \"192.0.2.2\"\n",
    );
    assert_eq!((l, c), (3, 1));
    assert_eq!(
        m,
        "`resolver.hosts.\"A.Example.\"`: duplicate entry for `a.example`"
    );

    let (_, _, m, _) = only_error("[resolver.hosts]\n\"192.0.2.1\" = \"192.0.2.2\"\n");
    assert_eq!(
        m,
        "`resolver.hosts.\"192.0.2.1\"`: `192.0.2.1` is an IP address, not a host name"
    );
    let (_, _, m, _) = only_error("[resolver.hosts]\n\"a b\" = \"192.0.2.2\"\n");
    assert!(
        m.starts_with("`resolver.hosts.\"a b\"`: invalid host name `a b`"),
        "{m}"
    );
    let (_, _, m, _) = only_error("[resolver.hosts]\n\".\" = \"192.0.2.2\"\n");
    assert_eq!(m, "`resolver.hosts.\".\"`: host name must not be empty");

    let (l, c, m, _) = only_error("[resolver]\nhosts = [\"a\"]\n");
    assert_eq!((l, c), (2, 1));
    assert_eq!(m, "`resolver.hosts`: expected a table, found array");
}

#[test]
fn doh_tables_and_inline_form() {
    let c = ok(concat!(
        "[resolver]\n",
        "doh = [{ url = \"https://a.example/dns-query\" }, ",
        "{ url = \"https://[2001:db8::53]:8443/q\", bootstrap = \"2001:db8::53\" }]\n",
    ));
    let urls: Vec<&str> = c.resolver.doh.iter().map(|d| d.url.as_str()).collect();
    assert_eq!(
        urls,
        [
            "https://a.example/dns-query",
            "https://[2001:db8::53]:8443/q"
        ]
    );
    assert_eq!(c.resolver.doh[1].bootstrap, Some(ip("2001:db8::53")));
}

#[test]
fn doh_errors_are_positioned() {
    let (l, c, m, k) = only_error(concat!(
        "[resolver]\n",
        "mode = \"detect\"\n",
        "\n",
        "[[resolver.doh]]\n",
        "url = \"https://ok.example/dns-query\"\n",
        "\n",
        "[[resolver.doh]]\n",
        "url = \"ftp://dns.example/\"\n",
    ));
    assert_eq!((l, c, k), (8, 1, ErrorKind::InvalidValue));
    assert_eq!(
        m,
        "`resolver.doh[1].url`: DoH URL `ftp://dns.example/` must use https, found `ftp`"
    );

    let (_, _, m, _) = only_error("[[resolver.doh]]\nurl = \"dns.example\"\n");
    assert_eq!(
        m,
        "`resolver.doh[0].url`: invalid URL `dns.example`: relative URL without a base"
    );

    let (l, c, m, k) =
        only_error("[[resolver.doh]]\nurl = \"https://a.example/\"\nbootstrap = \"a.example\"\n");
    assert_eq!((l, c, k), (3, 1, ErrorKind::InvalidValue));
    assert_eq!(
        m,
        "`resolver.doh[0].bootstrap`: invalid IP address `a.example`"
    );

    let (l, c, m, k) =
        only_error("[[resolver.doh]]\nurl = \"https://a.example/\"\n  ca = \"x.pem\"\n");
    assert_eq!((l, c, k), (3, 3, ErrorKind::UnknownKey));
    assert_eq!(m, "unknown key `resolver.doh[0].ca`");
    let (_, _, m, _) =
        only_error("[[resolver.doh]]\nurl = \"https://a.example/\"\nca_fle = \"x\"\n");
    assert_eq!(
        m,
        "unknown key `resolver.doh[0].ca_fle`; did you mean `ca_file`?"
    );

    let errs = errors("[resolver]\nmode = \"doh\"\n[[resolver.doh]]\nbootstrap = \"192.0.2.1\"\n");
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert_eq!(
        errs[0].message,
        "`resolver.doh[0]`: missing required key `url`"
    );
    assert_eq!(
        (errs[0].line, errs[0].column),
        (3, 1),
        "at the table header"
    );

    let (l, c, m, k) = only_error("[resolver]\ndoh = \"https://a.example/\"\n");
    assert_eq!((l, c, k), (2, 1, ErrorKind::WrongType));
    assert_eq!(
        m,
        "`resolver.doh`: expected an array of tables, found string"
    );
    let (l, c, m, _) = only_error("[resolver]\ndoh = [\"https://a.example/\"]\n");
    assert_eq!((l, c), (2, 8));
    assert_eq!(m, "`resolver.doh[0]`: expected a table, found string");
    let (_, _, m, _) = only_error("[[resolver.doh]]\nurl = 443\n");
    assert_eq!(m, "`resolver.doh[0].url`: expected a string, found integer");
}

#[test]
fn from_file_resolves_resolver_paths() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("crawl.toml");
    std::fs::write(
        &path,
        concat!(
            "[resolver]\nbogus_ips_file = \"bogus.txt\"\n",
            "[[resolver.doh]]\nurl = \"https://a.example/\"\nca_file = \"ca.pem\"\n",
            "[[resolver.doh]]\nurl = \"https://b.example/\"\nca_file = \"/etc/ca.pem\"\n",
        ),
    )
    .expect("write");
    let c = Config::from_file(&path).expect("valid");
    assert_eq!(
        c.resolver.bogus_ips_file,
        Some(dir.path().join("bogus.txt"))
    );
    assert_eq!(c.resolver.doh[0].ca_file, Some(dir.path().join("ca.pem")));
    assert_eq!(
        c.resolver.doh[1].ca_file,
        Some(PathBuf::from("/etc/ca.pem"))
    );
    // from_str keeps them as written.
    let c = ok("[resolver]\nbogus_ips_file = \"bogus.txt\"\n");
    assert_eq!(c.resolver.bogus_ips_file, Some(PathBuf::from("bogus.txt")));
}
