//! The report's sections, one a kind of result, each rendered to the page
//! (HTML) and to text (Markdown or plain) in its own file. A new kind of
//! result is its file here, its line in `SECTIONS`, and what
//! `Report::from_contents` keeps of it.

mod act;
mod drives;
mod filesystem;
mod health;
mod machine;
mod notes;
mod policy;
mod search;
mod spare;
mod stream;
mod tests;

use crate::markup::Doc;
use crate::Report;

/// What one kind of result adds to the report.
pub trait Section: Sync {
    /// Its part of the page (nothing by default).
    fn html(&self, _r: &Report, _out: &mut String) {}
    /// Its part of the text (nothing by default).
    fn text(&self, _r: &Report, _d: &mut Doc) {}
}

/// The sections in the order a reader meets them, after the verdict and
/// the comparison across loads.
pub static SECTIONS: &[&dyn Section] = &[
    &spare::Spare,
    &machine::Machine,
    &drives::Drives,
    &policy::Policy,
    &search::Search,
    &act::Act,
    &stream::Stream,
    &filesystem::Filesystem,
    &health::Health,
    &tests::Tests,
    &notes::Notes,
];
