//! The scrape endpoint: `GET /metrics` over HTTP/1.1 (hyper), on a thread of its own so
//! that it answers whatever the rest of syscost is doing (the live view, a wait for the
//! command). A scrape shows the latest sample the session published, encoded once
//! whatever the number of scrapes ([`Metrics::exposition`]). With a web configuration
//! file ([`super::web`]) it speaks TLS and asks for a password as the Prometheus
//! exporters do.
//!
//! It runs for months facing whoever can connect, so what one client can hold is
//! bounded:
//! - connections: at most `--metrics-max-connections` ([`MAX_CONNECTIONS`] unless told)
//!   open at once; one more is closed as it comes (`syscost_scrape_connections_refused_total`);
//! - time ([`WAIT`] each): the TLS handshake, a request's head (and, on a kept-alive
//!   connection, the wait for it), the writing of an answer (`super::deadline`); a
//!   request's body is never read (a GET has none): the connection closes after the answer;
//! - requests: a connection is closed after its [`REQUESTS_PER_CONNECTION`]th answer
//!   (`Connection: close`), however often it asks;
//! - password checks: [`CHECKS`] bcrypt checks at once and no queue (503 with
//!   `Retry-After` when all are busy); credentials already verified need none.

use std::{
    convert::Infallible,
    net::{SocketAddr, TcpListener},
    path::Path,
    sync::{
        Arc,
        atomic::{AtomicU64, AtomicUsize, Ordering},
    },
    thread::JoinHandle,
    time::Duration,
};

use anyhow::{Context as _, Result};
use bytes::{Buf as _, Bytes, buf::Chain};
use http_body_util::Full;
use hyper::{Method, Request, Response, StatusCode, body::Incoming, header, service::service_fn};
use hyper_util::rt::TokioIo;
use tokio::{
    io::{AsyncReadExt as _, AsyncWriteExt as _},
    sync::{Semaphore, oneshot},
};

use super::{
    Metrics,
    deadline::WriteDeadline,
    encode::{
        CONTENT_TYPE, EndpointCounters, Format, PROTOBUF_CONTENT_TYPE, negotiate,
        with_endpoint_counters,
    },
    web::{Access, WebConfig},
};

/// Connections open at once unless `--metrics-max-connections` says otherwise: a
/// Prometheus keeps one per target, a few scrapers a few; each costs a descriptor.
pub const MAX_CONNECTIONS: usize = 64;

/// How long a client may take to finish its TLS handshake, to send a request's head (or,
/// kept alive, to begin the next), and to read an answer.
pub const WAIT: Duration = Duration::from_secs(10);

/// Answers on one connection: the last says `Connection: close`, so that a client asking
/// just often enough to stay within [`WAIT`] does not hold its connection for ever.
pub const REQUESTS_PER_CONNECTION: usize = 100;

/// Go's servers' answer to plain HTTP on a TLS port, which the exporters give.
const PLAIN_ON_TLS: &[u8] =
    b"HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n";

/// The endpoint's socket, bound before anything is loaded, with its web configuration.
pub struct Bound {
    listener: TcpListener,
    web: Option<Arc<WebConfig>>,
    max_connections: usize,
}

/// A running endpoint; dropping it stops the server and waits for its thread.
pub struct MetricsServer {
    addr: SocketAddr,
    tls: bool,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

/// A listening socket on `addr`. `[::]` takes IPv4 as well, whatever the host's
/// `net.ipv6.bindv6only` (`:PORT`'s meaning); on a host without IPv6 it is `0.0.0.0`.
fn listen(addr: SocketAddr) -> std::io::Result<TcpListener> {
    use socket2::{Domain, Socket, Type};
    if !(addr.is_ipv6() && addr.ip().is_unspecified()) {
        return TcpListener::bind(addr);
    }
    let dual = || -> std::io::Result<TcpListener> {
        let socket = Socket::new(Domain::IPV6, Type::STREAM, None)?;
        socket.set_only_v6(false)?;
        // As std's bind does: a restart takes the port back from connections closing.
        socket.set_reuse_address(true)?;
        socket.bind(&addr.into())?;
        socket.listen(128)?;
        Ok(socket.into())
    };
    match dual() {
        // No IPv6 here (or no dual-stack socket): every IPv4 interface, as before. A
        // port taken or refused is an error as it is.
        Err(e)
            if matches!(
                e.raw_os_error(),
                Some(libc::EAFNOSUPPORT | libc::EADDRNOTAVAIL | libc::ENOPROTOOPT | libc::EINVAL)
            ) =>
        {
            eprintln!("syscost: no IPv6 socket here ({e}): the endpoint listens on IPv4 only");
            TcpListener::bind(SocketAddr::from(([0, 0, 0, 0], addr.port())))
        }
        r => r,
    }
}

impl MetricsServer {
    /// Reads the web configuration file `web` (`--web.config.file`) and binds `addr`:
    /// first, so that a file that does not read or a taken port is an error before
    /// anything is loaded. At most `max_connections` (at least 1) are served at once.
    pub fn bind(addr: SocketAddr, web: Option<&Path>, max_connections: usize) -> Result<Bound> {
        let web = web.map(WebConfig::open).transpose()?.map(Arc::new);
        let listener =
            listen(addr).with_context(|| format!("cannot listen for metrics scrapes on {addr}"))?;
        Ok(Bound {
            listener,
            web,
            max_connections: max_connections.max(1),
        })
    }

