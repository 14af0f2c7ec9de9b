//! Serving: TLS, the connection bounds (first byte, head, write stall) and
//! the listener.

use super::*;

/// The TLS server's configuration: the certificate chain and key, and
/// HTTP/1.1 as the only protocol offered (the server speaks no HTTP/2; a
/// client that negotiated h2 would be cut off).
pub(super) fn tls_server_config(
    cert: &std::path::Path,
    key: &std::path::Path,
) -> Result<rustls::ServerConfig> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let chain = CertificateDer::pem_file_iter(cert)
        .context("certificate")?
        .collect::<Result<Vec<_>, _>>()
        .context("certificate")?;
    let key = PrivateKeyDer::from_pem_file(key).context("key")?;
    let mut cfg = rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(chain, key)?;
    cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(cfg)
}

/// Drops a connection that sends nothing within `HEADER_READ_TIMEOUT` of
/// being accepted (hyper's head timeout starts at the first byte, so an
/// idle socket would otherwise be held for ever), and one whose reader
/// takes nothing of an answer for `write_stall`: hyper has no write
/// timeout, so a client that never reads would hold its connection and
/// the answer queued for it (an export's last chunks) until it closed.
#[derive(Clone, Copy)]
pub(super) struct FirstByte {
    write_stall: Duration,
}

/// A connection as the server holds it: a write that makes no progress
/// for the stall fails, and hyper drops the connection.
pub(super) type Connection =
    std::pin::Pin<Box<tokio_io_timeout::TimeoutStream<tokio::net::TcpStream>>>;

impl<S: Send + 'static> axum_server::accept::Accept<tokio::net::TcpStream, S> for FirstByte {
    type Stream = Connection;
    type Service = S;
    type Future = std::pin::Pin<
        Box<dyn std::future::Future<Output = std::io::Result<(Self::Stream, S)>> + Send>,
    >;

    fn accept(&self, stream: tokio::net::TcpStream, service: S) -> Self::Future {
        let write_stall = self.write_stall;
        Box::pin(async move {
            // A peek, not readable(): tokio takes a new socket as readable
            // until a read says otherwise.
            let mut first = [0u8; 1];
            match tokio::time::timeout(HEADER_READ_TIMEOUT, stream.peek(&mut first)).await {
                Ok(Ok(_)) => {
                    // A small send buffer: what was handed to the socket is
                    // then close to what the reader took (`pace`). Not
                    // fatal: the kernel's default is only more generous.
                    let _ = rustix::net::sockopt::set_socket_send_buffer_size(
                        &stream,
                        super::pace::SEND_BUFFER,
                    );
                    let mut held = tokio_io_timeout::TimeoutStream::new(stream);
                    held.set_write_timeout(Some(write_stall));
                    Ok((Box::pin(held), service))
                }
                Ok(Err(e)) => Err(e),
                Err(_) => Err(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    "no request within the head timeout",
                )),
            }
        })
    }
}

/// What to say at start about a collector reachable beyond this host
/// with no token: every read route (the export of every serial and host
/// name included) and every upload is open to whoever reaches it.
pub(super) fn open_warning(
    token: Option<&str>,
    public_read: bool,
    addr: SocketAddr,
) -> Option<String> {
    if addr.ip().is_loopback() {
        return None;
    }
    match (token, public_read) {
        (None, _) => Some(format!(
            "collect: warning: listening on {addr} with no --token-file: every page, the API, \
             the exports (every serial and host name) and uploads are open to anyone who can \
             reach it"
        )),
        (Some(_), true) => Some(format!(
            "collect: warning: listening on {addr} with --public-read: every page, the API and \
             the exports (every serial and host name) are open to anyone who can reach it"
        )),
        (Some(_), false) => None,
    }
}

/// Serves until the process is stopped. Prints the bound address first
/// (a listen port of 0 picks a free one).
pub async fn serve(
    state: Shared,
    listen: &str,
    tls: Option<(std::path::PathBuf, std::path::PathBuf)>,
) -> Result<()> {
    let listener =
        std::net::TcpListener::bind(listen).with_context(|| format!("--listen {listen}"))?;
    let addr = listener.local_addr()?;
    match state.sync().await {
        Ok(n) if n > 0 => eprintln!("collect: indexed {n} bundle(s) found in the store"),
        Ok(_) => {}
        Err(e) => eprintln!("collect: sync: {e:#}"),
    }
    let interval = state.cfg.sync_interval;
    let bg = state.clone();
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(interval).await;
            if let Err(e) = bg.sync().await {
                eprintln!("collect: sync: {e:#}");
            }
        }
    });
    // The certificate is loaded before the address is announced, so a
    // bad one is an error at start, not a listener that fails handshakes.
    let tls_config = match tls {
        Some((cert, key)) => {
            use_ring();
            let what = || {
                format!(
                    "--tls-cert {} / --tls-key {}",
                    cert.display(),
                    key.display()
                )
            };
            Some(axum_server::tls_rustls::RustlsConfig::from_config(
                Arc::new(tls_server_config(&cert, &key).with_context(what)?),
            ))
        }
        None => None,
    };
    let app = router(state.clone()).into_make_service_with_connect_info::<SocketAddr>();
    let scheme = if tls_config.is_some() {
        "https"
    } else {
        "http"
    };
    eprintln!(
        "collect: listening on {scheme}://{addr}/ (store: {}, {} trusted key(s))",
        state.cfg.store.describe(),
        state.cfg.trusted.len()
    );
    if let Some(w) = open_warning(state.cfg.token.as_deref(), state.cfg.public_read, addr) {
        eprintln!("{w}");
    }
    // Both on hyper-util's server, HTTP/1 only, with a bound on the first
    // byte of a connection (an idle socket is dropped), on reading each
    // request head (slow-loris clients are dropped after it) and on a
    // reader that stops taking an answer.
    let accept = FirstByte {
        write_stall: state.cfg.export_stall,
    };
    match tls_config {
        Some(config) => {
            let acceptor = axum_server::tls_rustls::RustlsAcceptor::new(config).acceptor(accept);
            let mut server = axum_server::from_tcp(listener)?
                .acceptor(acceptor)
                .http1_only();
            server
                .http_builder()
                .http1()
                .header_read_timeout(HEADER_READ_TIMEOUT);
            server.serve(app).await?;
        }
        None => {
            let mut server = axum_server::from_tcp(listener)?
                .acceptor(accept)
                .http1_only();
            server
                .http_builder()
                .http1()
                .header_read_timeout(HEADER_READ_TIMEOUT);
            server.serve(app).await?;
        }
    }
    Ok(())
}

/// Makes ring the process's TLS provider (the only one built in): the TLS
/// listener and the S3 client take the process default. Idempotent. The
/// upload client has its own call: the image's binary has no collector.
pub fn use_ring() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}
