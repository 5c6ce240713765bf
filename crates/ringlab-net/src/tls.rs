//! TLS for `https://` URLs, through rustls in user space: the client state
//! machine encrypts requests and decrypts responses, and every driver
//! (epoll and the io_uring ones) moves the ciphertext, so io_uring keeps
//! doing all the socket I/O. Kernel TLS (TCP_ULP "tls") is not used.
//!
//! As wrk, the server's certificate is not verified (wrk's OpenSSL
//! context sets no verification): a load generator is pointed at test
//! servers with self-signed certificates.

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, SignatureScheme};
use std::sync::Arc;

/// What every connection of a run needs to open a TLS session.
#[derive(Clone, Debug)]
pub struct TlsClient {
    pub config: Arc<ClientConfig>,
    pub name: ServerName<'static>,
}

impl TlsClient {
    /// A client for `host` (a DNS name or an IP address), offering TLS 1.3
    /// and 1.2 and HTTP/1.1 by ALPN, verifying nothing (as wrk).
    pub fn new(host: &str) -> Result<TlsClient, String> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| format!("TLS setup: {e}"))?
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(NoVerification(provider)))
            .with_no_client_auth();
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        let name = ServerName::try_from(host.to_string())
            .map_err(|e| format!("'{host}' is not a name TLS can send (SNI): {e}"))?;
        Ok(TlsClient {
            config: Arc::new(config),
            name,
        })
    }

    /// A new session for one connection.
    pub fn connect(&self) -> Result<rustls::ClientConnection, rustls::Error> {
        rustls::ClientConnection::new(self.config.clone(), self.name.clone())
    }
}

/// Accepts any certificate (wrk does not verify either); the handshake's
/// signatures are still checked, so the session keys are the server's.
#[derive(Debug)]
struct NoVerification(Arc<CryptoProvider>);

impl ServerCertVerifier for NoVerification {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
