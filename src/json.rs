//! JSON as Slate writes it: standard JSON in which no string carries a raw control.
//!
//! Every JSON text the project writes (CLI `--json`, socket lines, `events.jsonl`, artifact
//! and discovery metadata, the requests sent to pi) goes through these functions instead of
//! `serde_json::to_*`. Besides what JSON itself requires (`"`, `\` and C0 controls), strings
//! escape, as `\uXXXX`:
//!
//! * DEL (U+007F) and the C1 controls (U+0080–U+009F), e.g. U+009B, the 8-bit CSI;
//! * the bidi controls U+061C, U+200E, U+200F, U+202A–U+202E and U+2066–U+2069.
//!
//! C0 controls keep JSON's short escapes where it has one (`\b \t \n \f \r`), every other
//! C0 control is `\u00XX`. The decoded text is unchanged: any JSON reader gets the same
//! strings back. Piped to a terminal, the output can no longer act as a control sequence.
//!
//! The signatures mirror `serde_json`'s, so a call site changes only its path.

pub mod strict;

use std::io;

use serde::Serialize;
use serde_json::ser::{CharEscape, CompactFormatter, Formatter, PrettyFormatter, Serializer};
use serde_json::value::RawValue;

/// Whether `c` is written as `\uXXXX` on top of JSON's own escapes.
#[must_use]
pub fn needs_escape(c: char) -> bool {
    matches!(
        c,
        '\u{0}'..='\u{1f}'
            | '\u{7f}'..='\u{9f}'
            | '\u{61c}'
            | '\u{200e}'
            | '\u{200f}'
            | '\u{202a}'..='\u{202e}'
            | '\u{2066}'..='\u{2069}'
    )
}

/// A formatter that writes like `F` and escapes every character of [`needs_escape`].
#[derive(Clone, Debug, Default)]
pub struct SafeFormatter<F> {
    inner: F,
}

impl<F> SafeFormatter<F> {
    pub fn new(inner: F) -> Self {
        Self { inner }
    }
}

/// Writes `\uXXXX` for one UTF-16 code unit (every escaped character is in the BMP).
pub(crate) fn write_u_escape<W: ?Sized + io::Write>(writer: &mut W, c: char) -> io::Result<()> {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let code = u32::from(c);
    let digit = |shift: u32| HEX[((code >> shift) & 0xf) as usize];
    writer.write_all(&[b'\\', b'u', digit(12), digit(8), digit(4), digit(0)])
}

macro_rules! delegate {
    ($($name:ident($($arg:ident: $ty:ty),*);)*) => {
        $(
            #[inline]
            fn $name<W: ?Sized + io::Write>(&mut self, writer: &mut W $(, $arg: $ty)*) -> io::Result<()> {
                self.inner.$name(writer $(, $arg)*)
            }
        )*
    };
}

impl<F: Formatter> Formatter for SafeFormatter<F> {
    delegate! {
        write_null();
        write_bool(value: bool);
        write_i8(value: i8);
        write_i16(value: i16);
        write_i32(value: i32);
        write_i64(value: i64);
        write_i128(value: i128);
        write_u8(value: u8);
        write_u16(value: u16);
        write_u32(value: u32);
        write_u64(value: u64);
        write_u128(value: u128);
        write_f32(value: f32);
        write_f64(value: f64);
        write_number_str(value: &str);
        begin_string();
        end_string();
        write_byte_array(value: &[u8]);
        begin_array();
        end_array();
        begin_array_value(first: bool);
        end_array_value();
        begin_object();
        end_object();
        begin_object_key(first: bool);
        end_object_key();
        begin_object_value();
        end_object_value();
        write_raw_fragment(fragment: &str);
    }

    /// `serde_json` has already split out `"`, `\` and C0 controls; what is left to escape
    /// here is DEL, C1 and the bidi controls.
    fn write_string_fragment<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        // Fast path: printable ASCII needs nothing more.
        if fragment.bytes().all(|b| b < 0x7f) {
            return writer.write_all(fragment.as_bytes());
        }
        let mut start = 0;
        for (at, c) in fragment.char_indices() {
            if needs_escape(c) {
                writer.write_all(&fragment.as_bytes()[start..at])?;
                write_u_escape(writer, c)?;
                start = at + c.len_utf8();
            }
        }
        writer.write_all(&fragment.as_bytes()[start..])
    }

    fn write_char_escape<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        char_escape: CharEscape,
    ) -> io::Result<()> {
        self.inner.write_char_escape(writer, char_escape)
    }
}

