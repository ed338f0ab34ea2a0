//! Volume sizing: the fsync-class table and the pure function that picks the data volume's
//! size from the durability tier, the target durable acks/s and the expected data size.
//!
//! Cloud disks give IOPS and throughput in proportion to their size, so a durable store that
//! must sustain many fsyncs per second may need a volume far larger than its data. The model
//! (documented in docs/kubernetes.md, which quotes [`CLASS_TABLE`]):
//!
//! - space: `(2 × data + WAL reserve) × 1.25` — an old and a new snapshot side by side, the WAL
//!   segments, and filesystem headroom (`none` keeps no WAL);
//! - fsyncs/s: `sync` acks after the fsync that covers the write; group commit covers several
//!   writers' acks per fsync, and we assume a conservative [`SYNC_ACKS_PER_FSYNC`]; `async` fsyncs
//!   continuously but batches far more ([`ASYNC_ACKS_PER_FSYNC`]); `everysec` fsyncs once a second;
//!   `none` never. Each fsync costs [`IOS_PER_FSYNC`] I/Os (the data write and the flush);
//! - throughput: every acknowledged write appends about [`WAL_RECORD_BYTES`] to the WAL, and
//!   snapshots rewrite it once more.

use cairn_crds::{Durability, FsyncClass};

/// GiB in bytes.
pub const GIB: u64 = 1 << 30;
/// Acks covered by one fsync in `sync` under concurrency (conservative group-commit batch).
pub const SYNC_ACKS_PER_FSYNC: u64 = 4;
/// Acks covered by one fsync in `async`, whose syncer batches everything buffered.
pub const ASYNC_ACKS_PER_FSYNC: u64 = 64;
/// I/Os a disk counts for one fsync: the data write and the cache flush / journal commit.
pub const IOS_PER_FSYNC: u64 = 2;
/// Bytes one acknowledged write adds to the WAL (header, key and a small value).
pub const WAL_RECORD_BYTES: u64 = 256;
/// Dataset size assumed when `storage.expectedDataSize` is absent.
pub const DEFAULT_DATA_BYTES: u64 = GIB;
/// Space kept for WAL segments between snapshots.
pub const WAL_RESERVE_BYTES: u64 = 2 * GIB;

/// How a disk's performance depends on its size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PerfModel {
    /// Fixed performance whatever the size (local NVMe, provisioned-IOPS disks).
    Provisioned { iops: u64, mibps: u64 },
    /// Performance grows with size up to a cap (network SSDs and standard disks).
    PerGib {
        iops_per_gib: u64,
        /// MiB/s per GiB, in thousandths (480 = 0.48 MiB/s per GiB).
        milli_mibps_per_gib: u64,
        baseline_iops: u64,
        baseline_mibps: u64,
        max_iops: u64,
        max_mibps: u64,
    },
}

impl PerfModel {
    /// IOPS and MiB/s of a volume of `gib` GiB.
    pub fn at(&self, gib: u64) -> (u64, u64) {
        match *self {
            PerfModel::Provisioned { iops, mibps } => (iops, mibps),
            PerfModel::PerGib {
                iops_per_gib,
                milli_mibps_per_gib,
                baseline_iops,
                baseline_mibps,
                max_iops,
                max_mibps,
            } => (
                (gib * iops_per_gib).max(baseline_iops).min(max_iops),
                (gib * milli_mibps_per_gib / 1000).max(baseline_mibps).min(max_mibps),
            ),
        }
    }
}

/// One row of the fsync-class table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClassModel {
    pub class: FsyncClass,
    /// Storage class used when `storage.storageClassName` is absent.
    pub storage_class: &'static str,
    pub perf: PerfModel,
    pub min_gib: u64,
    pub max_gib: u64,
}

