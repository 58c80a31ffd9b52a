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
//!
//! By file: the configuration as loaded and reloaded here; the file's YAML (`spec`), the
//! TLS configuration (`tls`), basic authentication (`auth`).

use anyhow::{Context as _, Result};
use rustls::ServerConfig;
use std::{
    collections::{BTreeMap, HashSet},
    fs,
    path::{Path, PathBuf},
    sync::{Arc, Mutex},
    time::SystemTime,
};

mod auth;
mod spec;
#[cfg(test)]
mod tests;
mod tls;

pub use self::auth::*;
pub(crate) use self::spec::parse;
use self::tls::*;

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
