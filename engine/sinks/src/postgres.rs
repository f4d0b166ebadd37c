//! The PostgreSQL sink: committed records into one table, one transaction per batch, idempotent on `record_id`.
//!
//! # The table
//!
//! Created when missing (`CREATE TABLE IF NOT EXISTS`, in the schema named by `table = "schema.name"`, else the
//! first schema of the role's `search_path`):
//!
//! | column        | type          | what it holds                                                          |
//! |---------------|---------------|------------------------------------------------------------------------|
//! | `record_id`   | `text PRIMARY KEY` | the record's id, unique per fetch: what re-shipping deduplicates on |
//! | `url`         | `text NOT NULL` | the URL fetched                                                      |
//! | `host`        | `text NOT NULL` | its host, lowercase (empty for a URL without one)                    |
//! | `outcome`     | `text NOT NULL` | `fetched`, `failed` or `excluded`                                    |
//! | `status`      | `integer`     | the HTTP status (none for a failed or excluded fetch)                  |
//! | `fetched_at`  | `timestamptz` | when it was fetched (the record's RFC 3339 `fetched_at`)               |
//! | `record`      | `jsonb NOT NULL` | the whole JSONL record                                              |
//! | `warc_file`   | `text`        | the WARC file holding the response                                     |
//! | `warc_offset` | `bigint`      | the record's offset in it                                              |
//! | `warc_length` | `bigint`      | the record's length in it                                              |
//! | `inserted_at` | `timestamptz NOT NULL DEFAULT now()` | when the row was written (with `on_conflict = "update"`: last changed) |
//!
//! An existing table is checked before anything is written: it needs every column above but `inserted_at`, of
//! these types, a `PRIMARY KEY` or `UNIQUE` constraint on `record_id` alone, no `NOT NULL` on the columns a record
//! may leave empty, no other `NOT NULL` column without a default, and the privileges to `INSERT` its columns and
//! `SELECT` `record_id` (for `on_conflict = "update"`: `SELECT` and `UPDATE` them all). Otherwise [`PostgresTarget::connect`] fails with [`SinkError::Setup`] (key
//! `table`) naming every difference. Further columns and indexes are the operator's.
//!
//! # Shipping
//!
//! A batch is one `INSERT ... SELECT FROM unnest(...) ON CONFLICT (record_id) DO NOTHING` (or `DO UPDATE`, which
//! rewrites a row whose record changed), committed before [`PostgresTarget::ship`] returns: a batch shipped again
//! after a crash between the commit and the checkpoint adds nothing. Rows go in sorted by `record_id`, so
//! processes writing overlapping batches take their row locks in one order and do not deadlock each other.
//!
//! The JSONL line goes into `record` as it is, except that a `\u0000` escape (which `jsonb` cannot hold) becomes
//! U+FFFD. A `fetched_at` that is not RFC 3339 leaves the column empty (the record keeps it).
//!
//! # The URL
//!
//! `postgres://user:password@host:port/database?options`, with the options of `tokio-postgres` (`connect_timeout`,
//! `target_session_attrs`, `application_name`, ...; `host=/run/postgresql` for a unix socket) and two more:
//! - `sslmode`: `disable` (also `allow`, `prefer`, or none given): no TLS. `require`, `verify-ca` and `verify-full`:
//!   TLS or no connection, and the server's certificate must chain to a trusted root and name the host (all three
//!   are checked like libpq's `verify-full`).
//! - `sslrootcert`: a PEM file of the roots to trust instead of the defaults (the Mozilla roots and the system's),
//!   or `system` for the system's alone.
//!
//! Each request may take `timeout_ms`: connecting, and each statement (the server's `statement_timeout` is set to
//! it too, so a batch waiting on another writer's locks is cancelled rather than left running).

use std::borrow::Cow;
use std::collections::hash_map::RandomState;
use std::fmt;
use std::hash::BuildHasher;
use std::str::FromStr;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use crawl_core::config::{OnConflict, PostgresSink, SinkConfig};
use tokio::task::JoinHandle;
use tokio_postgres::error::SqlState;
use tokio_postgres::{Client, Config, NoTls, Statement};
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::record::ShipRecord;
use crate::{Shipped, SinkError};

const KIND: &str = "postgres";
/// Tries of a batch that hit a serialization failure or a deadlock before it counts as transient.
const CONFLICT_TRIES: u32 = 4;
/// The first wait after a serialization failure or deadlock (doubled each time, with up to 50 % added at random).
const CONFLICT_BACKOFF: Duration = Duration::from_millis(25);
/// How much longer than `timeout` the client waits for a statement, so the server's `statement_timeout` answers
/// first when the server is there to answer.
const CLIENT_GRACE: Duration = Duration::from_millis(500);

/// A column the sink writes: its name, its type as `format_type` shows it, and whether a record may leave it empty.
struct Column {
    name: &'static str,
    ty: &'static str,
    nullable: bool,
}

