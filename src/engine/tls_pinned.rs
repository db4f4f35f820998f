//! Trust in `[target] ca_file` for a test server's self-signed certificate as `openssl req -x509` makes it by
//! default: a CA certificate (`basicConstraints CA:TRUE`) served as the server's own. WebPKI refuses a CA as an
//! end entity, which left the guide's "a self-signed certificate is trusted with `ca_file`" untrue for the
//! usual one (curl's `--cacert` accepts it). The exact certificate the user named is accepted despite that one
//! reason, when it names the host; WebPKI has read its dates before it looks at its constraints (an expired
//! one is refused as expired). Its extended key usage is not read: the user named this very certificate for
//! this target. Every other certificate stays WebPKI's to judge.

use std::sync::Arc;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, Error, SignatureScheme};

/// WebPKI's verdict, except that a certificate of `own` refused only for being a CA is trusted.
#[derive(Debug)]
pub(super) struct TrustedOrOwn {
    /// The verifier over the Mozilla roots and `own`.
    pub webpki: Arc<WebPkiServerVerifier>,
    /// The certificates of `[target] ca_file`.
    pub own: Vec<CertificateDer<'static>>,
}

/// Whether WebPKI refused a certificate for being a CA used as an end entity, and for nothing else. rustls
/// passes that reason on as an opaque error whose text is WebPKI's variant name.
fn ca_used_as_end_entity(error: &Error) -> bool {
    matches!(error, Error::InvalidCertificate(CertificateError::Other(other)) if other.to_string() == "CaUsedAsEndEntity")
}

impl ServerCertVerifier for TrustedOrOwn {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        match self.webpki.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now) {
            Err(error)
                if ca_used_as_end_entity(&error) && self.own.iter().any(|c| c.as_ref() == end_entity.as_ref()) =>
            {
                let parsed = rustls::server::ParsedCertificate::try_from(end_entity)?;
                rustls::client::verify_server_name(&parsed, server_name)?;
                Ok(ServerCertVerified::assertion())
            }
            verdict => verdict,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.webpki.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.webpki.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.webpki.supported_verify_schemes()
    }
}