/// The fsync-class table (docs/kubernetes.md quotes it; a test keeps the two in step).
pub const CLASS_TABLE: [ClassModel; 3] = [
    ClassModel {
        class: FsyncClass::LocalNvme,
        storage_class: "local-nvme",
        perf: PerfModel::Provisioned { iops: 100_000, mibps: 1_000 },
        min_gib: 10,
        max_gib: 3_000,
    },
    ClassModel {
        class: FsyncClass::PremiumSsd,
        storage_class: "premium-ssd",
        perf: PerfModel::PerGib {
            iops_per_gib: 30,
            milli_mibps_per_gib: 480,
            baseline_iops: 0,
            baseline_mibps: 0,
            max_iops: 100_000,
            max_mibps: 1_200,
        },
        min_gib: 10,
        max_gib: 65_536,
    },
    ClassModel {
        class: FsyncClass::Standard,
        storage_class: "standard",
        perf: PerfModel::PerGib {
            iops_per_gib: 3,
            milli_mibps_per_gib: 250,
            baseline_iops: 100,
            baseline_mibps: 0,
            max_iops: 16_000,
            max_mibps: 250,
        },
        min_gib: 10,
        max_gib: 16_384,
    },
];

/// The table row of a class.
pub fn class_model(class: FsyncClass) -> &'static ClassModel {
    match class {
        FsyncClass::LocalNvme => &CLASS_TABLE[0],
        FsyncClass::PremiumSsd => &CLASS_TABLE[1],
        FsyncClass::Standard => &CLASS_TABLE[2],
    }
}

/// What the size is chosen from.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SizingInput {
    pub fsync_class: FsyncClass,
    pub durability: Durability,
    pub target_acks_per_sec: Option<u32>,
    pub expected_data_bytes: Option<u64>,
    /// `storage.size`, when the user set it (it then wins, and the model only reports).
    pub requested: Option<(String, u64)>,
    /// `storage.storageClassName`, when the user set it.
    pub storage_class: Option<String>,
}

/// Which requirement decided the size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    Requested,
    Minimum,
    Capacity,
    Iops,
    Throughput,
}

/// The chosen volume.
#[derive(Debug, Clone, PartialEq)]
pub struct VolumePlan {
    /// Kubernetes quantity, e.g. `40Gi`.
    pub size: String,
    pub size_bytes: u64,
    pub storage_class: String,
    pub bound: Bound,
    pub model_iops: u64,
    pub model_mibps: u64,
    pub needed_iops: u64,
    pub needed_mibps: u64,
    /// Why this size, in words (lands in `status.volume.reason`).
    pub reason: String,
    /// Set when the volume cannot deliver the target (lands in an Event and the reason).
    pub shortfall: Option<String>,
}

/// fsyncs per second the tier needs at `acks` acknowledged writes per second.
pub fn fsyncs_per_sec(durability: Durability, acks: u64) -> u64 {
    match durability {
        Durability::None => 0,
        Durability::Everysec => u64::from(acks > 0),
        Durability::Async => acks.div_ceil(ASYNC_ACKS_PER_FSYNC),
        Durability::Sync => acks.div_ceil(SYNC_ACKS_PER_FSYNC),
    }
}

