//! Sizes and durations as fio users write them, and human formatting.

use std::time::Duration;
use thiserror::Error;

#[derive(Debug, Error, PartialEq, Eq)]
pub enum ParseError {
    #[error("'{0}' is not a size: use a whole number with an optional suffix k, m, g, t (powers of 1024), e.g. 4k, 64k, 1m, 1g")]
    Size(String),
    #[error("size '{0}' is too large (over 2^64 bytes)")]
    SizeOverflow(String),
    #[error("'{0}' is not a duration: use a number with a unit, e.g. 500ms, 2s, 1m, 1h (a bare number means seconds)")]
    Duration(String),
    #[error("duration '{0}' is too large (over 2^64 seconds)")]
    DurationOverflow(String),
}

/// Parses a size in bytes. Suffixes are fio's with its default `kb_base=1024`:
/// `k`, `m`, `g`, `t`, `p`, each optionally followed by `i` and/or `b`
/// (`4k`, `4K`, `4KiB`, `4kb` are all 4096). A bare number is bytes.
pub fn parse_size(text: &str) -> Result<u64, ParseError> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, suffix) = t.split_at(split);
    if digits.is_empty() {
        return Err(ParseError::Size(text.to_string()));
    }
    let value: u64 = digits
        .parse()
        .map_err(|_| ParseError::SizeOverflow(text.to_string()))?;
    let suffix = suffix.to_ascii_lowercase();
    let shift = match suffix.as_str() {
        "" | "b" => 0,
        "k" | "kb" | "ki" | "kib" => 10,
        "m" | "mb" | "mi" | "mib" => 20,
        "g" | "gb" | "gi" | "gib" => 30,
        "t" | "tb" | "ti" | "tib" => 40,
        "p" | "pb" | "pi" | "pib" => 50,
        _ => return Err(ParseError::Size(text.to_string())),
    };
    value
        .checked_mul(1u64 << shift)
        .ok_or_else(|| ParseError::SizeOverflow(text.to_string()))
}

/// Parses a duration: `500ms`, `2s`, `1m`, `1h`, `1m30s`, `250us`; a bare
/// number is seconds, as in fio's `runtime=`.
pub fn parse_duration(text: &str) -> Result<Duration, ParseError> {
    let t = text.trim();
    if t.is_empty() {
        return Err(ParseError::Duration(text.to_string()));
    }
    if t.bytes().all(|b| b.is_ascii_digit()) {
        let secs: u64 = t
            .parse()
            .map_err(|_| ParseError::DurationOverflow(text.to_string()))?;
        return Ok(Duration::from_secs(secs));
    }
    humantime::parse_duration(t).map_err(|e| match e {
        humantime::DurationError::NumberOverflow => ParseError::DurationOverflow(text.to_string()),
        _ => ParseError::Duration(text.to_string()),
    })
}

/// Formats bytes with a binary unit: `4 KiB`, `1.50 GiB`.
pub fn format_bytes(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else if value.fract() == 0.0 {
        format!("{value:.0} {}", UNITS[unit])
    } else {
        format!("{value:.2} {}", UNITS[unit])
    }
}

