//! Comparing two sets of repeats: the one statistics layer that
//! `reproduce`, `advise`, `compare` and `report` share.
//!
//! - [`Effect::of`]: the ratio of two medians with a 95% bootstrap
//!   confidence interval over the repeats (criterion.rs resamples the same
//!   way) and a Mann-Whitney U p-value (Go's benchstat uses the same test:
//!   no normality assumed, exact for the small samples benchmarks have).
//! - [`bootstrap`]: the same interval for any reduction over several points
//!   (a geometric mean of per-point ratios, their maximum, ...).
//! - [`outliers`]: repeats that disagree wildly with the others (the
//!   modified z-score of Iglewicz and Hoaglin, the rule hyperfine warns by).
//! - [`run_problems`]: a run too short or with too few operations to count.
//!
//! Every random draw comes from a fixed seed, so the same repeats give the
//! same interval on every machine and in every test.

/// Resamples per interval: enough for stable 2.5/97.5 percentiles.
pub const BOOTSTRAP_RESAMPLES: usize = 2000;
/// The seed of every bootstrap.
pub const BOOTSTRAP_SEED: u64 = 0x5eed_1e55_0f5e_ed00;
/// Two-sided significance level of the p-value (benchstat's alpha).
pub const ALPHA: f64 = 0.05;
/// A repeat whose modified z-score exceeds this is an outlier (Iglewicz
/// and Hoaglin's recommended cut).
pub const OUTLIER_Z: f64 = 3.5;

/// Median (mean of the two middle values for an even count).
pub fn median(values: &[f64]) -> Option<f64> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// A 95% interval.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Interval {
    pub lo: f64,
    pub hi: f64,
}

impl Interval {
    pub fn contains(&self, x: f64) -> bool {
        self.lo <= x && x <= self.hi
    }
}

/// Where an interval lies against a threshold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// Wholly at or above.
    Above,
    /// Wholly below.
    Below,
    /// Holds the threshold.
    Straddles,
}

impl Side {
    pub fn of(iv: Interval, threshold: f64) -> Side {
        if iv.lo >= threshold {
            Side::Above
        } else if iv.hi < threshold {
            Side::Below
        } else {
            Side::Straddles
        }
    }
}

/// a against b: the ratio of medians, its interval, the p-value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Effect {
    /// median(a) / median(b).
    pub ratio: f64,
    pub interval: Interval,
    /// Two-sided Mann-Whitney U p-value of a against b.
    pub p_value: f64,
    pub n_a: usize,
    pub n_b: usize,
}

impl Effect {
    /// `None` when a side has no finite value or b's median is 0.
    pub fn of(a: &[f64], b: &[f64]) -> Option<Effect> {
        let (a, b) = (finite(a), finite(b));
        let ratio = median(&a)? / nonzero(median(&b)?)?;
        let interval = bootstrap(
            &[(a.clone(), b.clone())],
            |pairs| Some(pairs.first()?.0 / nonzero(pairs.first()?.1)?),
            BOOTSTRAP_SEED,
        )?;
        Some(Effect {
            ratio,
            interval,
            p_value: mann_whitney_p(&a, &b),
            n_a: a.len(),
            n_b: b.len(),
        })
    }

    /// Significant at [`ALPHA`].
    pub fn significant(&self) -> bool {
        self.p_value < ALPHA
    }

    /// The one rule by which `compare`, `report` and `advise` say a
    /// difference was measured (and print `~` where not): the 95% interval
    /// excludes 1 and the Mann-Whitney p-value is below [`ALPHA`]. Where the
    /// repeats are too few for the test ever to reach [`ALPHA`] (3 against
    /// 3: p is 0.1 at best), the level is [`FLOOR_ALPHA`] instead, which
    /// only every repeat of one side beyond every repeat of the other
    /// reaches; fewer repeats than that show no difference at all.
    pub fn differs(&self) -> bool {
        let p_ok = if self.weak_level() {
            self.p_value <= FLOOR_ALPHA + 1e-9
        } else {
            self.p_value < ALPHA
        };
        !self.interval.contains(1.0) && p_ok
    }

