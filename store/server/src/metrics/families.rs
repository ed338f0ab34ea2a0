//! Writing metric families through prometheus-client's encoder: one call per
//! family, values read at scrape time.

use std::fmt;

use prometheus_client::encoding::{DescriptorEncoder, EncodeGaugeValue, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Unit;

use super::durability::HistogramSnapshot;

/// Label pairs of one sample.
pub type Labels = Vec<(&'static str, String)>;

/// The families of one scrape, written in order.
pub struct Families<'a> {
    enc: DescriptorEncoder<'a>,
}

impl<'a> Families<'a> {
    pub fn new(enc: DescriptorEncoder<'a>) -> Self {
        Families { enc }
    }

    /// An unlabelled gauge. `name` excludes the unit suffix, which the
    /// encoder appends (`cairn_memory_used` + bytes → `cairn_memory_used_bytes`).
    pub fn gauge(&mut self, name: &str, help: &str, unit: Option<Unit>, value: impl EncodeGaugeValue) -> fmt::Result {
        let mut m = self.enc.encode_descriptor(name, help, unit.as_ref(), MetricType::Gauge)?;
        m.encode_gauge(&value)
    }

    /// An unlabelled counter (the encoder appends `_total`).
    pub fn counter(&mut self, name: &str, help: &str, unit: Option<Unit>, value: u64) -> fmt::Result {
        let mut m = self.enc.encode_descriptor(name, help, unit.as_ref(), MetricType::Counter)?;
        m.encode_counter::<NoLabelSet, _, u64>(&value, None)
    }

    /// A labelled gauge family; skipped when `rows` is empty.
    pub fn gauges<V: EncodeGaugeValue>(
        &mut self,
        name: &str,
        help: &str,
        unit: Option<Unit>,
        rows: &[(Labels, V)],
    ) -> fmt::Result {
        if rows.is_empty() {
            return Ok(());
        }
        let mut m = self.enc.encode_descriptor(name, help, unit.as_ref(), MetricType::Gauge)?;
        for (labels, value) in rows {
            m.encode_family(labels)?.encode_gauge(value)?;
        }
        Ok(())
    }

    /// A labelled counter family; skipped when `rows` is empty.
    pub fn counters(&mut self, name: &str, help: &str, unit: Option<Unit>, rows: &[(Labels, u64)]) -> fmt::Result {
        if rows.is_empty() {
            return Ok(());
        }
        let mut m = self.enc.encode_descriptor(name, help, unit.as_ref(), MetricType::Counter)?;
        for (labels, value) in rows {
            m.encode_family(labels)?.encode_counter::<NoLabelSet, _, u64>(value, None)?;
        }
        Ok(())
    }

    /// A histogram family; skipped when `rows` is empty.
    pub fn histograms(
        &mut self,
        name: &str,
        help: &str,
        unit: Option<Unit>,
        rows: &[(Labels, HistogramSnapshot)],
    ) -> fmt::Result {
        if rows.is_empty() {
            return Ok(());
        }
        let mut m = self.enc.encode_descriptor(name, help, unit.as_ref(), MetricType::Histogram)?;
        for (labels, h) in rows {
            // prometheus-client writes `+Inf` for f64::MAX.
            let buckets: Vec<(f64, u64)> =
                h.buckets.iter().map(|(le, n)| (if le.is_infinite() { f64::MAX } else { *le }, *n)).collect();
            if labels.is_empty() {
                // An empty family label set would print as `{}`.
                m.encode_histogram::<NoLabelSet>(h.sum, h.count(), &buckets, None)?;
            } else {
                m.encode_family(labels)?.encode_histogram::<NoLabelSet>(h.sum, h.count(), &buckets, None)?;
            }
        }
        Ok(())
    }

    /// An info metric (`<name>_info{labels} 1`).
    pub fn info(&mut self, name: &str, help: &str, labels: &Labels) -> fmt::Result {
        let mut m = self.enc.encode_descriptor(name, help, None, MetricType::Info)?;
        m.encode_info(labels)
    }
}
