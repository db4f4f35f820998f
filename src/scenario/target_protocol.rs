//! `[target] protocol`, `http2_connections` and `ca_file`: which HTTP the requests go over, how many HTTP/2
//! connections carry them, and which certificates are trusted besides the Mozilla roots. Checked here, so the
//! engine gets an enum, a count and parsed certificates.

use toml::Spanned;

use super::bounded_file::read_text;
use super::plan::Protocol;
use crate::config::{Checker, ConfigWarning, WarningKind};
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

/// Most bytes of a `ca_file`: a bundle of a few hundred certificates.
const MAX_CA_FILE: u64 = 1_000_000;

/// `[target] http2_connections` when unset: one connection, as browsers and gRPC channels keep one to an origin.
pub const DEFAULT_HTTP2_CONNECTIONS: usize = 1;

/// Most `http2_connections`: each carries as many streams as the server allows.
const MAX_HTTP2_CONNECTIONS: i64 = 1000;

/// What the three keys gave.
pub(super) struct TargetProtocol {
    pub protocol: Option<Protocol>,
    pub http2_connections: Option<usize>,
    pub extra_roots: Option<Vec<CertificateDer<'static>>>,
}

/// Checks the three keys (`None` in a field when its key is wrong, the error pushed).
pub(super) fn resolve(
    checker: &mut Checker<'_>,
    protocol: Option<&Spanned<String>>,
    connections: Option<&Spanned<i64>>,
    ca_file: Option<&Spanned<String>>,
) -> TargetProtocol {
    let protocol = match protocol {
        Some(p) => checker.check(p, "target.protocol", |p| {
            Protocol::parse(p).ok_or_else(|| format!("`{p}` is not a protocol; use {}", Protocol::NAMES))
        }),
        None => Some(Protocol::Http1),
    };
    if let (Some(_), Some(Protocol::Http1)) = (connections, protocol) {
        let message = "[target] http2_connections has no effect: [target] protocol is \"http1\"".to_owned();
        checker.warnings.push(ConfigWarning::new(WarningKind::Setting, message));
    }
    let http2_connections = match connections {
        Some(c) => checker.check(c, "target.http2_connections", |&c| {
            usize::try_from(c)
                .ok()
                .filter(|_| (1..=MAX_HTTP2_CONNECTIONS).contains(&c))
                .ok_or_else(|| format!("{c} is not a count from 1 to {MAX_HTTP2_CONNECTIONS}"))
        }),
        None => Some(DEFAULT_HTTP2_CONNECTIONS),
    };
    let folder = checker.folder();
    let extra_roots = match ca_file {
        Some(file) => checker.check(file, "target.ca_file", |f| certificates(&folder.join(f), f)),
        None => Some(Vec::new()),
    };
    TargetProtocol { protocol, http2_connections, extra_roots }
}

/// The PEM certificates of `path` (written `shown` in the scenario, or on the command line).
pub(crate) fn certificates(path: &std::path::Path, shown: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    let text = read_text(path, MAX_CA_FILE).map_err(|p| p.about(shown))?;
    let certificates = CertificateDer::pem_slice_iter(text.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("{shown} is not a PEM file of certificates: {e}"))?;
    if certificates.is_empty() {
        return Err(format!("{shown} holds no certificate (-----BEGIN CERTIFICATE-----)"));
    }
    Ok(certificates)
}
