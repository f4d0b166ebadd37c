//! PostgreSQL clusters started by a test: a fresh data directory made by `initdb` in a temporary directory, a
//! server on a loopback port the system handed out (never the machine's own service), its unix socket in that
//! directory. Dropping a cluster shuts it down (immediate mode) and removes its files.
//!
//! The programs come from `PG_BIN` (a directory holding `initdb`, `pg_ctl`, `psql`), else from the newest
//! `/usr/lib/postgresql/<version>/bin` (Debian's layout), else from `PATH`. `initdb` refuses to run as root, so as
//! root every server program runs as the `postgres` user (`runuser`), in a directory that user owns.
//!
//! Authentication: the superuser `postgres` is trusted on the socket and on 127.0.0.1 ([`Cluster::url`]); the role
//! [`PASSWORD_ROLE`] must give its password (SCRAM, [`Cluster::password_url`]), so a test can check that a
//! password never shows up where it should not. With [`Options::tls`] the server also speaks TLS with the given
//! certificate.
//!
//! A test that needs PostgreSQL calls [`require`] first: it returns false (the test skips, with a note) when the
//! programs are missing, except under `CI=true`, where a missing tool fails the test.

use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::redis::free_port;
use crate::{ToolError, tool};

const HINT: &str = "apt-get install postgresql; its programs are in /usr/lib/postgresql/<version>/bin, or set PG_BIN";
/// The programs a cluster needs.
const PROGRAMS: [&str; 3] = ["initdb", "pg_ctl", "psql"];
/// The role that logs in with a password ([`Cluster::password_url`]).
pub const PASSWORD_ROLE: &str = "crawl_writer";
/// The superuser, trusted without a password.
pub const SUPERUSER: &str = "postgres";
/// How long `pg_ctl` may wait for the server to start or stop.
const PG_CTL_WAIT_SECS: u32 = 30;
/// Ports handed out by the system may be taken again before the server binds them: tries before giving up.
const PORT_TRIES: usize = 10;

/// The directory holding `initdb`, `pg_ctl` and `psql`: `PG_BIN`, else the newest
/// `/usr/lib/postgresql/<version>/bin`, else the directory of `initdb` on `PATH`. None when none has all three.
pub fn bin_dir() -> Option<PathBuf> {
    let complete = |d: &Path| PROGRAMS.iter().all(|p| d.join(p).is_file());
    if let Some(d) = std::env::var_os("PG_BIN") {
        let d = PathBuf::from(d);
        return complete(&d).then_some(d);
    }
    let mut versions: Vec<(Vec<u32>, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let version = name
                .split('.')
                .map(|n| n.parse().ok())
                .collect::<Option<Vec<u32>>>()?;
            Some((version, e.path().join("bin")))
        })
        .filter(|(_, d)| complete(d))
        .collect();
    versions.sort();
    if let Some((_, d)) = versions.pop() {
        return Some(d);
    }
    tool::on_path("initdb")
        .and_then(|p| p.parent().map(Path::to_path_buf))
        .filter(|d| complete(d))
}

/// True when the current user is root (then the server programs run as `postgres`).
fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.status.success() && String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// True when the `postgres` user exists (it owns the clusters a root test starts).
fn postgres_user_exists() -> bool {
    Command::new("id")
        .arg(SUPERUSER)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// True when a cluster can be started here: the PostgreSQL programs are found and, as root, the `postgres` user
/// and `runuser` exist. Otherwise false with a note, or a panic under `CI=true`.
pub fn require(test: &str) -> bool {
    if bin_dir().is_none() {
        return tool::unavailable(test, "PostgreSQL's initdb, pg_ctl and psql", HINT);
    }
    if is_root() && !(postgres_user_exists() && tool::on_path("runuser").is_some()) {
        return tool::unavailable(
            test,
            "the postgres user and runuser (initdb does not run as root)",
            HINT,
        );
    }
    true
}

/// A server certificate for [`Options::tls`], in PEM.
#[derive(Clone)]
pub struct TlsFiles {
    /// The server's certificate (with any intermediates after it).
    pub cert_pem: String,
    /// Its private key.
    pub key_pem: String,
}

impl std::fmt::Debug for TlsFiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TlsFiles { .. }")
    }
}

/// How to start a cluster.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Turn TLS on (`ssl = on`) with this certificate and key; clients may still connect without TLS.
    pub tls: Option<TlsFiles>,
}