    /// The p-value level [`Effect::differs`] holds this comparison to:
    /// [`ALPHA`] (p below it), or [`FLOOR_ALPHA`] (p at or below it) where
    /// the counts cannot reach [`ALPHA`].
    pub fn level(&self) -> f64 {
        if self.weak_level() {
            FLOOR_ALPHA
        } else {
            ALPHA
        }
    }

    /// Whether the counts forced the weaker level [`FLOOR_ALPHA`].
    pub fn weak_level(&self) -> bool {
        smallest_p(self.n_a, self.n_b) >= ALPHA
    }

    /// For tables: `+12% [+8.0%, +15%]` where [`Effect::differs`], `~`
    /// where not (benchstat's mark).
    pub fn delta(&self) -> String {
        if self.differs() {
            percent_with_interval(self.ratio, self.interval)
        } else {
            "~".to_string()
        }
    }
}

/// What `~` means, for the legend under every table that prints
/// [`Effect::delta`].
pub const TILDE_LEGEND: &str = "~: no difference measured (the 95% bootstrap interval over the repeats holds 1, or the Mann-Whitney U p-value is 0.05 or more; where the repeats are too few to reach 0.05, a difference needs p <= 0.1, every repeat of one side beyond every repeat of the other)";

/// The weakest p-value level a difference is ever shown at: where the
/// repeats are too few for [`ALPHA`], a difference needs p <= 0.1 (every
/// repeat of one side beyond every repeat of the other, for 3 against 3).
pub const FLOOR_ALPHA: f64 = 0.1;

/// The smallest two-sided p-value the exact Mann-Whitney test can give for
/// `n_a` against `n_b` distinct values: 2 / C(n_a + n_b, n_a) (1.0 for an
/// empty side).
pub fn smallest_p(n_a: usize, n_b: usize) -> f64 {
    if n_a == 0 || n_b == 0 {
        return 1.0;
    }
    // C(n, k) as a product, in f64 (exact far past any repeat count).
    let (n, k) = (n_a + n_b, n_a.min(n_b));
    let c = (0..k).fold(1.0, |c, i| c * (n - i) as f64 / (i + 1) as f64);
    (2.0 / c).min(1.0)
}

fn finite(v: &[f64]) -> Vec<f64> {
    v.iter().copied().filter(|x| x.is_finite()).collect()
}

fn nonzero(x: f64) -> Option<f64> {
    (x != 0.0).then_some(x)
}

/// splitmix64: a tiny, fixed generator (the interval must not change with
/// a library's algorithm).
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// 95% percentile-bootstrap interval of `reduce` over points, each point a
/// pair of repeat sets (a, b): every resample draws each set's repeats with
/// replacement and hands `reduce` the (median a, median b) of every point.
/// `None` when a set is empty or fewer than half the resamples reduce to a
/// finite value.
pub fn bootstrap(
    points: &[(Vec<f64>, Vec<f64>)],
    reduce: impl Fn(&[(f64, f64)]) -> Option<f64>,
    seed: u64,
) -> Option<Interval> {
    if points.is_empty() || points.iter().any(|(a, b)| a.is_empty() || b.is_empty()) {
        return None;
    }
    let mut rng = SplitMix(seed);
    let mut stats = Vec::with_capacity(BOOTSTRAP_RESAMPLES);
    let mut scratch = Vec::new();
    let mut draw = |set: &[f64], rng: &mut SplitMix| {
        scratch.clear();
        scratch.extend((0..set.len()).map(|_| set[rng.below(set.len())]));
        median(&scratch).unwrap_or(f64::NAN)
    };
    let mut medians = Vec::with_capacity(points.len());
    for _ in 0..BOOTSTRAP_RESAMPLES {
        medians.clear();
        for (a, b) in points {
            let ma = draw(a, &mut rng);
            let mb = draw(b, &mut rng);
            medians.push((ma, mb));
        }
        if let Some(s) = reduce(&medians).filter(|s| s.is_finite()) {
            stats.push(s);
        }
    }
    if stats.len() < BOOTSTRAP_RESAMPLES / 2 {
        return None;
    }
    stats.sort_by(f64::total_cmp);
    Some(Interval {
        lo: percentile_sorted(&stats, 0.025),
        hi: percentile_sorted(&stats, 0.975),
    })
}

