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
                        crate::util::fs::create_dir_durably(parent)?;
                    }
                    crate::util::fs::write_durably(&path, &data)
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
                            out.push(n.to_string());
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
                    .filter_map(|m| m.location.filename().map(String::from))
                    .collect())
            }
        }
    }
}
