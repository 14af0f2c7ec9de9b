//! Where the collector keeps bundles: a local folder (each object written
//! by temporary + fsync + rename) or any S3-compatible bucket through
//! `object_store`, so several collectors behind a load balancer share one
//! bucket. Keys are content addresses, so writing the same bundle twice
//! writes the same bytes to the same key: one copy, whoever wins.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use bytes::Bytes;
use futures_util::TryStreamExt;
use object_store::{path::Path as ObjPath, ObjectStore, ObjectStoreExt};

/// A new file only this user can read, created without following a link
/// (a body arriving, a copy from the store).
pub async fn create_private(path: &std::path::Path) -> std::io::Result<tokio::fs::File> {
    tokio::fs::OpenOptions::from(private_options())
        .open(path)
        .await
}

/// `create_private` on a blocking thread (a page as its bundle unpacks).
pub fn create_private_blocking(path: &std::path::Path) -> std::io::Result<std::fs::File> {
    private_options().open(path)
}

fn private_options() -> std::fs::OpenOptions {
    use std::os::unix::fs::OpenOptionsExt;
    let mut o = std::fs::OpenOptions::new();
    o.write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .mode(0o600);
    o
}

#[derive(Clone)]
pub enum Store {
    Local(PathBuf),
    Object {
        store: Arc<dyn ObjectStore>,
        prefix: String,
        url: String,
    },
}

impl Store {
    /// A folder path, or `s3://BUCKET[/PREFIX]` with the endpoint and
    /// credentials from the AWS_* environment variables.
    pub fn open(url: &str) -> Result<Store> {
        if let Some(rest) = url.strip_prefix("s3://") {
            let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
            if bucket.is_empty() {
                bail!("--store {url}: no bucket name");
            }
            let mut b = object_store::aws::AmazonS3Builder::from_env().with_bucket_name(bucket);
            if std::env::var("AWS_ENDPOINT").is_ok_and(|e| e.starts_with("http://")) {
                b = b.with_allow_http(true);
            }
            let store = b.build().with_context(|| format!("--store {url}"))?;
            return Ok(Store::Object {
                store: Arc::new(store),
                prefix: prefix.trim_matches('/').to_string(),
                url: url.to_string(),
            });
        }
        if url.contains("://") {
            bail!("--store {url}: only a folder or s3://BUCKET is understood");
        }
        let dir = PathBuf::from(url);
        std::fs::create_dir_all(&dir).with_context(|| format!("--store {url}"))?;
        Ok(Store::Local(dir))
    }

    pub fn describe(&self) -> String {
        match self {
            Store::Local(d) => format!("folder {}", d.display()),
            Store::Object { url, .. } => url.clone(),
        }
    }

    fn object_path(prefix: &str, key: &str) -> ObjPath {
        if prefix.is_empty() {
            ObjPath::from(key)
        } else {
            ObjPath::from(format!("{prefix}/{key}"))
        }
    }

    pub async fn put(&self, key: &str, data: Bytes) -> Result<()> {
        match self {
            Store::Local(dir) => {
                let path = dir.join(key);
                tokio::task::spawn_blocking(move || {
                    if let Some(parent) = path.parent() {
                        storcert_util::fs::create_dir_durably(parent)?;
                    }
                    storcert_util::fs::write_durably(&path, &data)
                })
                .await?
                .with_context(|| format!("storing {key}"))
            }
            Store::Object { store, prefix, .. } => {
                store
                    .put(&Self::object_path(prefix, key), data.into())
                    .await
                    .with_context(|| format!("storing {key}"))?;
                Ok(())
            }
        }
    }