/// One PostgreSQL cluster: its data directory, log and socket in a temporary directory, the server on
/// 127.0.0.1:[`Cluster::port`].
#[derive(Debug)]
pub struct Cluster {
    dir: tempfile::TempDir,
    bin: PathBuf,
    port: u16,
    password: String,
    /// Run the server programs as `postgres` (the test runs as root).
    as_postgres: bool,
    running: bool,
}

impl Cluster {
    /// A new cluster with the defaults (no TLS), started. Panics when it cannot start (call [`require`] first).
    pub fn start() -> Cluster {
        Cluster::with(Options::default())
    }

    /// A new cluster with these options, started.
    pub fn with(opts: Options) -> Cluster {
        match Cluster::try_start(opts) {
            Ok(c) => c,
            Err(e) => panic!("start a PostgreSQL cluster: {e}"),
        }
    }

    fn try_start(opts: Options) -> Result<Cluster, ToolError> {
        let bin = bin_dir().ok_or_else(|| ToolError::Report {
            what: "PostgreSQL".to_owned(),
            report: format!("initdb, pg_ctl and psql not found ({HINT})"),
        })?;
        let dir = tempfile::Builder::new()
            .prefix("pg")
            .tempdir()
            .map_err(ToolError::io("tempdir for postgres"))?;
        let mut c = Cluster {
            dir,
            bin,
            port: 0,
            password: fresh_password(),
            as_postgres: is_root(),
            running: false,
        };
        c.init(&opts)?;
        c.first_start()?;
        c.try_psql(&format!(
            "CREATE ROLE {PASSWORD_ROLE} LOGIN PASSWORD '{}'; GRANT CREATE ON SCHEMA public TO {PASSWORD_ROLE};",
            c.password
        ))?;
        Ok(c)
    }

    /// `initdb`, then the settings and access rules of a test server.
    fn init(&self, opts: &Options) -> Result<(), ToolError> {
        if self.as_postgres {
            self.chown()?;
        }
        let data = self.data_dir();
        let out = self
            .command("initdb")
            .arg("-D")
            .arg(&data)
            .args(["-U", SUPERUSER, "-A", "trust", "-E", "UTF8", "--locale=C"])
            .args(["--no-sync", "--no-instructions"])
            .stdin(Stdio::null())
            .output()
            .map_err(ToolError::io("initdb"))?;
        if !out.status.success() {
            return Err(failed("initdb", &out));
        }
        let mut conf = format!(
            "\n# a test server\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '{}'\n\
             fsync = off\nfull_page_writes = off\nsynchronous_commit = off\nshared_buffers = 32MB\n\
             max_connections = 40\n",
            self.dir.path().display()
        );
        if let Some(tls) = &opts.tls {
            write(&data.join("server.crt"), &tls.cert_pem, 0o644)?;
            write(&data.join("server.key"), &tls.key_pem, 0o600)?;
            conf.push_str("ssl = on\nssl_cert_file = 'server.crt'\nssl_key_file = 'server.key'\n");
        }
        append(&data.join("postgresql.conf"), &conf)?;
        let hba = format!(
            "local all all trust\n\
             host all {SUPERUSER} 127.0.0.1/32 trust\n\
             host all all 127.0.0.1/32 scram-sha-256\n"
        );
        write(&data.join("pg_hba.conf"), &hba, 0o600)?;
        if self.as_postgres {
            self.chown()?;
        }
        Ok(())
    }

