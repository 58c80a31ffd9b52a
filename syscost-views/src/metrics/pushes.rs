//! What the OTLP pusher ([`super::otlp`]) did, counted as it pushes and served on
//! `/metrics` (`syscost_otlp_*`).

use std::sync::atomic::AtomicU64;

/// What the pusher did.
#[derive(Debug, Default)]
pub struct Counters {
    /// Requests the receiver accepted.
    pub sent: AtomicU64,
    /// Requests never accepted: replaced by a newer one while waiting, or refused for
    /// good.
    pub dropped: AtomicU64,
    /// Tries that failed (each retried while it is the newest).
    pub failures: AtomicU64,
}
