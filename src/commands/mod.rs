//! One function per subcommand: reads its arguments, calls the stage, and
//! prints through `output`. Each returns the process exit status.

pub mod act;
pub mod check;
pub mod docs;
pub mod health;
pub mod inventory;
pub mod provision;
pub mod stream;

use std::process::ExitCode;

/// Exit statuses that fleet tools act on (documented in the README).
pub mod exit {
    pub const PASS: u8 = 0;
    pub const FAIL: u8 = 1;
    pub const COULD_NOT_RUN: u8 = 2;
    pub const INTERRUPTED: u8 = 3;
}

/// A command whose place in the tree is fixed but whose stage is not built
/// yet: says so plainly and exits "could not run".
pub fn planned(name: &str, issue: u32) -> ExitCode {
    eprintln!(
        "storcert {name}: not available in this build (the {name} stage is tracked as issue {issue})"
    );
    ExitCode::from(exit::COULD_NOT_RUN)
}
