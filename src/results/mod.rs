//! The artefacts every stage returns, as types: what a results folder and
//! a bundle hold, and what the summary, the report and the collector read.
//! Nothing here knows how a result is produced.

pub mod act;
pub mod health;
pub mod inventory;
pub mod policy;
pub mod provision;
pub mod run;
pub mod stream;
pub mod summary;
pub mod system;
