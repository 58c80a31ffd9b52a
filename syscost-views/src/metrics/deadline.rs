//! A deadline on the writing of each answer: a client that does not read what it asked
//! for (its window closed, the socket's buffer full) is hung up on, rather than holding
//! its connection, and one of the endpoint's permits, for as long as it likes.
//!
//! An answer is what is written between two flushes (hyper flushes once the head and
//! body it queued are all written; TLS once its records are): its writing begins at its
//! first write and must end, at the flush, within the deadline. A write or flush still
//! waiting for room after that fails with `TimedOut`, which ends the connection. Reads
//! are left to hyper's head timeout (the head of each request, and the wait for it, have
//! the same deadline) and to the TLS handshake's.

use std::{
    io,
    pin::Pin,
    task::{Context, Poll, ready},
    time::Duration,
};

use tokio::{
    io::{AsyncRead, AsyncWrite, ReadBuf},
    time::{Instant, Sleep},
};

/// `S` with a deadline on the writing of each answer.
pub struct WriteDeadline<S> {
    inner: S,
    limit: Duration,
    /// The answer being written: the timer that ends it, started at its first write.
    writing: Option<Pin<Box<Sleep>>>,
}

impl<S> WriteDeadline<S> {
    pub fn new(inner: S, limit: Duration) -> Self {
        Self {
            inner,
            limit,
            writing: None,
        }
    }

    /// The deadline of the answer being written (one starts now if none is).
    fn timer(&mut self) -> Pin<&mut Sleep> {
        let limit = self.limit;
        self.writing
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(Instant::now() + limit)))
            .as_mut()
    }

    /// `polled`, a write's or flush's answer: a wait past the deadline is an error.
    fn within<T>(
        &mut self,
        polled: Poll<io::Result<T>>,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<T>> {
        match polled {
            Poll::Pending => {
                ready!(self.timer().poll(cx));
                Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "the client did not read its answer in time",
                )))
            }
            done => done,
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for WriteDeadline<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for WriteDeadline<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        this.timer();
        let polled = Pin::new(&mut this.inner).poll_write(cx, buf);
        this.within(polled, cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        this.timer();
        let polled = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        this.within(polled, cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        let polled = Pin::new(&mut this.inner).poll_flush(cx);
        if let Poll::Ready(Ok(())) = polled {
            // The answer is written: the next write begins another.
            this.writing = None;
            return polled;
        }
        if this.writing.is_none() {
            return polled;
        }
        this.within(polled, cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        this.timer();
        let polled = Pin::new(&mut this.inner).poll_shutdown(cx);
        this.within(polled, cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

    /// Over a pipe whose reader reads nothing: the write that finds no room fails once
    /// the deadline passes (the clock paused: no waiting); one that finds room does not;
    /// a flush ends an answer, so the next one has a deadline of its own.
    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn an_answer_not_read_in_time_fails_its_write() {
        let (server, mut client) = tokio::io::duplex(64);
        let mut server = WriteDeadline::new(server, Duration::from_secs(10));
        server.write_all(&[1; 64]).await.unwrap();
        server.flush().await.unwrap();
        assert!(server.writing.is_none(), "a flush ends the answer");
        // Read by the client: room for the next answer, written within its deadline.
        let mut got = [0u8; 64];
        client.read_exact(&mut got).await.unwrap();
        tokio::time::advance(Duration::from_secs(60)).await;
        server.write_all(&[2; 32]).await.unwrap();
        // Not read: the rest of this answer waits for room past the deadline.
        let started = Instant::now();
        let e = server.write_all(&[3; 64]).await.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut);
        assert_eq!(started.elapsed(), Duration::from_secs(10));
        drop(client);
    }
}
