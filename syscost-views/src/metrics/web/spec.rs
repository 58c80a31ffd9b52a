//! The web configuration file as written: its YAML, read and checked key by key.

use super::auth::{MAX_COST, bcrypt_cost};

use anyhow::{Context as _, Result, bail};
use serde::Deserialize;
use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
};

/// The file as written: the exporter toolkit's names.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct File {
    #[serde(default)]
    pub(super) tls_server_config: Option<TlsFile>,
    #[serde(default)]
    pub(super) http_server_config: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    pub(super) basic_auth_users: Option<BTreeMap<String, String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct TlsFile {
    #[serde(default)]
    pub(super) cert_file: Option<PathBuf>,
    #[serde(default)]
    pub(super) key_file: Option<PathBuf>,
    #[serde(default)]
    pub(super) client_auth_type: Option<String>,
    #[serde(default)]
    pub(super) client_ca_file: Option<PathBuf>,
    #[serde(default)]
    pub(super) min_version: Option<String>,
    #[serde(default)]
    pub(super) max_version: Option<String>,
    // Known to the format, not implemented here: refused by name when set.
    #[serde(default)]
    pub(super) cert: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    pub(super) key: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    pub(super) cipher_suites: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    pub(super) curve_preferences: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    pub(super) prefer_server_cipher_suites: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    pub(super) client_allowed_sans: Option<serde::de::IgnoredAny>,
}

/// Who may verify a client: the client_auth_type values syscost implements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ClientAuth {
    None,
    /// `VerifyClientCertIfGiven`: a certificate is verified if the client sends one.
    IfGiven,
    /// `RequireAndVerifyClientCert`.
    Required,
}

/// What a parsed file asks for, its files not yet read.
#[derive(Debug, PartialEq)]
pub(crate) struct Spec {
    pub(super) tls: Option<TlsSpec>,
    pub(super) users: BTreeMap<String, String>,
}

#[derive(Debug, PartialEq)]
pub(super) struct TlsSpec {
    pub(super) cert: PathBuf,
    pub(super) key: PathBuf,
    pub(super) client_auth: ClientAuth,
    pub(super) client_ca: Option<PathBuf>,
    pub(super) versions: Vec<&'static rustls::SupportedProtocolVersion>,
}

pub(super) fn version(name: &str) -> Result<u8> {
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
