//! TLS for the proxy's two legs (rustls with the `ring` provider): the client-side config toward
//! the broker (system roots, an extra CA, or no verification at all when asked), the
//! server-side config toward clients (given PEM files, or a certificate generated at start-up),
//! the `SSLKEYLOGFILE`-format key log, and the upstream address forms (`amqps://host:port`).
//!
//! Only set-up lives here; the handshakes happen in `relay.rs`. Nothing here ever logs a
//! secret except into the key log file the user asked for.

use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, ServerConfig, SignatureScheme};

/// The protocol header of AMQP's own TLS upgrade (`AMQP 2 1 0 0`).
pub const AMQP_TLS_HEADER: [u8; 8] = *b"AMQP\x02\x01\x00\x00";

/// Why TLS could not be set up (bad files, bad names); reported at start-up.
#[derive(Debug, thiserror::Error)]
pub enum TlsSetupError {
    /// A file could not be read or written (the reason is in the message, not a source, so a
    /// chain of errors says it once).
    #[error("{}: {error}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        error: io::Error,
    },
    /// A PEM file held nothing usable.
    #[error("{path}: {what}")]
    Pem {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        what: String,
    },
    /// rustls refused the configuration (e.g. a key that does not match the certificate).
    #[error("TLS configuration: {0}")]
    Rustls(#[from] rustls::Error),
    /// The name to verify the upstream against is not a valid DNS name or IP address.
    #[error("invalid TLS server name {0:?}")]
    ServerName(String),
    /// Generating the start-up certificate failed.
    #[error("generating a certificate: {0}")]
    Generate(#[from] rcgen::Error),
    /// `--listen-tls` needs certificate material.
    #[error("{0}")]
    Usage(String),
}

/// TLS options as given on the command line (plain data; see [`TlsConfig::from_options`]).
#[derive(Clone, Debug, Default)]
pub struct TlsOptions {
    /// Connect to the broker over TLS (also implied by an `amqps://` upstream).
    pub upstream_tls: bool,
    /// An extra CA certificate (PEM) trusted for the upstream.
    pub ca: Option<PathBuf>,
    /// Do not verify the upstream's certificate.
    pub insecure: bool,
    /// Server name sent (SNI) and verified; defaults to the upstream host.
    pub sni: Option<String>,
    /// Terminate TLS from clients.
    pub listen_tls: bool,
    /// Certificate chain (PEM) presented to clients.
    pub cert: Option<PathBuf>,
    /// Its private key (PEM).
    pub key: Option<PathBuf>,
    /// Where to write a generated certificate (PEM).
    pub cert_out: Option<PathBuf>,
    /// SSLKEYLOGFILE-format key log for the upstream leg.
    pub keylog: Option<PathBuf>,
}

/// How the proxy does TLS; `None` on [`super::ProxyConfig`] means plain TCP on both legs.
#[derive(Clone)]
pub struct TlsConfig {
    /// Connect to the broker over TLS from the first byte.
    pub upstream_tls: bool,
    /// Client-side TLS toward the broker (for `upstream_tls` and for AMQP's TLS upgrade).
    pub client: Arc<ClientConfig>,
    /// The name sent as SNI and checked against the broker's certificate.
    pub server_name: ServerName<'static>,
    /// The broker's certificate is not verified (warned about on every connection).
    pub insecure: bool,
    /// Server-side TLS toward clients, when certificate material is available (then AMQP's TLS
    /// upgrade is terminated too).
    pub server: Option<Arc<ServerConfig>>,
    /// Terminate TLS from clients from the first byte (needs `server`).
    pub listen_tls: bool,
    /// Longest a TLS handshake (either leg) may take.
    pub handshake_timeout: Duration,
}

impl fmt::Debug for TlsConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsConfig")
            .field("upstream_tls", &self.upstream_tls)
            .field("server_name", &self.server_name)
            .field("insecure", &self.insecure)
            .field("server", &self.server.is_some())
            .field("listen_tls", &self.listen_tls)
            .field("handshake_timeout", &self.handshake_timeout)
            .finish()
    }
}