const COLUMNS: [Column; 10] = [
    Column {
        name: "record_id",
        ty: "text",
        nullable: false,
    },
    Column {
        name: "url",
        ty: "text",
        nullable: false,
    },
    Column {
        name: "host",
        ty: "text",
        nullable: false,
    },
    Column {
        name: "outcome",
        ty: "text",
        nullable: false,
    },
    Column {
        name: "status",
        ty: "integer",
        nullable: true,
    },
    Column {
        name: "fetched_at",
        ty: "timestamp with time zone",
        nullable: true,
    },
    Column {
        name: "record",
        ty: "jsonb",
        nullable: false,
    },
    Column {
        name: "warc_file",
        ty: "text",
        nullable: true,
    },
    Column {
        name: "warc_offset",
        ty: "bigint",
        nullable: true,
    },
    Column {
        name: "warc_length",
        ty: "bigint",
        nullable: true,
    },
];

/// The column written on insert by its default, rewritten by `on_conflict = "update"`; optional in an existing
/// table.
const INSERTED_AT: &str = "inserted_at";

/// A PostgreSQL table that committed records are shipped to (see the module documentation).
pub struct PostgresTarget {
    sink: String,
    /// The URL as shown (no password).
    shown: String,
    /// The table as configured, for messages.
    table: String,
    /// The table as SQL (each part quoted).
    table_sql: String,
    on_conflict: OnConflict,
    timeout: Duration,
    config: Config,
    tls: Tls,
    /// Strings never to show (the password, as written in the URL and decoded).
    secrets: Vec<String>,
    conn: Option<Conn>,
}

impl fmt::Debug for PostgresTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostgresTarget")
            .field("sink", &self.sink)
            .field("url", &self.shown)
            .field("table", &self.table)
            .field("on_conflict", &self.on_conflict)
            .field("tls", &matches!(self.tls, Tls::Verify(_)))
            .field("connected", &self.conn.is_some())
            .finish()
    }
}

/// How the connection is made.
enum Tls {
    Off,
    /// TLS with the server's certificate checked against these roots.
    Verify(MakeRustlsConnect),
}

/// One open connection and the statement that inserts a batch on it.
struct Conn {
    client: Client,
    insert: Statement,
    _task: Driver,
}

/// The task driving a connection: ended when the connection is given up, so a server that hangs does not keep a
/// socket open.
struct Driver(JoinHandle<()>);

impl Drop for Driver {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// What a failed statement calls for.
enum Failure {
    /// A serialization failure or deadlock: try the batch again.
    Conflict,
    /// Worth retrying later; `broken`: the connection is unusable.
    Transient { broken: bool },
    /// The table or the role needs the operator.
    Setup,
}

impl PostgresTarget {
    /// Connects within `sink.timeout`, creates the table if it is missing and checks it (see the module
    /// documentation). A server that does not answer or refuses the credentials: [`SinkError::Unreachable`] (key
    /// `url`, the URL shown without its password). A URL that cannot be used, a database that does not exist, or a
    /// table that does not fit: [`SinkError::Setup`]; nothing is written then.
    pub async fn connect(
        sink: &SinkConfig,
        cfg: &PostgresSink,
    ) -> Result<PostgresTarget, SinkError> {
        let setup = |detail: String| SinkError::Setup {
            sink: sink.name.clone(),
            kind: KIND,
            key: "url",
            detail,
        };
        let raw_password = url::Url::parse(cfg.url.expose())
            .ok()
            .and_then(|u| u.password().map(str::to_owned));
        let mut secrets: Vec<String> = raw_password.into_iter().collect();
        let (rest, tls_mode) =
            split_tls_params(cfg.url.expose()).map_err(|e| setup(scrub(&e, &secrets)))?;
        let mut config =
            Config::from_str(&rest).map_err(|e| setup(scrub(&describe(&e), &secrets)))?;
        if let Some(p) = config.get_password() {
            secrets.push(String::from_utf8_lossy(p).into_owned());
        }
        secrets.retain(|s| !s.is_empty());
        let tls = match tls_mode {
            TlsMode::Off => {
                config.ssl_mode(tokio_postgres::config::SslMode::Disable);
                Tls::Off
            }
            TlsMode::Verify(roots) => {
                config.ssl_mode(tokio_postgres::config::SslMode::Require);
                Tls::Verify(tls_connector(roots).map_err(setup)?)
            }
        };
        if config.get_application_name().is_none() {
            config.application_name(format!("crawl-engine sink {}", sink.name));
        }
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(sink.timeout);
        }
        let mut target = PostgresTarget {
            sink: sink.name.clone(),
            shown: cfg.url.to_string(),
            table: cfg.table.clone(),
            table_sql: quote_table(&cfg.table),
            on_conflict: cfg.on_conflict,
            timeout: sink.timeout,
            config,
            tls,
            secrets,
            conn: None,
        };
        target.conn = Some(target.open().await?);
        Ok(target)
    }

    /// The table as configured (`name` or `schema.name`).
    pub fn table(&self) -> &str {
        &self.table
    }

