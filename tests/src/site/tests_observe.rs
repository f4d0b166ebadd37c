//! Tests of a site's observation and lifecycle: request log, concurrency and connection counters, logging off,
//! shutdown and drop, spec validation and fixed ports.

use std::time::Duration;

use hyper::Version;

use super::tests::{client, fetch, fetch_with, h2_client};
use super::{Route, Site, SiteError, SiteSpec};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_log_and_concurrency() {
    let site = Site::builder(SiteSpec::small())
        .route(
            1,
            "/slow",
            Route::ok("slow").delay(Duration::from_millis(300)),
        )
        .start()
        .await
        .unwrap();
    let c = client();
    let url = site.url(1, "/slow?x=1");
    let headers = [
        ("user-agent", "crawl-test/1.0"),
        ("referer", "http://ref.example/"),
        ("accept-encoding", "gzip"),
    ];
    let jobs: Vec<_> = (0..4)
        .map(|_| {
            let (c, url) = (c.clone(), url.clone());
            tokio::spawn(async move { fetch_with(&c, &url, &headers).await.0 })
        })
        .collect();
    for j in jobs {
        assert_eq!(j.await.unwrap(), 200);
    }
    assert_eq!(site.max_concurrency(1), 4);
    assert_eq!(site.max_concurrency(0), 0);
    assert_eq!(site.in_flight(1), 0);
    assert_eq!(site.connections(1), 4);
    assert_eq!(site.hits(1, "/slow"), 4);
    assert_eq!(site.hits(1, "/slow?x=1"), 4);
    assert!(site.min_inter_arrival(1).is_some());
    assert_eq!(site.min_inter_arrival(0), None);
    let log = site.requests();
    assert_eq!(log.len(), 4);
    for r in &log {
        assert_eq!(
            (r.host, r.method.as_str(), r.path.as_str(), r.status),
            (1, "GET", "/slow?x=1", 200)
        );
        assert_eq!(r.user_agent.as_deref(), Some("crawl-test/1.0"));
        assert_eq!(r.referer.as_deref(), Some("http://ref.example/"));
        assert_eq!(r.accept_encoding.as_deref(), Some("gzip"));
        assert_eq!(r.version, Version::HTTP_11);
        assert!(r.end.unwrap() >= r.start + Duration::from_millis(300));
    }

    // h2c: three concurrent streams on one connection (opened by a first request)
    let h2 = h2_client();
    assert_eq!(fetch(&h2, &site.url(1, "/")).await.0, 200);
    site.clear_requests();
    let jobs: Vec<_> = (0..3)
        .map(|_| {
            let (c, url) = (h2.clone(), site.url(1, "/slow"));
            tokio::spawn(async move { fetch(&c, &url).await.0 })
        })
        .collect();
    for j in jobs {
        assert_eq!(j.await.unwrap(), 200);
    }
    assert_eq!(site.connections(1), 5);
    let log = site.requests();
    assert_eq!(log.len(), 3);
    assert!(
        log.iter()
            .all(|r| r.version == Version::HTTP_2 && r.user_agent.is_none())
    );
    assert_eq!(site.total_requests(), 8);
    assert!(site.bytes_sent() >= 7 * 4);
    site.shutdown().await;
    assert_eq!(site.live_tasks(), 0);
}

#[tokio::test]
async fn logging_off_keeps_counters() {
    let site = Site::start(SiteSpec {
        log_requests: false,
        ..SiteSpec::small()
    })
    .await
    .unwrap();
    let c = client();
    for p in ["/", "/page/1", "/robots.txt"] {
        assert_eq!(fetch(&c, &site.url(0, p)).await.0, 200);
    }
    assert!(site.requests().is_empty());
    assert_eq!(site.hits(0, "/"), 0);
    assert_eq!(site.total_requests(), 3);
    assert_eq!(site.max_concurrency(0), 1);
    assert_eq!(site.connections(0), 1);
    assert!(site.bytes_sent() > 1000);
}

/// A connection counts as open from its accept until the client closes it, also mid-request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_connections_fall_to_zero_once_clients_close() {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let site = Site::start(SiteSpec::small()).await.unwrap();
    let addr = site.addr(0).unwrap();
    assert_eq!(site.open_connections(), 0);
    let mut idle = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut asking = tokio::net::TcpStream::connect(site.addr(1).unwrap())
        .await
        .unwrap();
    asking
        .write_all(b"GET / HTTP/1.1\r\nhost: x\r\n\r\n")
        .await
        .unwrap();
    let mut first = [0u8; 12];
    asking.read_exact(&mut first).await.unwrap();
    assert_eq!(&first, b"HTTP/1.1 200");
    crate::wait::until(Duration::from_secs(10), "two connections open", || {
        site.open_connections() == 2
    })
    .await;
    idle.write_all(b"GET /page/1 HTTP/1.1\r\nhost: x\r\n")
        .await
        .unwrap();
    drop(idle);
    drop(asking);
    crate::wait::until(Duration::from_secs(10), "every connection closed", || {
        site.open_connections() == 0
    })
    .await;
    assert_eq!(site.connections(0) + site.connections(1), 2);
    site.shutdown().await;
}

#[tokio::test]
async fn shutdown_and_drop_stop_listening() {
    let site = Site::start(SiteSpec::small()).await.unwrap();
    let c = client();
    assert_eq!(fetch(&c, &site.seed_url()).await.0, 200);
    let addrs: Vec<_> = (0..site.hosts()).map(|h| site.addr(h).unwrap()).collect();
    assert_eq!(addrs[0].ip().to_string(), "127.0.0.2");
    assert_eq!(addrs[1].ip().to_string(), "127.0.0.3");
    assert!(site.live_tasks() >= 2);
    site.shutdown().await;
    assert_eq!(site.live_tasks(), 0);
    for a in &addrs {
        assert!(tokio::net::TcpStream::connect(a).await.is_err());
    }

    let site = Site::start(SiteSpec::small()).await.unwrap();
    let addr = site.addr(0).unwrap();
    drop(site);
    let mut refused = false;
    for _ in 0..100 {
        if tokio::net::TcpStream::connect(addr).await.is_err() {
            refused = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(refused, "dropped site still listening");
}

#[tokio::test]
async fn invalid_specs_and_fixed_port() {
    fn shareable<T: Send + Sync>() {}
    shareable::<Site>();
    for spec in [
        SiteSpec {
            hosts: 0,
            ..SiteSpec::small()
        },
        SiteSpec {
            pages_per_host: 0,
            ..SiteSpec::small()
        },
        SiteSpec {
            first_octet: 250,
            hosts: 10,
            ..SiteSpec::small()
        },
        SiteSpec {
            first_octet: 0,
            ..SiteSpec::small()
        },
    ] {
        assert!(matches!(
            Site::start(spec).await,
            Err(SiteError::InvalidSpec(_))
        ));
    }
    // A fixed port is used on every host: with 127.0.0.201 at that port held here (bound to port 0 by the system,
    // never released), the site cannot bind its host 1 and says where.
    let held = std::net::TcpListener::bind("127.0.0.201:0").unwrap();
    let port = held.local_addr().unwrap().port();
    let taken = Site::start(SiteSpec {
        first_octet: 200,
        port,
        ..SiteSpec::small()
    })
    .await;
    let Err(SiteError::Bind { addr, .. }) = taken else {
        panic!("127.0.0.201:{port} is held, yet the site started on it");
    };
    assert_eq!(addr.port(), port);
    drop(held);
}