/// An upstream given as `host:port`, `amqp://host[:port]` or `amqps://host[:port]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UpstreamSpec {
    /// `host:port`, for resolving.
    pub address: String,
    /// The host alone (no brackets), for SNI.
    pub host: String,
    /// True for `amqps://`.
    pub tls: bool,
}

impl UpstreamSpec {
    /// Parse an upstream argument; the default port is 5671 for `amqps://`, else 5672. A path
    /// or credentials in a URL are ignored.
    pub fn parse(arg: &str) -> UpstreamSpec {
        let (rest, tls, scheme) = if let Some(r) = arg.strip_prefix("amqps://") {
            (r, true, true)
        } else if let Some(r) = arg.strip_prefix("amqp://") {
            (r, false, true)
        } else {
            (arg, false, false)
        };
        let authority = if scheme {
            let a = rest.split('/').next().unwrap_or_default();
            a.rsplit('@').next().unwrap_or(a)
        } else {
            rest
        };
        let (host, port) = match authority.strip_prefix('[') {
            Some(v6) => match v6.split_once(']') {
                Some((h, p)) => (h, p.strip_prefix(':')),
                None => (v6, None),
            },
            None => match authority.rsplit_once(':') {
                Some((h, p)) if !h.contains(':') => (h, Some(p)),
                _ => (authority, None),
            },
        };
        let port = port
            .filter(|p| !p.is_empty())
            .map(str::to_owned)
            .unwrap_or_else(|| if tls { "5671" } else { "5672" }.to_owned());
        let address = if host.contains(':') {
            format!("[{host}]:{port}")
        } else {
            format!("{host}:{port}")
        };
        UpstreamSpec {
            address,
            host: host.to_owned(),
            tls,
        }
    }
}

/// A certificate the proxy generated for itself (`--listen-tls` without `--cert`).
#[derive(Clone, Debug)]
pub struct GeneratedCert {
    /// Where its PEM was written, for clients to trust.
    pub pem_path: PathBuf,
}

impl TlsConfig {
    /// Build the TLS configuration for an upstream given as `upstream` (see
    /// [`UpstreamSpec::parse`]). `Ok(None)` when no TLS is asked for. Also returns the
    /// certificate generated for `--listen-tls` without `--cert`, if any.
    pub fn from_options(
        upstream: &UpstreamSpec,
        opts: &TlsOptions,
    ) -> Result<(Option<TlsConfig>, Option<GeneratedCert>), TlsSetupError> {
        let upstream_tls = opts.upstream_tls || upstream.tls;
        let has_material = opts.cert.is_some() || opts.key.is_some();
        if !upstream_tls && !opts.listen_tls && !has_material {
            return Ok((None, None));
        }
        let mut client = client_config(opts.ca.as_deref(), opts.insecure)?;
        if let Some(path) = &opts.keylog {
            client.key_log = Arc::new(KeyLogFile::create(path)?);
        }
        let name = opts.sni.clone().unwrap_or_else(|| upstream.host.clone());
        let server_name =
            ServerName::try_from(name.clone()).map_err(|_| TlsSetupError::ServerName(name))?;
        let (server, generated) = match (&opts.cert, &opts.key) {
            (Some(cert), Some(key)) => (Some(server_config_from_files(cert, key)?), None),
            (None, None) if opts.listen_tls => {
                let (config, generated) = generated_server_config(opts.cert_out.as_deref())?;
                (Some(config), Some(generated))
            }
            (None, None) => (None, None),
            _ => {
                return Err(TlsSetupError::Usage(
                    "--cert and --key go together".to_owned(),
                ));
            }
        };
        Ok((
            Some(TlsConfig {
                upstream_tls,
                client: Arc::new(client),
                server_name,
                insecure: opts.insecure,
                server: server.map(Arc::new),
                listen_tls: opts.listen_tls,
                handshake_timeout: Duration::from_secs(10),
            }),
            generated,
        ))
    }
}