    /// Ships one batch in one transaction; returns once it is committed. A serialization failure or deadlock is
    /// retried here a few times (with backoff), then [`SinkError::Transient`]; a connection that broke is
    /// [`SinkError::Transient`] now and opened again on the next call (with the table checked again).
    pub async fn ship(&mut self, batch: &[ShipRecord]) -> Result<Shipped, SinkError> {
        if batch.is_empty() {
            return Ok(Shipped::default());
        }
        let rows = Rows::new(&self.sink, batch, self.on_conflict)?;
        if self.conn.as_ref().is_none_or(|c| c.client.is_closed()) {
            self.conn = None;
            self.conn = Some(self.open().await?);
        }
        let mut wait = CONFLICT_BACKOFF;
        let mut tries = 0;
        loop {
            tries += 1;
            let Some(conn) = self.conn.as_ref() else {
                return Err(self.transient("no connection".to_owned()));
            };
            let params = rows.params();
            let run = conn.client.execute(&conn.insert, &params);
            let e = match tokio::time::timeout(self.timeout + CLIENT_GRACE, run).await {
                Ok(Ok(written)) => {
                    tracing::debug!(
                        sink = %self.sink,
                        records = rows.len(),
                        written,
                        tries,
                        "postgres batch committed"
                    );
                    return Ok(Shipped {
                        records: batch.len() as u64,
                        bytes: batch.iter().map(|r| r.line.len() as u64).sum(),
                        skipped: 0,
                    });
                }
                Ok(Err(e)) => e,
                Err(_) => {
                    self.conn = None;
                    return Err(self.transient(format!(
                        "no answer to a batch of {} records within {:?}",
                        rows.len(),
                        self.timeout
                    )));
                }
            };
            let detail = scrub(&describe(&e), &self.secrets);
            match classify(&e) {
                Failure::Conflict if tries < CONFLICT_TRIES => {
                    tracing::debug!(sink = %self.sink, error = %detail, tries, "postgres batch conflicted, trying again");
                    tokio::time::sleep(jittered(wait)).await;
                    wait *= 2;
                }
                Failure::Conflict => {
                    return Err(self.transient(format!("batch failed {tries} times: {detail}")));
                }
                Failure::Transient { broken } => {
                    if broken {
                        tracing::warn!(sink = %self.sink, error = %detail, "postgres connection lost");
                        self.conn = None;
                    }
                    return Err(self.transient(detail));
                }
                Failure::Setup => {
                    // The next call connects again and checks the table again: it tells what is wrong with it,
                    // or goes on once the operator fixed it.
                    self.conn = None;
                    return Err(
                        self.setup("table", format!("insert into {}: {detail}", self.table))
                    );
                }
            }
        }
    }

    /// Opens a connection within the timeout, makes sure the table fits, and prepares the insert.
    async fn open(&self) -> Result<Conn, SinkError> {
        let opened = tokio::time::timeout(self.timeout, self.open_connection()).await;
        let (client, task) = match opened {
            Ok(Ok(c)) => c,
            Ok(Err(e)) => {
                let detail = scrub(&describe(&e), &self.secrets);
                return Err(match e.code() {
                    Some(c) if *c == SqlState::INVALID_CATALOG_NAME => self.setup("url", detail),
                    _ => self.unreachable(detail),
                });
            }
            Err(_) => {
                return Err(self.unreachable(format!("no answer within {:?}", self.timeout)));
            }
        };
        let task = Driver(task);
        let prepared =
            tokio::time::timeout(self.timeout + CLIENT_GRACE, self.prepare(&client)).await;
        match prepared {
            Ok(Ok(insert)) => Ok(Conn {
                client,
                insert,
                _task: task,
            }),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(self.transient(format!(
                "no answer while checking table {} within {:?}",
                self.table, self.timeout
            ))),
        }
    }

    async fn open_connection(&self) -> Result<(Client, JoinHandle<()>), tokio_postgres::Error> {
        match &self.tls {
            Tls::Off => {
                let (client, connection) = self.config.connect(NoTls).await?;
                Ok((client, self.drive(connection)))
            }
            Tls::Verify(tls) => {
                let (client, connection) = self.config.connect(tls.clone()).await?;
                Ok((client, self.drive(connection)))
            }
        }
    }

