//! `syscost lab echo-server`: a single-threaded epoll echo server on raw syscalls.
//!
//! Per connection it makes, in order: `accept4`, `epoll_ctl(ADD)`, then per readiness
//! `epoll_wait` and `read`, a `write` echoing what was read (`epoll_ctl(MOD, EPOLLOUT)`
//! and back only when the socket buffer is full), and at end of stream `epoll_ctl(DEL)`
//! and `close`.
//!
//! - `lt` (level-triggered): one `read` per readiness event; the kernel reports again
//!   while data is left.
//! - `et` (edge-triggered): reads until `read` fails with EAGAIN, since no new event
//!   comes for data already there. With `--stop-on-short-read` it stops as soon as a read
//!   returns less than asked, which saves that failing read: fewer syscalls, fewer
//!   EAGAIN errors (safe for request/response traffic, where the next bytes come after
//!   our reply and raise a new edge).

use std::{
    collections::HashMap,
    io,
    os::fd::RawFd,
    sync::atomic::{AtomicBool, Ordering},
    time::{Duration, Instant},
};

use anyhow::{Context as _, Result};

use crate::cli::{Mode, ServerArgs};

use super::sys::{check, check_size, listen, local_port};

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

/// Counts of what the server did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ServerStats {
    pub connections: u64,
    pub bytes: u64,
}

/// Per-connection state: bytes read but not yet written back.
struct Conn {
    pending: Vec<u8>,
}

struct Server {
    epfd: RawFd,
    listen_fd: RawFd,
    args: ServerArgs,
    conns: HashMap<RawFd, Conn>,
    buf: Vec<u8>,
    stats: ServerStats,
}

fn events_for(mode: Mode, out: bool) -> u32 {
    let base = if out { libc::EPOLLOUT } else { libc::EPOLLIN } as u32;
    match mode {
        Mode::Lt => base,
        Mode::Et => base | libc::EPOLLET as u32,
    }
}

impl Server {
    fn ctl(&self, op: libc::c_int, fd: RawFd, events: u32) -> io::Result<()> {
        let mut ev = libc::epoll_event {
            events,
            u64: fd as u64,
        };
        // SAFETY: ev lives across the call.
        check(unsafe { libc::epoll_ctl(self.epfd, op, fd, &mut ev) }).map(|_| ())
    }

    fn accept(&mut self) -> io::Result<()> {
        // LT: one accept per readiness event (the kernel reports again while the queue
        // is not empty). ET: drain the queue.
        loop {
            // SAFETY: no address wanted.
            let fd = unsafe {
                libc::accept4(
                    self.listen_fd,
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                    libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
                )
            };
            if fd < 0 {
                let e = io::Error::last_os_error();
                return match e.raw_os_error() {
                    Some(libc::EAGAIN) | Some(libc::ECONNABORTED) | Some(libc::EINTR) => Ok(()),
                    _ => Err(e),
                };
            }
            self.ctl(libc::EPOLL_CTL_ADD, fd, events_for(self.args.mode, false))?;
            self.conns.insert(
                fd,
                Conn {
                    pending: Vec::new(),
                },
            );
            if self.args.mode == Mode::Lt {
                return Ok(());
            }
        }
    }

