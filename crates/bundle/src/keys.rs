//! The signing key pair on disk: made once (the secret 0600 from its
//! first byte), read back, and the public keys a verifier trusts.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};

use super::minisign::{PublicKey, SecretKey};
use storcert_util::fs::{write_durably, write_secret};

pub fn public_key_path(secret: &Path) -> PathBuf {
    let mut name = secret.file_name().unwrap_or_default().to_os_string();
    name.push(".pub");
    secret.with_file_name(name)
}

/// Makes a key pair at `secret` (and `secret`.pub).
pub fn make_key(secret: &Path, force: bool) -> anyhow::Result<SecretKey> {
    let public = public_key_path(secret);
    for p in [secret, public.as_path()] {
        let Ok(meta) = std::fs::symlink_metadata(p) else {
            continue;
        };
        if !force {
            bail!("{}: exists (--force replaces it)", p.display());
        }
        // Replaced only if it is a plain file of ours: a link or another
        // user's file in a shared folder is somebody's trap for the key.
        if !meta.is_file() {
            bail!(
                "{}: exists and is not a regular file; not replaced",
                p.display()
            );
        }
        // SAFETY: geteuid has no preconditions.
        if std::os::unix::fs::MetadataExt::uid(&meta) != unsafe { libc::geteuid() } {
            bail!(
                "{}: exists and belongs to another user; not replaced",
                p.display()
            );
        }
    }
    let key = SecretKey::generate();
    write_secret(secret, key.to_file()).with_context(|| secret.display().to_string())?;
    write_durably(&public, key.public().to_file()).with_context(|| public.display().to_string())?;
    Ok(key)
}

pub fn read_secret_key(path: &Path) -> anyhow::Result<SecretKey> {
    let text = storcert_util::input::read_text(path).with_context(|| path.display().to_string())?;
    SecretKey::parse_file(&text).with_context(|| path.display().to_string())
}

pub fn read_public_keys(path: &Path) -> anyhow::Result<Vec<PublicKey>> {
    let text = storcert_util::input::read_text(path).with_context(|| path.display().to_string())?;
    PublicKey::parse_many(&text).with_context(|| path.display().to_string())
}