    /// Runs a connection in a task of its own until it ends.
    fn drive<F>(&self, connection: F) -> JoinHandle<()>
    where
        F: Future<Output = Result<(), tokio_postgres::Error>> + Send + 'static,
    {
        let sink = self.sink.clone();
        let secrets = self.secrets.clone();
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                let error = scrub(&describe(&e), &secrets);
                tracing::debug!(sink = %sink, error = %error, "postgres connection ended");
            }
        })
    }

    /// Sets the statement timeout, creates the table when missing, checks it, and prepares the insert.
    async fn prepare(&self, client: &Client) -> Result<Statement, SinkError> {
        let ms = self.timeout.as_millis();
        client
            .batch_execute(&format!("SET statement_timeout = {ms}"))
            .await
            .map_err(|e| self.failed("url", &e))?;
        let oid = match self.lookup(client).await? {
            Some(oid) => oid,
            None => {
                self.create(client).await?;
                self.lookup(client).await?.ok_or_else(|| {
                    self.setup(
                        "table",
                        format!("table {} is not there after CREATE TABLE", self.table),
                    )
                })?
            }
        };
        let has_inserted_at = self.check(client, oid).await?;
        let sql = self.insert_sql(has_inserted_at);
        client
            .prepare(&sql)
            .await
            .map_err(|e| self.failed("table", &e))
    }

    /// The table's oid, None when there is no such relation.
    async fn lookup(&self, client: &Client) -> Result<Option<u32>, SinkError> {
        let row = client
            .query_one("SELECT to_regclass($1::text)::oid", &[&self.table_sql])
            .await
            .map_err(|e| self.failed("table", &e))?;
        row.try_get(0).map_err(|e| self.failed("table", &e))
    }

    async fn create(&self, client: &Client) -> Result<(), SinkError> {
        let sql = format!(
            "CREATE TABLE IF NOT EXISTS {} (\n  record_id text PRIMARY KEY,\n  url text NOT NULL,\n  \
             host text NOT NULL,\n  outcome text NOT NULL,\n  status integer,\n  fetched_at timestamptz,\n  \
             record jsonb NOT NULL,\n  warc_file text,\n  warc_offset bigint,\n  warc_length bigint,\n  \
             inserted_at timestamptz NOT NULL DEFAULT now()\n)",
            self.table_sql
        );
        match client.batch_execute(&sql).await {
            Ok(()) => {
                tracing::info!(sink = %self.sink, table = %self.table, "postgres table created");
                Ok(())
            }
            // Another process created it at the same moment.
            Err(e)
                if e.code().is_some_and(|c| {
                    *c == SqlState::UNIQUE_VIOLATION || *c == SqlState::DUPLICATE_TABLE
                }) =>
            {
                Ok(())
            }
            Err(e) => Err(self.setup(
                "table",
                format!(
                    "cannot create table {}: {}",
                    self.table,
                    scrub(&describe(&e), &self.secrets)
                ),
            )),
        }
    }

    /// Checks that the table fits (see the module documentation); returns whether it has `inserted_at`.
    async fn check(&self, client: &Client, oid: u32) -> Result<bool, SinkError> {
        let q = |e: tokio_postgres::Error| self.failed("table", &e);
        let kind: String = client
            .query_one(
                "SELECT relkind::text FROM pg_class WHERE oid = $1::oid",
                &[&oid],
            )
            .await
            .and_then(|r| r.try_get(0))
            .map_err(q)?;
        if kind != "r" && kind != "p" {
            let what = match kind.as_str() {
                "v" => "a view",
                "m" => "a materialized view",
                "f" => "a foreign table",
                _ => "not a table",
            };
            return Err(self.setup("table", format!("{} is {what}", self.table)));
        }
        let rows = client
            .query(
                "SELECT attname::text, format_type(atttypid, atttypmod), attnotnull, atthasdef, \
                 attidentity::text, attgenerated::text \
                 FROM pg_attribute WHERE attrelid = $1::oid AND attnum > 0 AND NOT attisdropped ORDER BY attnum",
                &[&oid],
            )
            .await
            .map_err(q)?;
        let mut problems = Vec::new();
        let mut found = Vec::new();
        let mut has_inserted_at = false;
        for r in &rows {
            let name: String = r.try_get(0).map_err(q)?;
            let ty: String = r.try_get(1).map_err(q)?;
            let not_null: bool = r.try_get(2).map_err(q)?;
            let has_default: bool = r.try_get(3).map_err(q)?;
            let identity: String = r.try_get(4).map_err(q)?;
            let generated: String = r.try_get(5).map_err(q)?;
            match COLUMNS.iter().find(|c| c.name == name) {
                Some(c) => {
                    found.push(c.name);
                    if ty != c.ty {
                        problems.push(format!("column {name} is {ty}, not {}", c.ty));
                    }
                    if !generated.is_empty() || identity == "a" {
                        problems.push(format!("column {name} is generated, the sink writes it"));
                    }
                    if not_null && c.nullable {
                        problems.push(format!(
                            "column {name} is NOT NULL, but records may leave it empty"
                        ));
                    }
                }
                None if name == INSERTED_AT => has_inserted_at = true,
                None => {
                    if not_null && !has_default && identity.is_empty() && generated.is_empty() {
                        problems.push(format!(
                            "column {name} is NOT NULL without a default, and the sink does not fill it"
                        ));
                    }
                }
            }
        }
        for c in &COLUMNS {
            if !found.contains(&c.name) {
                problems.push(format!("column {} ({}) is missing", c.name, c.ty));
            }
        }
        if found.contains(&"record_id") {
            let unique: bool = client
                .query_one(
                    "SELECT EXISTS (SELECT 1 FROM pg_index i \
                     JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0] \
                     WHERE i.indrelid = $1::oid AND i.indisunique AND i.indimmediate AND i.indisvalid \
                     AND i.indnkeyatts = 1 AND i.indpred IS NULL AND i.indexprs IS NULL \
                     AND a.attname = 'record_id')",
                    &[&oid],
                )
                .await
                .and_then(|r| r.try_get(0))
                .map_err(q)?;
            if !unique {
                problems.push(
                    "column record_id has no PRIMARY KEY or UNIQUE constraint of its own"
                        .to_owned(),
                );
            }
        }
        if problems.is_empty() {
            // ON CONFLICT reads the conflict target (SELECT on record_id); DO UPDATE reads and writes the rest.
            let all: Vec<&str> = COLUMNS.iter().map(|c| c.name).collect();
            let mut needed = vec![("INSERT", all.clone()), ("SELECT", vec!["record_id"])];
            if self.on_conflict == OnConflict::Update {
                let mut updated = all[1..].to_vec();
                if has_inserted_at {
                    updated.push(INSERTED_AT);
                }
                needed = vec![
                    ("INSERT", all.clone()),
                    ("SELECT", all),
                    ("UPDATE", updated),
                ];
            }
            for (privilege, columns) in needed {
                let denied: Vec<String> = client
                    .query_one(
                        "SELECT coalesce(array_agg(c), '{}') FROM unnest($3::text[]) AS c \
                         WHERE NOT has_column_privilege($1::oid, c, $2::text)",
                        &[&oid, &privilege, &columns],
                    )
                    .await
                    .and_then(|r| r.try_get(0))
                    .map_err(q)?;
                if !denied.is_empty() {
                    problems.push(format!(
                        "the role may not {privilege} column {}",
                        denied.join(", ")
                    ));
                }
            }
        }
        if problems.is_empty() {
            Ok(has_inserted_at)
        } else {
            Err(self.setup(
                "table",
                format!(
                    "table {} does not fit the sink: {}",
                    self.table,
                    problems.join("; ")
                ),
            ))
        }
    }

    fn insert_sql(&self, has_inserted_at: bool) -> String {
        let names: Vec<&str> = COLUMNS.iter().map(|c| c.name).collect();
        let mut sql = format!(
            "INSERT INTO {} AS t ({}) \
             SELECT r, u, h, o, s, f, j::jsonb, wf, wo, wl FROM unnest(\
             $1::text[], $2::text[], $3::text[], $4::text[], $5::int4[], $6::timestamptz[], $7::text[], \
             $8::text[], $9::int8[], $10::int8[]) AS x(r, u, h, o, s, f, j, wf, wo, wl) \
             ON CONFLICT (record_id) DO ",
            self.table_sql,
            names.join(", ")
        );
        match self.on_conflict {
            OnConflict::Nothing => sql.push_str("NOTHING"),
            OnConflict::Update => {
                let mut sets: Vec<String> = names[1..]
                    .iter()
                    .map(|n| format!("{n} = EXCLUDED.{n}"))
                    .collect();
                if has_inserted_at {
                    sets.push(format!("{INSERTED_AT} = DEFAULT"));
                }
                sql.push_str("UPDATE SET ");
                sql.push_str(&sets.join(", "));
                sql.push_str(" WHERE t.record IS DISTINCT FROM EXCLUDED.record");
            }
        }
        sql
    }

    /// A failed request while setting up: transient when the connection or server failed, else `Setup` on `key`.
    fn failed(&self, key: &'static str, e: &tokio_postgres::Error) -> SinkError {
        let detail = scrub(&describe(e), &self.secrets);
        match classify(e) {
            Failure::Setup => self.setup(key, detail),
            Failure::Conflict | Failure::Transient { .. } => self.transient(detail),
        }
    }

    fn setup(&self, key: &'static str, detail: String) -> SinkError {
        SinkError::Setup {
            sink: self.sink.clone(),
            kind: KIND,
            key,
            detail,
        }
    }

    fn unreachable(&self, detail: String) -> SinkError {
        SinkError::Unreachable {
            sink: self.sink.clone(),
            kind: KIND,
            key: "url",
            target: self.shown.clone(),
            detail,
        }
    }

    fn transient(&self, detail: String) -> SinkError {
        SinkError::Transient {
            sink: self.sink.clone(),
            detail: format!("postgres {}: {detail}", self.shown),
        }
    }
}