/// Chooses the data volume. Pure: same input, same plan.
pub fn plan_volume(input: &SizingInput) -> VolumePlan {
    let model = class_model(input.fsync_class);
    let acks = u64::from(input.target_acks_per_sec.unwrap_or(0));
    let needed_iops = fsyncs_per_sec(input.durability, acks) * IOS_PER_FSYNC;
    let needed_mibps =
        if input.durability == Durability::None { 0 } else { (acks * WAL_RECORD_BYTES * 2).div_ceil(1 << 20) };
    let data = input.expected_data_bytes.unwrap_or(DEFAULT_DATA_BYTES);
    let wal = if input.durability == Durability::None { 0 } else { WAL_RESERVE_BYTES };
    let capacity_gib = ((2 * data + wal) * 5 / 4).div_ceil(GIB);
    let storage_class = input.storage_class.clone().unwrap_or_else(|| model.storage_class.to_string());

    let (size, size_bytes, gib, bound) = match &input.requested {
        Some((text, bytes)) => (text.clone(), *bytes, bytes / GIB, Bound::Requested),
        None => {
            let mut candidates = vec![(model.min_gib, Bound::Minimum), (capacity_gib, Bound::Capacity)];
            if let PerfModel::PerGib { iops_per_gib, milli_mibps_per_gib, .. } = model.perf {
                candidates.push((needed_iops.div_ceil(iops_per_gib), Bound::Iops));
                candidates.push(((needed_mibps * 1000).div_ceil(milli_mibps_per_gib), Bound::Throughput));
            }
            // The first of equal candidates wins: Minimum, then Capacity, IOPS, throughput.
            let (gib, bound) =
                candidates.into_iter().fold((0, Bound::Minimum), |best, c| if c.0 > best.0 { c } else { best });
            let gib = gib.min(model.max_gib);
            (format!("{gib}Gi"), gib * GIB, gib, bound)
        }
    };

    let (model_iops, model_mibps) = model.perf.at(gib);
    let mut shortfalls = Vec::new();
    if needed_iops > model_iops {
        shortfalls.push(format!("{needed_iops} IOPS (the model gives {model_iops})"));
    }
    if needed_mibps > model_mibps {
        shortfalls.push(format!("{needed_mibps} MiB/s (the model gives {model_mibps})"));
    }
    if bytes_below(size_bytes, capacity_gib) {
        shortfalls.push(format!("{capacity_gib}Gi of space"));
    }
    let shortfall = (!shortfalls.is_empty()).then(|| {
        format!(
            "{size} of {} cannot sustain {acks} acks/s at durability {}: it needs {}",
            input.fsync_class,
            input.durability,
            shortfalls.join(" and ")
        )
    });

    let why = match bound {
        Bound::Requested => "set in spec.storage.size".to_string(),
        Bound::Minimum => format!("the minimum of {}", input.fsync_class),
        Bound::Capacity => format!("space: 2 x {} GiB of data (two snapshots) + WAL, +25%", data.div_ceil(GIB)),
        Bound::Iops => format!("IOPS: {acks} acks/s at durability {} need {needed_iops} IOPS", input.durability),
        Bound::Throughput => format!("throughput: {acks} acks/s need {needed_mibps} MiB/s"),
    };
    let reason = format!(
        "{size} on {storage_class} ({} model: {model_iops} IOPS, {model_mibps} MiB/s): {why}",
        input.fsync_class
    );
    VolumePlan {
        size,
        size_bytes,
        storage_class,
        bound,
        model_iops,
        model_mibps,
        needed_iops,
        needed_mibps,
        reason: match &shortfall {
            Some(s) => format!("{reason}; WARNING: {s}"),
            None => reason,
        },
        shortfall,
    }
}

