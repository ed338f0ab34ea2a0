//! Prometheus metrics, built at scrape time.
//!
//! - [`scrape`]: one reading of the per-worker counters and shared state;
//! - [`encode`]: the families Cairn exports (docs/metrics.md lists them);
//! - [`families`]: helpers over prometheus-client's encoder;
//! - [`durability`]: what the durability layer reports; [`wal`]: reading it
//!   from the server's persistence layer;
//! - [`text_format`]: Prometheus text format 0.0.4 from OpenMetrics.
//!
//! Nothing here runs on the command path: workers keep plain per-worker
//! counters (see `stats.rs`), and a scrape sums them.

pub mod durability;
pub mod encode;
pub mod families;
pub mod scrape;
pub mod text_format;
pub mod wal;

use prometheus_client::registry::Registry;

use crate::server::Server;
use scrape::Scrape;

/// Exposition formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// `application/openmetrics-text; version=1.0.0` (what Prometheus asks for).
    OpenMetrics,
    /// `text/plain; version=0.0.4` (curl, promtool, older scrapers).
    Text,
}

impl Format {
    /// Picks the format from an `Accept` header: OpenMetrics when it is
    /// named, otherwise the text format.
    pub fn from_accept(accept: Option<&str>) -> Format {
        match accept {
            Some(a) if a.contains("application/openmetrics-text") => Format::OpenMetrics,
            _ => Format::Text,
        }
    }

    pub fn content_type(self) -> &'static str {
        match self {
            Format::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
            Format::Text => "text/plain; version=0.0.4; charset=utf-8",
        }
    }
}

/// Renders every metric in `format`.
pub fn render(server: &Server, format: Format) -> Result<String, std::fmt::Error> {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(Scrape::read(server)));
    let mut openmetrics = String::new();
    prometheus_client::encoding::text::encode(&mut openmetrics, &registry)?;
    Ok(match format {
        Format::OpenMetrics => openmetrics,
        Format::Text => text_format::from_openmetrics(&openmetrics),
    })
}
