//! Formatting for people: tables and units. Stages return data; only the
//! command layer decides how it is shown.

pub mod console;
pub mod inventory_table;
pub mod progress;
pub mod table;
pub mod terminal;
pub mod units;
