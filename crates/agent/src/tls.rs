//! TLS for `ssl:` and `pssl:` targets (rustls with the `ring` provider).
//!
//! Both directions are verified: as a client (active `ssl:`) the switch
//! checks the controller's certificate against the CA and the address it
//! dialled (an IP address SAN), and presents its own certificate; as a
//! server (passive `pssl:`) it requires a client certificate that chains to
//! the same CA. There is no way to turn verification off.

use std::net::IpAddr;
use std::sync::Arc;

use rustls::client::WebPkiServerVerifier;
use rustls::server::WebPkiClientVerifier;
use rustls::{AlertDescription, CertificateError, ClientConfig, RootCertStore, ServerConfig};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, CertificateRevocationListDer, PrivateKeyDer, ServerName};

use crate::config::TlsFiles;

/// Why TLS could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("reading {what} {path:?}: {err}")]
    Pem { what: &'static str, path: std::path::PathBuf, err: rustls_pki_types::pem::Error },
    #[error("no certificate in {0:?}")]
    Empty(std::path::PathBuf),
    #[error("TLS configuration: {0}")]
    Rustls(#[from] rustls::Error),
    #[error("no certificate revocation list in {0:?}")]
    EmptyCrl(std::path::PathBuf),
    #[error("certificate revocation list {path:?}: {err}")]
    Crl { path: std::path::PathBuf, err: rustls::server::VerifierBuilderError },
    #[error("certificate verifier: {0}")]
    Verifier(#[from] rustls::server::VerifierBuilderError),
}

/// Client and server configurations built from one set of files.
#[derive(Clone, Debug)]
pub struct TlsContext {
    pub client: Arc<ClientConfig>,
    pub server: Arc<ServerConfig>,
}

fn certs(
    path: &std::path::Path,
    what: &'static str,
) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let pem = |err| TlsError::Pem { what, path: path.to_path_buf(), err };
    let v = CertificateDer::pem_file_iter(path)
        .map_err(pem)?
        .collect::<Result<Vec<_>, _>>()
        .map_err(pem)?;
    if v.is_empty() {
        return Err(TlsError::Empty(path.to_path_buf()));
    }
    Ok(v)
}

/// The CRLs of one PEM file, checked to parse (so a bad file is named
/// here, not at the first handshake).
fn crls(
    path: &std::path::Path,
    roots: &Arc<RootCertStore>,
    provider: &Arc<rustls::crypto::CryptoProvider>,
) -> Result<Vec<CertificateRevocationListDer<'static>>, TlsError> {
    let pem = |err| TlsError::Pem { what: "certificate revocation list", path: path.into(), err };
    let v = CertificateRevocationListDer::pem_file_iter(path)
        .map_err(pem)?
        .collect::<Result<Vec<_>, _>>()
        .map_err(pem)?;
    if v.is_empty() {
        return Err(TlsError::EmptyCrl(path.to_path_buf()));
    }
    WebPkiClientVerifier::builder_with_provider(roots.clone(), provider.clone())
        .with_crls(v.iter().cloned())
        .build()
        .map_err(|err| TlsError::Crl { path: path.into(), err })?;
    Ok(v)
}

impl TlsContext {
    /// Load the CA, certificate and key and build both configurations.
    pub fn load(files: &TlsFiles) -> Result<TlsContext, TlsError> {
        let mut roots = RootCertStore::empty();
        for c in certs(&files.ca, "CA certificate")? {
            roots.add(c)?;
        }
        let roots = Arc::new(roots);
        let chain = certs(&files.cert, "certificate")?;
        let key = PrivateKeyDer::from_pem_file(&files.key).map_err(|err| TlsError::Pem {
            what: "private key",
            path: files.key.clone(),
            err,
        })?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut revoked = Vec::new();
        for path in &files.crls {
            revoked.extend(crls(path, &roots, &provider)?);
        }
        let server_verifier =
            WebPkiServerVerifier::builder_with_provider(roots.clone(), provider.clone())
                .with_crls(revoked.iter().cloned())
                .build()?;
        let client = ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()?
            .with_webpki_verifier(server_verifier)
            .with_client_auth_cert(chain.clone(), key.clone_key())?;
        let verifier = WebPkiClientVerifier::builder_with_provider(roots, provider.clone())
            .with_crls(revoked)
            .build()?;
        let server = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_client_cert_verifier(verifier)
            .with_single_cert(chain, key)?;
        Ok(TlsContext { client: Arc::new(client), server: Arc::new(server) })
    }
}

/// The name a controller's certificate must carry when dialled at `ip`.
pub fn server_name(ip: IpAddr) -> ServerName<'static> {
    ServerName::IpAddress(ip.into())
}

/// Why a TLS handshake failed, in the words an operator acts on: the
/// peer's certificate is revoked, from an unknown issuer, of unknown
/// revocation status, or the peer refused ours. Other errors as they are.
pub fn why(e: &std::io::Error) -> String {
    let Some(err) = e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>()) else {
        return e.to_string();
    };
    match err {
        rustls::Error::InvalidCertificate(c) => match c {
            CertificateError::Revoked => {
                "peer certificate revoked (listed in a configured CRL)".into()
            }
            CertificateError::UnknownIssuer => {
                "peer certificate from an unknown issuer (does not chain to the configured CA)"
                    .into()
            }
            CertificateError::UnknownRevocationStatus => {
                "peer certificate revocation status unknown (no configured CRL from its issuer)"
                    .into()
            }
            other => format!("peer certificate refused: {other}"),
        },
        rustls::Error::AlertReceived(AlertDescription::CertificateRevoked) => {
            "the peer refused our certificate: revoked".into()
        }
        rustls::Error::AlertReceived(AlertDescription::UnknownCA) => {
            "the peer refused our certificate: unknown issuer (the peer does not trust our CA)"
                .into()
        }
        other => other.to_string(),
    }
}