/// `serde_json::to_writer`, escaping controls.
pub fn to_writer<W: io::Write, T: ?Sized + Serialize>(
    writer: W,
    value: &T,
) -> serde_json::Result<()> {
    let mut ser = Serializer::with_formatter(writer, SafeFormatter::new(CompactFormatter));
    value.serialize(&mut ser)
}

/// `serde_json::to_writer_pretty`, escaping controls.
pub fn to_writer_pretty<W: io::Write, T: ?Sized + Serialize>(
    writer: W,
    value: &T,
) -> serde_json::Result<()> {
    let mut ser = Serializer::with_formatter(writer, SafeFormatter::new(PrettyFormatter::new()));
    value.serialize(&mut ser)
}

/// `serde_json::to_vec`, escaping controls.
pub fn to_vec<T: ?Sized + Serialize>(value: &T) -> serde_json::Result<Vec<u8>> {
    let mut bytes = Vec::with_capacity(128);
    to_writer(&mut bytes, value)?;
    Ok(bytes)
}

/// `serde_json::to_vec_pretty`, escaping controls.
pub fn to_vec_pretty<T: ?Sized + Serialize>(value: &T) -> serde_json::Result<Vec<u8>> {
    let mut bytes = Vec::with_capacity(128);
    to_writer_pretty(&mut bytes, value)?;
    Ok(bytes)
}

/// `serde_json::to_string`, escaping controls.
pub fn to_string<T: ?Sized + Serialize>(value: &T) -> serde_json::Result<String> {
    to_vec(value).and_then(into_string)
}

/// `serde_json::to_string_pretty`, escaping controls.
pub fn to_string_pretty<T: ?Sized + Serialize>(value: &T) -> serde_json::Result<String> {
    to_vec_pretty(value).and_then(into_string)
}

/// `serde_json::value::to_raw_value`, escaping controls (a raw value is written verbatim
/// later, so it must be escaped when it is made).
///
/// `RawValue::from_string` parses its text again to validate it, which for a 394 KB status
/// answer costs as much as writing it. `serde_json`'s own `to_raw_value` skips that check but
/// writes C1/DEL/bidi raw, so it is used only when its text holds none of them (such a
/// character can only stand inside a string, where `serde_json` already escaped C0); otherwise
/// the escaping writer runs and its text is validated once.
pub fn to_raw_value<T: ?Sized + Serialize>(value: &T) -> serde_json::Result<Box<RawValue>> {
    let plain = serde_json::value::to_raw_value(value)?;
    if is_safe(plain.get()) {
        return Ok(plain);
    }
    RawValue::from_string(to_string(value)?)
}

/// Whether valid JSON `text` carries no character of [`needs_escape`] raw inside a string,
/// as these writers guarantee. (Inside strings valid JSON holds no raw C0 control, and
/// outside them only ASCII, so DEL and the non-ASCII controls are all that is left to find.)
#[must_use]
pub fn is_safe(text: &str) -> bool {
    // `is_ascii` and `memchr` scan a word at a time; the char walk runs only for non-ASCII.
    let plain_ascii = text.is_ascii() && memchr::memchr(0x7f, text.as_bytes()).is_none();
    plain_ascii || !text.chars().any(needs_escape)
}

/// The serializer writes only UTF-8 (escapes are ASCII; everything else comes from `str`).
fn into_string(bytes: Vec<u8>) -> serde_json::Result<String> {
    String::from_utf8(bytes).map_err(<serde_json::Error as serde::ser::Error>::custom)
}

