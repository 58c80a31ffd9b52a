//! The reference workloads: an epoll echo server written directly on the syscalls, and a
//! short-connection load generator, so the per-request syscall costs can be watched.

pub mod echo_load;
pub mod echo_server;
mod sys;
