//! Basic authentication: the credentials of a request, and the bcrypt hashes' cost.

use anyhow::Result;
use base64::Engine as _;

/// The highest bcrypt cost taken: a check at 14 takes about a second here.
pub(super) const MAX_COST: u32 = 14;

/// The cost of bcrypt hash `hash`, which must be one.
pub(super) fn bcrypt_cost(hash: &str) -> Result<u32> {
    let parts = hash.parse::<bcrypt::HashParts>().map_err(|e| {
        anyhow::anyhow!("not a bcrypt hash ({e}): write one with htpasswd -nBC 10 USER")
    })?;
    Ok(parts.get_cost())
}

/// Credentials that only a bcrypt check can answer for.
pub struct Unverified {
    pub(super) user: String,
    pub(super) password: String,
}

/// The user and password of a `Basic` Authorization header.
pub(crate) fn basic_credentials(header: &[u8]) -> Option<(String, String)> {
    let header = std::str::from_utf8(header).ok()?;
    let (scheme, encoded) = header.trim().split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .ok()?;
    let decoded = String::from_utf8(decoded).ok()?;
    let (user, password) = decoded.split_once(':')?;
    Some((user.to_string(), password.to_string()))
}
