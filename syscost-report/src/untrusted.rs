//! Text a traced process controls: its comm (any process sets it with `prctl` or by the
//! name of the file it execs), the paths behind its file descriptors, the symbols of its
//! binaries, its cgroup's name. syscost runs as root and prints them, so a process
//! could otherwise write escape sequences to the user's terminal.
//!
//! Two rules, one for each end:
//! - [`decode`] turns the bytes into a `String` without losing any: valid UTF-8 is kept
//!   as it is, and each byte that is not UTF-8 (0xNN) becomes the code point
//!   U+10FFNN, at the end of the last private-use plane. A name holding one of those
//!   128 code points itself (U+10FF80..U+10FFFF, valid UTF-8) has its four bytes
//!   mapped the same way, so every string stands for one byte string only. The JSON
//!   profile holds that string (JSON-escaped: exact, control characters included);
//!   Prometheus labels as well.
//! - [`shown`] is what every text output prints (tables, lines on stderr, the live view,
//!   folded stacks, the flame graph's SVG, error messages): the name with what is not
//!   printable escaped as strace escapes it. `\` is `\\`; tab, newline, carriage
//!   return, vertical tab and form feed are `\t`, `\n`, `\r`, `\v`, `\f`; any other C0
//!   control and DEL in octal (`\33`, `\177`; three digits when an octal digit
//!   follows); C1 controls and every character Unicode classes as a format character or
//!   a line or paragraph separator (general categories Cf, Zl, Zp: bidirectional
//!   overrides, isolates and marks, zero-width characters, the soft hyphen, tags) as
//!   `\u{9b}`, `\u{202e}`; a byte that was not UTF-8 as `\xff`. Two names that differ
//!   only in such characters stay distinguishable.

use std::borrow::Cow;

/// Where [`decode`] puts the bytes that are not UTF-8: 0xNN -> `BYTE_BASE + NN`.
const BYTE_BASE: u32 = 0x10_FF00;

/// The bytes as a `String`, losslessly (see the module's documentation).
pub fn decode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    let byte = |b: u8| char::from_u32(BYTE_BASE + u32::from(b)).expect("a valid code point");
    for chunk in bytes.utf8_chunks() {
        let valid = chunk.valid();
        if valid.chars().any(|c| byte_of(c).is_some()) {
            // The code points that stand for bytes, written as text: their bytes.
            for c in valid.chars() {
                if byte_of(c).is_some() {
                    let mut buf = [0; 4];
                    out.extend(c.encode_utf8(&mut buf).bytes().map(byte));
                } else {
                    out.push(c);
                }
            }
        } else {
            out.push_str(valid);
        }
        out.extend(chunk.invalid().iter().map(|&b| byte(b)));
    }
    out
}

/// The bytes [`decode`] was given.
pub fn encode(text: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    for c in text.chars() {
        match byte_of(c) {
            Some(b) => out.push(b),
            None => {
                let mut buf = [0; 4];
                out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            }
        }
    }
    out
}

/// The non-UTF-8 byte a code point stands for.
fn byte_of(c: char) -> Option<u8> {
    let c = u32::from(c);
    (BYTE_BASE + 0x80..=BYTE_BASE + 0xff)
        .contains(&c)
        .then(|| (c - BYTE_BASE) as u8)
}

/// Whether `c` is shown escaped: `\`, controls (C0, DEL, C1), format characters and
/// line or paragraph separators (they hide or reorder text), and bytes that were not
/// UTF-8.
fn needs_escape(c: char) -> bool {
    use unicode_properties::{GeneralCategory as G, UnicodeGeneralCategory as _};
    if c.is_ascii() {
        return c == '\\' || c.is_ascii_control();
    }
    matches!(
        c.general_category(),
        G::Control | G::Format | G::LineSeparator | G::ParagraphSeparator
    ) || byte_of(c).is_some()
}

/// The printable form of a name (see the module's documentation): borrowed when nothing
/// needs escaping.
pub fn shown(text: &str) -> Cow<'_, str> {
    if !text.chars().any(needs_escape) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if !needs_escape(c) {
            out.push(c);
            continue;
        }
        match (c, byte_of(c)) {
            (_, Some(b)) => out.push_str(&format!("\\x{b:02x}")),
            ('\\', _) => out.push_str("\\\\"),
            ('\t', _) => out.push_str("\\t"),
            ('\n', _) => out.push_str("\\n"),
            ('\r', _) => out.push_str("\\r"),
            ('\u{b}', _) => out.push_str("\\v"),
            ('\u{c}', _) => out.push_str("\\f"),
            (c, _) if u32::from(c) < 0x80 => {
                // strace's octal: as short as it can be, unless an octal digit follows.
                let next_is_octal = chars.peek().is_some_and(|n| ('0'..='7').contains(n));
                if next_is_octal {
                    out.push_str(&format!("\\{:03o}", u32::from(c)));
                } else {
                    out.push_str(&format!("\\{:o}", u32::from(c)));
                }
            }
            (c, _) => out.push_str(&format!("\\u{{{:x}}}", u32::from(c))),
        }
    }
    Cow::Owned(out)
}

