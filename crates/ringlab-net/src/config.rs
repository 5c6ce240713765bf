//! The `config` of a `ringlab http` result, typed: written from the plan,
//! read back by the text report. Keys are the long flag names; durations in
//! seconds.

use clap::ValueEnum;
use ringlab_core::uring::knobs::{Kind, Offered, UringOptions, KNOBS};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

/// How a client thread drives its sockets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum IoKind {
    /// wrk's design: non-blocking sockets and epoll_wait.
    Epoll,
    /// io_uring, each operation submitted as it is prepared and each
    /// completion waited for on its own (the thesis's io_uring-nb).
    #[value(name = "uring-nb")]
    UringNb,
    /// io_uring, operations of all connections submitted and reaped in
    /// batches once per loop turn (the thesis's io_uring); receives are
    /// multishot into a provided buffer ring where the kernel has it (6.0).
    Uring,
    /// uring plus registered socket descriptors, SINGLE_ISSUER and
    /// DEFER_TASKRUN always (multishot receive into a provided buffer ring).
    #[value(name = "uring-mshot")]
    UringMshot,
}

impl IoKind {
    pub fn name(self) -> &'static str {
        match self {
            IoKind::Epoll => "epoll",
            IoKind::UringNb => "uring-nb",
            IoKind::Uring => "uring",
            IoKind::UringMshot => "uring-mshot",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct HttpConfig {
    pub url: String,
    pub threads: u32,
    pub connections: u32,
    /// Seconds.
    pub duration: f64,
    /// Seconds.
    pub timeout: f64,
    pub latency: bool,
    /// wrk2's -U: the uncorrected distribution printed too.
    #[serde(rename = "u_latency", default)]
    pub u_latency: bool,
    /// Percentiles --latency prints; `None` for the defaults.
    #[serde(default)]
    pub percentile_list: Option<Vec<f64>>,
    /// -n: total responses that end the run.
    #[serde(default)]
    pub requests: Option<u64>,
    /// -s: the wrk Lua script.
    #[serde(default)]
    pub script: Option<String>,
    /// Arguments after `--`, for the script's init(args).
    #[serde(default)]
    pub script_args: Option<Vec<String>>,
    pub header: Vec<String>,
    pub method: String,
    pub body: Option<String>,
    pub pipeline: u32,
    /// Requests per second (open loop); `None` in closed loop.
    pub rate: Option<f64>,
    pub io: IoKind,
    /// The ring knobs `ringlab http` offers, one key per flag.
    #[serde(flatten)]
    pub ring: HttpRing,
    pub no_kstat: bool,
    /// --evidence; `default` in results made before it existed.
    #[serde(default)]
    pub evidence: ringlab_kstat::Level,
    /// Which ring knobs ringlab chose by default (the default ring), rather
    /// than the command line; empty in results made before.
    #[serde(default)]
    pub default_knobs: Vec<String>,
}

/// The ring of the uring drivers; serialized as the knobs of the table
/// offered to `ringlab http`, and only those.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HttpRing(pub UringOptions);

impl HttpRing {
    /// The offered knobs that are on, by flag name, in table order.
    pub fn on(&self) -> Vec<&'static str> {
        KNOBS
            .iter()
            .filter(|k| k.offered == Offered::IoAndHttp && k.kind != Kind::Preset)
            .filter(|k| k.is_on(&self.0))
            .map(|k| k.flag)
            .collect()
    }
}

impl Serialize for HttpRing {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let offered: Vec<_> = KNOBS
            .iter()
            .filter(|k| k.offered == Offered::IoAndHttp)
            .collect();
        let mut m = s.serialize_map(Some(offered.len()))?;
        for k in offered {
            m.serialize_entry(k.flag, &(k.get)(&self.0))?;
        }
        m.end()
    }
}

impl<'de> Deserialize<'de> for HttpRing {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<HttpRing, D::Error> {
        UringOptions::deserialize(d).map(HttpRing)
    }
}

impl HttpConfig {
    /// As the `config` object of a result.
    pub fn to_map(&self) -> Map<String, Value> {
        match serde_json::to_value(self) {
            Ok(Value::Object(m)) => m,
            // A struct of plain fields always serializes to an object.
            _ => Map::new(),
        }
    }

    /// Reads a result's `config` back.
    pub fn from_map(c: &Map<String, Value>) -> serde_json::Result<HttpConfig> {
        serde_json::from_value(Value::Object(c.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ringlab_stats::RunResult;

    /// A result written before the config was typed.
    const V1: &str = include_str!("../../ringlab/tests/fixtures/result-v1-http.json");

    #[test]
    fn a_result_from_before_the_typed_config_reads_back_the_same() {
        let r: RunResult = serde_json::from_str(V1).unwrap();
        let c = HttpConfig::from_map(&r.config).unwrap();
        assert_eq!(c.io, IoKind::Uring);
        assert_eq!(c.ring.on(), vec!["coop-taskrun"]);
        let back = c.to_map();
        for (k, v) in &r.config {
            assert_eq!(back.get(k), Some(v), "{k}");
        }
        assert_eq!(back["no-sqarray"], false);
        assert!(!back.contains_key("reap"), "only the knobs http offers");
    }
}