    /// The first start, on a free loopback port: a port taken again before the server bound it is given up for
    /// another.
    fn first_start(&mut self) -> Result<(), ToolError> {
        let mut last = None;
        for _ in 0..PORT_TRIES {
            self.port = free_port()?;
            match self.pg_ctl_start() {
                Ok(()) => return Ok(()),
                Err(e) if self.log().contains("could not bind") => last = Some(e),
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or(ToolError::NotReady {
            what: format!("postgres on a free port ({PORT_TRIES} tries)"),
            within: Duration::from_secs(u64::from(PG_CTL_WAIT_SECS)),
        }))
    }

    fn pg_ctl_start(&mut self) -> Result<(), ToolError> {
        let out = self
            .command("pg_ctl")
            .arg("start")
            .arg("-D")
            .arg(self.data_dir())
            .arg("-l")
            .arg(self.log_path())
            .args(["-w", "-t", &PG_CTL_WAIT_SECS.to_string()])
            .args(["-o", &format!("-p {}", self.port)])
            .stdin(Stdio::null())
            .output()
            .map_err(ToolError::io("pg_ctl start"))?;
        if !out.status.success() {
            let mut e = failed("pg_ctl start", &out);
            if let ToolError::Failed { output, .. } = &mut e {
                output.push_str("\nserver log:\n");
                output.push_str(&self.log());
            }
            return Err(e);
        }
        self.running = true;
        Ok(())
    }

    /// `pg_ctl stop` in `mode` (`fast`: sessions are ended, the server shuts down cleanly; `immediate`: at once).
    fn pg_ctl_stop(&mut self, mode: &str) -> Result<(), ToolError> {
        let out = self
            .command("pg_ctl")
            .arg("stop")
            .arg("-D")
            .arg(self.data_dir())
            .args(["-m", mode, "-w", "-t", &PG_CTL_WAIT_SECS.to_string()])
            .stdin(Stdio::null())
            .output()
            .map_err(ToolError::io("pg_ctl stop"))?;
        if !out.status.success() {
            return Err(failed("pg_ctl stop", &out));
        }
        self.running = false;
        Ok(())
    }

    /// Stops the server (fast shutdown: open sessions are ended); its data stays for [`Cluster::start_again`].
    pub fn stop(&mut self) {
        if let Err(e) = self.pg_ctl_stop("fast") {
            panic!("stop postgres: {e}");
        }
    }

    /// Starts the stopped server again, with the same data on the same port.
    pub fn start_again(&mut self) {
        if let Err(e) = self.pg_ctl_start() {
            panic!("start postgres again on port {}: {e}", self.port);
        }
    }

    /// True when the server accepts TCP connections on its port.
    pub fn accepts(&self) -> bool {
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, self.port));
        TcpStream::connect_timeout(&addr, Duration::from_millis(500)).is_ok()
    }

    /// The superuser's URL (trusted: no password), database `postgres`.
    pub fn url(&self) -> String {
        format!("postgres://{SUPERUSER}@127.0.0.1:{}/postgres", self.port)
    }

    /// The URL of [`PASSWORD_ROLE`] with its password, database `postgres`.
    pub fn password_url(&self) -> String {
        format!(
            "postgres://{PASSWORD_ROLE}:{}@127.0.0.1:{}/postgres",
            self.password, self.port
        )
    }

    /// The password of [`PASSWORD_ROLE`] (new for every cluster).
    pub fn password(&self) -> &str {
        &self.password
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The temporary directory: the data directory (`data`), the server log (`postgres.log`), the unix socket.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The server's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.log_path()).unwrap_or_default()
    }

    /// Runs `sql` with psql as the superuser (`-At`: unaligned rows, `|` between fields, no headers) and returns
    /// its output with the trailing newline removed. Panics when psql fails.
    pub fn psql(&self, sql: &str) -> String {
        match self.try_psql(sql) {
            Ok(s) => s,
            Err(e) => panic!("psql {sql:?}: {e}"),
        }
    }

    /// [`Cluster::psql`], returning its failure.
    pub fn try_psql(&self, sql: &str) -> Result<String, ToolError> {
        let out = Command::new(self.bin.join("psql"))
            .args(["-X", "-At", "-v", "ON_ERROR_STOP=1", "-h"])
            .arg(self.dir.path())
            .args([
                "-p",
                &self.port.to_string(),
                "-U",
                SUPERUSER,
                "-d",
                "postgres",
            ])
            .arg("-c")
            .arg(sql)
            .env("PGCONNECT_TIMEOUT", "10")
            .stdin(Stdio::null())
            .output()
            .map_err(ToolError::io("psql"))?;
        if !out.status.success() {
            return Err(failed("psql", &out));
        }
        let s = String::from_utf8_lossy(&out.stdout);
        Ok(s.strip_suffix('\n').unwrap_or(&s).to_owned())
    }

    fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    fn log_path(&self) -> PathBuf {
        self.dir.path().join("postgres.log")
    }

    /// A server program, run as `postgres` when the test runs as root.
    fn command(&self, program: &str) -> Command {
        let mut cmd = if self.as_postgres {
            let mut c = Command::new("runuser");
            c.args(["-u", SUPERUSER, "--"]).arg(self.bin.join(program));
            c
        } else {
            Command::new(self.bin.join(program))
        };
        cmd.current_dir(self.dir.path());
        cmd
    }

    /// Hands the temporary directory to the `postgres` user.
    fn chown(&self) -> Result<(), ToolError> {
        let out = Command::new("chown")
            .args(["-R", &format!("{SUPERUSER}:")])
            .arg(self.dir.path())
            .output()
            .map_err(ToolError::io("chown"))?;
        if !out.status.success() {
            return Err(failed("chown", &out));
        }
        Ok(())
    }

    /// The postmaster's process id (the first line of `postmaster.pid`).
    fn postmaster_pid(&self) -> Option<u32> {
        std::fs::read_to_string(self.data_dir().join("postmaster.pid"))
            .ok()?
            .lines()
            .next()?
            .trim()
            .parse()
            .ok()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if !self.running {
            return;
        }
        if self.pg_ctl_stop("immediate").is_err()
            && let Some(pid) = self.postmaster_pid()
        {
            // A server that does not answer pg_ctl (stopped by a signal, say) is killed.
            let _ = Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
        }
    }
}