/// The JSON type of a value as an error message names it: `null`, `a boolean`, `a number`,
/// `a string`, `an array`, `an object`.
pub fn kind_of(value: &serde_json::Value) -> &'static str {
    use serde_json::Value;
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_raw_value_escapes_controls_on_both_paths() {
        let plain = to_raw_value(&serde_json::json!({"a": "caf\u{e9} \u{2026}"})).unwrap();
        assert_eq!(plain.get(), "{\"a\":\"caf\u{e9} \u{2026}\"}");
        let hostile = to_raw_value(&serde_json::json!({"a": "x\u{9b}y\u{202e}\u{7f}"})).unwrap();
        assert_eq!(hostile.get(), r#"{"a":"x\u009by\u202e\u007f"}"#);
        let back: serde_json::Value = serde_json::from_str(hostile.get()).unwrap();
        assert_eq!(back["a"], "x\u{9b}y\u{202e}\u{7f}");
    }
    use proptest::prelude::*;

    /// A raw control anywhere but the newlines that pretty output puts between tokens.
    fn has_raw_control(text: &str) -> bool {
        text.chars().any(|c| c != '\n' && needs_escape(c))
    }

    #[test]
    fn every_listed_control_is_escaped_and_decodes_back() {
        let input = "a\u{0}\u{7}\n\u{1b}[31m\u{7f}\u{80}\u{85}\u{9b}\u{9c}\u{9d}\u{9f}\u{61c}\u{200e}\u{200f}\u{202a}\u{202c}\u{202e}\u{2066}\u{2069}é日🙂\"\\z";
        let text = to_string(&input).unwrap_or_default();
        assert!(!text.chars().any(needs_escape), "{text}");
        assert!(text.contains("\\u009b") && text.contains("\\u202e") && text.contains("\\u007f"));
        assert!(text.contains("é日🙂"), "other text stays as it is: {text}");
        assert_eq!(
            serde_json::from_str::<String>(&text).ok().as_deref(),
            Some(input)
        );
    }

    #[test]
    fn keys_pretty_output_and_raw_values_are_escaped_too() {
        let value = serde_json::json!({"k\u{9b}": ["\u{202e}x", {"n": 1}], "plain": true});
        let pretty = to_string_pretty(&value).unwrap_or_default();
        assert!(!has_raw_control(&pretty), "{pretty}");
        assert_eq!(
            pretty,
            serde_json::to_string_pretty(&value)
                .unwrap_or_default()
                .replace('\u{9b}', "\\u009b")
                .replace('\u{202e}', "\\u202e")
        );
        let raw = to_raw_value(&value)
            .map(|r| r.get().to_owned())
            .unwrap_or_default();
        assert!(!has_raw_control(&raw), "{raw}");
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&raw).ok(),
            Some(value)
        );
    }

    #[test]
    fn plain_json_is_byte_for_byte_serde_json() {
        let value = serde_json::json!({"a": [1, 2.5, null, "x y", {"b": false}], "ü": "日本"});
        assert_eq!(to_vec(&value).ok(), serde_json::to_vec(&value).ok());
        assert_eq!(
            to_vec_pretty(&value).ok(),
            serde_json::to_vec_pretty(&value).ok()
        );
    }

    /// Strings built mostly from the characters at the edges of every escaped class.
    fn tricky() -> impl Strategy<Value = String> {
        let edge = prop::sample::select(vec![
            '\u{0}', '\u{1f}', ' ', '~', '\u{7e}', '\u{7f}', '\u{80}', '\u{9f}', '\u{a0}',
            '\u{61b}', '\u{61c}', '\u{61d}', '\u{200d}', '\u{200e}', '\u{200f}', '\u{2010}',
            '\u{2029}', '\u{202a}', '\u{202e}', '\u{202f}', '\u{2065}', '\u{2066}', '\u{2069}',
            '\u{206a}', '"', '\\', '\n', 'a', 'é', '🙂',
        ]);
        prop::collection::vec(prop_oneof![edge, any::<char>()], 0..64)
            .prop_map(|chars| chars.into_iter().collect())
    }

    proptest! {
        #[test]
        fn decode_of_encode_is_identity(s in tricky()) {
            let compact = to_string(&s).unwrap_or_default();
            let pretty = to_string_pretty(&vec![s.clone()]).unwrap_or_default();
            prop_assert_eq!(serde_json::from_str::<String>(&compact).ok(), Some(s.clone()));
            prop_assert_eq!(serde_json::from_str::<Vec<String>>(&pretty).ok(), Some(vec![s]));
        }

        #[test]
        fn output_has_no_raw_control(s in tricky()) {
            let value = serde_json::json!({ s.clone(): s });
            let compact = to_string(&value).unwrap_or_default();
            prop_assert!(!compact.chars().any(needs_escape), "{:?}", compact);
            let pretty = to_string_pretty(&value).unwrap_or_default();
            prop_assert!(!has_raw_control(&pretty), "{:?}", pretty);
        }
    }
}
