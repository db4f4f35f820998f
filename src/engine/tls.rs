//! TLS to the target, on rustls with ring and the Mozilla roots (plus `[target] ca_file`'s certificates): the
//! configurations for each ALPN offer (HTTP/1.1's, HTTP/2's, `"auto"`'s both), a stream wrapped in it, and a
//! connect that failed, classed (a server refusing every protocol offered is a `protocol` error that says so).

use std::sync::Arc;

use rustls::pki_types::CertificateDer;
use tokio_rustls::TlsConnector;

use super::failure::Failure;
use super::http1::Stream;
use crate::metrics::ErrorClass;

/// A failed connect: `connect`, but for a server that refused every application protocol ALPN offered, which
/// is a `protocol` error that says so (the server is there; it does not speak what the scenario asked).
pub(super) fn connect_failure(error: &std::io::Error, tls: Option<&TlsConnector>) -> Failure {
    if super::failure::is_local_limit(error) {
        return super::failure::local_limit(&format!("cannot connect: {}", super::failure::chain(error)));
    }
    let refused_alpn = error
        .get_ref()
        .and_then(|e| e.downcast_ref::<rustls::Error>())
        .is_some_and(|e| matches!(e, rustls::Error::AlertReceived(rustls::AlertDescription::NoApplicationProtocol)));
    if refused_alpn {
        let offered = tls.map(|t| t.config().alpn_protocols.clone()).unwrap_or_default();
        let names: Vec<String> = offered.iter().map(|p| String::from_utf8_lossy(p).into_owned()).collect();
        let hint = if !offered.iter().any(|p| p == b"http/1.1") {
            "; protocol = \"auto\" would fall back to HTTP/1.1"
        } else if !offered.iter().any(|p| p == b"h2") {
            "; it may speak HTTP/2 only: protocol = \"http2\""
        } else {
            ""
        };
        let message = format!(
            "the server refused every protocol offered in TLS's ALPN ({}): it does not speak them{hint}",
            names.join(", ")
        );
        return Failure::new(ErrorClass::Protocol, message);
    }
    Failure::new(ErrorClass::Connect, format!("cannot connect: {error}"))
}

/// `tcp`, wrapped in TLS when the target is `https://`.
pub(super) async fn secured<S: Stream + 'static>(
    tls: Option<&TlsConnector>,
    host: &str,
    tcp: S,
) -> std::io::Result<Box<dyn Stream>> {
    let Some(tls) = tls else { return Ok(Box::new(tcp)) };
    let name = rustls::pki_types::ServerName::try_from(host.to_owned())
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    Ok(Box::new(tls.connect(name, tcp).await?))
}

pub(super) fn tls_connector() -> TlsConnector {
    TlsConnector::from(Arc::new(tls_config()))
}

/// TLS for HTTP/1.1 on ring with the Mozilla roots from webpki-roots: the same trust wherever degrade runs,
/// whatever the machine's certificate store holds. Webhook delivery uses it too.
pub(crate) fn tls_config() -> rustls::ClientConfig {
    tls_config_for(&[b"http/1.1"], &[])
}

/// TLS offering `alpn` in ALPN, trusting `extra_roots` (`[target] ca_file`) besides the Mozilla roots.
pub(crate) fn tls_config_for(alpn: &[&[u8]], extra_roots: &[CertificateDer<'static>]) -> rustls::ClientConfig {
    let mut roots = rustls::RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.to_vec() };
    // Each was parsed when the scenario was read; one rustls cannot use is left out (its handshakes then fail
    // as a certificate error, which names it).
    let _ = roots.add_parsable_certificates(extra_roots.iter().cloned());
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .expect("ring supports the default protocol versions");
    let mut config = if extra_roots.is_empty() {
        builder.with_root_certificates(roots).with_no_client_auth()
    } else {
        let webpki = rustls::client::WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
            .build()
            .expect("the Mozilla roots are a usable trust store");
        let verifier = super::tls_pinned::TrustedOrOwn { webpki, own: extra_roots.to_vec() };
        builder.dangerous().with_custom_certificate_verifier(Arc::new(verifier)).with_no_client_auth()
    };
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    config
}
