use super::{spec::*, *};
use base64::Engine as _;
use rustls::{
    RootCertStore,
    pki_types::{CertificateDer, PrivateKeyDer, pem::PemObject as _},
};

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
    assert!(
        err(
            "basic_auth_users:\n  p: $2y$15$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi\n"
        )
        .contains("at most 14")
    );
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
        let mut params =
            rcgen::CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
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