/// 95% bootstrap interval of one set's median.
pub fn median_interval(values: &[f64]) -> Option<Interval> {
    let v = finite(values);
    bootstrap(&[(v, vec![1.0])], |p| Some(p.first()?.0), BOOTSTRAP_SEED)
}

fn percentile_sorted(s: &[f64], q: f64) -> f64 {
    let pos = q * (s.len() - 1) as f64;
    let (i, frac) = (pos.floor() as usize, pos - pos.floor());
    match s.get(i + 1) {
        Some(next) => s[i] + (next - s[i]) * frac,
        None => s[i],
    }
}

/// Two-sided p-value of the Mann-Whitney U test of a against b. Exact (the
/// permutation distribution of the rank sum, ties as midranks) up to 60
/// values in all; the normal approximation with tie correction above. 1.0
/// when a side is empty. With 3 repeats a side the smallest p possible is
/// 0.1: such a test cannot show significance, only an interval can.
pub fn mann_whitney_p(a: &[f64], b: &[f64]) -> f64 {
    let (a, b) = (finite(a), finite(b));
    let (n1, n2) = (a.len(), b.len());
    if n1 == 0 || n2 == 0 {
        return 1.0;
    }
    let mut all: Vec<(f64, bool)> = a
        .iter()
        .map(|&x| (x, true))
        .chain(b.iter().map(|&x| (x, false)))
        .collect();
    all.sort_by(|x, y| x.0.total_cmp(&y.0));
    // Doubled midranks: integers even with ties.
    let n = all.len();
    let mut rank2 = vec![0usize; n];
    let mut ties = Vec::new();
    let mut i = 0;
    while i < n {
        let mut j = i;
        while j + 1 < n && all[j + 1].0 == all[i].0 {
            j += 1;
        }
        for r in rank2.iter_mut().take(j + 1).skip(i) {
            *r = i + j + 2; // (i+1 + j+1)
        }
        ties.push(j - i + 1);
        i = j + 1;
    }
    let observed2: usize = (0..n).filter(|&k| all[k].1).map(|k| rank2[k]).sum();
    let mean2 = n1 as f64 * (n + 1) as f64; // doubled mean rank sum of a
    if n <= 60 {
        exact_p(&rank2, n1, observed2, mean2)
    } else {
        normal_p(n1, n2, observed2 as f64 / 2.0, &ties)
    }
}

/// P(|S - mean| >= |observed - mean|) over every choice of n1 of the ranks.
fn exact_p(rank2: &[usize], n1: usize, observed2: usize, mean2: f64) -> f64 {
    let max_sum: usize = rank2.iter().sum();
    // ways[k][s]: subsets of k ranks with doubled sum s (f64: counts reach
    // C(60,30), beyond u64's exactness but fine as a probability).
    let mut ways = vec![vec![0f64; max_sum + 1]; n1 + 1];
    ways[0][0] = 1.0;
    for &r in rank2 {
        for k in (1..=n1).rev() {
            let (lower, upper) = ways.split_at_mut(k);
            let prev = &lower[k - 1];
            let cur = &mut upper[0];
            for s in (r..=max_sum).rev() {
                if prev[s - r] != 0.0 {
                    cur[s] += prev[s - r];
                }
            }
        }
    }
    let total: f64 = ways[n1].iter().sum();
    let dist = (observed2 as f64 - mean2).abs();
    let extreme: f64 = ways[n1]
        .iter()
        .enumerate()
        .filter(|(s, _)| (*s as f64 - mean2).abs() >= dist - 1e-9)
        .map(|(_, w)| w)
        .sum();
    (extreme / total).min(1.0)
}