/// The crypto provider every config uses (ring; no aws-lc).
pub fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The bytes of a PEM file named on the command line: a regular file of at most 16 MiB (a
/// FIFO or `/dev/zero` is refused, never read).
fn read_pem(path: &Path) -> Result<Vec<u8>, TlsSetupError> {
    crate::files::read_regular(path, crate::files::MAX_SETTINGS_BYTES).map_err(|source| {
        TlsSetupError::Io {
            path: path.to_owned(),
            error: source,
        }
    })
}

fn read_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsSetupError> {
    let pem = read_pem(path)?;
    let certs = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| TlsSetupError::Pem {
            path: path.to_owned(),
            what: e.to_string(),
        })?;
    if certs.is_empty() {
        return Err(TlsSetupError::Pem {
            path: path.to_owned(),
            what: "no certificate in the file".to_owned(),
        });
    }
    Ok(certs)
}

/// Client-side config: system roots plus `ca`, or no verification with `insecure`.
pub fn client_config(ca: Option<&Path>, insecure: bool) -> Result<ClientConfig, TlsSetupError> {
    let provider = provider();
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()?;
    let config = if insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(NoVerification(
                provider.signature_verification_algorithms,
            )))
            .with_no_client_auth()
    } else {
        let mut roots = RootCertStore::empty();
        let native = rustls_native_certs::load_native_certs();
        for e in &native.errors {
            tracing::debug!("system root certificates: {e}");
        }
        roots.add_parsable_certificates(native.certs);
        if let Some(path) = ca {
            for cert in read_certs(path)? {
                roots.add(cert)?;
            }
        }
        if roots.is_empty() {
            tracing::warn!("no trusted root certificates: pass --ca FILE (or --insecure)");
        }
        builder.with_root_certificates(roots).with_no_client_auth()
    };
    Ok(config)
}

/// Server-side config from a PEM certificate chain and key.
pub fn server_config_from_files(cert: &Path, key: &Path) -> Result<ServerConfig, TlsSetupError> {
    let certs = read_certs(cert)?;
    let key = PrivateKeyDer::from_pem_slice(&read_pem(key)?).map_err(|e| TlsSetupError::Pem {
        path: key.to_owned(),
        what: e.to_string(),
    })?;
    server_config(certs, key)
}

fn server_config(
    certs: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
) -> Result<ServerConfig, TlsSetupError> {
    Ok(ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(certs, key)?)
}

/// A self-signed certificate for `localhost` and `127.0.0.1`/`::1`, its PEM written to
/// `out` (or `amqpeek-<pid>/cert.pem` in the temp dir) for clients to trust.
fn generated_server_config(
    out: Option<&Path>,
) -> Result<(ServerConfig, GeneratedCert), TlsSetupError> {
    let names = vec![
        "localhost".to_owned(),
        "127.0.0.1".to_owned(),
        "::1".to_owned(),
    ];
    let rcgen::CertifiedKey { cert, signing_key } = rcgen::generate_simple_self_signed(names)?;
    let pem_path = match out {
        Some(p) => p.to_owned(),
        None => {
            let dir = std::env::temp_dir().join(format!("amqpeek-{}", std::process::id()));
            std::fs::create_dir_all(&dir).map_err(|source| TlsSetupError::Io {
                path: dir.clone(),
                error: source,
            })?;
            dir.join("cert.pem")
        }
    };
    crate::files::write(&pem_path, cert.pem().as_bytes()).map_err(|source| TlsSetupError::Io {
        path: pem_path.clone(),
        error: source,
    })?;
    let key = PrivateKeyDer::try_from(signing_key.serialize_der())
        .map_err(|e| TlsSetupError::Usage(format!("generated key: {e}")))?;
    let config = server_config(vec![cert.der().clone()], key)?;
    Ok((config, GeneratedCert { pem_path }))
}

/// Accepts any certificate (`--insecure`), still checking the handshake signatures so the
/// connection is encrypted to whoever holds the presented key.
#[derive(Debug)]
struct NoVerification(WebPkiSupportedAlgorithms);

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
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_schemes()
    }
}

/// Writes TLS secrets in the NSS key log format (`SSLKEYLOGFILE`) to a file of the user's
/// choosing, appending, one line per secret, flushed at once so Wireshark sees them live.
pub struct KeyLogFile {
    file: Mutex<File>,
    path: PathBuf,
}

impl fmt::Debug for KeyLogFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyLogFile")
            .field("path", &self.path)
            .finish()
    }
}

