//! The workloads a run carries out, one file each behind one trait, in
//! one registry: the dry run's plan, the time estimate and the run ask
//! each in turn. A new workload is its file here and its line in
//! `WORKLOADS`, beside its profile table (`run::profile`), its report
//! section (`report::section`) and its export columns (`report::export`).

mod act;
mod stream;

use super::*;

/// What `run` asks of a workload.
pub(super) trait Workload: Sync {
    /// The dry run's lines for what the profile asks of it, in order
    /// (none: it asks nothing).
    fn steps(&self, p: &Profile) -> Vec<String>;
    /// The bytes a drive of `drive_bytes` moves in its stages bound by
    /// size, by part ("prep"), for the time estimate.
    fn size_bound(&self, p: &Profile, drive_bytes: u64) -> Vec<(&'static str, u64)>;
    /// Runs its stages on `targets` (which it may move onto the
    /// partitions it makes, for the workloads after it).
    fn run(&self, ctx: &Ctx, targets: &mut Vec<Target>) -> Result<()>;
}

/// Every workload, in the order a run carries them out.
pub(super) static WORKLOADS: &[&dyn Workload] = &[&act::Act, &stream::Stream];

/// Every workload in turn.
pub(super) fn run_all(ctx: &Ctx, targets: &mut Vec<Target>) -> Result<()> {
    for w in WORKLOADS {
        w.run(ctx, targets)?;
    }
    Ok(())
}
