//! Sending a queue of bundles to one or more collectors: the one loop
//! behind `storcert upload` and the end of `storcert run`. Bundles go
//! oldest first; a spooled bundle leaves the spool only once every
//! collector confirmed its digest, and one that any collector did not
//! confirm stays pending for the next try.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use super::{Client, Outcome, ProgressFn};
use crate::output::console::Console;
use crate::upload::spool::Spool;

/// One bundle's delivery to one collector.
#[derive(Debug, Clone)]
pub struct Attempt {
    pub bundle: PathBuf,
    pub to: String,
    pub outcome: Outcome,
}

/// What happened to one bundle in the drain.
#[derive(Debug, Clone)]
pub struct Delivered {
    pub bundle: PathBuf,
    pub attempts: Vec<Attempt>,
    /// Moved out of the spool (to `sent/`): every collector confirmed it.
    pub left_spool: bool,
    /// Where the bundle is now, when it moved (`sent/` or `refused/`).
    pub moved_to: Option<PathBuf>,
    /// Why it could not leave the spool although confirmed everywhere
    /// (or refused somewhere).
    pub confirm_error: Option<String>,
    /// Where it went because a receiver refused it for good.
    pub refused_to: Option<PathBuf>,
}

/// Sends `queue` to every `(url, client)` until `until`, showing each
/// body's progress on `console`, and telling `each` about every attempt as
/// it ends (so a caller prints in order).
pub fn drain(
    queue: &[PathBuf],
    clients: &[(String, Client)],
    spool: Option<&Spool>,
    until: Instant,
    console: &Arc<Console>,
    each: &mut dyn FnMut(&Attempt),
) -> std::io::Result<Vec<Delivered>> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let mut out = Vec::new();
    for bundle in queue {
        let mut attempts = Vec::new();
        for (to, client) in clients {
            let key = format!("upload {}", name_of(bundle));
            let shown = Arc::clone(console);
            let bar_key = key.clone();
            let progress: ProgressFn = Arc::new(move |_name, done, total| {
                shown.update(&bar_key, done, total, "B", String::new());
            });
            let outcome = rt.block_on(client.upload(bundle, until, Some(progress)));
            console.end(&key);
            let a = Attempt {
                bundle: bundle.clone(),
                to: to.clone(),
                outcome,
            };
            each(&a);
            attempts.push(a);
        }
        let everywhere = attempts
            .iter()
            .all(|a| matches!(a.outcome, Outcome::Confirmed { .. }));
        let refused = attempts.iter().find_map(|a| match &a.outcome {
            Outcome::RefusedBundle(why) => Some(format!("{}: {why}", a.to)),
            _ => None,
        });
        let (mut left_spool, mut confirm_error, mut refused_to, mut moved_to) =
            (false, None, None, None);
        match (spool, refused) {
            // Refused for good: set aside, so it does not fail every later
            // upload, and kept.
            (Some(s), Some(why)) => match s.refuse(bundle, &why) {
                Ok(p) => {
                    refused_to = Some(p.clone());
                    moved_to = Some(p);
                }
                Err(e) => confirm_error = Some(format!("{e:#}")),
            },
            (Some(s), None) if everywhere => match s.confirm(bundle) {
                Ok(p) => {
                    left_spool = true;
                    moved_to = Some(p);
                }
                Err(e) => confirm_error = Some(format!("{e:#}")),
            },
            _ => {}
        }
        out.push(Delivered {
            bundle: bundle.clone(),
            attempts,
            left_spool,
            moved_to,
            confirm_error,
            refused_to,
        });
    }
    Ok(out)
}

fn name_of(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}
