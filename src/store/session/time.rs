//! ISO-8601 UTC timestamps with milliseconds, as JavaScript's `Date.toISOString()` writes them.

/// `YYYY-MM-DDTHH:MM:SS.mmmZ` for `ms` milliseconds since the Unix epoch (jiff's calendar; a
/// value past jiff's range, year 9999, is clamped to its end rather than failing a write).
pub fn iso_timestamp(ms: u64) -> String {
    let ms = i64::try_from(ms).unwrap_or(i64::MAX);
    let at = jiff::Timestamp::from_millisecond(ms).unwrap_or(jiff::Timestamp::MAX);
    at.strftime("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
}

#[cfg(test)]
mod tests {
    use super::iso_timestamp;

    #[test]
    fn matches_javascript() {
        assert_eq!(iso_timestamp(0), "1970-01-01T00:00:00.000Z");
        // new Date(1796007049587).toISOString()
        assert_eq!(iso_timestamp(1_796_007_049_587), "2026-11-30T02:50:49.587Z");
        assert_eq!(iso_timestamp(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(iso_timestamp(1_000), "1970-01-01T00:00:01.000Z");
        assert!(iso_timestamp(u64::MAX).starts_with("9999-12-"));
    }
}
