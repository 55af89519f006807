//! Helpers for the TLS tests: a test CA and a server certificate for localhost/127.0.0.1 (rcgen),
//! proxy configs with TLS, and TLS client configs trusting a PEM file.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use amqpeek::proxy::ProxyConfig;
use amqpeek::proxy::tls::{TlsConfig, TlsOptions, UpstreamSpec};
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

/// A test CA and a server certificate it signed, as PEM files in a temp dir.
pub struct Pki {
    pub dir: tempfile::TempDir,
    pub ca: PathBuf,
    pub cert: PathBuf,
    pub key: PathBuf,
}

/// Generate a fresh CA and a certificate for `localhost` and `127.0.0.1`.
pub fn pki() -> Pki {
    let dir = tempfile::tempdir().unwrap();
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "amqpeek test CA");
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let ca_cert = ca_params.self_signed(&ca_key).unwrap();
    let issuer = rcgen::Issuer::new(ca_params, ca_key);
    let leaf_params =
        rcgen::CertificateParams::new(vec!["localhost".into(), "127.0.0.1".into()]).unwrap();
    let leaf_key = rcgen::KeyPair::generate().unwrap();
    let leaf = leaf_params.signed_by(&leaf_key, &issuer).unwrap();
    let ca = dir.path().join("ca.pem");
    let cert = dir.path().join("cert.pem");
    let key = dir.path().join("key.pem");
    std::fs::write(&ca, ca_cert.pem()).unwrap();
    std::fs::write(&cert, leaf.pem()).unwrap();
    std::fs::write(&key, leaf_key.serialize_pem()).unwrap();
    Pki { dir, ca, cert, key }
}

/// A proxy config to `upstream` with TLS options; `host` is the upstream's name (for SNI).
pub fn tls_config(upstream: SocketAddr, host: &str, opts: TlsOptions) -> ProxyConfig {
    let spec = UpstreamSpec::parse(&format!("{host}:{}", upstream.port()));
    let (tls, _) = TlsConfig::from_options(&spec, &opts).unwrap();
    let mut c = ProxyConfig::new("127.0.0.1:0".parse().unwrap(), upstream);
    c.tls = tls.map(Arc::new);
    c
}

/// A proxy terminating TLS from clients with the test certificate.
pub fn listen_tls(upstream: SocketAddr, pki: &Pki) -> ProxyConfig {
    tls_config(
        upstream,
        "127.0.0.1",
        TlsOptions {
            listen_tls: true,
            cert: Some(pki.cert.clone()),
            key: Some(pki.key.clone()),
            ..Default::default()
        },
    )
}

/// A TLS connector trusting only the certificates in `pem`.
pub fn connector(pem: &Path) -> tokio_rustls::TlsConnector {
    let mut roots = rustls::RootCertStore::empty();
    for c in CertificateDer::pem_file_iter(pem).unwrap() {
        roots.add(c.unwrap()).unwrap();
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    tokio_rustls::TlsConnector::from(Arc::new(config))
}

/// A TLS acceptor with the test certificate.
pub fn acceptor(pki: &Pki) -> tokio_rustls::TlsAcceptor {
    let config = amqpeek::proxy::tls::server_config_from_files(&pki.cert, &pki.key).unwrap();
    tokio_rustls::TlsAcceptor::from(Arc::new(config))
}
