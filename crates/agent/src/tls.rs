//! TLS for `ssl:` and `pssl:` targets (rustls with the `ring` provider).
//!
//! Both directions are verified: as a client (active `ssl:`) the switch
//! checks the controller's certificate against the CA and the address it
//! dialled (an IP address SAN), and presents its own certificate; as a
//! server (passive `pssl:`) it requires a client certificate that chains to
//! the same CA. There is no way to turn verification off.

use std::net::IpAddr;
use std::sync::Arc;

use rustls::server::WebPkiClientVerifier;
use rustls::{ClientConfig, RootCertStore, ServerConfig};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName};

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
    #[error("client verifier: {0}")]
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
        let client = ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()?
            .with_root_certificates(roots.clone())
            .with_client_auth_cert(chain.clone(), key.clone_key())?;
        let verifier =
            WebPkiClientVerifier::builder_with_provider(roots, provider.clone()).build()?;
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
