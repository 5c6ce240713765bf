//! fio's numbers: its unit rules (with the default kb_base=1024, `k`, `kb`
//! and `KB` are 1024 and `KiB` is 1000 — fio's "opposite units" — and the
//! other way round with kb_base=1000) and its arithmetic in values
//! (`8*1024*4096`, `(1m+512k)/2`), as fio's parse.c reads them. `ringlab
//! fio` turns such values into plain bytes before the shared translation.

/// One number with fio's unit suffix, in bytes.
fn term(text: &str, kb_base: u64) -> Result<f64, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    if num.is_empty() {
        return Err(format!("'{text}' is not a number"));
    }
    let n: f64 = num
        .parse()
        .map_err(|_| format!("'{text}' is not a number"))?;
    let unit = unit.trim().to_ascii_lowercase();
    let other = if kb_base == 1000 { 1024.0 } else { 1000.0 };
    let base = kb_base as f64;
    let (pow, mult) = match unit.as_str() {
        "" | "b" => (0, base),
        "kib" => (1, other),
        "mib" => (2, other),
        "gib" => (3, other),
        "tib" => (4, other),
        "pib" => (5, other),
        "k" | "kb" => (1, base),
        "m" | "mb" => (2, base),
        "g" | "gb" => (3, base),
        "t" | "tb" => (4, base),
        "p" | "pb" => (5, base),
        _ => {
            return Err(format!(
                "'{text}': unknown unit '{unit}' (fio's are k, m, g, t, p, with b or ib)"
            ))
        }
    };
    Ok(n * mult.powi(pow))
}

struct Expr<'a> {
    s: &'a [u8],
    i: usize,
    kb_base: u64,
}

impl Expr<'_> {
    fn peek(&mut self) -> Option<u8> {
        while self.i < self.s.len() && self.s[self.i] == b' ' {
            self.i += 1;
        }
        self.s.get(self.i).copied()
    }

    fn sum(&mut self) -> Result<f64, String> {
        let mut v = self.product()?;
        while let Some(c @ (b'+' | b'-')) = self.peek() {
            self.i += 1;
            let r = self.product()?;
            v = if c == b'+' { v + r } else { v - r };
        }
        Ok(v)
    }

    fn product(&mut self) -> Result<f64, String> {
        let mut v = self.atom()?;
        while let Some(c @ (b'*' | b'/' | b'%')) = self.peek() {
            self.i += 1;
            let r = self.atom()?;
            v = match c {
                b'*' => v * r,
                b'/' if r != 0.0 => (v / r).trunc(),
                b'%' if r != 0.0 => v % r,
                _ => return Err("division by zero".to_string()),
            };
        }
        Ok(v)
    }

    fn atom(&mut self) -> Result<f64, String> {
        match self.peek() {
            Some(b'(') => {
                self.i += 1;
                let v = self.sum()?;
                if self.peek() != Some(b')') {
                    return Err("a '(' without its ')'".to_string());
                }
                self.i += 1;
                Ok(v)
            }
            Some(_) => {
                let start = self.i;
                while self.i < self.s.len()
                    && (self.s[self.i].is_ascii_alphanumeric() || self.s[self.i] == b'.')
                {
                    self.i += 1;
                }
                let t = std::str::from_utf8(&self.s[start..self.i]).unwrap_or("");
                term(t, self.kb_base)
            }
            None => Err("an operator without a number after it".to_string()),
        }
    }
}

/// A size as fio reads it: a number with a unit, or arithmetic of them.
pub fn size(text: &str, kb_base: u64) -> Result<u64, String> {
    let mut e = Expr {
        s: text.trim().as_bytes(),
        i: 0,
        kb_base,
    };
    let v = e.sum()?;
    if e.peek().is_some() {
        return Err(format!("'{text}': not a size fio reads"));
    }
    if !(0.0..=u64::MAX as f64).contains(&v) {
        return Err(format!("'{text}': out of range"));
    }
    Ok(v.round() as u64)
}

/// Rewrites a size-valued option's text as plain bytes, keeping its
/// shape: `R,W` lists, `LO-HI` ranges, `SIZE/PCT:...` splits. A part that
/// is empty stays empty; a percentage (`50%`) is left for the caller.
pub fn plain(text: &str, kb_base: u64) -> Result<String, String> {
    let per_dir: Vec<String> = text
        .split(',')
        .map(|side| {
            side.split(':')
                .map(|entry| {
                    let (sz, pct) = match entry.split_once('/') {
                        Some((s, p)) => (s, Some(p)),
                        None => (entry, None),
                    };
                    let sz = if sz.trim().is_empty() || sz.contains('%') {
                        sz.trim().to_string()
                    } else if let Some((lo, hi)) = range(sz) {
                        format!("{}-{}", size(lo, kb_base)?, size(hi, kb_base)?)
                    } else {
                        size(sz, kb_base)?.to_string()
                    };
                    Ok(match pct {
                        Some(p) => format!("{sz}/{p}"),
                        None => sz,
                    })
                })
                .collect::<Result<Vec<_>, String>>()
                .map(|v| v.join(":"))
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(per_dir.join(","))
}

/// `LO-HI` (a '-' between two sizes, not a minus inside parentheses).
fn range(text: &str) -> Option<(&str, &str)> {
    if text.contains('(') {
        return None;
    }
    let (lo, hi) = text.split_once('-')?;
    (!lo.trim().is_empty() && !hi.trim().is_empty()).then_some((lo, hi))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fio_units_with_kb_base_1024() {
        assert_eq!(size("4k", 1024).unwrap(), 4096);
        assert_eq!(size("4KiB", 1024).unwrap(), 4000);
        assert_eq!(size("4kB", 1024).unwrap(), 4096);
        assert_eq!(size("1m", 1024).unwrap(), 1 << 20);
        assert_eq!(size("1MiB", 1024).unwrap(), 1_000_000);
        assert_eq!(size("4KiB", 1000).unwrap(), 4096);
        assert_eq!(size("4k", 1000).unwrap(), 4000);
        assert_eq!(size("512", 1024).unwrap(), 512);
    }

    #[test]
    fn fio_arithmetic() {
        assert_eq!(size("8*1024*4096", 1024).unwrap(), 32 << 20);
        assert_eq!(size("(1m+512k)/2", 1024).unwrap(), 768 << 10);
        assert!(size("4k+", 1024).is_err());
    }

    #[test]
    fn shapes_are_kept() {
        assert_eq!(plain("4k,64k", 1024).unwrap(), "4096,65536");
        assert_eq!(plain("4k-16k", 1024).unwrap(), "4096-16384");
        assert_eq!(plain("4k/50:64k/50", 1024).unwrap(), "4096/50:65536/50");
        assert_eq!(plain(",8k", 1024).unwrap(), ",8192");
        assert_eq!(plain("50%", 1024).unwrap(), "50%");
    }
}
