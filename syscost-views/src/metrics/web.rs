//! `--web.config.file`: TLS and basic authentication on the metrics endpoint, configured
//! as the Prometheus exporters configure theirs (the exporter toolkit's web configuration
//! file), so that one file serves a fleet's node_exporter and syscost alike:
//!
//! ```yaml
//! tls_server_config:
//!   cert_file: /etc/syscost/tls.crt
//!   key_file: /etc/syscost/tls.key
//! basic_auth_users:
//!   prometheus: $2y$10$...   # a bcrypt hash (htpasswd -nBC 10 "" | tr -d ':\n')
//! ```
//!
//! The file (and the certificate, key and client CA files it names) is read again when
//! it changes: a request after a change is answered with the new users, a connection after
//! a change with the new certificate. A file that no longer reads fails closed: handshakes
//! are refused and requests answered 500 until it is fixed, as the exporters do. Whether
//! the endpoint speaks TLS at all is decided when syscost starts.
//!
//! Keys of the format that syscost does not implement (cipher suites, curves, client
//! SANs, HTTP headers) are refused by name rather than ignored.

use std::{
    collections::{BTreeMap, HashSet},
    fs,
    path::{Path, PathBuf},
    sync::{Arc, Mutex},
    time::SystemTime,
};

use anyhow::{Context as _, Result, bail};
use base64::Engine as _;
use rustls::{
    RootCertStore, ServerConfig,
    pki_types::{CertificateDer, PrivateKeyDer, pem::PemObject as _},
    server::WebPkiClientVerifier,
};
use serde::Deserialize;

/// The file as written: the exporter toolkit's names.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    tls_server_config: Option<TlsFile>,
    #[serde(default)]
    http_server_config: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    basic_auth_users: Option<BTreeMap<String, String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct TlsFile {
    #[serde(default)]
    cert_file: Option<PathBuf>,
    #[serde(default)]
    key_file: Option<PathBuf>,
    #[serde(default)]
    client_auth_type: Option<String>,
    #[serde(default)]
    client_ca_file: Option<PathBuf>,
    #[serde(default)]
    min_version: Option<String>,
    #[serde(default)]
    max_version: Option<String>,
    // Known to the format, not implemented here: refused by name when set.
    #[serde(default)]
    cert: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    key: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    cipher_suites: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    curve_preferences: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    prefer_server_cipher_suites: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    client_allowed_sans: Option<serde::de::IgnoredAny>,
}

/// Who may verify a client: the client_auth_type values syscost implements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ClientAuth {
    None,
    /// `VerifyClientCertIfGiven`: a certificate is verified if the client sends one.
    IfGiven,
    /// `RequireAndVerifyClientCert`.
    Required,
}

/// What a parsed file asks for, its files not yet read.
#[derive(Debug, PartialEq)]
pub(crate) struct Spec {
    tls: Option<TlsSpec>,
    users: BTreeMap<String, String>,
}

#[derive(Debug, PartialEq)]
struct TlsSpec {
    cert: PathBuf,
    key: PathBuf,
    client_auth: ClientAuth,
    client_ca: Option<PathBuf>,
    versions: Vec<&'static rustls::SupportedProtocolVersion>,
}

fn version(name: &str) -> Result<u8> {
    match name {
        "TLS10" | "TLS11" => bail!("{name}: syscost speaks TLS 1.2 and 1.3 only"),
        "TLS12" => Ok(12),
        "TLS13" => Ok(13),
        other => bail!("unknown TLS version {other:?} (TLS12 or TLS13)"),
    }
}

