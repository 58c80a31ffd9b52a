//! The views of a session: the live views of `attach` and `top` ([`tui`]) and the
//! metrics endpoint ([`metrics`]). A view renders the samples the session hands it and
//! drives no clock of its own.
//!
//! It may use `syscost-common`, `syscost-report` and `syscost-engine` (the session and
//! its samples), never the binary.

pub mod metrics;
pub mod tui;
