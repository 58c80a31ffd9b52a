//! Slow calls (`--slow`): the calls at least as slow as their threshold, sent by the
//! kernel side through a ring buffer (only those; the others are only counted). `spec`
//! resolves the thresholds the tracer loads, `decode` turns events into records with
//! their arguments, file descriptors and symbolized stacks, `reader` receives them as
//! they come. The records ([`syscost_report::profile::SlowCall`]) are printed by
//! [`syscost_report::report::slow`].

pub mod decode;
pub mod reader;
pub mod spec;
