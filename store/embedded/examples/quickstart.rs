//! Opens a data directory in-process, writes and reads a few keys, and
//! closes it. Run it twice to see the data survive:
//!
//! ```sh
//! cargo run --release -p cairn-embedded --example quickstart -- /tmp/cairn-quickstart
//! ```

use std::time::Duration;

use anyhow::Context;
use cairn_embedded::{Batch, Db, DbOptions, SetOptions, Ttl};

fn main() -> anyhow::Result<()> {
    let dir = std::env::args().nth(1).unwrap_or_else(|| "./cairn-quickstart-data".to_string());
    // `sync` (the default): every call below returns after its write is on disk.
    let db = Db::open(&dir, DbOptions::default()).with_context(|| format!("cannot open {dir}"))?;

    let runs = db.incr("quickstart:runs")?;
    println!("this example ran {runs} time(s) on {dir}");

    db.set("greeting", "hello, embedded world")?;
    let greeting = db.get("greeting")?.context("greeting was just set")?;
    println!("greeting = {}", String::from_utf8_lossy(&greeting));

    // Only if absent, with a time to live.
    let created = db.set_with(
        "session:42",
        "alice",
        SetOptions { ttl: Some(Duration::from_secs(60)), ..SetOptions::if_absent() },
    )?;
    if let Ttl::Expires(left) = db.ttl("session:42")? {
        println!("session:42 created now: {created}; expires in {} ms", left.as_millis());
    }

    // Several writes as one transaction, one durable wait.
    let mut batch = Batch::new();
    batch.set("account:a", "90").set("account:b", "110").incr("transfers");
    let replies = db.batch(&batch)?;
    println!("batch replies: {replies:?}");

    // Any other command through the generic call.
    db.command(&[b"RPUSH", b"events", b"opened", b"written"])?;
    println!("events: {:?}", db.command(&[b"LRANGE", b"events", b"0", b"-1"])?);

    db.close()?;
    println!("closed; run again to see quickstart:runs grow");
    Ok(())
}