    /// Serves the metrics on `bound` from a new thread.
    pub fn start(bound: Bound, metrics: Arc<Metrics>) -> Result<Self> {
        let Bound {
            listener,
            web,
            max_connections,
        } = bound;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let tls = web.as_ref().is_some_and(|w| w.tls());
        let (stop, stopped) = oneshot::channel();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("cannot start the metrics event loop")?;
        let thread = std::thread::Builder::new()
            .name("metrics".into())
            .spawn(move || {
                let endpoint = Arc::new(Endpoint {
                    metrics,
                    web,
                    refused_connections: AtomicU64::new(0),
                    refused_checks: AtomicU64::new(0),
                    max_connections,
                });
                runtime.block_on(serve(listener, endpoint, max_connections, stopped))
            })
            .context("cannot start the metrics thread")?;
        Ok(Self {
            addr,
            tls,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// Where it listens (the port chosen when asked for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The address to scrape: `http://ADDR/metrics`, or `https://` with TLS.
    pub fn url(&self) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://{}/metrics", self.addr)
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// What every connection's task shares.
struct Endpoint {
    metrics: Arc<Metrics>,
    web: Option<Arc<WebConfig>>,
    /// Connections closed as they came, [`Bound`]'s most being open.
    refused_connections: AtomicU64,
    /// Requests answered 503, every password check being busy.
    refused_checks: AtomicU64,
    /// Connections open at once at the most.
    max_connections: usize,
}

impl Endpoint {
    /// The counters served beside the sample's series.
    fn counters(&self) -> EndpointCounters {
        EndpointCounters {
            connections_refused: self.refused_connections.load(Ordering::Relaxed),
            password_checks_refused: self
                .web
                .as_ref()
                .filter(|w| w.asks_password())
                .map(|_| self.refused_checks.load(Ordering::Relaxed)),
        }
    }
}

async fn serve(
    listener: TcpListener,
    endpoint: Arc<Endpoint>,
    max_connections: usize,
    mut stopped: oneshot::Receiver<()>,
) {
    let listener = match tokio::net::TcpListener::from_std(listener) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("syscost: metrics endpoint failed: {e}");
            return;
        }
    };
    let open = Arc::new(Semaphore::new(max_connections));
    loop {
        let (stream, peer) = tokio::select! {
            _ = &mut stopped => return,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                // Out of fds and the like: back off rather than spin, and keep serving.
                Err(e) => {
                    log::debug!("metrics endpoint: accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
        };
        // One more than the most: closed at once. Left in the kernel's queue instead, a
        // flood's connections would be taken in turn ahead of a scraper's, each holding
        // its place for an idle deadline; closed, the queue stays empty, a client knows
        // at once, and the descriptor is back.
        let Ok(permit) = open.clone().try_acquire_owned() else {
            let n = endpoint.refused_connections.fetch_add(1, Ordering::Relaxed) + 1;
            log::debug!(
                "metrics endpoint: {max_connections} connections open; one from {peer} closed ({n} so far)"
            );
            drop(stream);
            continue;
        };
        let endpoint = endpoint.clone();
        tokio::spawn(async move {
            connection(stream, endpoint).await;
            drop(permit);
        });
    }
}

/// Serves one accepted connection: its TLS handshake first, with a web configuration
/// that asks for TLS.
async fn connection(stream: tokio::net::TcpStream, endpoint: Arc<Endpoint>) {
    let web = match &endpoint.web {
        Some(web) if web.tls() => web.clone(),
        _ => return serve_connection(WriteDeadline::new(stream, WAIT), endpoint).await,
    };
    let mut first = [0u8; 1];
    match tokio::time::timeout(WAIT, stream.peek(&mut first)).await {
        Ok(Ok(1)) if first[0] == 0x16 => {}
        Ok(Ok(1)) => return plain_on_tls(stream).await,
        _ => return,
    }
    // A configuration that does not read refuses the handshake (said on stderr by
    // current()).
    let Ok(Some(config)) = web.current().map(|l| l.tls.clone()) else {
        return;
    };
    let accept = tokio_rustls::TlsAcceptor::from(config).accept(WriteDeadline::new(stream, WAIT));
    match tokio::time::timeout(WAIT, accept).await {
        Ok(Ok(tls)) => serve_connection(tls, endpoint).await,
        Ok(Err(e)) => log::debug!("metrics endpoint: TLS handshake failed: {e}"),
        Err(_) => log::debug!("metrics endpoint: TLS handshake timed out"),
    }
}

/// Answers plain HTTP on the TLS port, then reads what the client sent (up to 64 KiB,
/// for at most a second) before closing: a socket closed with unread bytes is reset, and
/// the client would lose the answer.
async fn plain_on_tls(mut stream: tokio::net::TcpStream) {
    if stream.write_all(PLAIN_ON_TLS).await.is_err() || stream.shutdown().await.is_err() {
        return;
    }
    let drain = async {
        let (mut buf, mut read) = ([0u8; 4096], 0usize);
        while read < 64 * 1024 {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => read += n,
            }
        }
    };
    let _ = tokio::time::timeout(std::time::Duration::from_secs(1), drain).await;
}

/// Answers the requests of one connection, [`REQUESTS_PER_CONNECTION`] at most.
async fn serve_connection<S>(stream: S, endpoint: Arc<Endpoint>)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let asked = Arc::new(AtomicUsize::new(0));
    let service = service_fn(move |req| {
        let endpoint = endpoint.clone();
        let nth = asked.fetch_add(1, Ordering::Relaxed) + 1;
        async move {
            let mut answer = match authorize(&req, &endpoint).await {
                Some(refused) => refused,
                None if req.uri().path() == super::pprof_windows::PATH => {
                    stacks_window(&req, &endpoint).await
                }
                None => respond(&req, &endpoint),
            };
            if nth >= REQUESTS_PER_CONNECTION {
                answer.headers_mut().insert(
                    header::CONNECTION,
                    header::HeaderValue::from_static("close"),
                );
            }
            Ok::<_, Infallible>(answer)
        }
    });
    // A scraper that hangs up mid-answer is its own business; one that sends no
    // request within WAIT, or does not read its answer within WAIT, is hung up on.
    let _ = hyper::server::conn::http1::Builder::new()
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(WAIT)
        .serve_connection(TokioIo::new(stream), service)
        .await;
}

/// bcrypt checks at once: each takes a CPU for tens of milliseconds (a second at cost
/// 14), off the endpoint's thread. A check that finds none free is not queued: a flood
/// of wrong passwords would otherwise delay a right one's first check without end.
pub const CHECKS: usize = 2;

static CHECKING: Semaphore = Semaphore::const_new(CHECKS);

/// The answer to a request the web configuration refuses (credentials first, whatever
/// the path, as the exporters check them), or `None` when it may be served.
async fn authorize(req: &Request<Incoming>, endpoint: &Endpoint) -> Option<Response<Body>> {
    let web = endpoint.web.clone()?;
    let loaded = match web.current() {
        Ok(l) => l,
        Err(_) => {
            return Some(text(
                StatusCode::INTERNAL_SERVER_ERROR,
                "Internal Server Error\n".into(),
            ));
        }
    };
    let authorization = req
        .headers()
        .get(header::AUTHORIZATION)
        .map(|h| h.as_bytes());
    // Credentials already verified are answered at once: only a bcrypt check needs one
    // of the permits, and waits for none.
    let access = match web.check_known(&loaded, authorization) {
        Ok(known) => known,
        Err(credentials) => match CHECKING.try_acquire() {
            // The permit goes with the check: a client that hangs up does not free it
            // while its check still runs.
            Ok(permit) => tokio::task::spawn_blocking(move || {
                let access = web.verify(&loaded, credentials);
                drop(permit);
                access
            })
            .await
            .unwrap_or(Access::Unauthorized),
            Err(_) => {
                let n = endpoint.refused_checks.fetch_add(1, Ordering::Relaxed) + 1;
                log::debug!(
                    "metrics endpoint: {CHECKS} password checks running; a request answered 503 ({n} so far)"
                );
                let mut r = text(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "Every password check is busy: try again\n".into(),
                );
                r.headers_mut()
                    .insert(header::RETRY_AFTER, header::HeaderValue::from_static("1"));
                return Some(r);
            }
        },
    };
    if access == Access::Allowed {
        return None;
    }
    let mut r = text(StatusCode::UNAUTHORIZED, "Unauthorized\n".into());
    r.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        header::HeaderValue::from_static("Basic"),
    );
    Some(r)
}

/// An answer's body: a head and a tail, sent one after the other (a scrape's sample
/// body, shared by every scrape of it, and the endpoint's counters), never copied into
/// one.
type Body = Full<Chain<Bytes, Bytes>>;

/// A body of one part.
fn body(b: impl Into<Bytes>) -> Body {
    Full::new(b.into().chain(Bytes::new()))
}

fn text(status: StatusCode, message: String) -> Response<Body> {
    let mut r = Response::new(body(message));
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

/// `GET /debug/pprof/syscalls?seconds=N`: the calls by stack of a window, as pprof.
async fn stacks_window(req: &Request<Incoming>, endpoint: &Endpoint) -> Response<Body> {
    let Some(windows) = endpoint.metrics.stack_windows() else {
        return text(
            StatusCode::NOT_FOUND,
            format!(
                "{} serves the calls by stack of `syscost export --stacks FILE`; this one counts none\n",
                super::pprof_windows::PATH
            ),
        );
    };
    if req.method() != Method::GET {
        return text(
            StatusCode::METHOD_NOT_ALLOWED,
            format!("GET {}?seconds=N\n", super::pprof_windows::PATH),
        );
    }
    let seconds = match super::pprof_windows::seconds(req.uri().query()) {
        Ok(s) => s,
        Err(e) => return text(StatusCode::BAD_REQUEST, format!("{e:#}\n")),
    };
    // A connection is always left for the scrapes.
    let most = super::pprof_windows::MAX_WINDOWS.min(endpoint.max_connections.saturating_sub(1));
    match windows.profile(seconds, most).await {
        Err(super::pprof_windows::Refused::Busy) => {
            let mut r = text(
                StatusCode::SERVICE_UNAVAILABLE,
                format!(
                    "{most} windows of calls by stack are open, the most syscost serves at once (--metrics-max-connections {} keeps one for the scrapes): try again\n",
                    endpoint.max_connections
                ),
            );
            r.headers_mut()
                .insert(header::RETRY_AFTER, header::HeaderValue::from_static("1"));
            r
        }
        Ok(profile) => {
            let mut r = Response::new(body(profile));
            r.headers_mut().insert(
                header::CONTENT_TYPE,
                header::HeaderValue::from_static("application/octet-stream"),
            );
            r.headers_mut().insert(
                header::CONTENT_DISPOSITION,
                header::HeaderValue::from_static("attachment; filename=\"syscalls.pb.gz\""),
            );
            r
        }
        Err(super::pprof_windows::Refused::Failed(e)) => text(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("cannot serve the calls by stack: {e:#}\n"),
        ),
    }
}

fn respond(req: &Request<Incoming>, endpoint: &Endpoint) -> Response<Body> {
    if req.uri().path() != "/metrics" {
        let stacks = if endpoint.metrics.stack_windows().is_some() {
            format!(
                ", and calls by stack at {}?seconds=N",
                super::pprof_windows::PATH
            )
        } else {
            String::new()
        };
        return text(
            StatusCode::NOT_FOUND,
            format!("syscost serves its metrics at /metrics{stacks}\n"),
        );
    }
    if req.method() != Method::GET && req.method() != Method::HEAD {
        return text(StatusCode::METHOD_NOT_ALLOWED, "GET /metrics\n".into());
    }
    let format = negotiate(
        req.headers()
            .get(header::ACCEPT)
            .and_then(|h| h.to_str().ok()),
    );
    let answer = endpoint
        .metrics
        .exposition(format)
        .and_then(|body| with_endpoint_counters(format, &body, endpoint.counters()));
    match answer {
        Ok((head, tail)) => {
            let mut r = Response::new(Full::new(head.chain(tail)));
            let content_type = match format {
                Format::Text => CONTENT_TYPE,
                Format::Protobuf => PROTOBUF_CONTENT_TYPE,
            };
            r.headers_mut().insert(
                header::CONTENT_TYPE,
                header::HeaderValue::from_static(content_type),
            );
            r
        }
        Err(e) => text(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("cannot read syscost's counters: {e:#}\n"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `[::]` takes IPv4 too whatever `net.ipv6.bindv6only` says: the socket is made
    /// dual-stack, not left to the sysctl.
    #[test]
    fn every_interface_is_ipv6_and_ipv4_on_one_socket() {
        let Ok(l) = listen(SocketAddr::from((std::net::Ipv6Addr::UNSPECIFIED, 0))) else {
            panic!("cannot listen on [::]:0 nor 0.0.0.0:0");
        };
        let addr = l.local_addr().unwrap();
        if addr.is_ipv6() {
            assert_eq!(socket2::SockRef::from(&l).only_v6().ok(), Some(false));
        }
        std::net::TcpStream::connect(SocketAddr::from(([127, 0, 0, 1], addr.port())))
            .expect("IPv4 reaches the socket of every interface");
    }
}