/// The columns of one batch, sorted by record id (one row per id), as the insert's array parameters.
struct Rows<'a> {
    ids: Vec<Cow<'a, str>>,
    urls: Vec<Cow<'a, str>>,
    hosts: Vec<Cow<'a, str>>,
    outcomes: Vec<Cow<'a, str>>,
    statuses: Vec<Option<i32>>,
    fetched: Vec<Option<SystemTime>>,
    records: Vec<Cow<'a, str>>,
    warc_files: Vec<Option<Cow<'a, str>>>,
    warc_offsets: Vec<Option<i64>>,
    warc_lengths: Vec<Option<i64>>,
}

impl<'a> Rows<'a> {
    fn new(
        sink: &str,
        batch: &'a [ShipRecord],
        on_conflict: OnConflict,
    ) -> Result<Rows<'a>, SinkError> {
        let mut order: Vec<&ShipRecord> = batch.iter().collect();
        order.sort_by(|a, b| a.record_id().cmp(b.record_id()));
        // One row per id: the first shipped stays (`nothing`) or the last one wins (`update`), as across batches.
        let mut rows: Vec<&ShipRecord> = Vec::with_capacity(order.len());
        for r in order {
            match rows.last_mut() {
                Some(last) if last.record_id() == r.record_id() => {
                    if on_conflict == OnConflict::Update {
                        *last = r;
                    }
                }
                _ => rows.push(r),
            }
        }
        let n = rows.len();
        let mut out = Rows {
            ids: Vec::with_capacity(n),
            urls: Vec::with_capacity(n),
            hosts: Vec::with_capacity(n),
            outcomes: Vec::with_capacity(n),
            statuses: Vec::with_capacity(n),
            fetched: Vec::with_capacity(n),
            records: Vec::with_capacity(n),
            warc_files: Vec::with_capacity(n),
            warc_offsets: Vec::with_capacity(n),
            warc_lengths: Vec::with_capacity(n),
        };
        for r in rows {
            let line = std::str::from_utf8(&r.line).map_err(|e| SinkError::BadRecord {
                sink: sink.to_owned(),
                seq: r.seq,
                detail: e.to_string(),
            })?;
            out.ids.push(no_nul(r.record_id()));
            out.urls.push(no_nul(r.url()));
            out.hosts.push(no_nul(r.host()));
            out.outcomes.push(no_nul(r.outcome()));
            out.statuses.push(r.status.map(i32::from));
            out.fetched.push(r.fetched_at().and_then(|t| {
                let at = parse_time(t);
                if at.is_none() {
                    tracing::debug!(sink = %sink, record_id = %r.record_id(), fetched_at = %t, "fetched_at is not RFC 3339");
                }
                at
            }));
            out.records.push(jsonb_text(line));
            let warc = r.warc();
            out.warc_files.push(warc.map(|w| no_nul(w.file)));
            out.warc_offsets
                .push(warc.and_then(|w| i64::try_from(w.offset).ok()));
            out.warc_lengths
                .push(warc.and_then(|w| i64::try_from(w.length).ok()));
        }
        Ok(out)
    }

    fn len(&self) -> usize {
        self.ids.len()
    }

    fn params(&self) -> [&(dyn tokio_postgres::types::ToSql + Sync); 10] {
        [
            &self.ids,
            &self.urls,
            &self.hosts,
            &self.outcomes,
            &self.statuses,
            &self.fetched,
            &self.records,
            &self.warc_files,
            &self.warc_offsets,
            &self.warc_lengths,
        ]
    }
}

