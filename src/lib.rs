//! storcert: storage qualification. See docs/architecture.md for the pipeline and
//! docs/ for the formats it reads and writes.

pub mod bundle;
pub mod cli;
pub mod commands;
pub mod fuzz;
pub mod run;
pub mod upload;

// The lower layers are crates of their own (crates/); they are named
// here as the modules they were, so a path reads the same from any layer.
#[cfg(feature = "collector")]
pub use storcert_collect as collect;
pub use storcert_device::{blockdev, health, inventory, passthrough, policy, provision, safety};
pub use storcert_engine as engine;
pub use storcert_output as output;
pub use storcert_report as report;
pub use storcert_report::export;
pub use storcert_results as results;
pub use storcert_util as util;
pub use storcert_util::input;
pub use storcert_workloads::{act, stream};
