//! Exact arithmetic on JSON numbers: integrality, ordering, `multipleOf` and JSON
//! equality, without rounding integers through `f64`.

use std::cmp::Ordering;

use serde_json::{Number, Value};

fn as_int(n: &Number) -> Option<i128> {
    n.as_i64()
        .map(i128::from)
        .or_else(|| n.as_u64().map(i128::from))
}

fn as_float(n: &Number) -> f64 {
    n.as_f64().unwrap_or(f64::NAN)
}

/// Integral value, whatever the spelling: `1` and `1.0` are integers (2020-12).
pub(super) fn is_integer(n: &Number) -> bool {
    as_int(n).is_some()
        || n.as_f64()
            .is_some_and(|f| f.is_finite() && f.fract() == 0.0)
}

/// Compare two JSON numbers by mathematical value, exactly when either is an integer.
pub(super) fn cmp_numbers(a: &Number, b: &Number) -> Ordering {
    match (as_int(a), as_int(b)) {
        (Some(x), Some(y)) => x.cmp(&y),
        (Some(x), None) => cmp_int_float(x, as_float(b)),
        (None, Some(y)) => cmp_int_float(y, as_float(a)).reverse(),
        (None, None) => as_float(a)
            .partial_cmp(&as_float(b))
            .unwrap_or(Ordering::Equal),
    }
}

/// Compare an integer with a finite float without rounding the integer through `f64`.
fn cmp_int_float(x: i128, f: f64) -> Ordering {
    // JSON integers fit in 65 bits; anything this large is beyond them either way.
    const FAR: f64 = 1.0e30;
    if f.is_nan() {
        return Ordering::Equal;
    }
    if f >= FAR {
        return Ordering::Less;
    }
    if f <= -FAR {
        return Ordering::Greater;
    }
    let floor = f.floor();
    #[allow(
        clippy::cast_possible_truncation,
        reason = "floor is integral and |floor| < 1e30 < 2^127: the cast is exact"
    )]
    let whole = floor as i128;
    match x.cmp(&whole) {
        Ordering::Equal if f > floor => Ordering::Less,
        other => other,
    }
}

/// `|n|` as `mantissa × 10^exponent`, from the shortest decimal form that reads back as
/// the same number.
fn decimal(n: &Number) -> Option<(u128, i32)> {
    if let Some(i) = as_int(n) {
        return Some((i.unsigned_abs(), 0));
    }
    let f = n.as_f64()?;
    if !f.is_finite() {
        return None;
    }
    // `{:e}` prints the shortest round-trip digits: `1e-1`, `7.5e-3`, `1.2345e300`.
    let text = format!("{:e}", f.abs());
    let (mantissa, exponent) = text.split_once('e')?;
    let exponent: i32 = exponent.parse().ok()?;
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits: u128 = format!("{whole}{fraction}").parse().ok()?;
    let scale = i32::try_from(fraction.len()).ok()?;
    Some((digits, exponent - scale))
}

/// Whether `n / m` is an integer, decided exactly on the decimal forms (`m > 0`).
pub(super) fn is_multiple(n: &Number, m: &Number) -> bool {
    let (Some((x, ex)), Some((y, ey))) = (decimal(n), decimal(m)) else {
        return false;
    };
    if y == 0 {
        return false;
    }
    if x == 0 {
        return true;
    }
    let shift = ex - ey;
    if shift >= 0 {
        // y | x·10^shift. Both x % y and the power are below y < 2^64: no overflow.
        ((x % y) * pow_mod(10, shift.unsigned_abs(), y)).is_multiple_of(y)
    } else {
        // (y·10^-shift) | x; a divisor that overflows u128 exceeds x (x < 2^65).
        10u128
            .checked_pow(shift.unsigned_abs())
            .and_then(|p| p.checked_mul(y))
            .is_some_and(|d| x % d == 0)
    }
}

/// `base^exp mod modulus` for `modulus < 2^64` (every product stays below 2^128).
fn pow_mod(base: u128, mut exp: u32, modulus: u128) -> u128 {
    let mut result = 1 % modulus;
    let mut base = base % modulus;
    while exp > 0 {
        if exp & 1 == 1 {
            result = result * base % modulus;
        }
        base = base * base % modulus;
        exp >>= 1;
    }
    result
}

/// JSON equality: numbers by value (`1` equals `1.0`), objects ignoring key order. Walks
/// with an explicit stack, so deeply nested data cannot exhaust the call stack.
pub(super) fn json_equal(a: &Value, b: &Value) -> bool {
    let mut pending = vec![(a, b)];
    while let Some((a, b)) = pending.pop() {
        match (a, b) {
            (Value::Number(x), Value::Number(y)) => {
                if cmp_numbers(x, y) != Ordering::Equal {
                    return false;
                }
            }
            (Value::Array(x), Value::Array(y)) => {
                if x.len() != y.len() {
                    return false;
                }
                pending.extend(x.iter().zip(y));
            }
            (Value::Object(x), Value::Object(y)) => {
                if x.len() != y.len() {
                    return false;
                }
                for (key, value) in x {
                    match y.get(key) {
                        Some(other) => pending.push((value, other)),
                        None => return false,
                    }
                }
            }
            (Value::Null, Value::Null) => {}
            (Value::Bool(x), Value::Bool(y)) if x == y => {}
            (Value::String(x), Value::String(y)) if x == y => {}
            _ => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn number(v: Value) -> Number {
        match v {
            Value::Number(n) => n,
            other => panic!("not a number: {other}"),
        }
    }

    #[test]
    fn multiples_are_exact_on_decimal_forms() {
        let cases = [
            (json!(0.3), json!(0.1), true),
            (json!(0.0075), json!(0.0001), true),
            (json!(10), json!(2.5), true),
            (json!(7), json!(2), false),
            (json!(-6), json!(3), true),
            (json!(0), json!(0.7), true),
            (json!(1e300), json!(1e-300), true),
            (json!(1e-300), json!(1e300), false),
            (json!(u64::MAX), json!(5), true),
            (json!(u64::MAX), json!(2), false),
            (json!(4.5), json!(1.5), true),
            (json!(4.6), json!(1.5), false),
        ];
        for (n, m, expected) in cases {
            assert_eq!(
                is_multiple(&number(n.clone()), &number(m.clone())),
                expected,
                "{n} multipleOf {m}"
            );
        }
    }

    #[test]
    fn integers_and_floats_compare_exactly() {
        let big = number(json!(9_007_199_254_740_993_u64));
        let float = number(json!(9_007_199_254_740_992.0));
        assert_eq!(cmp_numbers(&big, &float), Ordering::Greater);
        assert_eq!(cmp_numbers(&float, &big), Ordering::Less);
        assert_eq!(
            cmp_numbers(&number(json!(1)), &number(json!(1.0))),
            Ordering::Equal
        );
        assert_eq!(
            cmp_numbers(&number(json!(-1)), &number(json!(-0.5))),
            Ordering::Less
        );
        assert_eq!(
            cmp_numbers(&number(json!(2)), &number(json!(1e40))),
            Ordering::Less
        );
    }
}
