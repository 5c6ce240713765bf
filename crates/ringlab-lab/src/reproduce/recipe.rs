//! The recipe format: one TOML file per finding of the seeds, holding the
//! claim as quoted, the sweep plans that test it, the series the rule
//! compares and the rule itself. See `crates/ringlab-lab/recipes/README.md`.

use crate::plan::{parse_plan, Plan};
use anyhow::{anyhow, Result};
use indexmap::IndexMap;
use serde::Deserialize;

/// The built-in recipes, in the order `--list` shows them.
pub const BUILTIN: [(&str, &str); 18] = [
    (
        "sqpoll-one-core",
        include_str!("../../recipes/sqpoll-one-core.toml"),
    ),
    (
        "iou-vs-libaio-depth",
        include_str!("../../recipes/iou-vs-libaio-depth.toml"),
    ),
    ("iopoll", include_str!("../../recipes/iopoll.toml")),
    (
        "coop-taskrun-depth",
        include_str!("../../recipes/coop-taskrun-depth.toml"),
    ),
    (
        "coop-taskrun-thinkcycles",
        include_str!("../../recipes/coop-taskrun-thinkcycles.toml"),
    ),
    (
        "coop-taskrun-completion-thread",
        include_str!("../../recipes/coop-taskrun-completion-thread.toml"),
    ),
    (
        "async-pinned",
        include_str!("../../recipes/async-pinned.toml"),
    ),
    (
        "async-inode-lock",
        include_str!("../../recipes/async-inode-lock.toml"),
    ),
    (
        "fixed-files",
        include_str!("../../recipes/fixed-files.toml"),
    ),
    (
        "sqpoll-vs-two-threads",
        include_str!("../../recipes/sqpoll-vs-two-threads.toml"),
    ),
    (
        "sqpoll-shared-poller",
        include_str!("../../recipes/sqpoll-shared-poller.toml"),
    ),
    (
        "scylla-interfaces",
        include_str!("../../recipes/scylla-interfaces.toml"),
    ),
    (
        "wrk-epoll-vs-uring",
        include_str!("../../recipes/wrk-epoll-vs-uring.toml"),
    ),
    (
        "coop-taskrun-numa",
        include_str!("../../recipes/coop-taskrun-numa.toml"),
    ),
    (
        "coop-taskrun-irq-cores",
        include_str!("../../recipes/coop-taskrun-irq-cores.toml"),
    ),
    ("spdk", include_str!("../../recipes/spdk.toml")),
    (
        "sqpoll-cores-per-drive",
        include_str!("../../recipes/sqpoll-cores-per-drive.toml"),
    ),
    (
        "rocksdb-backends",
        include_str!("../../recipes/rocksdb-backends.toml"),
    ),
];