impl KeyLogFile {
    /// Open (create or append to) `path`, readable and writable by its owner only: the keys
    /// in it decrypt every recorded TLS session. A file that already exists is narrowed to the
    /// same mode.
    pub fn create(path: &Path) -> Result<KeyLogFile, TlsSetupError> {
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        let io_error = |source| TlsSetupError::Io {
            path: path.to_owned(),
            error: source,
        };
        let file = crate::files::open_output(
            OpenOptions::new().create(true).append(true).mode(0o600),
            path,
        )
        .map_err(io_error)?;
        let meta = file.metadata().map_err(io_error)?;
        if meta.is_file() && meta.permissions().mode() & 0o077 != 0 {
            file.set_permissions(std::fs::Permissions::from_mode(0o600))
                .map_err(io_error)?;
        }
        Ok(KeyLogFile {
            file: Mutex::new(file),
            path: path.to_owned(),
        })
    }
}

/// One key log line: `LABEL <client random hex> <secret hex>`.
pub fn keylog_line(label: &str, client_random: &[u8], secret: &[u8]) -> String {
    format!(
        "{label} {} {}\n",
        hex::encode(client_random),
        hex::encode(secret)
    )
}

impl rustls::KeyLog for KeyLogFile {
    fn log(&self, label: &str, client_random: &[u8], secret: &[u8]) {
        let line = keylog_line(label, client_random, secret);
        let Ok(mut f) = self.file.lock() else { return };
        if let Err(e) = f.write_all(line.as_bytes()).and_then(|()| f.flush()) {
            tracing::warn!("key log {}: {e}", self.path.display());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_log_is_readable_by_its_owner_only() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let fresh = dir.path().join("fresh.keys");
        KeyLogFile::create(&fresh).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&fresh), 0o600);
        // A file left world-readable by an earlier run is narrowed too.
        let old = dir.path().join("old.keys");
        std::fs::write(&old, b"").unwrap();
        std::fs::set_permissions(&old, std::fs::Permissions::from_mode(0o644)).unwrap();
        KeyLogFile::create(&old).unwrap();
        assert_eq!(mode(&old), 0o600);
    }

    #[test]
    fn upstream_forms() {
        let p = UpstreamSpec::parse("amqps://ns.servicebus.windows.net");
        assert_eq!(p.address, "ns.servicebus.windows.net:5671");
        assert_eq!(p.host, "ns.servicebus.windows.net");
        assert!(p.tls);
        let p = UpstreamSpec::parse("amqp://guest:guest@broker:5673/vhost");
        assert_eq!(
            (p.address.as_str(), p.host.as_str(), p.tls),
            ("broker:5673", "broker", false)
        );
        let p = UpstreamSpec::parse("127.0.0.1:5672");
        assert_eq!(
            (p.address.as_str(), p.host.as_str(), p.tls),
            ("127.0.0.1:5672", "127.0.0.1", false)
        );
        let p = UpstreamSpec::parse("amqps://[::1]:5999");
        assert_eq!((p.address.as_str(), p.host.as_str()), ("[::1]:5999", "::1"));
    }

    #[test]
    fn keylog_lines_are_nss_format() {
        assert_eq!(
            keylog_line("CLIENT_TRAFFIC_SECRET_0", &[0xab, 0x01], &[0xff]),
            "CLIENT_TRAFFIC_SECRET_0 ab01 ff\n"
        );
    }

    #[test]
    fn generated_certificate_is_written_and_usable() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("c.pem");
        let (_, generated) = generated_server_config(Some(&out)).unwrap();
        assert_eq!(generated.pem_path, out);
        let certs = read_certs(&out).unwrap();
        assert_eq!(certs.len(), 1);
        // Trusting it as a CA works for a client config.
        client_config(Some(&out), false).unwrap();
    }

    #[test]
    fn cert_without_key_is_a_usage_error() {
        let opts = TlsOptions {
            cert: Some("x.pem".into()),
            ..Default::default()
        };
        let err = TlsConfig::from_options(&UpstreamSpec::parse("h:1"), &opts).unwrap_err();
        assert!(err.to_string().contains("--cert and --key"), "{err}");
    }
}
