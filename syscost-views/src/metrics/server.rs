//! The scrape endpoint: `GET /metrics` over HTTP/1.1 (hyper), on a thread of its own so
//! that it answers whatever the rest of syscost is doing (the live view, a wait for the
//! command). Each scrape reads the kernel's counters afresh. With a web configuration
//! file ([`super::web`]) it speaks TLS and asks for a password as the Prometheus
//! exporters do.

use std::{
    convert::Infallible,
    net::{SocketAddr, TcpListener},
    path::Path,
    sync::Arc,
    thread::JoinHandle,
};

use anyhow::{Context as _, Result};
use bytes::Bytes;
use http_body_util::Full;
use hyper::{Method, Request, Response, StatusCode, body::Incoming, header, service::service_fn};
use hyper_util::rt::TokioIo;
use tokio::{
    io::{AsyncReadExt as _, AsyncWriteExt as _},
    sync::oneshot,
};

use super::{
    Metrics,
    encode::{
        CONTENT_TYPE, Format, PROTOBUF_CONTENT_TYPE, exposition, exposition_protobuf, negotiate,
    },
    web::{Access, WebConfig},
};

/// Go's servers' answer to plain HTTP on a TLS port, which the exporters give.
const PLAIN_ON_TLS: &[u8] =
    b"HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n";

/// The endpoint's socket, bound before anything is loaded, with its web configuration.
pub struct Bound {
    listener: TcpListener,
    web: Option<Arc<WebConfig>>,
}

/// A running endpoint; dropping it stops the server and waits for its thread.
pub struct MetricsServer {
    addr: SocketAddr,
    tls: bool,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl MetricsServer {
    /// Reads the web configuration file `web` (`--web.config.file`) and binds `addr`:
    /// first, so that a file that does not read or a taken port is an error before
    /// anything is loaded.
    pub fn bind(addr: SocketAddr, web: Option<&Path>) -> Result<Bound> {
        let web = web.map(WebConfig::open).transpose()?.map(Arc::new);
        let listener = TcpListener::bind(addr)
            .with_context(|| format!("cannot listen for metrics scrapes on {addr}"))?;
        Ok(Bound { listener, web })
    }

    /// Serves the metrics on `bound` from a new thread.
    pub fn start(bound: Bound, metrics: Arc<Metrics>) -> Result<Self> {
        let Bound { listener, web } = bound;
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
            .spawn(move || runtime.block_on(serve(listener, metrics, web, stopped)))
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

async fn serve(
    listener: TcpListener,
    metrics: Arc<Metrics>,
    web: Option<Arc<WebConfig>>,
    mut stopped: oneshot::Receiver<()>,
) {
    let listener = match tokio::net::TcpListener::from_std(listener) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("syscost: metrics endpoint failed: {e}");
            return;
        }
    };
    loop {
        let stream = tokio::select! {
            _ = &mut stopped => return,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                // Out of fds and the like: back off rather than spin, and keep serving.
                Err(e) => {
                    log::debug!("metrics endpoint: accept failed: {e}");
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                    continue;
                }
            },
        };
        let (metrics, web) = (metrics.clone(), web.clone());
        tokio::spawn(async move {
            match web {
                Some(web) if web.tls() => {
                    let mut first = [0u8; 1];
                    match tokio::time::timeout(WAIT, stream.peek(&mut first)).await {
                        Ok(Ok(1)) if first[0] == 0x16 => {}
                        Ok(Ok(1)) => {
                            plain_on_tls(stream).await;
                            return;
                        }
                        _ => return,
                    }
                    // A configuration that does not read refuses the handshake (said on
                    // stderr by current()).
                    let Ok(Some(config)) = web.current().map(|l| l.tls.clone()) else {
                        return;
                    };
                    let accept = tokio_rustls::TlsAcceptor::from(config).accept(stream);
                    match tokio::time::timeout(WAIT, accept).await {
                        Ok(Ok(tls)) => serve_connection(tls, metrics, Some(web)).await,
                        Ok(Err(e)) => log::debug!("metrics endpoint: TLS handshake failed: {e}"),
                        Err(_) => log::debug!("metrics endpoint: TLS handshake timed out"),
                    }
                }
                web => serve_connection(stream, metrics, web).await,
            }
        });
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

/// Answers the requests of one connection.
async fn serve_connection<S>(stream: S, metrics: Arc<Metrics>, web: Option<Arc<WebConfig>>)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let service = service_fn(move |req| {
        let (metrics, web) = (metrics.clone(), web.clone());
        async move {
            if let Some(web) = web
                && let Some(refused) = authorize(&req, web).await
            {
                return Ok::<_, Infallible>(refused);
            }
            Ok(respond(&req, &metrics))
        }
    });
    // A scraper that hangs up mid-answer is its own business; one that sends no
    // request within WAIT is hung up on.
    let _ = hyper::server::conn::http1::Builder::new()
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(WAIT)
        .serve_connection(TokioIo::new(stream), service)
        .await;
}

/// How long a client may take to finish its TLS handshake or send a request's head.
const WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// bcrypt checks at once: each takes a CPU for tens of milliseconds, off the endpoint's
/// thread, so that wrong passwords cannot stall the scrapes.
static CHECKS: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(2);

/// The answer to a request the web configuration refuses (credentials first, whatever
/// the path, as the exporters check them), or `None` when it may be served.
async fn authorize(req: &Request<Incoming>, web: Arc<WebConfig>) -> Option<Response<Full<Bytes>>> {
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
    // Credentials already verified are answered at once: only a bcrypt check waits for
    // one of the permits.
    let access = match web.check_known(&loaded, authorization) {
        Ok(known) => known,
        Err(credentials) => match CHECKS.acquire().await {
            Ok(_permit) => tokio::task::spawn_blocking(move || web.verify(&loaded, credentials))
                .await
                .unwrap_or(Access::Unauthorized),
            Err(_) => Access::Unauthorized,
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

fn text(status: StatusCode, body: String) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from(body)));
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

fn respond(req: &Request<Incoming>, metrics: &Metrics) -> Response<Full<Bytes>> {
    if req.uri().path() != "/metrics" {
        return text(
            StatusCode::NOT_FOUND,
            "syscost serves its metrics at /metrics\n".into(),
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
    let body = metrics.scrape().and_then(|scrape| match format {
        Format::Text => Ok((Bytes::from(exposition(scrape)?), CONTENT_TYPE)),
        Format::Protobuf => Ok((
            Bytes::from(exposition_protobuf(scrape)?),
            PROTOBUF_CONTENT_TYPE,
        )),
    });
    match body {
        Ok((body, content_type)) => {
            let mut r = Response::new(Full::new(body));
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
