use super::*;
use crawl_store_embedded::DirLock;
use reach::Server;

fn config(dir: &Path) -> Config {
    let mut c = Config::default();
    c.frontier.data_dir = dir.join("data");
    c.output.jsonl = dir.join("out/crawl.jsonl");
    c.output.warc_dir = Some(dir.join("warc"));
    c.observability.metrics_listen = None;
    c
}

#[test]
fn a_fresh_layout_passes_and_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let c = config(dir.path());
    assert_eq!(preflight(&c, false), Findings::default());
    assert_eq!(preflight(&c, true), Findings::default());
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn a_locked_data_dir_a_busy_port_and_a_path_under_a_file_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(dir.path());
    let _held = DirLock::acquire(&c.frontier.data_dir).unwrap();
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    c.observability.metrics_listen = Some(busy.local_addr().unwrap());
    std::fs::write(dir.path().join("file"), b"x").unwrap();
    c.output.warc_dir = Some(dir.path().join("file/warc"));
    let f = preflight(&c, false);
    assert!(f.failed.is_empty(), "{f:?}");
    assert_eq!(f.refused.len(), 3, "{f:?}");
    let has = |start: &str, word: &str| {
        f.refused
            .iter()
            .any(|e| e.starts_with(start) && e.contains(word))
    };
    assert!(
        has(
            "frontier.data_dir:",
            "in use by another crawl-engine process"
        ),
        "{f:?}"
    );
    assert!(has("output.warc_dir:", "not a directory"), "{f:?}");
    assert!(
        has("observability.metrics_listen:", "cannot listen"),
        "{f:?}"
    );
    assert_eq!(
        f.failure()
            .map(|c| crate::error::EngineError::Check(c).exit()),
        Some(crate::error::Exit::Refused)
    );
}

#[test]
fn fresh_says_what_it_would_move_and_moves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let c = config(dir.path());
    std::fs::create_dir_all(dir.path().join("out")).unwrap();
    std::fs::write(&c.output.jsonl, b"{}\n").unwrap();
    // Records no crawl of this (new) data_dir wrote: refused, unless --fresh moves them aside.
    let f = preflight(&c, false);
    assert_eq!(f.refused.len(), 1, "{f:?}");
    assert!(
        f.refused[0].starts_with("output.jsonl:") && f.refused[0].contains("--fresh"),
        "{f:?}"
    );
    let f = preflight(&c, true);
    assert!(f.refused.is_empty(), "{f:?}");
    assert_eq!(
        f.notes,
        vec![format!(
            "--fresh moves output.jsonl {} aside",
            c.output.jsonl.display()
        )]
    );
    assert_eq!(std::fs::read(&c.output.jsonl).unwrap(), b"{}\n");
    assert_eq!(
        std::fs::read_dir(dir.path().join("out")).unwrap().count(),
        1
    );
}

#[test]
fn servers_out_of_reach_are_named_with_their_key_and_cause_and_secrets_masked() {
    let listening = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(dir.path());
    c.observability.otlp_endpoint =
        Some(url::Url::parse(&format!("http://127.0.0.1:{closed}")).unwrap());
    let toml = format!(
        "[proxy]\ndefault = [\"a\"]\n[proxy.chains.a]\nhops = [\"socks5://user:hop-pw-31@127.0.0.1:{closed}\"]\n\
         [proxy.chains.b]\nhops = [\"socks5://collector.test:{}\"]\n",
        listening.local_addr().unwrap().port()
    );
    let parsed = Config::from_str(&toml, "test.toml").unwrap();
    c.proxy = parsed.proxy;
    c.resolver
        .hosts
        .insert("collector.test".into(), vec!["127.0.0.1".parse().unwrap()]);
    let servers = reach::servers(&c);
    assert_eq!(
        servers.iter().map(|s| s.key.as_str()).collect::<Vec<_>>(),
        vec![
            "observability.otlp_endpoint",
            "proxy.chains.a",
            "proxy.chains.b"
        ]
    );
    let warnings = reach::unreachable(&c, servers);
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(
        warnings[0].starts_with(&format!(
            "observability.otlp_endpoint: cannot connect to http://127.0.0.1:{closed}/: 127.0.0.1:{closed}: "
        )),
        "{warnings:?}"
    );
    assert!(
        warnings[1].starts_with(&format!(
            "proxy.chains.a: cannot connect to its first hop socks5://***@127.0.0.1:{closed}: "
        )),
        "{warnings:?}"
    );
    assert!(!format!("{warnings:?}").contains("hop-pw-31"));
    // A fixed bootstrap address is used as is.
    let at = Server {
        key: "resolver.doh".into(),
        shown: "https://doh.test/dns-query".into(),
        host: "doh.test".into(),
        port: listening.local_addr().unwrap().port(),
        at: Some("127.0.0.1".parse().unwrap()),
        meanwhile: "",
    };
    assert!(reach::unreachable(&c, vec![at]).is_empty());
}

#[test]
fn a_relative_path_is_judged_by_the_current_directory_and_a_file_blocks_its_children() {
    assert!(creatable(Path::new("no-such-folder/sub/crawl.jsonl")).is_ok());
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f"), b"x").unwrap();
    let err = creatable(&dir.path().join("f/a/b"))
        .unwrap_err()
        .to_string();
    assert!(err.ends_with("f is not a directory"), "{err}");
}

#[test]
fn private_seeds_warn_unless_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(dir.path());
    c.add_seed(url::Url::parse("http://127.0.0.9/").unwrap());
    c.add_seed(url::Url::parse("http://intranet.example/").unwrap());
    c.add_seed(url::Url::parse("http://[::1]:8080/").unwrap());
    c.resolver
        .hosts
        .insert("intranet.example".into(), vec!["10.1.2.3".parse().unwrap()]);
    let f = preflight(&c, false);
    assert!(f.refused.is_empty() && f.failed.is_empty(), "{f:?}");
    assert_eq!(f.warnings.len(), 3, "{f:?}");
    assert!(
        f.warnings[1].contains("10.1.2.3 (private)"),
        "{}",
        f.warnings[1]
    );
    c.security.allow_cidrs = vec!["10.1.0.0/16".parse().unwrap(), "::1".parse().unwrap()];
    let f = preflight(&c, false);
    assert_eq!(f.warnings.len(), 1, "only 127.0.0.9 is left: {f:?}");
    assert!(f.warnings[0].contains("127.0.0.9 (loopback)"), "{f:?}");
    c.security.allow_private_networks = true;
    assert!(preflight(&c, false).warnings.is_empty());
}
