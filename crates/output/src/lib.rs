//! The console layer: the one progress interface every long operation
//! reports through (bars on a terminal, plain lines on a serial console or
//! a pipe), a byte pass's handle on it, and the inventory's table. Stages
//! return data and report progress here; only the command layer decides
//! how results are shown. It knows the results types, not a device or an
//! engine.

pub mod console;
pub mod inventory_table;
pub mod progress;
pub mod terminal;
// Tables and units are util's, so the report's layer can use them too.
pub use storcert_util::{table, units};
