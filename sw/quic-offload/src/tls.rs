//! TLS for the transfers: the certificate of nanobpf.quic.transfer's --cert-dir (cert.pem, key.pem),
//! TLS 1.3 with TLS_AES_128_GCM_SHA256 only (the one suite the device protects), ALPN "nanobpf-xfer".
//!
//! The client pins the server's certificate (cert.pem, byte for byte) instead of validating a chain:
//! the test certificates nanobpf.quic.capture.self_signed makes are self-signed with CA:TRUE, which
//! webpki refuses as an end-entity certificate. The handshake signature is still verified with the
//! pinned certificate's key.

use std::fs;
use std::path::Path;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{verify_tls13_signature, CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};

pub const ALPN: &[u8] = b"nanobpf-xfer";

/// ring's provider with AES-128-GCM as the only TLS 1.3 suite.
pub fn provider() -> Arc<CryptoProvider> {
    let mut p = rustls::crypto::ring::default_provider();
    p.cipher_suites.retain(|s| s.suite() == rustls::CipherSuite::TLS13_AES_128_GCM_SHA256);
    Arc::new(p)
}

pub fn load_certs(dir: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let p = dir.join("cert.pem");
    let pem = fs::read(&p).map_err(|e| format!("{}: {e} (make one with `openssl req -x509 -newkey ec \
        -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj /CN=localhost -addext subjectAltName=DNS:localhost \
        -keyout key.pem -out cert.pem`, or run `python -m nanobpf.quic.transfer serve --cert-dir DIR` once)", p.display()))?;
    let certs: Result<Vec<_>, _> = rustls_pemfile::certs(&mut pem.as_slice()).collect();
    let certs = certs.map_err(|e| format!("{}: {e}", p.display()))?;
    if certs.is_empty() {
        return Err(format!("{}: no certificate", p.display()));
    }
    Ok(certs)
}

pub fn load_key(dir: &Path) -> Result<PrivateKeyDer<'static>, String> {
    let p = dir.join("key.pem");
    let pem = fs::read(&p).map_err(|e| format!("{}: {e}", p.display()))?;
    rustls_pemfile::private_key(&mut pem.as_slice())
        .map_err(|e| format!("{}: {e}", p.display()))?
        .ok_or_else(|| format!("{}: no private key", p.display()))
}

pub fn server_config(cert_dir: &Path) -> Result<rustls::ServerConfig, String> {
    let certs = load_certs(cert_dir)?;
    let key = load_key(cert_dir)?;
    let mut cfg = rustls::ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| e.to_string())?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| format!("{}: {e}", cert_dir.display()))?;
    cfg.alpn_protocols = vec![ALPN.to_vec()];
    cfg.max_early_data_size = 0;
    Ok(cfg)
}

pub fn client_config(cert_dir: &Path) -> Result<rustls::ClientConfig, String> {
    let pinned = load_certs(cert_dir)?;
    let p = provider();
    let verifier = Arc::new(Pinned { certs: pinned, algs: p.signature_verification_algorithms });
    let mut cfg = rustls::ClientConfig::builder_with_provider(p)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| e.to_string())?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    cfg.alpn_protocols = vec![ALPN.to_vec()];
    Ok(cfg)
}

#[derive(Debug)]
struct Pinned {
    certs: Vec<CertificateDer<'static>>,
    algs: WebPkiSupportedAlgorithms,
}

impl ServerCertVerifier for Pinned {
    fn verify_server_cert(&self, end_entity: &CertificateDer<'_>, _intermediates: &[CertificateDer<'_>],
                          _server_name: &ServerName<'_>, _ocsp: &[u8], _now: UnixTime) -> Result<ServerCertVerified, rustls::Error> {
        if self.certs.iter().any(|c| c.as_ref() == end_entity.as_ref()) {
            Ok(ServerCertVerified::assertion())
        } else {
            Err(rustls::Error::General("the server's certificate is not the one in --cert-dir".into()))
        }
    }
    fn verify_tls12_signature(&self, _m: &[u8], _c: &CertificateDer<'_>, _d: &DigitallySignedStruct) -> Result<HandshakeSignatureValid, rustls::Error> {
        Err(rustls::Error::General("TLS 1.2 is not used".into()))
    }
    fn verify_tls13_signature(&self, m: &[u8], c: &CertificateDer<'_>, d: &DigitallySignedStruct) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(m, c, d, &self.algs)
    }
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algs.supported_schemes()
    }
}