fn bytes_below(size_bytes: u64, capacity_gib: u64) -> bool {
    size_bytes < capacity_gib * GIB
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(class: FsyncClass, durability: Durability, acks: Option<u32>) -> SizingInput {
        SizingInput { fsync_class: class, durability, target_acks_per_sec: acks, ..SizingInput::default() }
    }

    #[test]
    fn no_target_gives_the_class_minimum() {
        for row in CLASS_TABLE {
            let plan = plan_volume(&input(row.class, Durability::Sync, None));
            assert_eq!(plan.size, format!("{}Gi", row.min_gib));
            assert_eq!(plan.bound, Bound::Minimum);
            assert_eq!(plan.storage_class, row.storage_class);
            assert!(plan.shortfall.is_none());
        }
    }

    #[test]
    fn sync_on_premium_ssd_grows_with_the_target() {
        // 10k acks/s, 4 acks per fsync, 2 I/Os each: 5000 IOPS at 30 IOPS/GiB = 167 GiB.
        let plan = plan_volume(&input(FsyncClass::PremiumSsd, Durability::Sync, Some(10_000)));
        assert_eq!(plan.needed_iops, 5_000);
        assert_eq!(plan.size, "167Gi");
        assert_eq!(plan.bound, Bound::Iops);
        assert!(plan.model_iops >= plan.needed_iops);
        assert!(plan.reason.contains("IOPS"), "{}", plan.reason);
    }

    #[test]
    fn weaker_tiers_need_smaller_volumes() {
        let size = |d| plan_volume(&input(FsyncClass::PremiumSsd, d, Some(50_000))).size_bytes;
        assert!(size(Durability::Sync) > size(Durability::Async));
        assert!(size(Durability::Async) >= size(Durability::Everysec));
        assert!(size(Durability::Everysec) >= size(Durability::None));
    }

    #[test]
    fn local_nvme_does_not_grow_for_iops() {
        let plan = plan_volume(&input(FsyncClass::LocalNvme, Durability::Sync, Some(100_000)));
        assert_eq!(plan.size, "10Gi");
        assert_eq!(plan.model_iops, 100_000);
        assert!(plan.shortfall.is_none(), "{:?}", plan.shortfall);
    }

    #[test]
    fn large_data_is_bound_by_capacity() {
        let plan = plan_volume(&SizingInput {
            expected_data_bytes: Some(100 * GIB),
            ..input(FsyncClass::Standard, Durability::Async, Some(100))
        });
        // (2 x 100 + 2) x 1.25 = 252.5 -> 253 GiB.
        assert_eq!(plan.size, "253Gi");
        assert_eq!(plan.bound, Bound::Capacity);
    }

    #[test]
    fn an_unreachable_target_is_capped_and_reported() {
        // standard caps at 16000 IOPS; sync at 100k acks/s needs 50000.
        let plan = plan_volume(&input(FsyncClass::Standard, Durability::Sync, Some(100_000)));
        assert_eq!(plan.model_iops, 16_000);
        let shortfall = plan.shortfall.expect("shortfall");
        assert!(shortfall.contains("50000 IOPS"), "{shortfall}");
        assert!(plan.reason.contains("WARNING"));
    }

    #[test]
    fn a_requested_size_wins_but_is_checked() {
        let plan = plan_volume(&SizingInput {
            requested: Some(("20Gi".into(), 20 * GIB)),
            storage_class: Some("fast".into()),
            ..input(FsyncClass::PremiumSsd, Durability::Sync, Some(10_000))
        });
        assert_eq!(plan.size, "20Gi");
        assert_eq!(plan.bound, Bound::Requested);
        assert_eq!(plan.storage_class, "fast");
        assert_eq!(plan.model_iops, 600);
        assert!(plan.shortfall.is_some());
    }

    #[test]
    fn fsync_rates_per_tier() {
        assert_eq!(fsyncs_per_sec(Durability::None, 1000), 0);
        assert_eq!(fsyncs_per_sec(Durability::Everysec, 1000), 1);
        assert_eq!(fsyncs_per_sec(Durability::Everysec, 0), 0);
        assert_eq!(fsyncs_per_sec(Durability::Async, 1000), 16);
        assert_eq!(fsyncs_per_sec(Durability::Sync, 1000), 250);
    }

    #[test]
    fn docs_quote_the_table() {
        let doc = include_str!("../../docs/kubernetes.md");
        for row in CLASS_TABLE {
            let line = doc
                .lines()
                .find(|l| l.starts_with(&format!("| `{}` ", row.class)))
                .unwrap_or_else(|| panic!("docs/kubernetes.md has no row for {}", row.class));
            assert!(line.contains(&format!("`{}`", row.storage_class)), "{line}");
            let numbers: Vec<String> = match row.perf {
                PerfModel::Provisioned { iops, mibps } => vec![iops.to_string(), mibps.to_string()],
                PerfModel::PerGib { iops_per_gib, max_iops, max_mibps, .. } => {
                    vec![iops_per_gib.to_string(), max_iops.to_string(), max_mibps.to_string()]
                }
            };
            for n in numbers {
                assert!(line.contains(&n), "docs row for {} lacks {n}: {line}", row.class);
            }
        }
    }
}
