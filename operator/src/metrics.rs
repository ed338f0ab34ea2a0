//! The operator's Prometheus metrics and the tiny HTTP endpoint serving them (`/metrics`,
//! plus `/healthz` and `/readyz` for the Deployment's probes).
//!
//! The endpoint is a minimal HTTP/1.1 responder (one request per connection, requests capped
//! at [`MAX_REQUEST_BYTES`]): enough for Prometheus and the kubelet, with no server framework.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// Largest request head the endpoint reads.
pub const MAX_REQUEST_BYTES: usize = 8 * 1024;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ControllerLabels {
    pub controller: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct FailureLabels {
    pub controller: String,
    pub reason: String,
}

type HistogramFamily = Family<ControllerLabels, Histogram, fn() -> Histogram>;

/// Reconcile counters and durations, per controller.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    pub reconciles: Family<ControllerLabels, Counter>,
    pub failures: Family<FailureLabels, Counter>,
    pub duration: HistogramFamily,
    /// Set once the controllers run (and, with leader election, this replica leads).
    pub ready: AtomicBool,
}

fn duration_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.005, 2.0, 12))
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("cairn_operator");
        let reconciles = Family::<ControllerLabels, Counter>::default();
        let failures = Family::<FailureLabels, Counter>::default();
        let duration: HistogramFamily = Family::new_with_constructor(duration_histogram);
        registry.register("reconciles", "Reconciles started", reconciles.clone());
        registry.register("reconcile_failures", "Reconciles that failed, by reason", failures.clone());
        registry.register("reconcile_duration_seconds", "Duration of reconciles", duration.clone());
        Metrics { registry, reconciles, failures, duration, ready: AtomicBool::new(false) }
    }
}

impl Metrics {
    /// Records one reconcile of `controller` that took `elapsed`, failed with `failure` if any.
    pub fn observe(&self, controller: &str, elapsed: Duration, failure: Option<String>) {
        let labels = ControllerLabels { controller: controller.to_string() };
        self.reconciles.get_or_create(&labels).inc();
        self.duration.get_or_create(&labels).observe(elapsed.as_secs_f64());
        if let Some(reason) = failure {
            self.failures.get_or_create(&FailureLabels { controller: controller.to_string(), reason }).inc();
        }
    }

    /// The text exposition of every metric.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}

/// Serves `/metrics`, `/healthz` and `/readyz` until the task is dropped.
pub async fn serve(listener: TcpListener, metrics: Arc<Metrics>) {
    loop {
        let Ok((mut stream, _)) = listener.accept().await else {
            continue;
        };
        let metrics = metrics.clone();
        tokio::spawn(async move {
            let mut buf = vec![0u8; MAX_REQUEST_BYTES];
            let mut len = 0;
            while len < buf.len() {
                let read = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut buf[len..]));
                match read.await {
                    Ok(Ok(0)) | Err(_) | Ok(Err(_)) => break,
                    Ok(Ok(n)) => len += n,
                }
                if buf[..len].windows(4).any(|w| w == b"\r\n\r\n") {
                    break;
                }
            }
            let head = String::from_utf8_lossy(&buf[..len]);
            let path = head.split_whitespace().nth(1).unwrap_or("");
            let (code, body) = route(path, &metrics);
            let response = format!(
                "HTTP/1.1 {code}\r\ncontent-type: text/plain; version=0.0.4; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(response.as_bytes()).await;
            let _ = stream.shutdown().await;
        });
    }
}

fn route(path: &str, metrics: &Metrics) -> (&'static str, String) {
    match path {
        "/metrics" => ("200 OK", metrics.encode()),
        "/healthz" => ("200 OK", "ok\n".into()),
        "/readyz" if metrics.ready.load(Ordering::Relaxed) => ("200 OK", "ok\n".into()),
        "/readyz" => ("503 Service Unavailable", "not ready\n".into()),
        _ => ("404 Not Found", "not found\n".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_reconciles_and_failures() {
        let m = Metrics::default();
        m.observe("kvstore", Duration::from_millis(20), None);
        m.observe("kvstore", Duration::from_millis(20), Some("api_409".into()));
        let text = m.encode();
        assert!(text.contains("cairn_operator_reconciles_total{controller=\"kvstore\"} 2"), "{text}");
        assert!(
            text.contains("cairn_operator_reconcile_failures_total{controller=\"kvstore\",reason=\"api_409\"} 1"),
            "{text}"
        );
        assert!(text.contains("cairn_operator_reconcile_duration_seconds_count{controller=\"kvstore\"} 2"), "{text}");
    }

    #[tokio::test]
    async fn serves_metrics_over_http() {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let metrics = Arc::new(Metrics::default());
        metrics.observe("kvstore", Duration::from_millis(1), None);
        let server = tokio::spawn(serve(listener, metrics.clone()));
        let get = |path: &'static str| async move {
            let mut s = tokio::net::TcpStream::connect(addr).await.expect("connect");
            s.write_all(format!("GET {path} HTTP/1.1\r\nhost: x\r\n\r\n").as_bytes()).await.expect("write");
            let mut out = String::new();
            s.read_to_string(&mut out).await.expect("read");
            out
        };
        assert!(get("/metrics").await.contains("cairn_operator_reconciles_total"));
        assert!(get("/readyz").await.starts_with("HTTP/1.1 503"));
        metrics.ready.store(true, Ordering::Relaxed);
        assert!(get("/readyz").await.starts_with("HTTP/1.1 200"));
        server.abort();
    }
}
