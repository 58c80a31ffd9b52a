//! Text a traced process controls: its comm (any process sets it with `prctl` or by the
//! name of the file it execs), the paths behind its file descriptors, the symbols of its
//! binaries, its cgroup's name. syscost runs as root and prints them, so a process
//! could otherwise write escape sequences to the user's terminal.
//!
//! Two rules, one for each end:
//! - [`decode`] turns the bytes into a `String` without losing any: valid UTF-8 is kept
//!   as it is, and each byte that is not UTF-8 (0xNN) becomes the code point
//!   U+10FFNN, from a private-use plane no name uses. The JSON profile holds that string
//!   (JSON-escaped: exact, control characters included); Prometheus labels as well.
//! - [`shown`] is what every text output prints (tables, lines on stderr, the live view,
//!   folded stacks, the flame graph's SVG, error messages): the name with what is not
//!   printable escaped as strace escapes it. `\` is `\\`; tab, newline, carriage
//!   return, vertical tab and form feed are `\t`, `\n`, `\r`, `\v`, `\f`; any other C0
//!   control and DEL in octal (`\33`, `\177`; three digits when an octal digit
//!   follows); C1 controls and the Unicode formatting characters that reorder or hide
//!   text (bidirectional overrides and isolates, zero-width characters, line and
//!   paragraph separators) as `\u{9b}`, `\u{202e}`; a byte that was not UTF-8 as
//!   `\xff`. Two names that differ only in such characters stay distinguishable.

use std::borrow::Cow;

/// Where [`decode`] puts the bytes that are not UTF-8: 0xNN -> `BYTE_BASE + NN`.
const BYTE_BASE: u32 = 0x10_FF00;

/// The bytes as a `String`, losslessly (see the module's documentation).
pub fn decode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        out.push_str(chunk.valid());
        for &b in chunk.invalid() {
            out.push(char::from_u32(BYTE_BASE + u32::from(b)).expect("a valid code point"));
        }
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

/// Whether `c` is shown escaped.
fn needs_escape(c: char) -> bool {
    matches!(c,
        '\\'
        | '\u{0}'..='\u{1f}'
        | '\u{7f}'..='\u{9f}'
        // Zero-width and direction marks, separators, bidirectional embeddings,
        // overrides and isolates, the byte-order mark: they hide or reorder text.
        | '\u{200b}'..='\u{200f}'
        | '\u{2028}'..='\u{202e}'
        | '\u{2060}'..='\u{2064}'
        | '\u{2066}'..='\u{2069}'
        | '\u{feff}')
        || byte_of(c).is_some()
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

/// JSON text with the C1 controls and the text-reordering characters of its strings
/// written as `\uXXXX` escapes (serde_json writes them raw, and a terminal reading C1
/// controls as escapes would act on them): the same JSON value, safe to print.
pub fn json_safe(json: String) -> String {
    if !json
        .chars()
        .any(|c| needs_escape(c) && u32::from(c) >= 0x80 && byte_of(c).is_none())
    {
        return json;
    }
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        if needs_escape(c) && u32::from(c) >= 0x80 && byte_of(c).is_none() {
            // All of them are in the basic plane: one \u escape each.
            out.push_str(&format!("\\u{:04x}", u32::from(c)));
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
    fn json_prints_c1_controls_as_escapes_and_reads_back_the_same() {
        let value = serde_json::json!({ "comm": "a\u{9b}2J\u{202e}z\u{1b}" });
        let text = json_safe(serde_json::to_string(&value).unwrap());
        assert_eq!(text, r#"{"comm":"a\u009b2J\u202ez\u001b"}"#);
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
