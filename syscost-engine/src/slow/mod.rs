//! Slow calls (`--slow`): the calls at least as slow as their threshold, sent by the
//! kernel side through the ring of calls (only those; the others are only counted).
//! `spec` resolves the thresholds the tracer loads; [`crate::call_ring`] receives and
//! decodes the calls. The records ([`syscost_report::profile::SlowCall`]) are printed by
//! [`syscost_report::report::slow`].

pub mod spec;