/// JSON text with DEL, the C1 controls and the format characters of its strings written
/// as `\uXXXX` escapes (serde_json escapes only C0 controls, and a terminal reading C1
/// controls as escapes would act on them): the same JSON value, safe to print.
pub fn json_safe(json: String) -> String {
    // serde_json already escapes `\` and the C0 controls.
    let raw = |c: char| u32::from(c) >= 0x7f && needs_escape(c) && byte_of(c).is_none();
    if !json.chars().any(raw) {
        return json;
    }
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        if raw(c) {
            // Outside the basic plane (tags): a surrogate pair, as JSON writes them.
            let mut units = [0; 2];
            for u in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{u:04x}"));
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn printable_names_are_borrowed_as_they_are() {
        for name in [
            "nginx",
            "syscost-workloa",
            "/system.slice/a b.service",
            "é ü 中",
        ] {
            assert!(matches!(shown(name), Cow::Borrowed(n) if n == name));
            assert_eq!(decode(name.as_bytes()), name);
        }
    }

    #[test]
    fn control_characters_are_escaped_as_strace_does() {
        assert_eq!(shown("\u{1b}[31mEVIL\u{7}"), "\\33[31mEVIL\\7");
        assert_eq!(shown("\u{1b}]0;PWNED\u{7}x"), "\\33]0;PWNED\\7x");
        assert_eq!(shown("a\tb\nc\rd\u{b}e\u{c}f"), "a\\tb\\nc\\rd\\ve\\ff");
        assert_eq!(shown("\u{0}\u{7f}"), "\\0\\177");
        // Three digits when an octal digit follows, so the escape reads back alone.
        assert_eq!(shown("\u{1b}1"), "\\0331");
        assert_eq!(shown("\u{1b}8x\u{1b}9"), "\\338x\\339");
        // A backslash is doubled: "\33" typed as text is not ESC.
        assert_eq!(shown("\\33"), "\\\\33");
        assert_ne!(shown("\\33"), shown("\u{1b}"));
    }

    #[test]
    fn c1_controls_and_text_reordering_characters_are_escaped() {
        assert_eq!(shown("a\u{9b}2J"), "a\\u{9b}2J");
        assert_eq!(shown("invoice\u{202e}fdp.exe"), "invoice\\u{202e}fdp.exe");
        assert_eq!(shown("zero\u{200b}width"), "zero\\u{200b}width");
        assert_eq!(shown("\u{2066}x\u{2069}"), "\\u{2066}x\\u{2069}");
    }

    #[test]
    fn bytes_that_are_not_utf8_are_kept_and_shown() {
        let bytes = b"ab\xff\xc3(\x1bz\x80";
        let text = decode(bytes);
        assert_eq!(encode(&text), bytes, "nothing is lost");
        assert_eq!(shown(&text), "ab\\xff\\xc3(\\33z\\x80");
        // Valid UTF-8 next to invalid bytes stays as it is.
        assert_eq!(shown(&decode("é\u{1b}".as_bytes())), "é\\33");
        assert_eq!(encode("plain é"), "plain é".as_bytes());
    }

    #[test]
    fn every_format_character_is_escaped() {
        // Arabic letter mark, soft hyphen, Mongolian vowel separator, an interlinear
        // annotation character, a tag (outside the basic plane), a paragraph separator.
        for (c, shown_as) in [
            ('\u{61c}', "\\u{61c}"),
            ('\u{ad}', "\\u{ad}"),
            ('\u{180e}', "\\u{180e}"),
            ('\u{fff9}', "\\u{fff9}"),
            ('\u{e0041}', "\\u{e0041}"),
            ('\u{2029}', "\\u{2029}"),
        ] {
            assert_eq!(shown(&format!("a{c}b")), format!("a{shown_as}b"), "{c:?}");
        }
    }

    #[test]
    fn a_name_holding_the_byte_code_points_is_kept_apart_from_the_bytes() {
        // U+10FF9B written as valid UTF-8 is not the lone byte 0x9b.
        let text = "x\u{10ff9b}y".as_bytes().to_vec();
        let lone = b"x\x9by".to_vec();
        let (a, b) = (decode(&text), decode(&lone));
        assert_ne!(a, b);
        assert_eq!(encode(&a), text);
        assert_eq!(encode(&b), lone);
        assert_eq!(shown(&a), "x\\xf4\\x8f\\xbe\\x9by");
        assert_eq!(shown(&b), "x\\x9by");
    }

    #[test]
    fn json_prints_c1_controls_as_escapes_and_reads_back_the_same() {
        let value = serde_json::json!({ "comm": "a\u{9b}2J\u{202e}z\u{1b}\u{7f}\u{e0041}" });
        let text = json_safe(serde_json::to_string(&value).unwrap());
        assert_eq!(
            text,
            r#"{"comm":"a\u009b2J\u202ez\u001b\u007f\udb40\udc41"}"#
        );
        let back: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back, value);
        let plain = r#"{"comm":"nginx"}"#.to_string();
        assert_eq!(json_safe(plain.clone()), plain);
    }

    #[test]
    fn nothing_shown_holds_a_control_character() {
        for b in 0..=255u8 {
            for text in [decode(&[b]), decode(&[b'x', b, b'7'])] {
                let s = shown(&text);
                assert!(
                    s.chars()
                        .all(|c| !c.is_control() && !needs_escape(c) || c == '\\'),
                    "{b:#x}: {s:?}"
                );
            }
        }
    }
}
