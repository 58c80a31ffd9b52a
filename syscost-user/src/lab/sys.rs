//! Thin checked wrappers over the libc calls the lab makes, so the syscall sequence in
//! the server reads like the text that describes it.

use std::{io, net::SocketAddrV4, os::fd::RawFd};

/// Result of a libc call that returns -1 and sets errno on failure.
pub fn check(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

pub fn check_size(ret: libc::ssize_t) -> io::Result<usize> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret as usize)
    }
}

pub fn sockaddr(addr: SocketAddrV4) -> libc::sockaddr_in {
    libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: addr.port().to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from(*addr.ip()).to_be(),
        },
        sin_zero: [0; 8],
    }
}

/// A non-blocking listening TCP socket on `addr`.
pub fn listen(addr: SocketAddrV4) -> io::Result<RawFd> {
    // SAFETY: plain socket calls on a fd we own; sockaddr_in outlives the bind call.
    unsafe {
        let fd = check(libc::socket(
            libc::AF_INET,
            libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            0,
        ))?;
        let one: libc::c_int = 1;
        check(libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_REUSEADDR,
            (&one as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        ))?;
        let sa = sockaddr(addr);
        if let Err(e) = check(libc::bind(
            fd,
            (&sa as *const libc::sockaddr_in).cast(),
            std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
        )) {
            libc::close(fd);
            return Err(e);
        }
        check(libc::listen(fd, 1024))?;
        Ok(fd)
    }
}

/// The port a socket is bound to.
pub fn local_port(fd: RawFd) -> io::Result<u16> {
    // SAFETY: getsockname fills at most `len` bytes of `sa`.
    unsafe {
        let mut sa: libc::sockaddr_in = std::mem::zeroed();
        let mut len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
        check(libc::getsockname(
            fd,
            (&mut sa as *mut libc::sockaddr_in).cast(),
            &mut len,
        ))?;
        Ok(u16::from_be(sa.sin_port))
    }
}
