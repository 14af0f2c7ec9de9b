//! storcert: storage qualification. See README.md for the pipeline and
//! docs/ for the formats it reads and writes.

pub mod cli;
pub mod commands;
pub mod inventory;
pub mod output;
pub mod passthrough;
