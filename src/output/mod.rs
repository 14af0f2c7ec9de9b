//! Formatting for people: tables and units. Stages return data; only the
//! command layer decides how it is shown.

pub mod console;
pub mod inventory_table;
pub mod progress;
pub mod terminal;
// Tables and units are util's, so the report's layer can use them too.
pub use crate::util::{table, units};
