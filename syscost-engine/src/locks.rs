//! The one way syscost takes a lock.

use std::sync::{Mutex, MutexGuard};

/// A poisoned lock (a panicking holder) still guards whole data here: every writer
/// leaves its data consistent between statements, so the guard is taken as it is.
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