/// `text`, a web configuration file, checked; relative paths in it are taken from
/// `dir`, the file's directory (as the exporters take them).
pub(crate) fn parse(text: &str, dir: &Path) -> Result<Spec> {
    let blank = text
        .lines()
        .all(|l| l.trim().is_empty() || l.trim_start().starts_with('#'));
    let file: File = if blank {
        File::default()
    } else {
        serde_saphyr::from_str_with_options(text, serde_saphyr::options! { with_snippet: false })
            .map_err(|e| {
                // One line: the parser's message and where.
                let text = e.to_string();
                let lines: Vec<&str> = text
                    .lines()
                    .map(str::trim)
                    .filter(|l| !l.is_empty())
                    .collect();
                anyhow::anyhow!("{}", lines.join(" "))
            })?
    };
    if file.http_server_config.is_some() {
        bail!(
            "http_server_config is not supported: syscost serves HTTP/1.1 and sets no headers of the file's"
        );
    }
    let users = file.basic_auth_users.unwrap_or_default();
    for (user, hash) in &users {
        if user.contains(':') {
            bail!(
                "basic_auth_users: user {user:?} has a ':', which basic authentication cannot carry"
            );
        }
        let cost =
            bcrypt_cost(hash).with_context(|| format!("basic_auth_users: {user}'s password"))?;
        if cost > MAX_COST {
            bail!(
                "basic_auth_users: {user}'s password is hashed at cost {cost}: at most {MAX_COST} (each check of a wrong password would take seconds; 10 is usual)"
            );
        }
    }
    let tls = match file.tls_server_config {
        None => None,
        Some(t) => {
            for (set, name) in [
                (t.cert.is_some(), "cert (inline)"),
                (t.key.is_some(), "key (inline)"),
                (t.cipher_suites.is_some(), "cipher_suites"),
                (t.curve_preferences.is_some(), "curve_preferences"),
                (
                    t.prefer_server_cipher_suites.is_some(),
                    "prefer_server_cipher_suites",
                ),
                (t.client_allowed_sans.is_some(), "client_allowed_sans"),
            ] {
                if set {
                    bail!(
                        "tls_server_config: {name} is not supported: give cert_file and key_file; rustls chooses suites and curves"
                    );
                }
            }
            let client_auth = match t.client_auth_type.as_deref() {
                None | Some("") | Some("NoClientCert") => ClientAuth::None,
                Some("VerifyClientCertIfGiven") => ClientAuth::IfGiven,
                Some("RequireAndVerifyClientCert") => ClientAuth::Required,
                Some(other @ ("RequestClientCert" | "RequireAnyClientCert")) => bail!(
                    "tls_server_config: client_auth_type {other} takes client certificates without verifying them; syscost verifies what it takes: VerifyClientCertIfGiven or RequireAndVerifyClientCert with client_ca_file"
                ),
                Some(other) => bail!("tls_server_config: unknown client_auth_type {other:?}"),
            };
            let client_ca = t.client_ca_file.map(|p| dir.join(p));
            if client_auth != ClientAuth::None && client_ca.is_none() {
                bail!(
                    "tls_server_config: client_auth_type verifies client certificates: give client_ca_file"
                );
            }
            if client_auth == ClientAuth::None && client_ca.is_some() {
                bail!(
                    "tls_server_config: client_ca_file without a client_auth_type that verifies (VerifyClientCertIfGiven, RequireAndVerifyClientCert)"
                );
            }
            let min = t
                .min_version
                .as_deref()
                .map(version)
                .transpose()?
                .unwrap_or(12);
            let max = t
                .max_version
                .as_deref()
                .map(version)
                .transpose()?
                .unwrap_or(13);
            if min > max {
                bail!("tls_server_config: min_version is above max_version");
            }
            let versions = [(12, &rustls::version::TLS12), (13, &rustls::version::TLS13)]
                .into_iter()
                .filter(|(v, _)| (min..=max).contains(v))
                .map(|(_, p)| p)
                .collect();
            match (t.cert_file, t.key_file) {
                (Some(cert), Some(key)) => Some(TlsSpec {
                    cert: dir.join(cert),
                    key: dir.join(key),
                    client_auth,
                    client_ca,
                    versions,
                }),
                (None, None) if client_auth == ClientAuth::None => None,
                (Some(_), None) => bail!("tls_server_config: cert_file without key_file"),
                (None, Some(_)) => bail!("tls_server_config: key_file without cert_file"),
                (None, None) => {
                    bail!("tls_server_config: client_auth_type without cert_file and key_file")
                }
            }
        }
    };
    Ok(Spec { tls, users })
}

/// The highest bcrypt cost taken: a check at 14 takes about a second here.
const MAX_COST: u32 = 14;

/// The cost of bcrypt hash `hash`, which must be one.
fn bcrypt_cost(hash: &str) -> Result<u32> {
    let parts = hash.parse::<bcrypt::HashParts>().map_err(|e| {
        anyhow::anyhow!("not a bcrypt hash ({e}): write one with htpasswd -nBC 10 USER")
    })?;
    Ok(parts.get_cost())
}