    /// Stores the file at `path` under `key` without reading it into
    /// memory: copied durably into a folder, or sent to a bucket in parts.
    pub async fn put_file(&self, key: &str, path: &std::path::Path) -> Result<()> {
        match self {
            Store::Local(dir) => {
                let dest = dir.join(key);
                let src = path.to_path_buf();
                tokio::task::spawn_blocking(move || -> std::io::Result<()> {
                    use std::io::Write;
                    if let Some(parent) = dest.parent() {
                        storcert_util::fs::create_dir_durably(parent)?;
                    }
                    let (mut out, tmp) = storcert_util::fs::create_temporary(&dest, 0o644)?;
                    let copied = std::io::copy(&mut std::fs::File::open(&src)?, &mut out)
                        .and_then(|_| out.flush())
                        .and_then(|()| out.sync_all())
                        .and_then(|()| std::fs::rename(&tmp, &dest));
                    if let Err(e) = copied {
                        let _ = std::fs::remove_file(&tmp);
                        return Err(e);
                    }
                    std::fs::File::open(dest.parent().unwrap_or(std::path::Path::new(".")))?
                        .sync_all()
                })
                .await?
                .with_context(|| format!("storing {key}"))
            }
            Store::Object { store, prefix, .. } => {
                use tokio::io::AsyncReadExt;
                let upload = store
                    .put_multipart(&Self::object_path(prefix, key))
                    .await
                    .with_context(|| format!("storing {key}"))?;
                let mut parts = object_store::WriteMultipart::new(upload);
                let mut file = tokio::fs::File::open(path)
                    .await
                    .with_context(|| format!("storing {key}"))?;
                let mut buf = vec![0u8; 1 << 20];
                loop {
                    let n = file
                        .read(&mut buf)
                        .await
                        .with_context(|| format!("storing {key}"))?;
                    if n == 0 {
                        break;
                    }
                    parts.write(&buf[..n]);
                }
                parts
                    .finish()
                    .await
                    .with_context(|| format!("storing {key}"))?;
                Ok(())
            }
        }
    }

    /// Copies the object `key` to a new file at `path` (created 0600, never
    /// through a link), refusing one over `max` bytes. Returns its size and
    /// SHA-256; `None`: no such object.
    pub async fn get_to_file(
        &self,
        key: &str,
        path: &std::path::Path,
        max: u64,
    ) -> Result<Option<(u64, String)>> {
        use futures_util::StreamExt;
        use sha2::Digest;
        use tokio::io::AsyncWriteExt;
        let mut sha = sha2::Sha256::new();
        let mut out = create_private(path)
            .await
            .with_context(|| format!("{}", path.display()))?;
        let mut size = 0u64;
        match self {
            Store::Local(dir) => {
                use tokio::io::AsyncReadExt;
                let mut f = match tokio::fs::File::open(dir.join(key)).await {
                    Ok(f) => f,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
                    Err(e) => return Err(e).with_context(|| format!("reading {key}")),
                };
                let mut buf = vec![0u8; 1 << 20];
                loop {
                    let n = f
                        .read(&mut buf)
                        .await
                        .with_context(|| format!("reading {key}"))?;
                    if n == 0 {
                        break;
                    }
                    size += n as u64;
                    if size > max {
                        bail!("{key}: larger than {max} bytes");
                    }
                    sha.update(&buf[..n]);
                    out.write_all(&buf[..n]).await?;
                }
            }
            Store::Object { store, prefix, .. } => {
                let r = match store.get(&Self::object_path(prefix, key)).await {
                    Ok(r) => r,
                    Err(object_store::Error::NotFound { .. }) => return Ok(None),
                    Err(e) => return Err(e).with_context(|| format!("reading {key}")),
                };
                if r.meta.size > max {
                    bail!("{key}: larger than {max} bytes");
                }
                let mut stream = r.into_stream();
                while let Some(chunk) = stream.next().await {
                    let chunk = chunk.with_context(|| format!("reading {key}"))?;
                    size += chunk.len() as u64;
                    if size > max {
                        bail!("{key}: larger than {max} bytes");
                    }
                    sha.update(&chunk);
                    out.write_all(&chunk).await?;
                }
            }
        }
        out.flush().await?;
        Ok(Some((size, hex::encode(sha.finalize()))))
    }

    /// `get` of a small object (a record, a signature): at most `max`
    /// bytes are read, whatever the object claims or becomes (a link to
    /// /dev/zero, an object replaced between a size check and the read).
    pub async fn get_small(&self, key: &str, max: u64) -> Result<Option<Bytes>> {
        use futures_util::StreamExt;
        let too_big = || anyhow::anyhow!("{key}: larger than {max} bytes");
        match self {
            Store::Local(dir) => {
                use tokio::io::AsyncReadExt;
                let f = match tokio::fs::OpenOptions::new()
                    .read(true)
                    .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
                    .open(dir.join(key))
                    .await
                {
                    Ok(f) => f,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
                    Err(e) => return Err(e).with_context(|| format!("reading {key}")),
                };
                if !f.metadata().await?.is_file() {
                    bail!("{key}: not a regular file");
                }
                let mut data = Vec::new();
                f.take(max + 1)
                    .read_to_end(&mut data)
                    .await
                    .with_context(|| format!("reading {key}"))?;
                if data.len() as u64 > max {
                    return Err(too_big());
                }
                Ok(Some(data.into()))
            }
            Store::Object { store, prefix, .. } => {
                let r = match store.get(&Self::object_path(prefix, key)).await {
                    Ok(r) => r,
                    Err(object_store::Error::NotFound { .. }) => return Ok(None),
                    Err(e) => return Err(e).with_context(|| format!("reading {key}")),
                };
                if r.meta.size > max {
                    return Err(too_big());
                }
                let mut data = Vec::new();
                let mut stream = r.into_stream();
                while let Some(chunk) = stream.next().await {
                    data.extend_from_slice(&chunk.with_context(|| format!("reading {key}"))?);
                    if data.len() as u64 > max {
                        return Err(too_big());
                    }
                }
                Ok(Some(data.into()))
            }
        }
    }

