//! Sweep plans: the TOML file a person writes, validated into a [`Plan`],
//! expanded into the ordered list of [`PlannedRun`]s a sweep executes.
//!
//! Options and axis values become flags of the child command by their long
//! names; the list of flags is not known here on purpose, so that every flag
//! `ringlab io` or `ringlab http` grows is sweepable without touching this
//! file. The child rejects what it does not know (exit 2), and the sweep names
//! the run.

use crate::input::{read_text_limited, PLAN_MAX_BYTES};
use anyhow::Result;
use indexmap::IndexMap;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use ringlab_core::usage_error;
use serde::Deserialize;
use serde_json::{json, Value as Json};
use std::path::Path;
use std::time::Duration;
use toml::Spanned;

/// Commands a sweep can drive.
pub(crate) const COMMANDS: [&str; 3] = ["io", "http", "rocksdb"];
/// Seed of the shuffled order when the plan names none: fixed, so that a
/// resumed sweep follows the order of the first invocation.
pub(crate) const DEFAULT_SEED: u64 = 0x0005_eed0_f1ab;
/// Bounds that keep a typo (`repeats = 30000`) from planning a year of runs.
pub(crate) const REPEATS_MAX: i64 = 1000;
pub(crate) const RUNS_MAX: usize = 100_000;
/// Flags the sweep sets itself on every child.
const RESERVED_KEYS: [&str; 2] = ["output", "output-format"];

/// One value of an option or an axis.
#[derive(Clone, Debug, PartialEq)]
pub enum Scalar {
    Str(String),
    Int(i64),
    Float(f64),
    Bool(bool),
}

impl Scalar {
    pub fn to_json(&self) -> Json {
        match self {
            Scalar::Str(s) => json!(s),
            Scalar::Int(i) => json!(i),
            Scalar::Float(f) => json!(f),
            Scalar::Bool(b) => json!(b),
        }
    }

    /// The number, for numeric axes.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Scalar::Int(i) => Some(*i as f64),
            Scalar::Float(f) => Some(*f),
            _ => None,
        }
    }

    /// The value as a flag argument (booleans are handled by the caller).
    fn arg(&self) -> String {
        match self {
            Scalar::Str(s) => s.clone(),
            Scalar::Int(i) => i.to_string(),
            Scalar::Float(f) => f.to_string(),
            Scalar::Bool(b) => b.to_string(),
        }
    }
}

impl std::fmt::Display for Scalar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.arg())
    }
}

/// A fixed option: one value, or a list (a flag given several times).
#[derive(Clone, Debug, PartialEq)]
pub enum OptionValue {
    One(Scalar),
    Many(Vec<Scalar>),
}

/// A validated plan.
#[derive(Clone, Debug)]
pub struct Plan {
    pub command: String,
    pub repeats: u32,
    pub shuffle: bool,
    pub seed: u64,
    pub pause: Option<Duration>,
    pub options: IndexMap<String, OptionValue>,
    /// Swept flags, in the order the plan lists them (the first numeric one
    /// is the x axis of the report's plots).
    pub axes: IndexMap<String, Vec<Scalar>>,
    /// The plan file as written, kept in the results directory for people.
    pub text: String,
}

/// One run of a sweep: a combination of axis values and a repeat number.
#[derive(Clone, Debug, PartialEq)]
pub struct PlannedRun {
    /// Stable name: its index in the unshuffled order, zero-padded.
    pub id: String,
    /// Axis name -> value, in axis order.
    pub values: IndexMap<String, Scalar>,
    /// 1-based repeat number.
    pub repeat: u32,
    /// Arguments after `ringlab`: the command, its flags and positional.
    pub args: Vec<String>,
}