    fn close(&mut self, fd: RawFd) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_DEL, fd, 0)?;
        // SAFETY: fd is a connection we own.
        unsafe { libc::close(fd) };
        self.conns.remove(&fd);
        self.stats.connections += 1;
        Ok(())
    }

    /// Writes what is pending; true when all of it went out.
    fn flush(&mut self, fd: RawFd) -> io::Result<bool> {
        let conn = self.conns.get_mut(&fd).expect("known connection");
        while !conn.pending.is_empty() {
            // SAFETY: pending is a valid buffer.
            let n = unsafe { libc::write(fd, conn.pending.as_ptr().cast(), conn.pending.len()) };
            match check_size(n) {
                Ok(n) => {
                    conn.pending.drain(..n);
                }
                Err(e) if e.raw_os_error() == Some(libc::EAGAIN) => return Ok(false),
                Err(e) => return Err(e),
            }
        }
        Ok(true)
    }

    /// Reads what the mode allows and echoes it; true when the peer has closed.
    fn readable(&mut self, fd: RawFd) -> io::Result<bool> {
        loop {
            // SAFETY: buf is a valid buffer of buf.len() bytes.
            let n = unsafe { libc::read(fd, self.buf.as_mut_ptr().cast(), self.buf.len()) };
            let n = match check_size(n) {
                Ok(0) => return Ok(true),
                Ok(n) => n,
                Err(e) if e.raw_os_error() == Some(libc::EAGAIN) => return Ok(false),
                Err(e) if e.raw_os_error() == Some(libc::ECONNRESET) => return Ok(true),
                Err(e) => return Err(e),
            };
            self.stats.bytes += n as u64;
            let short = n < self.buf.len();
            let data = self.buf[..n].to_vec();
            self.conns
                .get_mut(&fd)
                .expect("known connection")
                .pending
                .extend_from_slice(&data);
            if !self.flush(fd)? {
                // Socket buffer full: wait for EPOLLOUT before reading more.
                self.ctl(libc::EPOLL_CTL_MOD, fd, events_for(self.args.mode, true))?;
                return Ok(false);
            }
            if self.args.mode == Mode::Lt || (short && self.args.stop_on_short_read) {
                return Ok(false);
            }
        }
    }

    fn writable(&mut self, fd: RawFd) -> io::Result<()> {
        if self.flush(fd)? {
            self.ctl(libc::EPOLL_CTL_MOD, fd, events_for(self.args.mode, false))?;
        }
        Ok(())
    }

    fn serve(&mut self) -> Result<()> {
        let deadline = self
            .args
            .duration
            .map(|s| Instant::now() + Duration::from_secs_f64(s));
        let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; 64];
        while !STOP.load(Ordering::Relaxed) {
            if self
                .args
                .max_conns
                .is_some_and(|m| self.stats.connections >= m)
            {
                break;
            }
            let timeout = match deadline {
                Some(d) => {
                    let left = d.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        break;
                    }
                    left.as_millis().min(i32::MAX as u128) as i32 + 1
                }
                None => -1,
            };
            // SAFETY: events has room for its length.
            let n = unsafe {
                libc::epoll_wait(self.epfd, events.as_mut_ptr(), events.len() as i32, timeout)
            };
            let n = match check(n) {
                Ok(n) => n as usize,
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
                Err(e) => return Err(e).context("epoll_wait"),
            };
            for ev in &events[..n] {
                let fd = ev.u64 as RawFd;
                let flags = ev.events;
                if fd == self.listen_fd {
                    self.accept().context("accept4")?;
                    continue;
                }
                if !self.conns.contains_key(&fd) {
                    continue;
                }
                let closed = if flags & libc::EPOLLOUT as u32 != 0 {
                    self.writable(fd).map(|_| false)
                } else {
                    self.readable(fd)
                };
                match closed {
                    Ok(false) => {}
                    Ok(true) => self.close(fd).context("close")?,
                    Err(_) => self.close(fd).context("close")?,
                }
            }
        }
        Ok(())
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        for &fd in self.conns.keys() {
            // SAFETY: fds we own.
            unsafe { libc::close(fd) };
        }
        // SAFETY: fds we own.
        unsafe {
            libc::close(self.listen_fd);
            libc::close(self.epfd);
        }
    }
}

/// Runs the server until a signal, `--max-conns` or `--duration`. `ready` is told the
/// port once it listens.
pub fn serve(args: &ServerArgs, ready: impl FnOnce(u16)) -> Result<ServerStats> {
    STOP.store(false, Ordering::Relaxed);
    // epoll_wait returns EINTR on these, and the loop sees the flag.
    syscost_engine::signals::catch(&[libc::SIGINT, libc::SIGTERM], on_signal);
    // A name of its own in ps, top and syscost's header.
    // SAFETY: PR_SET_NAME reads a NUL-terminated string of at most 16 bytes.
    unsafe { libc::prctl(libc::PR_SET_NAME, c"echo-server".as_ptr()) };
    let listen_fd = listen(args.addr).with_context(|| format!("cannot listen on {}", args.addr))?;
    // SAFETY: epoll_create1 returns a new fd or -1.
    let epfd = match check(unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) }) {
        Ok(fd) => fd,
        Err(e) => {
            unsafe { libc::close(listen_fd) };
            return Err(e).context("epoll_create1");
        }
    };
    let mut server = Server {
        epfd,
        listen_fd,
        args: args.clone(),
        conns: HashMap::new(),
        buf: vec![0; args.buf_size.max(1)],
        stats: ServerStats::default(),
    };
    server.ctl(libc::EPOLL_CTL_ADD, listen_fd, libc::EPOLLIN as u32)?;
    ready(local_port(listen_fd)?);
    server.serve()?;
    Ok(server.stats)
}
