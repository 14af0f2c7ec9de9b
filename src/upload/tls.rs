//! Trust for uploads: the system's roots, a given CA file, or pinned
//! server keys (SHA-256 of the certificate's SubjectPublicKeyInfo, the
//! value curl's `--pinnedpubkey sha256//…` takes). A pin replaces CA
//! checks, as a collector with a self-signed certificate is the usual
//! case for pinning; the handshake signature is still verified.

use std::sync::Arc;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use sha2::{Digest, Sha256};

/// A certificate whose key `spki_pin` cannot find.
#[derive(Debug, thiserror::Error)]
#[error("certificate: {0}")]
pub struct CertificateError(pub webpki::Error);

/// The pin of a DER certificate: base64 SHA-256 of its SPKI.
pub fn spki_pin(cert: &CertificateDer<'_>) -> Result<String, CertificateError> {
    let ee = webpki::EndEntityCert::try_from(cert).map_err(CertificateError)?;
    Ok(B64.encode(Sha256::digest(ee.subject_public_key_info().as_ref())))
}

/// A pin that is not a base64 SHA-256; `text` as given.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
#[error("--pin-sha256 {text:?}: not a base64 SHA-256")]
pub struct PinError {
    pub text: String,
}

pub fn parse_pin(text: &str) -> Result<[u8; 32], PinError> {
    let t = text.trim().trim_start_matches("sha256//");
    B64.decode(t)
        .ok()
        .and_then(|b| <[u8; 32]>::try_from(b).ok())
        .ok_or_else(|| PinError { text: text.into() })
}

#[derive(Debug)]
struct PinVerifier {
    pins: Vec<[u8; 32]>,
    provider: Arc<rustls::crypto::CryptoProvider>,
}

impl ServerCertVerifier for PinVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let ee = webpki::EndEntityCert::try_from(end_entity)
            .map_err(|e| rustls::Error::General(format!("server certificate: {e}")))?;
        let digest: [u8; 32] = Sha256::digest(ee.subject_public_key_info().as_ref()).into();
        if self.pins.contains(&digest) {
            Ok(ServerCertVerified::assertion())
        } else {
            Err(rustls::Error::General(format!(
                "server key sha256//{} is not pinned",
                B64.encode(digest)
            )))
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// A rustls client configuration that trusts exactly `pins`.
pub fn pinned_config(pins: Vec<[u8; 32]>) -> rustls::ClientConfig {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .expect("the default provider supports the default versions")
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(PinVerifier { pins, provider }))
        .with_no_client_auth()
}

/// Makes ring the process's TLS provider (the only one built in): reqwest,
/// the S3 client and the TLS listener take the process default. Idempotent.
pub fn use_ring() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}
