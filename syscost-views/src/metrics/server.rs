//! The scrape endpoint: `GET /metrics` over HTTP/1.1 (hyper), on a thread of its own so
//! that it answers whatever the rest of syscost is doing (the live view, a wait for the
//! command). Each scrape reads the kernel's counters afresh.

use std::{
    convert::Infallible,
    net::{SocketAddr, TcpListener},
    sync::Arc,
    thread::JoinHandle,
};

use anyhow::{Context as _, Result};
use bytes::Bytes;
use http_body_util::Full;
use hyper::{Method, Request, Response, StatusCode, body::Incoming, header, service::service_fn};
use hyper_util::rt::TokioIo;
use tokio::sync::oneshot;

use super::{
    Metrics,
    encode::{CONTENT_TYPE, exposition},
};

/// A running endpoint; dropping it stops the server and waits for its thread.
pub struct MetricsServer {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl MetricsServer {
    /// Binds `addr`: first, so that a taken port is an error before anything is loaded.
    pub fn bind(addr: SocketAddr) -> Result<TcpListener> {
        TcpListener::bind(addr)
            .with_context(|| format!("cannot listen for metrics scrapes on {addr}"))
    }

    /// Serves the metrics on `listener` from a new thread.
    pub fn start(listener: TcpListener, metrics: Arc<Metrics>) -> Result<Self> {
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let (stop, stopped) = oneshot::channel();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("cannot start the metrics event loop")?;
        let thread = std::thread::Builder::new()
            .name("metrics".into())
            .spawn(move || runtime.block_on(serve(listener, metrics, stopped)))
            .context("cannot start the metrics thread")?;
        Ok(Self {
            addr,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// Where it listens (the port chosen when asked for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
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

async fn serve(listener: TcpListener, metrics: Arc<Metrics>, mut stopped: oneshot::Receiver<()>) {
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
        let metrics = metrics.clone();
        tokio::spawn(async move {
            let service = service_fn(move |req| {
                let metrics = metrics.clone();
                async move { Ok::<_, Infallible>(respond(&req, &metrics)) }
            });
            // A scraper that hangs up mid-answer is its own business.
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
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
    match metrics.scrape().and_then(exposition) {
        Ok(body) => {
            let mut r = Response::new(Full::new(Bytes::from(body)));
            r.headers_mut().insert(
                header::CONTENT_TYPE,
                header::HeaderValue::from_static(CONTENT_TYPE),
            );
            r
        }
        Err(e) => text(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("cannot read syscost's counters: {e:#}\n"),
        ),
    }
}