impl PlannedRun {
    /// `engine=uring iodepth=4`, for progress lines and errors.
    pub fn label(&self) -> String {
        let mut parts: Vec<String> = self
            .values
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        parts.push(format!("repeat {}", self.repeat));
        parts.join(" ")
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPlan {
    command: Spanned<String>,
    repeats: Option<Spanned<i64>>,
    shuffle: Option<bool>,
    seed: Option<Spanned<i64>>,
    pause: Option<Spanned<toml::Value>>,
    #[serde(default)]
    options: IndexMap<String, Spanned<toml::Value>>,
    #[serde(default)]
    axes: IndexMap<String, Spanned<toml::Value>>,
}

/// Reads and validates a plan file. Every error is a [`ringlab_core::UsageError`]
/// of one line: `PLAN:LINE: what is wrong; how to fix it`.
pub fn load_plan(path: &Path) -> Result<Plan> {
    let text = read_text_limited(path, PLAN_MAX_BYTES).map_err(|e| {
        usage_error(format!(
            "plan {}: {e}: name a readable plan file (TOML, see README 'Sweeps')",
            path.display()
        ))
    })?;
    parse_plan(&text, &path.display().to_string())
}

/// Parses plan text; `name` is how errors refer to the file.
pub(crate) fn parse_plan(text: &str, name: &str) -> Result<Plan> {
    let at = |span: std::ops::Range<usize>| format!("{name}:{}", line_of(text, span.start));
    let raw = parse_toml(text, name, &at)?;

    let command = raw.command.get_ref().clone();
    if !COMMANDS.contains(&command.as_str()) {
        return Err(usage_error(format!(
            "{}: command = \"{command}\": a sweep drives \"rocksdb\", \"io\" or \"http\"",
            at(raw.command.span())
        )));
    }

    let repeats = match &raw.repeats {
        None => 1,
        Some(r) => {
            let n = *r.get_ref();
            if !(1..=REPEATS_MAX).contains(&n) {
                return Err(usage_error(format!(
                    "{}: repeats = {n}: give a number of repeats from 1 to {REPEATS_MAX}",
                    at(r.span())
                )));
            }
            n as u32
        }
    };

    let seed = match &raw.seed {
        None => DEFAULT_SEED,
        Some(s) if *s.get_ref() < 0 => {
            return Err(usage_error(format!(
                "{}: seed = {}: the seed is a whole number of 0 or more",
                at(s.span()),
                s.get_ref()
            )))
        }
        Some(s) => *s.get_ref() as u64,
    };

    let pause = match &raw.pause {
        None => None,
        Some(p) => Some(parse_pause(p.get_ref()).ok_or_else(|| {
            usage_error(format!(
                "{}: pause = {}: give a duration such as \"500ms\" or \"2s\"",
                at(p.span()),
                p.get_ref()
            ))
        })?),
    };

    let options = parse_options(&raw.options, &at)?;
    let axes = parse_axes(&raw.axes, &options, &at)?;

    let plan = Plan {
        command,
        repeats,
        shuffle: raw.shuffle.unwrap_or(false),
        seed,
        pause,
        options,
        axes,
        text: text.to_string(),
    };
    let runs = plan.combinations().saturating_mul(plan.repeats as usize);
    if runs > RUNS_MAX {
        return Err(usage_error(format!(
            "{name}: the plan has {runs} runs, more than {RUNS_MAX}: fewer axis values or repeats"
        )));
    }
    Ok(plan)
}

/// The plan's TOML, its syntax and field types checked; an error names
/// the line.
fn parse_toml(
    text: &str,
    name: &str,
    at: &dyn Fn(std::ops::Range<usize>) -> String,
) -> Result<RawPlan> {
    toml::from_str(text).map_err(|e| {
        let place = match e.span() {
            Some(span) => at(span),
            None => name.to_string(),
        };
        let msg = e.message().trim().replace('\n', " ");
        let hint = if msg.contains("missing field `command`") {
            "; add command = \"io\" or \"http\""
        } else {
            ""
        };
        usage_error(format!("{place}: {msg}{hint}"))
    })
}

/// `[options]`: each flag fixed to one value, or a list of values for a flag
/// that takes several.
fn parse_options(
    raw: &IndexMap<String, Spanned<toml::Value>>,
    at: &dyn Fn(std::ops::Range<usize>) -> String,
) -> Result<IndexMap<String, OptionValue>> {
    let mut options = IndexMap::new();
    for (key, value) in raw {
        let place = at(value.span());
        check_key(key, &place, "options")?;
        let v = match value.get_ref() {
            toml::Value::Array(items) => {
                let mut list = Vec::new();
                for item in items {
                    list.push(scalar(item).ok_or_else(|| {
                        usage_error(format!("{place}: [options] {key}: the list holds {}, but an option's values are strings, numbers or booleans", kind(item)))
                    })?);
                }
                OptionValue::Many(list)
            }
            other => OptionValue::One(scalar(other).ok_or_else(|| {
                usage_error(format!(
                    "{place}: [options] {key} is {}: give a string, a number, a boolean or a list of them",
                    kind(other)
                ))
            })?),
        };
        options.insert(key.clone(), v);
    }
    Ok(options)
}

/// `[axes]`: each swept flag with its distinct values; a flag is fixed or
/// swept, not both.
fn parse_axes(
    raw: &IndexMap<String, Spanned<toml::Value>>,
    options: &IndexMap<String, OptionValue>,
    at: &dyn Fn(std::ops::Range<usize>) -> String,
) -> Result<IndexMap<String, Vec<Scalar>>> {
    let mut axes = IndexMap::new();
    for (key, value) in raw {
        let place = at(value.span());
        check_key(key, &place, "axes")?;
        if options.contains_key(key) {
            return Err(usage_error(format!(
                "{place}: [axes] {key} is also in [options]: a flag is either fixed or swept, remove one"
            )));
        }
        let toml::Value::Array(items) = value.get_ref() else {
            return Err(usage_error(format!(
                "{place}: [axes] {key} is {}, not a list: an axis lists the values to sweep, e.g. {key} = [{}]",
                kind(value.get_ref()),
                value.get_ref()
            )));
        };
        if items.is_empty() {
            return Err(usage_error(format!(
                "{place}: [axes] {key} is an empty list: give at least one value, or remove the axis"
            )));
        }
        let mut list: Vec<Scalar> = Vec::new();
        for item in items {
            let s = scalar(item).ok_or_else(|| {
                usage_error(format!(
                    "{place}: [axes] {key} holds {}: axis values are strings, numbers or booleans",
                    kind(item)
                ))
            })?;
            if list.contains(&s) {
                return Err(usage_error(format!(
                    "{place}: [axes] {key} lists {s} twice: use repeats to run a value more than once"
                )));
            }
            list.push(s);
        }
        axes.insert(key.clone(), list);
    }
    Ok(axes)
}

fn parse_pause(v: &toml::Value) -> Option<Duration> {
    match v {
        toml::Value::String(s) => ringlab_stats::units::parse_duration(s).ok(),
        toml::Value::Integer(i) if *i >= 0 => Some(Duration::from_secs(*i as u64)),
        toml::Value::Float(f) if *f >= 0.0 && f.is_finite() => Some(Duration::from_secs_f64(*f)),
        _ => None,
    }
}

fn check_key(key: &str, place: &str, table: &str) -> Result<()> {
    if key.starts_with('-') {
        return Err(usage_error(format!(
            "{place}: [{table}] {key}: write the flag's long name without dashes, e.g. {} = ...",
            key.trim_start_matches('-')
        )));
    }
    let ok = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if !ok {
        return Err(usage_error(format!(
            "{place}: [{table}] \"{key}\" is not a flag name: use the long name of a flag of the command, e.g. iodepth"
        )));
    }
    if RESERVED_KEYS.contains(&key) {
        return Err(usage_error(format!(
            "{place}: [{table}] {key}: the sweep sets --output and --output-format of each run itself; remove it"
        )));
    }
    Ok(())
}

fn scalar(v: &toml::Value) -> Option<Scalar> {
    match v {
        toml::Value::String(s) => Some(Scalar::Str(s.clone())),
        toml::Value::Integer(i) => Some(Scalar::Int(*i)),
        toml::Value::Float(f) => Some(Scalar::Float(*f)),
        toml::Value::Boolean(b) => Some(Scalar::Bool(*b)),
        toml::Value::Datetime(_) | toml::Value::Array(_) | toml::Value::Table(_) => None,
    }
}

fn kind(v: &toml::Value) -> &'static str {
    match v {
        toml::Value::String(_) => "a string",
        toml::Value::Integer(_) => "a number",
        toml::Value::Float(_) => "a number",
        toml::Value::Boolean(_) => "a boolean",
        toml::Value::Datetime(_) => "a date",
        toml::Value::Array(_) => "a list",
        toml::Value::Table(_) => "a table",
    }
}

/// 1-based line of a byte offset.
fn line_of(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    text.as_bytes()[..end]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

impl Plan {
    /// The flag that is the command's positional argument (`rocksdb` has
    /// none).
    pub fn positional_key(&self) -> &'static str {
        match self.command.as_str() {
            "http" => "url",
            "rocksdb" => "",
            _ => "target",
        }
    }

    /// Number of axis-value combinations (1 with no axes).
    pub fn combinations(&self) -> usize {
        self.axes
            .values()
            .fold(1usize, |n, v| n.saturating_mul(v.len()))
    }

    /// What identifies the plan's results: everything but the pause (which
    /// changes no result). A results directory holds runs of one identity.
    pub fn identity(&self) -> Json {
        let options: serde_json::Map<String, Json> = self
            .options
            .iter()
            .map(|(k, v)| {
                let j = match v {
                    OptionValue::One(s) => s.to_json(),
                    OptionValue::Many(l) => Json::Array(l.iter().map(Scalar::to_json).collect()),
                };
                (k.clone(), j)
            })
            .collect();
        let axes: serde_json::Map<String, Json> = self
            .axes
            .iter()
            .map(|(k, v)| {
                (
                    k.clone(),
                    Json::Array(v.iter().map(Scalar::to_json).collect()),
                )
            })
            .collect();
        json!({
            "command": self.command,
            "repeats": self.repeats,
            "shuffle": self.shuffle,
            "seed": self.seed,
            "options": options,
            "axes": axes,
        })
    }

    /// Every run, in the order the sweep executes them: shuffled with the
    /// plan's seed when `shuffle = true` (the same order on every
    /// invocation, so a resumed sweep continues the same sequence).
    pub fn runs(&self) -> Vec<PlannedRun> {
        let combos = self.combinations();
        let total = combos * self.repeats as usize;
        let width = total.saturating_sub(1).to_string().len().max(4);
        let mut runs = Vec::with_capacity(total);
        for c in 0..combos {
            let values = self.combination(c);
            for r in 0..self.repeats {
                let index = c * self.repeats as usize + r as usize;
                runs.push(PlannedRun {
                    id: format!("{index:0width$}"),
                    args: self.args(&values),
                    values: values.clone(),
                    repeat: r + 1,
                });
            }
        }
        if self.shuffle {
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(self.seed);
            // Fisher-Yates, written out so the order depends only on the
            // generator, not on a library's shuffle algorithm.
            for i in (1..runs.len()).rev() {
                let j = rng.random_range(0..=i);
                runs.swap(i, j);
            }
        }
        runs
    }

    /// The `index`-th combination, first axis varying slowest.
    fn combination(&self, mut index: usize) -> IndexMap<String, Scalar> {
        let mut picks = vec![0usize; self.axes.len()];
        for (slot, values) in self.axes.values().enumerate().rev() {
            picks[slot] = index % values.len();
            index /= values.len();
        }
        self.axes
            .iter()
            .zip(picks)
            .map(|((k, v), i)| (k.clone(), v[i].clone()))
            .collect()
    }

    /// The child's arguments for one combination: the command, the
    /// positional (target or url) if given, then every option and axis value
    /// as `--key value` (`true` as `--key`, `false` left out, a list as the
    /// flag repeated; `force-async = false` is `--force-async=0`, as its
    /// default depends on the target). One-letter keys become short flags (`t = 2` -> `-t 2`).
    pub fn args(&self, values: &IndexMap<String, Scalar>) -> Vec<String> {
        let mut args = vec![self.command.clone()];
        let positional = self.positional_key();
        let mut flags = Vec::new();
        let mut push = |key: &str, v: &Scalar| {
            if key == positional {
                args.push(v.arg());
                return;
            }
            let flag = if key.len() == 1 {
                format!("-{key}")
            } else {
                format!("--{key}")
            };
            match v {
                Scalar::Bool(true) => flags.push(flag),
                // IOSQE_ASYNC's default is the target's (on where it takes
                // no non-blocking I/O): off is said.
                Scalar::Bool(false) if key == "force-async" && self.command == "io" => {
                    flags.push(format!("{flag}=0"))
                }
                Scalar::Bool(false) => {}
                other => {
                    flags.push(flag);
                    flags.push(other.arg());
                }
            }
        };
        for (key, value) in &self.options {
            match value {
                OptionValue::One(s) => push(key, s),
                OptionValue::Many(list) => list.iter().for_each(|s| push(key, s)),
            }
        }
        for (key, value) in values {
            push(key, value);
        }
        args.extend(flags);
        args
    }

    /// Estimated time of the whole plan from a fixed `runtime`/`duration`
    /// option, pauses included; `None` when the plan does not fix it.
    pub fn estimated_duration(&self) -> Option<Duration> {
        let per_run =
            ["runtime", "duration", "d"]
                .iter()
                .find_map(|k| match self.options.get(*k) {
                    Some(OptionValue::One(Scalar::Str(s))) => {
                        ringlab_stats::units::parse_duration(s).ok()
                    }
                    Some(OptionValue::One(Scalar::Int(i))) if *i >= 0 => {
                        Some(Duration::from_secs(*i as u64))
                    }
                    _ => None,
                })?;
        let runs = (self.combinations() * self.repeats as usize) as u32;
        Some((per_run + self.pause.unwrap_or_default()) * runs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
command = "io"
repeats = 2
shuffle = true
pause = "10ms"
[options]
rw = "randread"
size = "8m"
direct = true
keep = false
target = "/tmp/x.dat"
[axes]
iodepth = [1, 4]
engine = ["sync", "uring"]
"#;

    fn err(text: &str) -> String {
        let e = parse_plan(text, "p.toml").unwrap_err();
        assert!(e.downcast_ref::<ringlab_core::UsageError>().is_some());
        format!("{e:#}")
    }

    #[test]
    fn a_good_plan_expands_to_every_combination_and_repeat() {
        let plan = parse_plan(GOOD, "p.toml").unwrap();
        assert_eq!(plan.pause, Some(Duration::from_millis(10)));
        assert_eq!(plan.axes.keys().collect::<Vec<_>>(), ["iodepth", "engine"]);
        let runs = plan.runs();
        assert_eq!(runs.len(), 8);
        let mut ids: Vec<_> = runs.iter().map(|r| r.id.clone()).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), 8, "ids are unique");
        let r0 = runs.iter().find(|r| r.id == "0000").unwrap();
        assert_eq!(r0.values["iodepth"], Scalar::Int(1));
        assert_eq!(r0.values["engine"], Scalar::Str("sync".into()));
        assert_eq!(r0.repeat, 1);
        assert_eq!(
            r0.args,
            [
                "io",
                "/tmp/x.dat",
                "--rw",
                "randread",
                "--size",
                "8m",
                "--direct",
                "--iodepth",
                "1",
                "--engine",
                "sync"
            ]
        );
        let r3 = runs.iter().find(|r| r.id == "0003").unwrap();
        assert_eq!(r3.label(), "iodepth=1 engine=uring repeat 2");
    }

    #[test]
    fn force_async_off_is_said_as_its_default_is_the_targets() {
        let plan = parse_plan(
            "command = \"io\"\n[options]\nkeep = false\n[axes]\nforce-async = [false, true]\n",
            "p",
        )
        .unwrap();
        let args: Vec<Vec<String>> = plan.runs().iter().map(|r| r.args.clone()).collect();
        assert_eq!(
            args,
            [vec!["io", "--force-async=0"], vec!["io", "--force-async"]]
        );
    }

    #[test]
    fn the_shuffled_order_is_reproducible_and_seeded() {
        let a = parse_plan(GOOD, "p").unwrap().runs();
        let b = parse_plan(GOOD, "p").unwrap().runs();
        assert_eq!(a, b);
        let ids: Vec<_> = a.iter().map(|r| r.id.as_str()).collect();
        let sorted: Vec<String> = (0..8).map(|i| format!("{i:04}")).collect();
        assert_ne!(ids, sorted, "shuffle = true changes the order");
        let other = parse_plan(&GOOD.replace("repeats = 2", "repeats = 2\nseed = 7"), "p")
            .unwrap()
            .runs();
        assert_ne!(a, other, "another seed, another order");
        let plain = parse_plan(&GOOD.replace("shuffle = true", "shuffle = false"), "p")
            .unwrap()
            .runs();
        let ids: Vec<_> = plain.iter().map(|r| r.id.clone()).collect();
        assert_eq!(ids, sorted);
    }

    #[test]
    fn lists_in_options_repeat_the_flag_and_url_is_positional() {
        let plan = parse_plan(
            "command = \"http\"\n[options]\nurl = \"http://127.0.0.1:8080/\"\nheader = [\"A: 1\", \"B: 2\"]\nt = 2\n[axes]\nconnections = [1, 10]\n",
            "p",
        )
        .unwrap();
        let runs = plan.runs();
        assert_eq!(
            runs[1].args,
            [
                "http",
                "http://127.0.0.1:8080/",
                "--header",
                "A: 1",
                "--header",
                "B: 2",
                "-t",
                "2",
                "--connections",
                "10"
            ]
        );
    }

    #[test]
    fn bad_toml_names_the_line() {
        let e = err("command = \"io\"\nrepeats = 2\n[axes]\niodepth = [1, 2\n");
        assert!(e.starts_with("p.toml:4:"), "{e}");
    }

    #[test]
    fn unknown_top_level_key_names_line_and_key() {
        let e = err("command = \"io\"\nrepeat = 2\n");
        assert!(e.starts_with("p.toml:2:"), "{e}");
        assert!(e.contains("repeat"), "{e}");
        assert!(e.contains("expected one of"), "{e}");
    }

    #[test]
    fn structural_mistakes_point_at_line_and_key() {
        let cases = [
            (
                "command = \"io\"\n[axes]\niodepth = 4\n",
                "p.toml:3:",
                "not a list",
            ),
            (
                "command = \"io\"\n[axes]\n\niodepth = []\n",
                "p.toml:4:",
                "empty list",
            ),
            (
                "command = \"fio\"\n",
                "p.toml:1:",
                "\"rocksdb\", \"io\" or \"http\"",
            ),
            (
                "command = \"io\"\nrepeats = 0\n",
                "p.toml:2:",
                "repeats = 0",
            ),
            ("command = \"io\"\npause = \"soon\"\n", "p.toml:2:", "pause"),
            (
                "command = \"io\"\n[options]\n\"--bs\" = \"4k\"\n",
                "p.toml:3:",
                "without dashes",
            ),
            (
                "command = \"io\"\n[options]\noutput = \"x\"\n",
                "p.toml:3:",
                "sets --output",
            ),
            (
                "command = \"io\"\n[options]\nbs = \"4k\"\n[axes]\nbs = [\"4k\"]\n",
                "p.toml:5:",
                "both",
            ),
            (
                "command = \"io\"\n[axes]\nbs = [\"4k\", \"4k\"]\n",
                "p.toml:3:",
                "twice",
            ),
            (
                "command = \"io\"\n[axes]\nbs = [[1]]\n",
                "p.toml:3:",
                "a list",
            ),
            ("repeats = 1\n", "p.toml", "command"),
        ];
        for (text, place, words) in cases {
            let e = err(text);
            assert!(e.starts_with(place), "{text:?}: {e}");
            assert!(
                e.contains(words) || (words == "both" && e.contains("also in [options]")),
                "{text:?}: {e}"
            );
            assert_eq!(e.lines().count(), 1, "{e}");
        }
    }

    #[test]
    fn identity_ignores_pause_only() {
        let a = parse_plan(GOOD, "p").unwrap();
        let b = parse_plan(&GOOD.replace("\"10ms\"", "\"1s\""), "p").unwrap();
        assert_eq!(a.identity(), b.identity());
        let c = parse_plan(&GOOD.replace("[1, 4]", "[1, 8]"), "p").unwrap();
        assert_ne!(a.identity(), c.identity());
    }

    #[test]
    fn estimate_uses_runtime_and_pause() {
        let plan =
            parse_plan("command = \"io\"\nrepeats = 3\npause = \"1s\"\n[options]\nruntime = \"2s\"\n[axes]\nbs = [\"4k\", \"8k\"]\n", "p").unwrap();
        assert_eq!(plan.estimated_duration(), Some(Duration::from_secs(18)));
    }
}