/// `s` with any NUL character (which PostgreSQL text cannot hold) replaced by U+FFFD.
fn no_nul(s: &str) -> Cow<'_, str> {
    if s.contains('\0') {
        Cow::Owned(s.replace('\0', "\u{fffd}"))
    } else {
        Cow::Borrowed(s)
    }
}

/// The JSONL line as `jsonb` can take it: unchanged, unless it has a `\u0000` escape, which `jsonb` rejects; then
/// the record with every NUL character replaced by U+FFFD.
fn jsonb_text(line: &str) -> Cow<'_, str> {
    if memchr::memmem::find(line.as_bytes(), b"\\u0000").is_none() {
        return Cow::Borrowed(line);
    }
    fn clean(v: &mut serde_json::Value) {
        match v {
            serde_json::Value::String(s) if s.contains('\0') => {
                *s = s.replace('\0', "\u{fffd}");
            }
            serde_json::Value::Array(a) => a.iter_mut().for_each(clean),
            serde_json::Value::Object(o) => {
                let keys: Vec<String> = o.keys().filter(|k| k.contains('\0')).cloned().collect();
                for k in keys {
                    if let Some(v) = o.remove(&k) {
                        o.insert(k.replace('\0', "\u{fffd}"), v);
                    }
                }
                o.values_mut().for_each(clean);
            }
            _ => {}
        }
    }
    match serde_json::from_str::<serde_json::Value>(line) {
        Ok(mut v) => {
            clean(&mut v);
            serde_json::to_string(&v).map_or(Cow::Borrowed(line), Cow::Owned)
        }
        Err(_) => Cow::Borrowed(line),
    }
}