/// Titles of the five studies.
pub fn study_title(seed: &str) -> &'static str {
    match seed {
        "000" => "Exploring the Performance of the io_uring Kernel I/O Interface (thesis)",
        "001" => "Accelerating an HTTP Benchmark Tool with io_uring (thesis)",
        "002" => "Understanding Modern Storage APIs: libaio, SPDK and io_uring (paper)",
        "003" => "Async IO Benchmark: SQPOLL with shared kernel pollers (CS6465 report)",
        "004" => "How io_uring and eBPF Will Revolutionize Programming in Linux (ScyllaDB)",
        _ => "unknown study",
    }
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Recipe {
    pub name: String,
    /// 000-004.
    pub seed: String,
    /// Section, figure or table of the seed.
    pub section: String,
    /// The claim in one sentence.
    pub claim: String,
    /// The seed's own words, quoted exactly.
    pub quote: String,
    /// What it needs, for people: root, two CPUs, poll queues, nginx...
    #[serde(default)]
    pub needs: Vec<String>,
    /// What the machine is checked for: `cpus>=N`, `root`, `poll-queues`,
    /// `numa>=N`.
    #[serde(default)]
    pub requires: Vec<String>,
    /// Set when no experiment of ringlab can show the finding: always
    /// cannot-run, with this reason.
    #[serde(default)]
    pub unsupported: Option<String>,
    /// The x axis of plots and per-point comparisons (an axis of the sweeps).
    #[serde(default)]
    pub x: Option<String>,
    #[serde(default)]
    pub runtime: Runtime,
    /// Operations a run must complete to count [default: 20]: a run that
    /// did fewer is left out of every verdict.
    #[serde(default)]
    pub min_ops: Option<f64>,
    /// How the recipe adapts to this machine, said in the verdict.
    #[serde(default)]
    pub scale_note: Option<String>,
    #[serde(default)]
    pub sweep: Vec<SweepSpec>,
    /// A process that runs while the sweeps run (an HTTP server, a writer).
    #[serde(default)]
    pub background: Option<Background>,
    #[serde(default)]
    pub series: IndexMap<String, SeriesSpec>,
    #[serde(default)]
    pub figure: Option<Figure>,
    #[serde(default)]
    pub check: Vec<Check>,
    #[serde(default)]
    pub plot: Option<PlotSpec>,
    /// The seed's numbers, drawn beside ours.
    #[serde(default)]
    pub paper: Vec<PaperSeries>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Runtime {
    pub default: String,
    pub quick: String,
}

impl Default for Runtime {
    fn default() -> Self {
        Runtime {
            default: "4s".into(),
            quick: "1s".into(),
        }
    }
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweepSpec {
    pub name: String,
    pub command: String,
    /// Repeats at the default scale [default and least: 5].
    #[serde(default)]
    pub repeats: Option<u32>,
    /// Repeats under --quick [default and least: 3].
    #[serde(default)]
    pub quick_repeats: Option<u32>,
    /// Which file the io runs use: `target` (the laid-out file or --target),
    /// `scratch` (always the laid-out file: the runs write), `tmpfs` (a file
    /// in /dev/shm), `cached` (a file on the results' file system, read into
    /// the page cache before each sweep: a hot cache), `raw` (a raw block
    /// device: --target when it is one, else /dev/zram0; only read).
    #[serde(default)]
    pub file: Option<String>,
    /// CPUs the sweep's children run on (their affinity is inherited).
    #[serde(default)]
    pub cpus: Option<String>,
    #[serde(default)]
    pub options: toml::Table,
    #[serde(default)]
    pub axes: toml::Table,
    /// Axes replaced under --quick (fewer points).
    #[serde(default)]
    pub quick_axes: Option<toml::Table>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Background {
    /// `serve` (ringlab serve or nginx when installed) or `io` (ringlab io).
    pub command: String,
    #[serde(default)]
    pub args: Vec<String>,
    #[serde(default)]
    pub cpus: Option<String>,
    /// For `serve`: use nginx when it is installed.
    #[serde(default)]
    pub prefer_nginx: bool,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SeriesSpec {
    pub sweep: String,
    /// The axis that is this series' x, when not the recipe's.
    #[serde(default)]
    pub x: Option<String>,
    #[serde(default)]
    pub select: toml::Table,
}

/// The claim's number and how ours is read for it.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Figure {
    pub value: f64,
    pub unit: String,
    /// `a` (series a of the check, reduced, times `scale`), `ratio` or
    /// `percent` (the check's a/b, or (a/b - 1) x 100).
    pub measure: String,
    /// 1-based number of the check it is read from.
    #[serde(default = "one")]
    pub check: usize,
    #[serde(default = "unit_scale")]
    pub scale: f64,
}

fn one() -> usize {
    1
}
fn unit_scale() -> f64 {
    1.0
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Check {
    /// What is compared, in words.
    pub what: String,
    /// The paper's side of it, in words with its numbers.
    pub paper: String,
    /// Dotted path in a result (`total.iops`) or a derived figure.
    pub metric: String,
    pub a: String,
    #[serde(default)]
    pub b: Option<String>,
    /// Take a at this x only (and b at `b_x`): compares two points.
    #[serde(default)]
    pub a_x: Option<toml::Value>,
    #[serde(default)]
    pub b_x: Option<toml::Value>,
    /// Only these x values.
    #[serde(default)]
    pub at: Option<Vec<toml::Value>>,
    /// mean (geometric, of per-point ratios), max, min, peak (max a / max b).
    #[serde(default = "mean")]
    pub reduce: String,
    /// greater, less, equal (a vs b); at-most, at-least (a vs `size`).
    pub expect: String,
    /// The claimed ratio (greater/less), the difference the study states
    /// (equal) or the limit (at-most/at-least; `tick_ns` is one timer tick).
    pub size: toml::Value,
    /// How far short of the claimed size still counts as the claim: the
    /// threshold is size / (1 + tolerance) for greater, size x (1 +
    /// tolerance) for less and at-most, limit / (1 + tolerance) for
    /// at-least.
    pub tolerance: f64,
    /// `equal` only: a/b inside 1 +- zone counts as equal (the zone of
    /// equivalence the interval must lie in).
    #[serde(default)]
    pub zone: Option<f64>,
}

fn mean() -> String {
    "mean".into()
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlotSpec {
    pub metric: String,
    /// `iops`, `latency` or `per-op`.
    pub unit: String,
    pub title: String,
    pub series: Vec<String>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PaperSeries {
    pub label: String,
    /// [x, y] in the plot metric's unit (IOPS, ns); x is the series name
    /// when the recipe has no x axis.
    pub points: Vec<(toml::Value, f64)>,
}

const EXPECTS: [&str; 5] = ["greater", "less", "equal", "at-most", "at-least"];
const REDUCES: [&str; 4] = ["mean", "max", "min", "peak"];

/// Parses and checks one recipe; errors name the recipe and what is wrong.
pub fn parse_recipe(text: &str, name: &str) -> Result<Recipe> {
    let r: Recipe =
        toml::from_str(text).map_err(|e| anyhow!("recipe {name}: {}", e.message().trim()))?;
    let bad = |m: String| anyhow!("recipe {name}: {m}");
    if r.name != name {
        return Err(bad(format!("names itself {}", r.name)));
    }
    if r.unsupported.is_none() && r.sweep.is_empty() {
        return Err(bad("has no [[sweep]] and is not marked unsupported".into()));
    }
    for (label, s) in &r.series {
        if !r.sweep.iter().any(|w| w.name == s.sweep) {
            return Err(bad(format!(
                "series {label} names sweep {}, which is not there",
                s.sweep
            )));
        }
    }
    for c in &r.check {
        for s in std::iter::once(&c.a).chain(c.b.iter()) {
            if !r.series.contains_key(s) {
                return Err(bad(format!(
                    "check '{}' names series {s}, not defined",
                    c.what
                )));
            }
        }
        if !EXPECTS.contains(&c.expect.as_str()) {
            return Err(bad(format!("check '{}': expect = {}", c.what, c.expect)));
        }
        if !REDUCES.contains(&c.reduce.as_str()) {
            return Err(bad(format!("check '{}': reduce = {}", c.what, c.reduce)));
        }
        if (c.expect == "equal") != c.zone.is_some() {
            return Err(bad(format!(
                "check '{}': expect {} {} a zone (the equivalence zone of equal claims)",
                c.what,
                c.expect,
                if c.expect == "equal" {
                    "needs"
                } else {
                    "takes no"
                }
            )));
        }
        let pair = matches!(c.expect.as_str(), "greater" | "less" | "equal");
        if pair != c.b.is_some() {
            return Err(bad(format!(
                "check '{}': expect {} {} a series b",
                c.what,
                c.expect,
                if pair { "needs" } else { "takes no" }
            )));
        }
    }
    if let Some(f) = r.figure.as_ref().filter(|_| r.unsupported.is_none()) {
        if f.check == 0 || f.check > r.check.len() {
            return Err(bad(format!("figure reads check {}, not there", f.check)));
        }
        if !["a", "ratio", "percent"].contains(&f.measure.as_str()) {
            return Err(bad(format!("figure measure = {}", f.measure)));
        }
    }
    if let Some(p) = &r.plot {
        for s in &p.series {
            if !r.series.contains_key(s) {
                return Err(bad(format!("plot names series {s}, not defined")));
            }
        }
    }
    Ok(r)
}

/// Every built-in recipe, parsed.
pub fn builtin() -> Result<Vec<Recipe>> {
    BUILTIN
        .iter()
        .map(|(name, text)| parse_recipe(text, name))
        .collect()
}

/// How long and how wide the runs are.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scale {
    Default,
    Quick,
    /// Tests: every run this long (quick axes), small files.
    Tiny(std::time::Duration),
}

/// Values the recipes' `@name` placeholders stand for on this machine.
pub type Vars = IndexMap<String, String>;

/// Least repeats per point at the default scale and under --quick.
pub const MIN_REPEATS: u32 = 5;
pub const MIN_QUICK_REPEATS: u32 = 3;
/// Repeats each further round adds while a check is undecided.
pub const ROUND_REPEATS: u32 = 2;

impl Recipe {
    /// Repeats of the first round of a sweep at `scale`: the recipe's
    /// number, never below 5 (3 under --quick and in tests).
    pub fn repeats(&self, sweep: &SweepSpec, scale: Scale) -> u32 {
        match scale {
            Scale::Default => sweep.repeats.unwrap_or(MIN_REPEATS).max(MIN_REPEATS),
            _ => sweep
                .quick_repeats
                .unwrap_or(MIN_QUICK_REPEATS)
                .max(MIN_QUICK_REPEATS),
        }
    }

    /// The sweep's plan at `scale`, placeholders replaced: round 0 is the
    /// first round; each later round (adaptive repetition) is
    /// [`ROUND_REPEATS`] more repeats, in another shuffled order.
    pub fn plan(&self, sweep: &SweepSpec, scale: Scale, vars: &Vars, round: u32) -> Result<Plan> {
        let mut table = toml::Table::new();
        table.insert("command".into(), sweep.command.clone().into());
        let repeats = if round == 0 {
            self.repeats(sweep, scale)
        } else {
            ROUND_REPEATS
        };
        table.insert("repeats".into(), i64::from(repeats).into());
        table.insert("shuffle".into(), true.into());
        if round > 0 {
            table.insert("seed".into(), i64::from(round).into());
        }
        let mut options = substitute_table(&sweep.options, vars)?;
        let runtime = match scale {
            Scale::Default => self.runtime.default.clone(),
            Scale::Quick => self.runtime.quick.clone(),
            Scale::Tiny(d) => format!("{}ms", d.as_millis().max(1)),
        };
        match sweep.command.as_str() {
            // `ringlab rocksdb --duration` is whole seconds (db_bench's).
            "rocksdb" => {
                let d = ringlab_stats::units::parse_duration(&runtime)
                    .map_err(|e| anyhow!("recipe {}: runtime {runtime}: {e}", self.name))?;
                let secs = d.as_secs_f64().ceil().max(1.0) as i64;
                options.insert("duration".into(), secs.into());
            }
            "http" => {
                options.insert("duration".into(), runtime.into());
            }
            _ => {
                options.insert("runtime".into(), runtime.into());
            }
        }
        let axes = match (&sweep.quick_axes, scale) {
            (Some(q), Scale::Quick | Scale::Tiny(_)) => q,
            _ => &sweep.axes,
        };
        let mut axes = substitute_table(axes, vars)?;
        if sweep.command == "rocksdb"
            && matches!(scale, Scale::Tiny(_))
            && axes.contains_key("keys")
        {
            // Tests: a database that fills in a moment.
            axes.insert("keys".into(), toml::Value::Array(vec![20000.into()]));
        }
        table.insert("options".into(), options.into());
        table.insert("axes".into(), axes.into());
        let text = format!(
            "# recipe {}, sweep {} (ringlab reproduce)\n{}",
            self.name,
            sweep.name,
            toml::to_string(&table)?
        );
        parse_plan(&text, &format!("recipe {} sweep {}", self.name, sweep.name))
    }
}

fn substitute_table(t: &toml::Table, vars: &Vars) -> Result<toml::Table> {
    t.iter()
        .map(|(k, v)| Ok((k.clone(), substitute(v, vars)?)))
        .collect()
}

/// Replaces `@name` strings by the machine's value.
fn substitute(v: &toml::Value, vars: &Vars) -> Result<toml::Value> {
    Ok(match v {
        toml::Value::String(s) if s.starts_with('@') => {
            let key = &s[1..];
            let value = vars
                .get(key)
                .ok_or_else(|| anyhow!("placeholder {s} has no value on this machine"))?;
            match value.parse::<i64>() {
                Ok(i) => toml::Value::Integer(i),
                Err(_) => toml::Value::String(value.clone()),
            }
        }
        toml::Value::Array(a) => toml::Value::Array(
            a.iter()
                .map(|x| substitute(x, vars))
                .collect::<Result<_>>()?,
        ),
        other => other.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_recipe_parses_and_plans() {
        let recipes = builtin().unwrap();
        assert_eq!(recipes.len(), BUILTIN.len());
        let mut vars = Vars::new();
        for k in ["target", "scratch", "tmpfs", "cached", "raw", "url"] {
            vars.insert(k.into(), format!("/x/{k}"));
        }
        vars.insert("two_cpus".into(), "0,1".into());
        for k in ["irq_cpu", "other_cpu"] {
            vars.insert(k.into(), "1".into());
        }
        for r in &recipes {
            for s in &r.sweep {
                for scale in [Scale::Default, Scale::Quick] {
                    let plan = r.plan(s, scale, &vars, 0).unwrap();
                    assert!(plan.combinations() >= 1, "{}", r.name);
                }
            }
            for c in &r.check {
                assert!(c.tolerance > 0.0, "{}: a tolerance is stated", r.name);
            }
        }
    }

    #[test]
    fn the_readme_quotes_every_recipe_with_its_section() {
        let readme = include_str!("../../recipes/README.md");
        for r in builtin().unwrap() {
            let at = readme
                .find(&format!("### `{}`", r.name))
                .unwrap_or_else(|| panic!("recipes/README.md has no entry for {}", r.name));
            let entry = &readme[at..];
            let entry = &entry[..entry[4..].find("### ").map_or(entry.len(), |e| e + 4)];
            assert!(
                entry.contains(&r.section),
                "{}: section not in its entry",
                r.name
            );
            assert!(
                entry.contains(&r.quote),
                "{}: quote not in its entry",
                r.name
            );
        }
    }

    #[test]
    fn a_series_naming_a_missing_sweep_is_refused() {
        let text = r#"
name = "x"
seed = "000"
section = "s"
claim = "c"
quote = "q"
[[sweep]]
name = "a"
command = "io"
[series.s]
sweep = "b"
"#;
        let e = parse_recipe(text, "x").unwrap_err().to_string();
        assert!(e.contains("names sweep b"), "{e}");
    }
}