/// A password new for each cluster (not secret: only never to be printed by the code under test).
fn fresh_password() -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or_default();
    format!("pw-{:08x}{:06x}", nanos, std::process::id())
}

fn failed(what: &str, out: &Output) -> ToolError {
    let mut text = out.stderr.clone();
    text.extend_from_slice(&out.stdout);
    ToolError::failed(what, out.status, &text)
}

fn write(path: &Path, text: &str, mode: u32) -> Result<(), ToolError> {
    use std::os::unix::fs::PermissionsExt;
    let what = format!("write {}", path.display());
    std::fs::write(path, text).map_err(ToolError::io(what.clone()))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .map_err(ToolError::io(what))
}

fn append(path: &Path, text: &str) -> Result<(), ToolError> {
    use std::io::Write;
    std::fs::OpenOptions::new()
        .append(true)
        .open(path)
        .and_then(|mut f| f.write_all(text.as_bytes()))
        .map_err(ToolError::io(format!("append to {}", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cluster_keeps_its_data_over_a_restart_on_its_port_and_goes_away_on_drop() {
        if !require("postgres cluster") {
            return;
        }
        let mut c = Cluster::start();
        assert_ne!(c.port(), 5432);
        c.psql("CREATE TABLE t (x int); INSERT INTO t VALUES (1), (2)");
        assert_eq!(c.psql("SELECT sum(x) FROM t"), "3");
        assert_eq!(c.psql("SHOW listen_addresses"), "127.0.0.1");
        c.stop();
        assert!(!c.accepts(), "the server still accepts after stop");
        assert!(c.try_psql("SELECT 1").is_err());
        c.start_again();
        assert_eq!(c.psql("SELECT count(*) FROM t"), "2");
        assert!(c.url().starts_with("postgres://postgres@127.0.0.1:"));
        let dir = c.dir().to_path_buf();
        let port = c.port();
        drop(c);
        assert!(
            !dir.exists(),
            "the temporary directory outlived its cluster"
        );
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
        assert!(
            TcpStream::connect_timeout(&addr, Duration::from_millis(500)).is_err(),
            "the server outlived its handle"
        );
    }

    #[test]
    fn the_password_role_needs_its_password_over_tcp() {
        if !require("postgres password role") {
            return;
        }
        let c = Cluster::start();
        let login = |password: &str| {
            Command::new(c.bin.join("psql"))
                .args(["-X", "-At", "-h", "127.0.0.1", "-p", &c.port().to_string()])
                .args([
                    "-U",
                    PASSWORD_ROLE,
                    "-d",
                    "postgres",
                    "-c",
                    "SELECT current_user",
                ])
                .env("PGPASSWORD", password)
                .stdin(Stdio::null())
                .output()
                .unwrap()
        };
        let ok = login(c.password());
        assert!(
            ok.status.success(),
            "{}",
            String::from_utf8_lossy(&ok.stderr)
        );
        assert_eq!(String::from_utf8_lossy(&ok.stdout).trim(), PASSWORD_ROLE);
        let bad = login("not-the-password");
        assert!(!bad.status.success());
        assert!(
            String::from_utf8_lossy(&bad.stderr).contains("password authentication failed"),
            "{}",
            String::from_utf8_lossy(&bad.stderr)
        );
        assert!(c.password_url().contains(c.password()));
    }
}