/// An RFC 3339 time (`2026-12-06T10:00:00.123Z`, or with an offset such as `+02:00`).
fn parse_time(s: &str) -> Option<SystemTime> {
    if let Ok(t) = humantime::parse_rfc3339(s) {
        return Some(t);
    }
    let cut = s.len().checked_sub(6)?;
    let (head, offset) = (s.get(..cut)?, s.get(cut..)?.as_bytes());
    let sign = offset[0];
    if !(sign == b'+' || sign == b'-') || offset[3] != b':' {
        return None;
    }
    let num = |b: &[u8]| -> Option<u64> { std::str::from_utf8(b).ok()?.parse().ok() };
    let (h, m) = (num(&offset[1..3])?, num(&offset[4..6])?);
    if h > 23 || m > 59 {
        return None;
    }
    let local = humantime::parse_rfc3339(&format!("{head}Z")).ok()?;
    let shift = Duration::from_secs(h * 3600 + m * 60);
    if sign == b'+' {
        local.checked_sub(shift)
    } else {
        local.checked_add(shift)
    }
}

/// `name` or `schema.name` with each part quoted as an SQL identifier.
fn quote_table(table: &str) -> String {
    table
        .split('.')
        .map(|p| format!("\"{}\"", p.replace('"', "\"\"")))
        .collect::<Vec<_>>()
        .join(".")
}

/// Which roots TLS trusts.
#[derive(Debug)]
enum Roots {
    /// The Mozilla roots and the system's.
    Default,
    /// The system's alone (`sslrootcert=system`).
    System,
    /// The certificates in this PEM file (`sslrootcert=<path>`).
    File(String),
}

#[derive(Debug)]
enum TlsMode {
    Off,
    Verify(Roots),
}

/// Takes `sslmode` and `sslrootcert` out of the URL's query (tokio-postgres does not know `verify-full` or
/// `sslrootcert`): the rest of the URL and the TLS to use.
fn split_tls_params(url: &str) -> Result<(String, TlsMode), String> {
    let (base, query) = match url.split_once('?') {
        Some((b, q)) => (b, q),
        None => (url, ""),
    };
    let mut mode = None;
    let mut root = None;
    let mut kept = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let Some((key, value)) = url::form_urlencoded::parse(pair.as_bytes()).next() else {
            continue;
        };
        match key.as_ref() {
            "sslmode" => mode = Some(value.into_owned()),
            "sslrootcert" => root = Some(value.into_owned()),
            _ => kept.push(pair),
        }
    }
    let rest = if kept.is_empty() {
        base.to_owned()
    } else {
        format!("{base}?{}", kept.join("&"))
    };
    let verify = match mode.as_deref() {
        None | Some("disable" | "allow" | "prefer") => false,
        Some("require" | "verify-ca" | "verify-full") => true,
        Some(other) => {
            return Err(format!(
                "sslmode {other:?} is not one of disable, allow, prefer, require, verify-ca, verify-full"
            ));
        }
    };
    let tls = match (verify, root) {
        (false, Some(_)) => {
            return Err(
                "sslrootcert is given but sslmode does not ask for TLS (use sslmode=verify-full)"
                    .to_owned(),
            );
        }
        (false, None) => TlsMode::Off,
        (true, None) => TlsMode::Verify(Roots::Default),
        (true, Some(r)) if r == "system" => TlsMode::Verify(Roots::System),
        (true, Some(path)) => TlsMode::Verify(Roots::File(path)),
    };
    Ok((rest, tls))
}

/// The TLS connector trusting `roots`, on rustls's ring provider.
fn tls_connector(roots: Roots) -> Result<MakeRustlsConnect, String> {
    let mut store = rustls::RootCertStore::empty();
    match roots {
        Roots::File(path) => {
            use rustls::pki_types::CertificateDer;
            use rustls::pki_types::pem::PemObject;
            let pem = std::fs::read(&path).map_err(|e| format!("sslrootcert {path}: {e}"))?;
            let certs = CertificateDer::pem_slice_iter(&pem)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| format!("sslrootcert {path}: {e}"))?;
            let (added, _) = store.add_parsable_certificates(certs);
            if added == 0 {
                return Err(format!("sslrootcert {path}: no usable certificate in it"));
            }
        }
        Roots::System | Roots::Default => {
            let native = rustls_native_certs::load_native_certs();
            for e in &native.errors {
                tracing::debug!(error = %e, "a system root certificate could not be loaded");
            }
            store.add_parsable_certificates(native.certs);
            if matches!(roots, Roots::Default) {
                store.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
            }
            if store.is_empty() {
                return Err("sslrootcert=system: no system root certificates found".to_owned());
            }
        }
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| format!("TLS: {e}"))?
    .with_root_certificates(store)
    .with_no_client_auth();
    Ok(MakeRustlsConnect::new(config))
}