/// Formats a rate in bytes per second, binary units: `482.3 MiB/s`.
pub fn format_bandwidth(bytes_per_s: f64) -> String {
    const UNITS: [&str; 5] = ["B/s", "KiB/s", "MiB/s", "GiB/s", "TiB/s"];
    let mut value = bytes_per_s;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

/// Formats a count per second with a decimal suffix: `123.4k`, `1.23M`.
pub fn format_rate(per_s: f64) -> String {
    if per_s >= 1e6 {
        format!("{:.2}M", per_s / 1e6)
    } else if per_s >= 1e3 {
        format!("{:.1}k", per_s / 1e3)
    } else {
        format!("{per_s:.1}")
    }
}

/// Formats nanoseconds with a unit chosen by magnitude: `850ns`, `12.3us`,
/// `4.56ms`, `1.20s`.
pub fn format_ns(ns: f64) -> String {
    if ns < 1e3 {
        format!("{ns:.0}ns")
    } else if ns < 1e6 {
        format!("{:.1}us", ns / 1e3)
    } else if ns < 1e9 {
        format!("{:.2}ms", ns / 1e6)
    } else {
        format!("{:.2}s", ns / 1e9)
    }
}

/// A figure in a table or a note, short: three significant digits from 1
/// up (`4.56`, `12.3`, `123`, `4567`), three decimals from 0.01 (`0.012`),
/// an exponent below (`1.23e-4`), `0` for zero.
pub fn format_sig(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        "0".to_string()
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else if a >= 0.01 {
        format!("{v:.3}")
    } else {
        format!("{v:.2e}")
    }
}

/// Formats a duration compactly: `10s`, `1.5s`, `250ms`.
pub fn format_duration(d: Duration) -> String {
    format_ns(d.as_nanos() as f64)
}

/// A wall-clock span for people, to the second at most: `0.4s`, `12s`,
/// `3m20s`, `2h05m` (a sweep's time left, a run's length).
pub fn format_wall(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s < 10.0 {
        format!("{s:.1}s")
    } else if s < 60.0 {
        format!("{s:.0}s")
    } else if s < 3600.0 {
        format!("{}m{:02}s", (s / 60.0) as u64, (s % 60.0) as u64)
    } else {
        format!(
            "{}h{:02}m",
            (s / 3600.0) as u64,
            ((s % 3600.0) / 60.0) as u64
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_use_powers_of_1024() {
        assert_eq!(parse_size("4k"), Ok(4096));
        assert_eq!(parse_size("4K"), Ok(4096));
        assert_eq!(parse_size("4KiB"), Ok(4096));
        assert_eq!(parse_size("64k"), Ok(65536));
        assert_eq!(parse_size("1m"), Ok(1 << 20));
        assert_eq!(parse_size("1G"), Ok(1 << 30));
        assert_eq!(parse_size("2t"), Ok(2 << 40));
        assert_eq!(parse_size("512"), Ok(512));
        assert_eq!(parse_size("512b"), Ok(512));
        assert_eq!(parse_size(" 8k "), Ok(8192));
    }

    #[test]
    fn bad_sizes_are_refused() {
        for bad in ["", "k", "4q", "-4k", "4.5k", "four", "4 k", "0x10"] {
            assert!(
                matches!(parse_size(bad), Err(ParseError::Size(_))),
                "{bad:?} parsed"
            );
        }
        assert!(matches!(
            parse_size("99999999999999999999"),
            Err(ParseError::SizeOverflow(_))
        ));
        assert!(matches!(
            parse_size("100000000p"),
            Err(ParseError::SizeOverflow(_))
        ));
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("10"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("1m"), Ok(Duration::from_secs(60)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("1m30s"), Ok(Duration::from_secs(90)));
        for bad in ["", "abc", "2x", "-1s", "s"] {
            assert!(parse_duration(bad).is_err(), "{bad:?} parsed");
        }
        for huge in ["99999999999999999999999", "9999999999999999999h"] {
            assert_eq!(
                parse_duration(huge),
                Err(ParseError::DurationOverflow(huge.to_string()))
            );
        }
    }

    #[test]
    fn formatting() {
        assert_eq!(format_bytes(4096), "4 KiB");
        assert_eq!(format_bytes(1536 << 20), "1.50 GiB");
        assert_eq!(format_bytes(100), "100 B");
        assert_eq!(format_rate(123_456.0), "123.5k");
        assert_eq!(format_rate(2_340_000.0), "2.34M");
        assert_eq!(format_ns(850.0), "850ns");
        assert_eq!(format_ns(12_340.0), "12.3us");
        assert_eq!(format_ns(4_560_000.0), "4.56ms");
        assert_eq!(format_bandwidth(1024.0 * 1024.0 * 3.0), "3.0 MiB/s");
        assert_eq!(format_sig(0.0), "0");
        assert_eq!(format_sig(4567.8), "4568");
        assert_eq!(format_sig(12.34), "12.3");
        assert_eq!(format_sig(4.561), "4.56");
        assert_eq!(format_sig(0.0123), "0.012");
        assert_eq!(format_sig(0.000123), "1.23e-4");
        assert_eq!(format_wall(Duration::from_millis(400)), "0.4s");
        assert_eq!(format_wall(Duration::from_secs(200)), "3m20s");
        assert_eq!(format_wall(Duration::from_secs(7500)), "2h05m");
    }
}
