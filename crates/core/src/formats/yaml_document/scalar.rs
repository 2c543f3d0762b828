//! What a plain (unquoted) scalar is, by js-yaml 4's default schema as pnpm loads its lockfile
//! with it: null, a boolean, an integer, a float, a timestamp or a string, tried in that order.
//! The forms read here are the ones whose JS value is certain; js-yaml's rarer forms (other
//! bases, `_` separators, long integers, timestamps, infinities) are refused, and the lockfile
//! is left to pnpm.

use super::Node;

/// The node a plain scalar stands for, or why it is not read here.
pub(super) fn plain(text: &str) -> Result<Node, String> {
    if matches!(text, "" | "~" | "null" | "Null" | "NULL") {
        return Ok(Node::Null);
    }
    if matches!(text, "true" | "True" | "TRUE") {
        return Ok(Node::Bool(true));
    }
    if matches!(text, "false" | "False" | "FALSE") {
        return Ok(Node::Bool(false));
    }
    let unread = || {
        format!(
            "the plain scalar {text:?}, which js-yaml reads as a number of a form not read here"
        )
    };
    if is_integer(text) {
        return decimal_integer(text).map(Node::Number).ok_or_else(unread);
    }
    if is_float(text) {
        return float(text).map(Node::Number).ok_or_else(unread);
    }
    if looks_like_timestamp(text) {
        return Err(format!(
            "the plain scalar {text:?}, which js-yaml may read as a date"
        ));
    }
    Ok(Node::String(text.to_owned()))
}

/// The property name JS gives a plain scalar used as a mapping key (`String(value)`).
pub(super) fn key(text: &str) -> Result<String, String> {
    Ok(match plain(text) {
        Ok(Node::Null) => "null".to_owned(),
        Ok(Node::Bool(b)) => b.to_string(),
        Ok(Node::Number(n)) => crate::json::number_to_string(n),
        Ok(Node::String(s)) => s,
        // `.inf`, `.nan` and their kin name keys as JS prints them.
        Err(why) => match special_float(text) {
            Some(n) => crate::json::number_to_string(n),
            None => return Err(why),
        },
        Ok(_) => unreachable!("a scalar is never a collection"),
    })
}

/// js-yaml's integer test: an optional sign, then `0b`/`0x`/`0o` digits or decimal digits, `_`
/// allowed between digits but not first or last.
fn is_integer(text: &str) -> bool {
    let unsigned = text.strip_prefix(['-', '+']).unwrap_or(text);
    let (digits, radix) = match unsigned.as_bytes() {
        [b'0'] => return true,
        [b'0', b'b', ..] => (&unsigned[2..], 2),
        [b'0', b'x', ..] => (&unsigned[2..], 16),
        [b'0', b'o', ..] => (&unsigned[2..], 8),
        [b'_', ..] | [b'0', b'_', ..] => return false,
        _ => (unsigned, 10),
    };
    digits.chars().any(|c| c != '_')
        && !digits.ends_with('_')
        && digits.chars().all(|c| c == '_' || c.is_digit(radix))
}

/// A decimal integer of at most 15 digits (exact in a double), as js-yaml builds it: `-0` and
/// `+0` are `0`, other signs apply to the digits' value.
fn decimal_integer(text: &str) -> Option<f64> {
    let (negative, digits) = split_sign(text);
    if digits.is_empty() || digits.len() > 15 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let value: f64 = digits.parse().ok()?;
    Some(if digits == "0" {
        0.0
    } else if negative {
        -value
    } else {
        value
    })
}

/// js-yaml's float test (`YAML_FLOAT_PATTERN`, not ending in `_`): `1.5`, `1.`, `2.5e4`, `.5`,
/// `[-+].inf` and `.nan` in three cases each, `_` allowed in the digits before any exponent.
fn is_float(text: &str) -> bool {
    if text.ends_with('_') {
        return false;
    }
    if special_float(text).is_some() {
        return true;
    }
    let (_, unsigned) = split_sign(text);
    let (mantissa, exponent) = match unsigned.find(['e', 'E']) {
        Some(at) => (&unsigned[..at], Some(&unsigned[at + 1..])),
        None => (unsigned, None),
    };
    let exponent_ok = exponent.is_none_or(|e| {
        let digits = e.strip_prefix(['-', '+']).unwrap_or(e);
        !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
    });
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit() || b == b'_');
    let mantissa_ok = match mantissa.split_once('.') {
        // `.5`: no sign allowed before the dot there.
        Some(("", fraction)) => text.starts_with('.') && !fraction.is_empty() && digits(fraction),
        Some((whole, fraction)) => {
            whole.starts_with(|c: char| c.is_ascii_digit()) && digits(whole) && digits(fraction)
        }
        None => mantissa.starts_with(|c: char| c.is_ascii_digit()) && digits(mantissa),
    };
    exponent_ok && mantissa_ok
}

/// A float's value as js-yaml builds it (`sign * parseFloat(digits)`), for the forms without
/// `_`; the infinities and NaN are refused (JSON has no such values, a lockfile no use for them).
fn float(text: &str) -> Option<f64> {
    if text.contains('_') || special_float(text).is_some() {
        return None;
    }
    let (negative, unsigned) = split_sign(text);
    let value: f64 = unsigned.parse().ok()?;
    Some(if negative { -value } else { value })
}

/// `.inf`, `-.inf`, `+.inf`, `.nan` (each also capitalised or upper case).
fn special_float(text: &str) -> Option<f64> {
    let (negative, unsigned) = split_sign(text);
    match unsigned {
        ".inf" | ".Inf" | ".INF" => Some(if negative {
            f64::NEG_INFINITY
        } else {
            f64::INFINITY
        }),
        ".nan" | ".NaN" | ".NAN" if unsigned.len() == text.len() => Some(f64::NAN),
        _ => None,
    }
}

/// Whether js-yaml's date test could match: four digits and a dash first (its two timestamp
/// forms both start so).
fn looks_like_timestamp(text: &str) -> bool {
    let b = text.as_bytes();
    b.len() >= 5 && b[..4].iter().all(u8::is_ascii_digit) && b[4] == b'-'
}

fn split_sign(text: &str) -> (bool, &str) {
    match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    }
}
