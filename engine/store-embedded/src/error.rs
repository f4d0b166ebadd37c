//! redb's errors as the [`FrontierStore`](crawl_core::frontier::FrontierStore) trait reports them.

use crawl_core::frontier::FrontierError;

/// Turns a redb error into the trait's [`FrontierError::Store`].
pub(crate) trait StoreResult<T> {
    fn store(self) -> Result<T, FrontierError>;
}

impl<T, E: Into<redb::Error>> StoreResult<T> for Result<T, E> {
    fn store(self) -> Result<T, FrontierError> {
        self.map_err(|e| FrontierError::Store(e.into().to_string()))
    }
}
