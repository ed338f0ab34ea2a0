//! Helpers shared by the WAL integration tests.

use std::path::Path;
use std::sync::Arc;

use cairn_engine::durability::sim::SimStorage;
use cairn_engine::durability::{recover_log, RecoverOptions, Storage};

/// LSNs of the records a recovery of `/data` on `disk` finds, in order.
pub fn recovered_lsns(disk: &SimStorage) -> Vec<u64> {
    let storage: Arc<dyn Storage> = Arc::new(disk.clone());
    let mut lsns = Vec::new();
    recover_log(&storage, Path::new("/data"), 0, RecoverOptions::default(), |record, _| {
        lsns.push(record.lsn);
        Ok(())
    })
    .expect("recovery");
    lsns
}