    pub async fn get(&self, key: &str) -> Result<Option<Bytes>> {
        match self {
            Store::Local(dir) => match tokio::fs::read(dir.join(key)).await {
                Ok(b) => Ok(Some(b.into())),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                Err(e) => Err(e).with_context(|| format!("reading {key}")),
            },
            Store::Object { store, prefix, .. } => {
                match store.get(&Self::object_path(prefix, key)).await {
                    Ok(r) => Ok(Some(
                        r.bytes().await.with_context(|| format!("reading {key}"))?,
                    )),
                    Err(object_store::Error::NotFound { .. }) => Ok(None),
                    Err(e) => Err(e).with_context(|| format!("reading {key}")),
                }
            }
        }
    }

    /// Removes `key`; one already gone is no error.
    pub async fn delete(&self, key: &str) -> Result<()> {
        match self {
            Store::Local(dir) => match tokio::fs::remove_file(dir.join(key)).await {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    Err(e).with_context(|| format!("removing {key}"))
                }
                _ => Ok(()),
            },
            Store::Object { store, prefix, .. } => {
                match store.delete(&Self::object_path(prefix, key)).await {
                    Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
                    Err(e) => Err(e).with_context(|| format!("removing {key}")),
                }
            }
        }
    }

    pub async fn exists(&self, key: &str) -> Result<bool> {
        match self {
            Store::Local(dir) => Ok(tokio::fs::try_exists(dir.join(key)).await?),
            Store::Object { store, prefix, .. } => {
                match store.head(&Self::object_path(prefix, key)).await {
                    Ok(_) => Ok(true),
                    Err(object_store::Error::NotFound { .. }) => Ok(false),
                    Err(e) => Err(e).with_context(|| format!("looking up {key}")),
                }
            }
        }
    }

    /// File names under a folder-like `dir` ("summaries").
    pub async fn list(&self, dir: &str) -> Result<Vec<String>> {
        Ok(self
            .list_stamped(dir)
            .await?
            .into_iter()
            .map(|e| e.0)
            .collect())
    }

    /// File names under `dir`, each with a stamp that changes when the
    /// file does (size and modification time; an object's ETag): a sync
    /// reads again only what changed.
    pub async fn list_stamped(&self, dir: &str) -> Result<Vec<(String, String)>> {
        match self {
            Store::Local(root) => {
                let mut out = Vec::new();
                let mut rd = match tokio::fs::read_dir(root.join(dir)).await {
                    Ok(rd) => rd,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
                    Err(e) => return Err(e).with_context(|| format!("listing {dir}")),
                };
                while let Some(e) = rd.next_entry().await? {
                    if let Some(n) = e.file_name().to_str() {
                        if !n.ends_with(".tmp") {
                            let stamp = match e.metadata().await {
                                Ok(m) => {
                                    use std::os::unix::fs::MetadataExt;
                                    format!("{}:{}.{}", m.len(), m.mtime(), m.mtime_nsec())
                                }
                                Err(_) => String::new(),
                            };
                            out.push((n.to_string(), stamp));
                        }
                    }
                }
                Ok(out)
            }
            Store::Object { store, prefix, .. } => {
                let p = Self::object_path(prefix, dir);
                let metas: Vec<_> = store
                    .list(Some(&p))
                    .try_collect()
                    .await
                    .with_context(|| format!("listing {dir}"))?;
                Ok(metas
                    .into_iter()
                    .filter_map(|m| {
                        let stamp = match &m.e_tag {
                            Some(t) => t.clone(),
                            None => format!("{}:{}", m.size, m.last_modified.timestamp_micros()),
                        };
                        Some((m.location.filename()?.to_string(), stamp))
                    })
                    .collect())
            }
        }
    }
}