/// The TLS configuration of `spec`, its certificate, key and client CA read now.
fn server_config(spec: &TlsSpec) -> Result<Arc<ServerConfig>> {
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

/// One reading of the configuration: TLS (when on) and the users.
pub struct Loaded {
    pub tls: Option<Arc<ServerConfig>>,
    users: BTreeMap<String, String>,
    /// The highest cost of the users' hashes: an unknown user is checked against a hash
    /// of it, so that the answer takes as long as for a known one.
    dummy_cost: Option<u32>,
    /// That hash, made at the first unknown user's check (off the endpoint's thread,
    /// as the checks are), not at each reading of the file.
    dummy: std::sync::OnceLock<String>,
}

impl Loaded {
    fn dummy(&self) -> &str {
        self.dummy.get_or_init(|| match self.dummy_cost {
            Some(cost) => bcrypt::hash("not a password of anyone's", cost).unwrap_or_default(),
            None => String::new(),
        })
    }
}

/// How a request's credentials stand.
#[derive(Debug, PartialEq, Eq)]
pub enum Access {
    Allowed,
    /// Answered 401 with `WWW-Authenticate: Basic`.
    Unauthorized,
}

/// A file's identity and age: a change of any is a change of the file.
type Stamp = Vec<Option<(u64, u64, SystemTime)>>;

fn stamp(paths: &[&Path]) -> Stamp {
    use std::os::unix::fs::MetadataExt as _;
    paths
        .iter()
        .map(|p| {
            fs::metadata(p).ok().map(|m| {
                (
                    m.ino(),
                    m.len(),
                    m.modified().unwrap_or(SystemTime::UNIX_EPOCH),
                )
            })
        })
        .collect()
}

struct State {
    stamp: Stamp,
    /// The last error said on stderr, while the files do not read.
    said: Option<String>,
    /// The files it was read from: the configuration, then what it names.
    files: Vec<PathBuf>,
    loaded: Result<Arc<Loaded>, String>,
}

/// The web configuration of an endpoint, read again when its files change.
pub struct WebConfig {
    path: PathBuf,
    /// Whether the endpoint speaks TLS (decided at the start).
    tls: bool,
    /// Whether it asks for a password (decided at the start).
    auth: bool,
    state: Mutex<State>,
    /// Credentials verified against a hash (bcrypt takes tens of milliseconds a check,
    /// each scrape sends them again): (user, hash, password).
    verified: Mutex<HashSet<(String, String, String)>>,
}

/// At most this many verified credentials are remembered (then forgotten at once).
const VERIFIED_CAP: usize = 64;

fn read(path: &Path) -> Result<(Vec<PathBuf>, Loaded)> {
    let text = fs::read_to_string(path)
        .with_context(|| format!("cannot read the web configuration {}", path.display()))?;
    let dir = path.parent().unwrap_or(Path::new("."));
    let spec = parse(&text, dir).with_context(|| format!("{}", path.display()))?;
    let mut files = vec![path.to_path_buf()];
    let tls = match &spec.tls {
        Some(t) => {
            files.extend([t.cert.clone(), t.key.clone()]);
            files.extend(t.client_ca.clone());
            Some(server_config(t).with_context(|| format!("{}", path.display()))?)
        }
        None => None,
    };
    Ok((
        files,
        Loaded {
            tls,
            dummy_cost: spec
                .users
                .values()
                .filter_map(|h| bcrypt_cost(h).ok())
                .max(),
            dummy: std::sync::OnceLock::new(),
            users: spec.users,
        },
    ))
}

impl WebConfig {
    /// Reads the file at `path` (an error now if it does not read: nothing is served
    /// unprotected by mistake).
    pub fn open(path: &Path) -> Result<Self> {
        let (files, loaded) = read(path)?;
        Ok(Self {
            path: path.to_path_buf(),
            tls: loaded.tls.is_some(),
            auth: !loaded.users.is_empty(),
            state: Mutex::new(State {
                said: None,
                // No stamp: a file changed while it was read here is read again at the
                // first request, where the reading checks that nothing changed under it.
                stamp: Stamp::new(),
                files,
                loaded: Ok(Arc::new(loaded)),
            }),
            verified: Mutex::new(HashSet::new()),
        })
    }

    pub fn tls(&self) -> bool {
        self.tls
    }

    /// Whether the endpoint asks for a password (decided at the start).
    pub fn asks_password(&self) -> bool {
        self.auth
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The configuration now: read again if its files changed since the last reading.
    /// An error while the files do not read (said on stderr once per different error),
    /// and read again at every call until they do.
    pub fn current(&self) -> Result<Arc<Loaded>, String> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let refs: Vec<&Path> = state.files.iter().map(PathBuf::as_path).collect();
        let before = stamp(&refs);
        if before == state.stamp && state.loaded.is_ok() {
            return state.loaded.clone();
        }
        let reading = read(&self.path)
            .map_err(|e| format!("{e:#}"))
            .and_then(|(files, l)| {
                // The stamp of what was read, taken before the check that nothing changed
                // since `before`: a change after the check differs from it, and is read
                // at the next call.
                let new_refs: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
                let read_stamp = stamp(&new_refs);
                // A file replaced while it was read may have been read half written.
                if stamp(&refs) != before {
                    return Err(format!(
                        "{}: changed while it was read",
                        self.path.display()
                    ));
                }
                self.same_shape(&l).map(|()| (files, l, read_stamp))
            });
        match reading {
            Ok((files, l, read_stamp)) => {
                // The first reading since open (no stamp yet) is no news.
                let news =
                    (state.loaded.is_ok() && !state.stamp.is_empty()) || state.said.is_some();
                state.stamp = read_stamp;
                state.files = files;
                if news {
                    eprintln!(
                        "syscost: web configuration {} read again",
                        self.path.display()
                    );
                }
                state.said = None;
                state.loaded = Ok(Arc::new(l));
            }
            Err(e) => {
                if state.said.as_ref() != Some(&e) {
                    eprintln!("syscost: web configuration: {e}; refusing scrapes until it reads");
                    state.said = Some(e.clone());
                }
                state.loaded = Err(e);
            }
        }
        state.loaded.clone()
    }

    /// Whether a new reading keeps what was decided at the start: TLS on or off, and
    /// passwords asked for or not (a file emptied, or caught half written, must not
    /// open the endpoint).
    fn same_shape(&self, l: &Loaded) -> Result<(), String> {
        let path = self.path.display();
        if l.tls.is_some() != self.tls {
            let (turned, serve) = if self.tls {
                ("off", "without TLS")
            } else {
                ("on", "with TLS")
            };
            return Err(format!(
                "{path}: TLS turned {turned} since syscost started: restart it to serve {serve}"
            ));
        }
        if l.users.is_empty() && self.auth {
            return Err(format!(
                "{path}: no basic_auth_users since syscost started with some: restart it to serve without passwords"
            ));
        }
        if !l.users.is_empty() && !self.auth {
            return Err(format!(
                "{path}: basic_auth_users added since syscost started without: restart it to ask for passwords"
            ));
        }
        Ok(())
    }

    /// The answer to a request with `authorization` where it needs no bcrypt check (no
    /// users, no or malformed credentials, credentials already verified), or the
    /// credentials that need one ([`WebConfig::verify`]).
    pub fn check_known(
        &self,
        loaded: &Loaded,
        authorization: Option<&[u8]>,
    ) -> Result<Access, Unverified> {
        if loaded.users.is_empty() {
            return Ok(Access::Allowed);
        }
        let Some((user, password)) = authorization.and_then(basic_credentials) else {
            return Ok(Access::Unauthorized);
        };
        let Some(hash) = loaded.users.get(&user) else {
            return Err(Unverified { user, password });
        };
        let key = (user, hash.clone(), password);
        let verified = self.verified.lock().unwrap_or_else(|e| e.into_inner());
        if verified.contains(&key) {
            return Ok(Access::Allowed);
        }
        let (user, _, password) = key;
        Err(Unverified { user, password })
    }

    /// The bcrypt check of credentials [`WebConfig::check_known`] could not answer for
    /// (tens of milliseconds: off the endpoint's thread). An unknown user costs a check
    /// too, at the users' highest cost: the answer's time does not say which users exist.
    pub fn verify(&self, loaded: &Loaded, credentials: Unverified) -> Access {
        let Unverified { user, password } = credentials;
        let (hash, known) = match loaded.users.get(&user) {
            Some(h) => (h.as_str(), true),
            None => (loaded.dummy(), false),
        };
        let ok = bcrypt::verify(&password, hash).unwrap_or(false) && known;
        if !ok {
            return Access::Unauthorized;
        }
        let mut verified = self.verified.lock().unwrap_or_else(|e| e.into_inner());
        if verified.len() >= VERIFIED_CAP {
            verified.clear();
        }
        verified.insert((user, hash.to_string(), password));
        Access::Allowed
    }

    /// Whether a request with `authorization` (its Authorization header) may scrape.
    pub fn check(&self, loaded: &Loaded, authorization: Option<&[u8]>) -> Access {
        self.check_known(loaded, authorization)
            .unwrap_or_else(|c| self.verify(loaded, c))
    }
}

/// Credentials that only a bcrypt check can answer for.
pub struct Unverified {
    user: String,
    password: String,
}

/// The user and password of a `Basic` Authorization header.
pub(crate) fn basic_credentials(header: &[u8]) -> Option<(String, String)> {
    let header = std::str::from_utf8(header).ok()?;
    let (scheme, encoded) = header.trim().split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .ok()?;
    let decoded = String::from_utf8(decoded).ok()?;
    let (user, password) = decoded.split_once(':')?;
    Some((user.to_string(), password.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(text: &str) -> Result<Spec> {
        parse(text, Path::new("/etc/syscost"))
    }

    fn err(text: &str) -> String {
        format!("{:#}", spec(text).unwrap_err())
    }

    // A bcrypt hash of "secret" at cost 4 (fast for tests).
    fn hash(password: &str) -> String {
        bcrypt::hash(password, 4).unwrap()
    }

    #[test]
    fn an_empty_file_asks_for_nothing() {
        for text in ["", "\n", "# nothing yet\n"] {
            assert_eq!(
                spec(text).unwrap(),
                Spec {
                    tls: None,
                    users: BTreeMap::new()
                }
            );
        }
    }

    #[test]
    fn tls_and_users_as_the_exporters_write_them() {
        let h = hash("secret");
        let s = spec(&format!(
            "tls_server_config:\n  cert_file: tls.crt\n  key_file: /keys/tls.key\n  min_version: TLS13\nbasic_auth_users:\n  prometheus: {h}\n"
        ))
        .unwrap();
        let tls = s.tls.unwrap();
        assert_eq!(tls.cert, Path::new("/etc/syscost/tls.crt"));
        assert_eq!(tls.key, Path::new("/keys/tls.key"));
        assert_eq!(tls.client_auth, ClientAuth::None);
        assert_eq!(tls.versions.len(), 1);
        assert_eq!(s.users.get("prometheus"), Some(&h));
    }

    #[test]
    fn what_is_not_implemented_or_wrong_is_refused_by_name() {
        assert!(err("tls_server_config:\n  cert_file: a\n").contains("cert_file without key_file"));
        assert!(err("tls_server_config:\n  key_file: a\n").contains("key_file without cert_file"));
        assert!(err("basic_auth_users:\n  p: $2y$15$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi\n").contains("at most 14"));
        assert!(err("tls_server_config:\n  cert_file: a\n  key_file: b\n  cipher_suites: [TLS_AES_128_GCM_SHA256]\n").contains("cipher_suites is not supported"));
        assert!(err("tls_server_config:\n  cert_file: a\n  key_file: b\n  client_auth_type: RequireAnyClientCert\n").contains("without verifying"));
        assert!(err("tls_server_config:\n  cert_file: a\n  key_file: b\n  client_auth_type: RequireAndVerifyClientCert\n").contains("give client_ca_file"));
        assert!(
            err("tls_server_config:\n  cert_file: a\n  key_file: b\n  min_version: TLS11\n")
                .contains("TLS 1.2 and 1.3 only")
        );
        assert!(err("tls_server_config:\n  cert_file: a\n  key_file: b\n  min_version: TLS13\n  max_version: TLS12\n").contains("above max_version"));
        assert!(
            err("http_server_config:\n  http2: false\n")
                .contains("http_server_config is not supported")
        );
        assert!(err("basic_auth_users:\n  prometheus: secret\n").contains("not a bcrypt hash"));
        // A misspelt key is an error, not a file that protects nothing.
        assert!(!err("basic_auth_user:\n  prometheus: x\n").is_empty());
        assert!(!err("tls_server_config:\n  certfile: a\n").is_empty());
    }

    #[test]
    fn basic_credentials_are_decoded() {
        let b = |s: &str| {
            format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(s)
            )
        };
        assert_eq!(
            basic_credentials(b("prom:se:cret").as_bytes()),
            Some(("prom".into(), "se:cret".into()))
        );
        assert_eq!(basic_credentials(b("nocolon").as_bytes()), None);
        assert_eq!(basic_credentials(b"Bearer abc"), None);
        assert_eq!(basic_credentials(b"Basic !!!"), None);
    }

    #[test]
    fn users_are_checked_against_their_hashes_and_the_file_is_read_again() {
        let dir = std::env::temp_dir().join(format!("syscost-web-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("web.yml");
        fs::write(
            &path,
            format!("basic_auth_users:\n  prom: {}\n", hash("secret")),
        )
        .unwrap();
        let web = WebConfig::open(&path).unwrap();
        assert!(!web.tls());
        let header = |u: &str, p: &str| {
            format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(format!("{u}:{p}"))
            )
        };
        let loaded = web.current().unwrap();
        assert_eq!(
            web.check(&loaded, Some(header("prom", "secret").as_bytes())),
            Access::Allowed
        );
        // Twice: the second from the verified set.
        assert_eq!(
            web.check(&loaded, Some(header("prom", "secret").as_bytes())),
            Access::Allowed
        );
        assert_eq!(
            web.check(&loaded, Some(header("prom", "wrong").as_bytes())),
            Access::Unauthorized
        );
        assert_eq!(
            web.check(&loaded, Some(header("nobody", "secret").as_bytes())),
            Access::Unauthorized
        );
        assert_eq!(web.check(&loaded, None), Access::Unauthorized);

        // Another password: the old one is refused from the next request on, though
        // it was verified before.
        fs::write(
            &path,
            format!("basic_auth_users:\n  prom: {}\n# changed\n", hash("other")),
        )
        .unwrap();
        let loaded = web.current().unwrap();
        assert_eq!(
            web.check(&loaded, Some(header("prom", "secret").as_bytes())),
            Access::Unauthorized
        );
        assert_eq!(
            web.check(&loaded, Some(header("prom", "other").as_bytes())),
            Access::Allowed
        );

        // A broken file fails closed, and a fixed one opens again.
        fs::write(&path, "basic_auth_users: [\n").unwrap();
        assert!(web.current().is_err());
        assert!(web.current().is_err(), "still broken, still refused");
        // Emptied (or caught half written): no password asked would open the endpoint.
        fs::write(&path, "").unwrap();
        let e = web.current().err().unwrap();
        assert!(
            e.contains("no basic_auth_users since syscost started"),
            "{e}"
        );
        fs::write(
            &path,
            format!("basic_auth_users:\n  prom: {}\n", hash("third")),
        )
        .unwrap();
        let loaded = web.current().unwrap();
        assert_eq!(web.check(&loaded, None), Access::Unauthorized);
        assert_eq!(
            web.check(&loaded, Some(header("prom", "third").as_bytes())),
            Access::Allowed
        );
        fs::remove_dir_all(&dir).unwrap();
    }

    /// A CA, and a certificate it signs for `names` (a client's with none).
    struct Pki {
        ca_pem: String,
        issuer: rcgen::Issuer<'static, rcgen::KeyPair>,
    }

    impl Pki {
        fn new() -> Self {
            let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
            params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
            let key = rcgen::KeyPair::generate().unwrap();
            let ca_pem = params.self_signed(&key).unwrap().pem();
            Self {
                ca_pem,
                issuer: rcgen::Issuer::new(params, key),
            }
        }

        /// (certificate PEM, key PEM)
        fn sign(&self, names: &[&str], client: bool) -> (String, String) {
            let mut params = rcgen::CertificateParams::new(
                names.iter().map(|n| n.to_string()).collect::<Vec<_>>(),
            )
            .unwrap();
            if client {
                params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
            }
            let key = rcgen::KeyPair::generate().unwrap();
            let cert = params.signed_by(&key, &self.issuer).unwrap();
            (cert.pem(), key.serialize_pem())
        }
    }

    /// A handshake in memory between a client that trusts `ca_pem` (presenting
    /// `client_cert` if given) and the server of `server`.
    fn handshake(
        server: Arc<ServerConfig>,
        ca_pem: &str,
        client_cert: Option<&(String, String)>,
    ) -> Result<(), rustls::Error> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut roots = RootCertStore::empty();
        roots
            .add(CertificateDer::from_pem_slice(ca_pem.as_bytes()).unwrap())
            .unwrap();
        let builder = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots);
        let config = match client_cert {
            Some((cert, key)) => builder
                .with_client_auth_cert(
                    vec![CertificateDer::from_pem_slice(cert.as_bytes()).unwrap()],
                    PrivateKeyDer::from_pem_slice(key.as_bytes()).unwrap(),
                )
                .unwrap(),
            None => builder.with_no_client_auth(),
        };
        let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
        let mut client = rustls::ClientConnection::new(Arc::new(config), name).unwrap();
        let mut server = rustls::ServerConnection::new(server).unwrap();
        for _ in 0..20 {
            let mut bytes = Vec::new();
            while client.wants_write() {
                client.write_tls(&mut bytes).unwrap();
            }
            if !bytes.is_empty() {
                server.read_tls(&mut &bytes[..]).unwrap();
                server.process_new_packets()?;
            }
            let mut bytes = Vec::new();
            while server.wants_write() {
                server.write_tls(&mut bytes).unwrap();
            }
            if !bytes.is_empty() {
                client.read_tls(&mut &bytes[..]).unwrap();
                client.process_new_packets()?;
            }
            if !client.is_handshaking() && !server.is_handshaking() {
                return Ok(());
            }
        }
        panic!("the handshake did not end");
    }

    #[test]
    fn client_certificates_are_verified_as_client_auth_type_says() {
        let dir = std::env::temp_dir().join(format!("syscost-web-mtls-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let servers = Pki::new();
        let clients = Pki::new();
        let strangers = Pki::new();
        let (cert, key) = servers.sign(&["localhost"], false);
        fs::write(dir.join("tls.crt"), cert).unwrap();
        fs::write(dir.join("tls.key"), key).unwrap();
        fs::write(dir.join("clients.crt"), &clients.ca_pem).unwrap();
        let ours = clients.sign(&[], true);
        let theirs = strangers.sign(&[], true);
        let server = |auth: &str| {
            let path = dir.join(format!("{auth}.yml"));
            fs::write(
                &path,
                format!(
                    "tls_server_config:\n  cert_file: tls.crt\n  key_file: tls.key\n  client_auth_type: {auth}\n  client_ca_file: clients.crt\n"
                ),
            )
            .unwrap();
            let web = WebConfig::open(&path).unwrap();
            assert!(web.tls());
            web.current().unwrap().tls.clone().unwrap()
        };
        let required = server("RequireAndVerifyClientCert");
        assert!(handshake(required.clone(), &servers.ca_pem, Some(&ours)).is_ok());
        assert!(handshake(required.clone(), &servers.ca_pem, None).is_err());
        assert!(handshake(required, &servers.ca_pem, Some(&theirs)).is_err());
        let if_given = server("VerifyClientCertIfGiven");
        assert!(handshake(if_given.clone(), &servers.ca_pem, None).is_ok());
        assert!(handshake(if_given.clone(), &servers.ca_pem, Some(&ours)).is_ok());
        assert!(handshake(if_given, &servers.ca_pem, Some(&theirs)).is_err());
        // And a server without client_auth_type takes a client without a certificate;
        // a client that does not trust the server's CA refuses it.
        let plain = dir.join("plain.yml");
        fs::write(
            &plain,
            "tls_server_config:\n  cert_file: tls.crt\n  key_file: tls.key\n",
        )
        .unwrap();
        let plain = WebConfig::open(&plain)
            .unwrap()
            .current()
            .unwrap()
            .tls
            .clone()
            .unwrap();
        assert!(handshake(plain.clone(), &servers.ca_pem, None).is_ok());
        assert!(handshake(plain, &strangers.ca_pem, None).is_err());
        fs::remove_dir_all(&dir).unwrap();
    }
}
