//! storcert: storage qualification. See README.md for the pipeline and
//! docs/ for the formats it reads and writes.

pub mod act;
pub mod blockdev;
pub mod bundle;
pub mod cli;
#[cfg(feature = "collector")]
pub mod collect;
pub mod commands;
pub mod engine;
pub mod export;
pub mod fuzz;
pub mod health;
pub mod input;
pub mod inventory;
pub mod output;
pub mod passthrough;
pub mod policy;
pub mod provision;
pub mod report;
pub mod results;
pub mod run;
pub mod safety;
pub mod stream;
pub mod upload;
pub mod util;