/// What a failed statement calls for, by its SQLSTATE.
fn classify(e: &tokio_postgres::Error) -> Failure {
    let Some(code) = e.code() else {
        // No answer from the server: the connection failed or closed.
        return Failure::Transient { broken: true };
    };
    let code = code.code();
    match code {
        // serialization_failure, deadlock_detected
        "40001" | "40P01" => Failure::Conflict,
        // admin_shutdown, crash_shutdown, cannot_connect_now, read_only_sql_transaction (a standby, after a
        // failover): another connection may reach a server that works.
        "57P01" | "57P02" | "57P03" | "25006" => Failure::Transient { broken: true },
        _ if code.starts_with("08") => Failure::Transient { broken: true },
        // data, integrity, syntax or privilege, unsupported feature, authorization, catalog, schema, triggers
        // and functions of the table: only the operator can change these.
        _ if [
            "22", "23", "42", "0A", "28", "3D", "3F", "2F", "38", "39", "P0",
        ]
        .iter()
        .any(|c| code.starts_with(c)) =>
        {
            Failure::Setup
        }
        // query_canceled (statement_timeout), lock_not_available, insufficient resources, system errors, ...
        _ => Failure::Transient { broken: false },
    }
}

/// One line saying what went wrong: the server's message and SQLSTATE, or the client's error and its causes.
fn describe(e: &tokio_postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        let mut s = format!("{} (SQLSTATE {})", db.message(), db.code().code());
        if let Some(d) = db.detail() {
            s.push_str(": ");
            s.push_str(d);
        }
        return s;
    }
    let mut s = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        s.push_str(": ");
        s.push_str(&cause.to_string());
        source = cause.source();
    }
    s
}

/// `text` with every secret replaced by `***`.
fn scrub(text: &str, secrets: &[String]) -> String {
    secrets
        .iter()
        .filter(|s| !s.is_empty())
        .fold(text.to_owned(), |t, s| t.replace(s.as_str(), "***"))
}

/// `d` plus up to half of it, at random, so writers that collided do not collide again in step.
fn jittered(d: Duration) -> Duration {
    let r = RandomState::new().hash_one(SystemTime::now());
    d + d.mul_f64((r % 1000) as f64 / 2000.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_times_with_z_or_an_offset_are_read() {
        let z = parse_time("2026-12-06T10:00:00.123Z").unwrap();
        assert_eq!(parse_time("2026-12-06T12:00:00.123+02:00"), Some(z));
        assert_eq!(parse_time("2026-12-06T07:30:00.123-02:30"), Some(z));
        assert_eq!(parse_time("2026-12-06T10:00:00.123+00:00"), Some(z));
        assert_eq!(parse_time("yesterday"), None);
        assert_eq!(parse_time("2026-12-06T10:00:00+99:00"), None);
        assert_eq!(parse_time("ééééééé"), None);
    }

    #[test]
    fn tls_parameters_are_taken_out_of_the_url() {
        let (rest, mode) = split_tls_params(
            "postgres://u:p@h:5/db?sslmode=verify-full&application_name=x&sslrootcert=%2Fca.pem",
        )
        .unwrap();
        assert_eq!(rest, "postgres://u:p@h:5/db?application_name=x");
        assert!(matches!(mode, TlsMode::Verify(Roots::File(p)) if p == "/ca.pem"));
        let (rest, mode) = split_tls_params("postgres://h/db").unwrap();
        assert_eq!(rest, "postgres://h/db");
        assert!(matches!(mode, TlsMode::Off));
        assert!(matches!(
            split_tls_params("postgres://h/db?sslmode=require&sslrootcert=system")
                .unwrap()
                .1,
            TlsMode::Verify(Roots::System)
        ));
        assert!(matches!(
            split_tls_params("postgres://h/db?sslmode=prefer")
                .unwrap()
                .1,
            TlsMode::Off
        ));
        let e = split_tls_params("postgres://h/db?sslmode=sometimes").unwrap_err();
        assert!(e.contains("sometimes"), "{e}");
        assert!(split_tls_params("postgres://h/db?sslrootcert=/x").is_err());
    }

    #[test]
    fn a_nul_escape_is_replaced_and_other_lines_pass_unchanged() {
        let plain = r#"{"url":"http://a.test/","t":"x\\u0000y"}"#;
        let v: serde_json::Value = serde_json::from_str(&jsonb_text(plain)).unwrap();
        assert_eq!(v["t"], "x\\u0000y");
        let with_nul = r#"{"url":"http://a.test/","t":"x\u0000y","\u0000k":[1,"\u0000"]}"#;
        let v: serde_json::Value = serde_json::from_str(&jsonb_text(with_nul)).unwrap();
        assert_eq!(v["t"], "x\u{fffd}y");
        assert_eq!(v["\u{fffd}k"][1], "\u{fffd}");
        let untouched = r#"{"url":"http://a.test/"}"#;
        assert!(matches!(jsonb_text(untouched), Cow::Borrowed(_)));
        assert_eq!(no_nul("a\0b"), "a\u{fffd}b");
    }

    #[test]
    fn table_names_are_quoted_part_by_part() {
        assert_eq!(quote_table("crawl_records"), "\"crawl_records\"");
        assert_eq!(quote_table("s.t"), "\"s\".\"t\"");
        assert_eq!(quote_table("a\"b"), "\"a\"\"b\"");
    }

    #[test]
    fn secrets_are_scrubbed() {
        assert_eq!(
            scrub("user x password hunter2 failed", &["hunter2".to_owned()]),
            "user x password *** failed"
        );
    }
}
