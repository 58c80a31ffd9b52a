//! The TLS side: rustls' server configuration from the files the configuration names.

use super::spec::{ClientAuth, TlsSpec};

use anyhow::{Context as _, Result, bail};
use rustls::{
    RootCertStore, ServerConfig,
    pki_types::{CertificateDer, PrivateKeyDer, pem::PemObject as _},
    server::WebPkiClientVerifier,
};
use std::sync::Arc;

/// The TLS configuration of `spec`, its certificate, key and client CA read now.
pub(super) fn server_config(spec: &TlsSpec) -> Result<Arc<ServerConfig>> {
    let certs = CertificateDer::pem_file_iter(&spec.cert)
        .with_context(|| format!("cannot read the certificate {}", spec.cert.display()))?
        .collect::<Result<Vec<_>, _>>()
        .with_context(|| format!("{}: not a PEM certificate chain", spec.cert.display()))?;
    if certs.is_empty() {
        bail!("{}: no certificate in it", spec.cert.display());
    }
    let key = PrivateKeyDer::from_pem_file(&spec.key)
        .with_context(|| format!("cannot read a PEM private key from {}", spec.key.display()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&spec.versions)
        .context("the TLS versions asked for")?;
    let builder = match (&spec.client_ca, spec.client_auth) {
        (Some(ca), auth) if auth != ClientAuth::None => {
            let mut roots = RootCertStore::empty();
            for c in CertificateDer::pem_file_iter(ca)
                .with_context(|| format!("cannot read the client CA {}", ca.display()))?
            {
                roots
                    .add(c.with_context(|| format!("{}: not a PEM certificate", ca.display()))?)
                    .with_context(|| format!("{}: a certificate rustls refuses", ca.display()))?;
            }
            let verifier =
                WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider.clone());
            let verifier = if auth == ClientAuth::IfGiven {
                verifier.allow_unauthenticated()
            } else {
                verifier
            };
            builder.with_client_cert_verifier(verifier.build().context("the client CA")?)
        }
        _ => builder.with_no_client_auth(),
    };
    let mut config = builder.with_single_cert(certs, key).with_context(|| {
        format!(
            "{} and {} do not make a key pair",
            spec.cert.display(),
            spec.key.display()
        )
    })?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}
