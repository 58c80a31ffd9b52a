//! The parsers of what network clients and the web configuration file hand syscost,
//! reachable from the fuzz targets (`fuzz/`). Not an API: each must neither panic nor
//! hang on any input.

/// A `--web.config.file` text (paths in it relative to /nonexistent: nothing is read).
pub fn web_config(text: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(text) else {
        return false;
    };
    super::web::parse(text, std::path::Path::new("/nonexistent")).is_ok()
}

/// An `Authorization` header's value: whether it held `Basic` credentials.
pub fn authorization(header: &[u8]) -> bool {
    super::web::basic_credentials(header).is_some()
}
