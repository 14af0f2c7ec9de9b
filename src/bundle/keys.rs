//! The signing key pair on disk: made once (the secret 0600 from its
//! first byte), read back, and the public keys a verifier trusts.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};

use super::minisign::{PublicKey, SecretKey};
use crate::util::fs::{write_durably, write_secret};

pub fn public_key_path(secret: &Path) -> PathBuf {
    let mut name = secret.file_name().unwrap_or_default().to_os_string();
    name.push(".pub");
    secret.with_file_name(name)
}

/// Makes a key pair at `secret` (and `secret`.pub).
pub fn make_key(secret: &Path, force: bool) -> anyhow::Result<SecretKey> {
    let public = public_key_path(secret);
    for p in [secret, public.as_path()] {
        if !force && p.exists() {
            bail!("{}: exists (--force replaces it)", p.display());
        }
    }
    let key = SecretKey::generate();
    write_secret(secret, key.to_file()).with_context(|| secret.display().to_string())?;
    write_durably(&public, key.public().to_file()).with_context(|| public.display().to_string())?;
    Ok(key)
}

pub fn read_secret_key(path: &Path) -> anyhow::Result<SecretKey> {
    let text = crate::input::read_text(path).with_context(|| path.display().to_string())?;
    SecretKey::parse_file(&text).with_context(|| path.display().to_string())
}

pub fn read_public_keys(path: &Path) -> anyhow::Result<Vec<PublicKey>> {
    let text = crate::input::read_text(path).with_context(|| path.display().to_string())?;
    PublicKey::parse_many(&text).with_context(|| path.display().to_string())
}
