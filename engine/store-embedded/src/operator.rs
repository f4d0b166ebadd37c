//! What operators set on the crawl ([`OperatorState`]), kept in the embedded store's `operator` table: one row
//! holding a version (8 bytes, little-endian) and the state as JSON. The version starts at 0 (no row) and grows by
//! one with every change that changed the state. A change is read, applied with [`OperatorState::apply`] and
//! written back in one durable write transaction; the state is read once (at the first use) and kept in memory,
//! since no other process writes this store.

use crate::error::StoreResult;
use crawl_core::control::{Change, OperatorState};
use crawl_core::frontier::{FrontierError, corrupt};
use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition, WriteTransaction};

pub const OPERATOR: TableDefinition<&str, &[u8]> = TableDefinition::new("operator");
const ROW: &str = "state";

/// The operator state as stored, read lazily.
#[derive(Debug, Default)]
pub struct Operator {
    /// The version and the state, once read.
    loaded: Option<(u64, OperatorState)>,
}

fn decode(v: &[u8]) -> Result<(u64, OperatorState), FrontierError> {
    let Some((version, json)) = v.split_first_chunk::<8>() else {
        return Err(corrupt("operator state", "shorter than its version"));
    };
    let state = serde_json::from_slice(json).map_err(|e| corrupt("operator state", e))?;
    Ok((u64::from_le_bytes(*version), state))
}

fn encode(version: u64, state: &OperatorState) -> Result<Vec<u8>, FrontierError> {
    let mut out = version.to_le_bytes().to_vec();
    serde_json::to_writer(&mut out, state)
        .map_err(|e| FrontierError::Store(format!("operator state not encodable: {e}")))?;
    Ok(out)
}

fn read_row(
    table: &impl ReadableTable<&'static str, &'static [u8]>,
) -> Result<(u64, OperatorState), FrontierError> {
    match table.get(ROW).store()? {
        Some(v) => decode(v.value()),
        None => Ok((0, OperatorState::default())),
    }
}

impl Operator {
    /// The version and the state (read from `db` the first time).
    pub fn state(&mut self, db: &Database) -> Result<(u64, OperatorState), FrontierError> {
        if let Some(l) = &self.loaded {
            return Ok(l.clone());
        }
        let txn = db.begin_read().store()?;
        let loaded = match txn.open_table(OPERATOR) {
            Ok(t) => read_row(&t)?,
            Err(redb::TableError::TableDoesNotExist(_)) => (0, OperatorState::default()),
            Err(e) => return Err(e).store(),
        };
        self.loaded = Some(loaded.clone());
        Ok(loaded)
    }

    /// Applies `change` in `txn` (a durable write transaction, committed here when the state changed and dropped
    /// unused otherwise); true when the state changed. What is in memory follows only a successful commit.
    pub fn apply(&mut self, txn: WriteTransaction, change: &Change) -> Result<bool, FrontierError> {
        let changed = {
            let mut table = txn.open_table(OPERATOR).store()?;
            let (version, mut state) = read_row(&table)?;
            if state.apply(change) {
                let version = version + 1;
                table
                    .insert(ROW, encode(version, &state)?.as_slice())
                    .store()?;
                Some((version, state))
            } else {
                None
            }
        };
        let Some((version, state)) = changed else {
            txn.abort().store()?;
            return Ok(false);
        };
        txn.commit().store()?;
        self.loaded = Some((version, state));
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crawl_core::control::{HostMatch, Requester};

    fn db(dir: &std::path::Path) -> Database {
        Database::create(dir.join("op.redb")).unwrap()
    }

    fn pause(host: Option<&str>, at_ms: u64) -> Change {
        Change::Pause {
            host: host.map(|h| HostMatch::parse(h).unwrap()),
            at_ms,
            by: Requester::Process,
        }
    }

    #[test]
    fn a_store_without_the_table_reads_empty_at_version_0() {
        let dir = tempfile::tempdir().unwrap();
        let mut op = Operator::default();
        assert_eq!(
            op.state(&db(dir.path())).unwrap(),
            (0, OperatorState::default())
        );
    }

    #[test]
    fn changes_bump_the_version_and_are_read_back_by_a_new_reader() {
        let dir = tempfile::tempdir().unwrap();
        let db = db(dir.path());
        let mut op = Operator::default();
        assert!(
            op.apply(db.begin_write().unwrap(), &pause(None, 5))
                .unwrap()
        );
        assert!(
            !op.apply(db.begin_write().unwrap(), &pause(None, 6))
                .unwrap(),
            "paused already"
        );
        assert!(
            op.apply(db.begin_write().unwrap(), &pause(Some("a.example:81"), 7))
                .unwrap()
        );
        let (v, s) = op.state(&db).unwrap();
        assert_eq!(v, 2);
        assert_eq!(s.crawl.as_ref().map(|p| p.since_ms), Some(5));
        assert!(s.pause_of("a.example", 81).is_some());
        // A new reader (a reopen) reads what was committed.
        assert_eq!(Operator::default().state(&db).unwrap(), (v, s));
    }

    #[test]
    fn a_row_that_is_not_a_state_is_corrupt() {
        assert!(matches!(
            decode(b"1234"),
            Err(FrontierError::Corrupt { .. })
        ));
        let mut bad = 3u64.to_le_bytes().to_vec();
        bad.extend_from_slice(b"{\"crawl\":7}");
        assert!(matches!(decode(&bad), Err(FrontierError::Corrupt { .. })));
        let good = encode(3, &OperatorState::default()).unwrap();
        assert_eq!(decode(&good).unwrap(), (3, OperatorState::default()));
    }
}