fn normal_p(n1: usize, n2: usize, rank_sum: f64, ties: &[usize]) -> f64 {
    let (n1f, n2f) = (n1 as f64, n2 as f64);
    let n = n1f + n2f;
    let u = rank_sum - n1f * (n1f + 1.0) / 2.0;
    let mu = n1f * n2f / 2.0;
    let tie_term: f64 = ties.iter().map(|&t| (t * t * t - t) as f64).sum::<f64>() / (n * (n - 1.0));
    let sigma = (n1f * n2f / 12.0 * ((n + 1.0) - tie_term)).sqrt();
    if sigma == 0.0 {
        return 1.0;
    }
    let z = ((u - mu).abs() - 0.5).max(0.0) / sigma;
    (2.0 * (1.0 - std_normal_cdf(z))).min(1.0)
}

fn std_normal_cdf(z: f64) -> f64 {
    0.5 * (1.0 + erf(z / std::f64::consts::SQRT_2))
}

/// Abramowitz-Stegun 7.1.26 (error below 1.5e-7).
fn erf(x: f64) -> f64 {
    let t = 1.0 / (1.0 + 0.327_591_1 * x.abs());
    let y = 1.0
        - (((((1.061_405_429 * t - 1.453_152_027) * t) + 1.421_413_741) * t - 0.284_496_736) * t
            + 0.254_829_592)
            * t
            * (-x * x).exp();
    if x >= 0.0 {
        y
    } else {
        -y
    }
}

/// Indices of the repeats whose modified z-score |0.6745 (x - median) /
/// MAD| exceeds [`OUTLIER_Z`]. With MAD 0 (most repeats equal) the mean
/// absolute deviation stands in (scaled by 1.2533, Iglewicz-Hoaglin); fewer
/// than 3 values have no outliers.
pub fn outliers(values: &[f64]) -> Vec<usize> {
    if values.len() < 3 {
        return Vec::new();
    }
    let Some(med) = median(values) else {
        return Vec::new();
    };
    let dev: Vec<f64> = values.iter().map(|x| (x - med).abs()).collect();
    let mad = median(&dev).unwrap_or(0.0);
    let scale = if mad > 0.0 {
        mad / 0.6745
    } else {
        1.253_314 * dev.iter().sum::<f64>() / dev.len() as f64
    };
    if scale <= 0.0 {
        return Vec::new();
    }
    dev.iter()
        .enumerate()
        .filter(|(_, d)| **d / scale > OUTLIER_Z)
        .map(|(i, _)| i)
        .collect()
}

/// What disqualifies a run from deciding anything: fewer operations than
/// `min_ops`, or a run that lasted under half the time asked. Empty for a
/// sane run; a figure not known is not held against it.
pub fn run_problems(
    ops: Option<f64>,
    min_ops: f64,
    elapsed_s: Option<f64>,
    asked_s: Option<f64>,
) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(ops) = ops.filter(|o| *o < min_ops) {
        out.push(format!(
            "did {ops:.0} operation(s), fewer than the {min_ops:.0} a figure needs"
        ));
    }
    if let (Some(e), Some(a)) = (elapsed_s, asked_s) {
        if a > 0.0 && e < a / 2.0 {
            out.push(format!("ran {e:.2} s of the {a:.2} s asked"));
        }
    }
    out
}

/// A ratio as a signed percentage for people: `+12%`, `-1.5%`.
pub fn percent(ratio: f64) -> String {
    let p = (ratio - 1.0) * 100.0;
    if !p.is_finite() {
        return "n/a".into();
    }
    let digits = if p.abs() < 10.0 { 1 } else { 0 };
    format!("{p:+.digits$}%")
}

