//! The fsync class: what kind of disk backs the data volume, which decides its performance model.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The kind of disk the data volume lives on. Each class maps to a default storage class and a
/// performance model (IOPS and throughput per GiB, or provisioned) that the operator uses to size
/// the volume; see docs/kubernetes.md.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[serde(rename_all = "kebab-case")]
pub enum FsyncClass {
    /// Local NVMe (instance store, local PVs): provisioned performance, independent of size.
    LocalNvme,
    /// Network SSD whose IOPS and throughput grow with size (pd-ssd, Premium SSD, gp2-like).
    PremiumSsd,
    /// General-purpose network disk with low per-GiB performance and a small baseline.
    #[default]
    Standard,
}

impl FsyncClass {
    /// The name used in the CRD and in documentation.
    pub fn as_str(self) -> &'static str {
        match self {
            FsyncClass::LocalNvme => "local-nvme",
            FsyncClass::PremiumSsd => "premium-ssd",
            FsyncClass::Standard => "standard",
        }
    }
}

impl std::fmt::Display for FsyncClass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
