//! Minimum, median and maximum of a figure over repeated runs: the one
//! summary report, advise and rocksdb print as `median (min-max)`.

/// Minimum, median (the mean of the two middle values for an even count)
/// and maximum of a set of values.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Spread {
    pub min: f64,
    pub median: f64,
    pub max: f64,
}

impl Spread {
    /// `None` for no values.
    pub fn of(values: &[f64]) -> Option<Spread> {
        if values.is_empty() {
            return None;
        }
        let mut v = values.to_vec();
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median = if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        };
        Some(Spread {
            min: v[0],
            median,
            max: v[n - 1],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn odd_and_even_counts() {
        assert_eq!(Spread::of(&[]), None);
        let s = Spread::of(&[3.0, 1.0, 2.0]).unwrap();
        assert_eq!((s.min, s.median, s.max), (1.0, 2.0, 3.0));
        let s = Spread::of(&[4.0, 1.0, 2.0, 3.0]).unwrap();
        assert_eq!((s.min, s.median, s.max), (1.0, 2.5, 4.0));
    }
}