/// `-1.5% [-9.0%, +6.0%]`.
pub fn percent_with_interval(ratio: f64, iv: Interval) -> String {
    format!(
        "{} [{}, {}]",
        percent(ratio),
        percent(iv.lo),
        percent(iv.hi)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_and_effect_of_separated_sets() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[]), None);
        let a = [110.0, 111.0, 109.0, 112.0, 110.5];
        let b = [100.0, 101.0, 99.0, 100.5, 99.5];
        let e = Effect::of(&a, &b).unwrap();
        assert!((e.ratio - 1.1).abs() < 0.01);
        assert!(e.interval.lo > 1.05 && e.interval.hi < 1.15, "{e:?}");
        // 5 vs 5 wholly separated: exact two-sided p = 2/252.
        assert!((e.p_value - 2.0 / 252.0).abs() < 1e-12, "{}", e.p_value);
        assert!(e.significant());
    }

    #[test]
    fn the_bootstrap_is_deterministic() {
        let a = [5.3, 18.6, 9.0, 12.0, 7.5];
        let b = [10.0, 11.0, 9.5, 10.5, 12.0];
        assert_eq!(Effect::of(&a, &b), Effect::of(&a, &b));
    }

    #[test]
    fn overlapping_sets_give_a_wide_interval_and_no_significance() {
        let a = [5.3, 18.6, 9.0, 12.0, 7.5];
        let b = [10.0, 11.0, 9.5, 10.5, 12.0];
        let e = Effect::of(&a, &b).unwrap();
        assert!(e.interval.contains(1.0), "{e:?}");
        assert!(!e.significant(), "{}", e.p_value);
    }

    #[test]
    fn exact_p_values_match_tables() {
        // 3 vs 3 wholly separated: 2/20, the smallest p possible.
        let p = mann_whitney_p(&[4.0, 5.0, 6.0], &[1.0, 2.0, 3.0]);
        assert!((p - 0.1).abs() < 1e-12, "{p}");
        // Identical sets: p = 1.
        let p = mann_whitney_p(&[1.0, 2.0, 3.0], &[1.0, 2.0, 3.0]);
        assert!((p - 1.0).abs() < 1e-12, "{p}");
        // All tied: p = 1.
        assert_eq!(mann_whitney_p(&[2.0; 4], &[2.0; 4]), 1.0);
        // Large samples use the normal approximation: separated -> tiny p.
        let a: Vec<f64> = (0..40).map(|i| 100.0 + i as f64).collect();
        let b: Vec<f64> = (0..40).map(|i| i as f64).collect();
        assert!(mann_whitney_p(&a, &b) < 1e-6);
    }

    #[test]
    fn an_outlier_is_flagged() {
        let v = [100.0, 101.0, 99.0, 100.5, 240.0];
        assert_eq!(outliers(&v), vec![4]);
        assert!(outliers(&[100.0, 101.0, 99.0, 100.5, 102.0]).is_empty());
        assert!(outliers(&[1.0, 2.0]).is_empty());
        // Most repeats equal: the mean deviation stands in for MAD.
        assert_eq!(outliers(&[5.0, 5.0, 5.0, 5.0, 5.0, 50.0]), vec![5]);
    }

    #[test]
    fn a_run_with_too_few_operations_or_cut_short_is_flagged() {
        let p = run_problems(Some(1.0), 100.0, Some(2.0), Some(2.0));
        assert_eq!(p.len(), 1);
        assert!(p[0].contains("1 operation"), "{p:?}");
        let p = run_problems(Some(5000.0), 100.0, Some(0.4), Some(2.0));
        assert!(p[0].contains("0.40 s of the 2.00 s"), "{p:?}");
        assert!(run_problems(Some(5000.0), 100.0, Some(2.0), Some(2.0)).is_empty());
        assert!(run_problems(None, 100.0, None, None).is_empty());
    }

    #[test]
    fn reductions_over_points_get_an_interval() {
        let pts = vec![
            (vec![120.0, 121.0, 119.0], vec![100.0, 101.0, 99.0]),
            (vec![240.0, 242.0, 238.0], vec![200.0, 202.0, 198.0]),
        ];
        let geo = |p: &[(f64, f64)]| {
            let s: f64 = p.iter().map(|(a, b)| (a / b).ln()).sum();
            Some((s / p.len() as f64).exp())
        };
        let iv = bootstrap(&pts, geo, 1).unwrap();
        assert!(iv.lo > 1.15 && iv.hi < 1.25, "{iv:?}");
        assert!(bootstrap(&[(vec![], vec![1.0])], geo, 1).is_none());
    }

    #[test]
    fn smallest_p_values_of_the_exact_test() {
        assert!((smallest_p(3, 3) - 0.1).abs() < 1e-12);
        assert!((smallest_p(5, 5) - 2.0 / 252.0).abs() < 1e-12);
        assert!((smallest_p(4, 4) - 2.0 / 70.0).abs() < 1e-12);
        assert_eq!(smallest_p(1, 1), 1.0);
        assert_eq!(smallest_p(0, 5), 1.0);
    }

    /// The rule on made-up repeat sets: a true effect inside the spread,
    /// at its edge and outside it, with 5 and with 3 repeats a side.
    #[test]
    fn the_difference_rule_on_made_up_repeat_sets() {
        let base = [100.0, 104.0, 96.0, 102.0, 98.0];
        let shifted = |d: f64| base.map(|x| x + d);
        // Inside the spread (+1%): no difference.
        let e = Effect::of(&shifted(1.0), &base).unwrap();
        assert!(!e.differs(), "{e:?}");
        assert_eq!(e.delta(), "~");
        // At the edge (+5%: the sets interleave by one repeat): the test
        // does not reach 0.05, so no difference either way of the interval.
        let e = Effect::of(&shifted(5.0), &base).unwrap();
        assert!(e.p_value >= ALPHA, "{e:?}");
        assert!(!e.differs(), "{e:?}");
        // Outside (+20%): measured, with its interval.
        let e = Effect::of(&shifted(20.0), &base).unwrap();
        assert!(e.differs() && !e.weak_level(), "{e:?}");
        assert!(e.delta().starts_with("+20%"), "{}", e.delta());
        // An outlier barely moves the median: still +22%, not +80%.
        let mut out = shifted(20.0);
        out[4] = 400.0;
        let e = Effect::of(&out, &base).unwrap();
        assert!(e.differs() && e.ratio < 1.25, "{e:?}");
        // An outlier the other way costs the test its power: with one
        // repeat of five below every other, p = 0.15, no difference.
        out[4] = 20.0;
        assert!(!Effect::of(&out, &base).unwrap().differs());
        // 3 a side: the test cannot reach 0.05; wholly separated sets
        // differ at the floor level 0.1, overlapping ones do not.
        let e = Effect::of(&[120.0, 121.0, 122.0], &[100.0, 101.0, 102.0]).unwrap();
        assert!(e.weak_level() && e.differs(), "{e:?}");
        let e = Effect::of(&[120.0, 99.0, 122.0], &[100.0, 101.0, 102.0]).unwrap();
        assert!(!e.differs(), "{e:?}");
        // 2 or 1 a side: never a difference.
        assert!(!Effect::of(&[200.0, 201.0], &[100.0, 101.0])
            .unwrap()
            .differs());
        assert!(!Effect::of(&[200.0], &[100.0]).unwrap().differs());
        // A set against itself: never.
        let e = Effect::of(&base, &base).unwrap();
        assert!(!e.differs() && e.delta() == "~", "{e:?}");
    }

    #[test]
    fn percentages_for_people() {
        assert_eq!(percent(0.985), "-1.5%");
        assert_eq!(percent(1.2), "+20%");
        assert_eq!(
            percent_with_interval(0.985, Interval { lo: 0.91, hi: 1.06 }),
            "-1.5% [-9.0%, +6.0%]"
        );
    }
}
