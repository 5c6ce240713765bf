//! The io_uring knob table: one record per knob, stated once. The clap
//! flags of `ringlab io` and `ringlab http` ([`super::cli`]), the resolved
//! options ([`UringOptions`], also the typed `config` of a result), the one
//! ring builder ([`super::ring`]), `ringlab features`, the evidence check and
//! the setup-error explanation all read it.
//!
//! Adding a knob is adding one row to [`knob_table!`] below (its field, its
//! flag, kernel name, release, kind, help, evidence and refusals) plus its
//! one place of effect: for a setup flag that is the bit in its row, which
//! the ring builder ORs in; for anything else the code that applies it.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Kernel setup flags (include/uapi/linux/io_uring.h).
pub mod setup {
    pub const IOPOLL: u32 = 1 << 0;
    pub const SQPOLL: u32 = 1 << 1;
    pub const SQ_AFF: u32 = 1 << 2;
    pub const CQSIZE: u32 = 1 << 3;
    pub const ATTACH_WQ: u32 = 1 << 5;
    pub const SUBMIT_ALL: u32 = 1 << 7;
    pub const COOP_TASKRUN: u32 = 1 << 8;
    pub const TASKRUN_FLAG: u32 = 1 << 9;
    pub const SINGLE_ISSUER: u32 = 1 << 12;
    pub const DEFER_TASKRUN: u32 = 1 << 13;
    pub const NO_SQARRAY: u32 = 1 << 16;
    pub const HYBRID_IOPOLL: u32 = 1 << 17;
}

/// IORING_MAX_REG_BUFFERS: the most buffers one ring can register.
pub const MAX_REGISTERED_BUFFERS: u32 = 1 << 14;
/// Twice IORING_MAX_CQ_ENTRIES' default cap on the CQ ring.
pub const CQ_SIZE_MAX: u32 = 1 << 17;

/// What kind of thing a knob is, and so how it is applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A preset of the seeds that turns on other knobs.
    Preset,
    /// An `io_uring_setup` flag: the ring builder ORs in `bit`.
    Setup { bit: u32 },
    /// A value passed to `io_uring_setup` with a setup flag (sq_thread_idle).
    SetupParam,
    /// An `io_uring_register` operation after setup.
    Registration,
    /// A flag on each submission queue entry.
    RequestFlag,
    /// How ringlab drives the ring (batch sizes, reaping): no kernel name.
    Ringlab,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Preset => "preset",
            Kind::Setup { .. } => "setup flag",
            Kind::SetupParam => "setup parameter",
            Kind::Registration => "registration",
            Kind::RequestFlag => "per-request flag",
            Kind::Ringlab => "ringlab option",
        }
    }
}

/// The shape of a knob's command-line flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arg {
    /// `--flag`
    Switch,
    /// `--flag VALUE`
    Value(&'static str),
    /// `--flag` or `--flag=VALUE`; alone it means `missing`.
    OptionalValue {
        name: &'static str,
        missing: &'static str,
    },
    /// `--flag NAME`, one of `values`.
    Choice(&'static str, &'static [&'static str]),
}

/// How a knob's figure is compared with its threshold.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Test {
    /// In effect when the figure is below the threshold.
    Below(f64),
    /// In effect when the figure is above the threshold.
    Above(f64),
    /// In effect when the figure is at least this fraction of what the
    /// knob's value makes expected (`--force-async=N`: 1/N per request).
    AtLeastOfExpected(f64),
}

/// What decides, from one run's counters, that a knob took effect: one
/// figure per request, one threshold, and why that threshold. The explain
/// step of ringlab-kstat applies it, for every command alike.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Proof {
    /// The figure, named as in a result's `kstat.per_op`
    /// (`io_uring_file_get_per_op`), or `sqpoll_cpu_us_per_op` (CPU time of
    /// the `iou-sqp-*` threads per request).
    pub figure: &'static str,
    pub test: Test,
    /// What the figure counts, for the evidence line (`file lookups`).
    pub what: &'static str,
    /// Why this threshold.
    pub why: &'static str,
}

/// The per-op figures that prove the knobs of `o` the user gave: every
/// knob that is on, has a proof, and is not among `defaults` (the ring
/// knobs ringlab chose by default). The kernel evidence counts them at
/// every level.
pub fn given_proofs(o: &UringOptions, defaults: &[&str]) -> Vec<&'static str> {
    KNOBS
        .iter()
        .filter(|k| k.is_on(o) && !defaults.contains(&k.flag))
        .filter_map(|k| k.proof.as_ref().map(|p| p.figure))
        .collect()
}

/// File lookups (`io_uring_file_get`) per request below which registered
/// files are in effect: the one threshold of the `fixed-files` row, also
/// the bar above which the `file-lookup-shared` diagnosis says the
/// lookups are there to save.
pub const FILE_LOOKUPS_PER_REQUEST: f64 = 0.1;

/// Multishot receive (`ringlab http --io uring` where the kernel has it,
/// `--io uring-mshot`): not a flag of the table but chosen by `--io`; its
/// proof, stated here beside the knobs'. A multishot receive is armed once
/// per connection; a single-shot receive sent right after its request
/// (IORING_RECVSEND_POLL_FIRST) arms a poll for every response.
pub const MULTISHOT_RECV_PROOF: Proof = Proof {
    figure: "io_uring_poll_arm_per_op",
    test: Test::Below(0.1),
    what: "poll arms",
    why: "a single-shot receive arms a poll about once per response, a multishot one once per connection; 0.1 leaves room for re-arming when the buffer ring runs dry",
};

/// Which command offers a knob as a flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Offered {
    /// `ringlab io --engine uring` only.
    Io,
    /// `ringlab io` and `ringlab http --io uring*`.
    IoAndHttp,
}

/// One io_uring knob.
pub struct Knob {
    /// The ringlab flag, without `--`; also its key in a result's `config`.
    pub flag: &'static str,
    /// The kernel's name (`IORING_SETUP_SQPOLL`); empty for ringlab options.
    pub kernel_name: &'static str,
    /// The first Linux release that has it.
    pub since: &'static str,
    pub kind: Kind,
    pub arg: Arg,
    pub offered: Offered,
    /// Help text of the flag.
    pub help: &'static str,
    /// Knobs it cannot be set up without (tried together when probing).
    pub needs: &'static [&'static str],
    /// What shows it in effect in the kernel evidence.
    pub evidence: &'static str,
    /// What the kernel refuses with it, and why.
    pub refused: &'static str,
    /// The one figure and threshold that show it took effect; `None` where
    /// no counter can tell (then `evidence` says what would).
    pub proof: Option<Proof>,
    /// The knob's value in resolved options.
    pub get: fn(&UringOptions) -> Value,
    /// Whether resolved options turn the knob on.
    pub on: fn(&UringOptions) -> bool,
    /// Sets the knob in resolved options from its command-line text (`None`
    /// for a switch).
    pub set: fn(&mut UringOptions, Option<&str>) -> anyhow::Result<()>,
}

impl Knob {
    /// The setup flag bit, for setup flags.
    pub fn setup_bit(&self) -> Option<u32> {
        match self.kind {
            Kind::Setup { bit } => Some(bit),
            _ => None,
        }
    }

    /// Whether `o` turns this knob on (a switch on, a value given, a
    /// count above 0).
    pub fn is_on(&self, o: &UringOptions) -> bool {
        (self.on)(o)
    }
}

/// Whether a knob's value means "on".
pub trait KnobOn {
    fn knob_on(&self) -> bool;
}

impl KnobOn for bool {
    fn knob_on(&self) -> bool {
        *self
    }
}

impl KnobOn for u32 {
    fn knob_on(&self) -> bool {
        *self > 0
    }
}

impl<T> KnobOn for Option<T> {
    fn knob_on(&self) -> bool {
        self.is_some()
    }
}

/// The seeds' named io_uring configurations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Mode {
    /// Default ring: interrupts, submission by io_uring_enter.
    #[serde(rename = "iou")]
    Iou,
    /// IOPOLL.
    #[serde(rename = "iou+p")]
    IouP,
    /// SQPOLL.
    #[serde(rename = "iou+k")]
    IouK,
    /// Registered files and buffers, as in the ScyllaDB article.
    #[serde(rename = "enhanced")]
    Enhanced,
}

impl Mode {
    pub const NAMES: &'static [&'static str] = &["iou", "iou+p", "iou+k", "enhanced"];

    pub fn name(self) -> &'static str {
        match self {
            Mode::Iou => "iou",
            Mode::IouP => "iou+p",
            Mode::IouK => "iou+k",
            Mode::Enhanced => "enhanced",
        }
    }
}

/// How the uring engine waits for completions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReapMode {
    /// Sleep in io_uring_enter until enough completions arrived.
    Wait,
    /// Enter without waiting (min_complete 0), over and over.
    Peek,
    /// Never enter for completions: spin on the completion ring.
    Spin,
}

impl ReapMode {
    pub const NAMES: &'static [&'static str] = &["wait", "peek", "spin"];

    pub fn name(self) -> &'static str {
        match self {
            ReapMode::Wait => "wait",
            ReapMode::Peek => "peek",
            ReapMode::Spin => "spin",
        }
    }
}

/// How a knob's command-line text becomes its field's value.
pub trait KnobText: Sized {
    fn from_knob_text(flag: &str, text: Option<&str>) -> anyhow::Result<Self>;
}

fn number(flag: &str, text: Option<&str>) -> anyhow::Result<u32> {
    let t = text.unwrap_or("");
    t.trim()
        .parse()
        .map_err(|_| crate::usage_error(format!("--{flag} {t}: not a whole number")))
}

impl KnobText for bool {
    fn from_knob_text(_: &str, _: Option<&str>) -> anyhow::Result<bool> {
        Ok(true)
    }
}

impl KnobText for u32 {
    fn from_knob_text(flag: &str, text: Option<&str>) -> anyhow::Result<u32> {
        number(flag, text)
    }
}

impl KnobText for Option<u32> {
    fn from_knob_text(flag: &str, text: Option<&str>) -> anyhow::Result<Option<u32>> {
        number(flag, text).map(Some)
    }
}

impl KnobText for Option<Mode> {
    fn from_knob_text(flag: &str, text: Option<&str>) -> anyhow::Result<Option<Mode>> {
        match text {
            Some("iou") => Ok(Some(Mode::Iou)),
            Some("iou+p") => Ok(Some(Mode::IouP)),
            Some("iou+k") => Ok(Some(Mode::IouK)),
            Some("enhanced") => Ok(Some(Mode::Enhanced)),
            other => crate::usage!("--{flag} {}: not a preset", other.unwrap_or("")),
        }
    }
}

impl KnobText for Option<ReapMode> {
    fn from_knob_text(flag: &str, text: Option<&str>) -> anyhow::Result<Option<ReapMode>> {
        match text {
            Some("wait") => Ok(Some(ReapMode::Wait)),
            Some("peek") => Ok(Some(ReapMode::Peek)),
            Some("spin") => Ok(Some(ReapMode::Spin)),
            other => crate::usage!("--{flag} {}: not a reap mode", other.unwrap_or("")),
        }
    }
}

impl KnobText for Option<[u32; 2]> {
    fn from_knob_text(flag: &str, text: Option<&str>) -> anyhow::Result<Option<[u32; 2]>> {
        let text = text.unwrap_or("");
        let parsed = text.split_once(',').and_then(|(b, u)| {
            Some([b.trim().parse::<u32>().ok()?, u.trim().parse::<u32>().ok()?])
        });
        match parsed {
            Some(limits) if limits != [0, 0] => Ok(Some(limits)),
            Some(_) => crate::usage!("--{flag} 0,0 changes nothing: give a limit for bounded (file I/O) or unbounded workers, like 4,0"),
            None => crate::usage!(
                "--{flag} {text}: write two numbers, bounded and unbounded workers, like 4,4 (0 leaves one as is)"
            ),
        }
    }
}

/// Generates [`UringOptions`] (one field per row, serialized under the
/// row's flag name) and [`KNOBS`] (the rows, in this order) from one list.
macro_rules! knob_table {
    ($( $field:ident : $ty:ty = $flag:literal { $($row:tt)* } )*) => {
        /// The resolved io_uring configuration of a run (presets expanded,
        /// defaults filled in, combinations checked); serialized as the
        /// knobs of a result's `config`, one key per flag.
        #[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
        #[serde(default)]
        pub struct UringOptions {
            $( #[serde(rename = $flag)] pub $field: $ty, )*
        }

        /// Every knob, in the order setup flags are tried when the kernel
        /// refuses a combination.
        pub static KNOBS: &[Knob] = &[
            $( Knob {
                flag: $flag,
                get: |o| serde_json::to_value(o.$field).unwrap_or(Value::Null),
                on: |o| KnobOn::knob_on(&o.$field),
                set: |o, text| {
                    o.$field = <$ty as KnobText>::from_knob_text($flag, text)?;
                    Ok(())
                },
                $($row)*
            }, )*
        ];
    };
}

const NO_EVIDENCE: &str = "no counter shows it; the ring was set up with it";

knob_table! {
    mode: Option<Mode> = "mode" {
        kernel_name: "", since: "-", kind: Kind::Preset, arg: Arg::Choice("MODE", Mode::NAMES),
        offered: Offered::IoAndHttp, needs: &[],
        help: "Preset of the studies: iou (the bare kernel ring, without the default COOP_TASKRUN, SINGLE_ISSUER and DEFER_TASKRUN), iou+p (--iopoll), iou+k (--sqpoll), enhanced (--fixed-files --fixed-buffers). Other knobs add to it. ringlab http takes iou only.",
        evidence: "the knobs it turns on", refused: "",
        proof: None,
    }
    iopoll: bool = "iopoll" {
        kernel_name: "IORING_SETUP_IOPOLL", since: "5.1",
        kind: Kind::Setup { bit: setup::IOPOLL }, arg: Arg::Switch, offered: Offered::Io, needs: &[],
        help: "IORING_SETUP_IOPOLL (Linux 5.1): completions are found by polling the device, not by interrupts; needs --direct and a device with poll queues.",
        evidence: "device interrupts per op near 0",
        refused: "buffered I/O and devices without poll queues (EOPNOTSUPP per request); --reap spin without SQPOLL (the device is polled only inside io_uring_enter)",
        proof: Some(Proof {
            figure: "device_interrupts_per_op", test: Test::Below(0.01), what: "device interrupts",
            why: "polled completions raise no interrupt; below 1 in 100 requests leaves room for the device's other work (flushes, other processes) and nothing for interrupt-driven completion, which raises up to one per request",
        }),
    }
    sqpoll: bool = "sqpoll" {
        kernel_name: "IORING_SETUP_SQPOLL", since: "5.1 (5.11 without root)",
        kind: Kind::Setup { bit: setup::SQPOLL }, arg: Arg::Switch, offered: Offered::IoAndHttp, needs: &[],
        help: "IORING_SETUP_SQPOLL (Linux 5.1; 5.11 without root): a kernel thread (iou-sqp-*) polls the submission ring, so submitting needs no system call. With ringlab io, completions are reaped by spinning unless --reap says otherwise.",
        evidence: "an iou-sqp-* thread with CPU time and near-zero io_uring_enter per op",
        refused: "COOP_TASKRUN, TASKRUN_FLAG and DEFER_TASKRUN (EINVAL: the poller thread, not yours, runs the completion work)",
        proof: Some(Proof {
            figure: "sqpoll_cpu_us_per_op", test: Test::Above(0.0), what: "poller CPU",
            why: "only an SQPOLL ring has an iou-sqp-* thread, and one that used CPU time took submissions from the ring; io_uring_enter per request is shown beside it, since a job that waits for completions (--reap wait, ringlab http) still enters to wait",
        }),
    }
    sqpoll_cpu: Option<u32> = "sqpoll-cpu" {
        kernel_name: "IORING_SETUP_SQ_AFF", since: "5.1",
        kind: Kind::Setup { bit: setup::SQ_AFF }, arg: Arg::Value("CPU"), offered: Offered::Io, needs: &["sqpoll"],
        help: "Pin the SQPOLL thread to this CPU (IORING_SETUP_SQ_AFF, Linux 5.1).",
        evidence: NO_EVIDENCE, refused: "a ring without SQPOLL; a CPU outside the process's affinity (EINVAL)",
        proof: None,
    }
    sqpoll_idle_ms: Option<u32> = "sqpoll-idle" {
        kernel_name: "sq_thread_idle", since: "5.1",
        kind: Kind::SetupParam, arg: Arg::Value("MS"), offered: Offered::Io, needs: &["sqpoll"],
        help: "Milliseconds the SQPOLL thread polls an empty ring before it sleeps [kernel default: 1000].",
        evidence: NO_EVIDENCE, refused: "a ring without SQPOLL",
        proof: None,
    }
    cq_size: Option<u32> = "cq-size" {
        kernel_name: "IORING_SETUP_CQSIZE", since: "5.5",
        kind: Kind::Setup { bit: setup::CQSIZE }, arg: Arg::Value("N"), offered: Offered::Io, needs: &[],
        help: "Completion ring entries (IORING_SETUP_CQSIZE, Linux 5.5) [default: twice the submission ring].",
        evidence: NO_EVIDENCE, refused: "fewer entries than the submission ring, more than IORING_MAX_CQ_ENTRIES (EINVAL)",
        proof: None,
    }
    attach_wq: bool = "attach-wq" {
        kernel_name: "IORING_SETUP_ATTACH_WQ", since: "5.6",
        kind: Kind::Setup { bit: setup::ATTACH_WQ }, arg: Arg::Switch, offered: Offered::Io, needs: &["sqpoll"],
        help: "IORING_SETUP_ATTACH_WQ (Linux 5.6): every job's ring shares one SQPOLL thread and one io-wq pool (seed 003's shared kernel pollers).",
        evidence: "one iou-sqp-* thread for all jobs", refused: "a ring without SQPOLL (ringlab: nothing to share)",
        proof: None,
    }
    submit_all: bool = "submit-all" {
        kernel_name: "IORING_SETUP_SUBMIT_ALL", since: "5.18",
        kind: Kind::Setup { bit: setup::SUBMIT_ALL }, arg: Arg::Switch, offered: Offered::IoAndHttp, needs: &[],
        help: "IORING_SETUP_SUBMIT_ALL (Linux 5.18): io_uring_enter submits the whole batch even if one request fails to be prepared, instead of stopping at it.",
        evidence: NO_EVIDENCE, refused: "",
        proof: None,
    }
    coop_taskrun: bool = "coop-taskrun" {
        kernel_name: "IORING_SETUP_COOP_TASKRUN", since: "5.19",
        kind: Kind::Setup { bit: setup::COOP_TASKRUN }, arg: Arg::Switch, offered: Offered::IoAndHttp, needs: &[],
        help: "IORING_SETUP_COOP_TASKRUN (Linux 5.19): completion work waits until the thread enters the kernel instead of interrupting it with an IPI.",
        evidence: "rescheduling IPIs per op (compare with a run without it)",
        refused: "SQPOLL (EINVAL)",
        proof: None,
    }
    taskrun_flag: bool = "taskrun-flag" {
        kernel_name: "IORING_SETUP_TASKRUN_FLAG", since: "5.19",
        kind: Kind::Setup { bit: setup::TASKRUN_FLAG }, arg: Arg::Switch, offered: Offered::Io, needs: &["coop-taskrun"],
        help: "IORING_SETUP_TASKRUN_FLAG (Linux 5.19): the kernel flags pending completion work in the ring, and --reap peek|spin enter to run it; needs --coop-taskrun or --defer-taskrun.",
        evidence: NO_EVIDENCE, refused: "alone, without COOP_TASKRUN or DEFER_TASKRUN (EINVAL); SQPOLL (EINVAL)",
        proof: None,
    }
    single_issuer: bool = "single-issuer" {
        kernel_name: "IORING_SETUP_SINGLE_ISSUER", since: "6.0",
        kind: Kind::Setup { bit: setup::SINGLE_ISSUER }, arg: Arg::Switch, offered: Offered::IoAndHttp, needs: &[],
        help: "IORING_SETUP_SINGLE_ISSUER (Linux 6.0): only the thread that set the ring up submits to it.",
        evidence: NO_EVIDENCE, refused: "entering the ring from another thread (EEXIST), so no --completion-thread",
        proof: None,
    }
    defer_taskrun: bool = "defer-taskrun" {
        kernel_name: "IORING_SETUP_DEFER_TASKRUN", since: "6.1",
        kind: Kind::Setup { bit: setup::DEFER_TASKRUN }, arg: Arg::Switch, offered: Offered::IoAndHttp, needs: &["single-issuer"],
        help: "IORING_SETUP_DEFER_TASKRUN (Linux 6.1): completion work runs only when the thread waits for completions; needs --single-issuer.",
        evidence: "io_uring_local_work_run per op above io_uring_task_work_run",
        refused: "alone, without SINGLE_ISSUER (EINVAL); SQPOLL (EINVAL); --reap spin (completions appear only inside io_uring_enter)",
        proof: Some(Proof {
            figure: "io_uring_local_work_run_per_op", test: Test::Above(0.0), what: "deferred (local) task work runs",
            why: "io_uring_local_work_run fires only for a DEFER_TASKRUN ring, so any run of it shows the completions' work deferred to the waiting thread; how often depends on the batch (about 1/depth per request), so no higher bar holds for every depth",
        }),
    }
    no_sqarray: bool = "no-sqarray" {
        kernel_name: "IORING_SETUP_NO_SQARRAY", since: "6.6",
        kind: Kind::Setup { bit: setup::NO_SQARRAY }, arg: Arg::Switch, offered: Offered::IoAndHttp, needs: &[],
        help: "IORING_SETUP_NO_SQARRAY (Linux 6.6): no index array between the submission ring and its entries; the kernel takes entries in ring order, one memory read less per request.",
        evidence: NO_EVIDENCE, refused: "",
        proof: None,
    }
    hybrid_iopoll: bool = "hybrid-iopoll" {
        kernel_name: "IORING_SETUP_HYBRID_IOPOLL", since: "6.13",
        kind: Kind::Setup { bit: setup::HYBRID_IOPOLL }, arg: Arg::Switch, offered: Offered::Io, needs: &["iopoll"],
        help: "IORING_SETUP_HYBRID_IOPOLL (Linux 6.13): with --iopoll, sleep about as long as a request usually takes before polling the device, trading a little latency for much less CPU; needs --iopoll.",
        evidence: "device interrupts per op near 0, as with --iopoll",
        refused: "alone, without IOPOLL (EINVAL), so everything IOPOLL refuses: buffered I/O, devices without poll queues",
        proof: Some(Proof {
            figure: "device_interrupts_per_op", test: Test::Below(0.01), what: "device interrupts",
            why: "as --iopoll: hybrid polling sleeps, then polls; it raises no interrupt either",
        }),
    }
    fixed_files: bool = "fixed-files" {
        kernel_name: "IORING_REGISTER_FILES", since: "5.1",
        kind: Kind::Registration, arg: Arg::Switch, offered: Offered::IoAndHttp, needs: &[],
        help: "Register the descriptors with the ring (IORING_REGISTER_FILES, Linux 5.1) and use IOSQE_FIXED_FILE, saving a file lookup per request.",
        evidence: "io_uring_file_get per request below 0.1", refused: "",
        proof: Some(Proof {
            figure: "io_uring_file_get_per_op", test: Test::Below(FILE_LOOKUPS_PER_REQUEST), what: "file lookups",
            why: "a request on a registered file looks nothing up: measured 0.000 per request for ringlab io --fixed-files, the RocksDB plugin's fixed_files and http sockets in the ring's table, against 1.0 per request (io, RocksDB) or 2 (http: send and receive) without; 0.1 leaves room for the lookups of setup (opening, connecting) in a short run",
        }),
    }
    fixed_buffers: bool = "fixed-buffers" {
        kernel_name: "IORING_REGISTER_BUFFERS", since: "5.1",
        kind: Kind::Registration, arg: Arg::Switch, offered: Offered::Io, needs: &[],
        help: "Register the I/O buffers with the ring (IORING_REGISTER_BUFFERS, Linux 5.1) and use READ_FIXED/WRITE_FIXED, saving the page pinning per request.",
        evidence: "no tracepoint shows buffer pinning; registration succeeded and READ_FIXED/WRITE_FIXED were used",
        refused: "more than IORING_MAX_REG_BUFFERS (16384) buffers; buffers beyond RLIMIT_MEMLOCK (ENOMEM)",
        proof: None,
    }
    force_async: u32 = "force-async" {
        kernel_name: "IOSQE_ASYNC", since: "5.6",
        kind: Kind::RequestFlag, arg: Arg::OptionalValue { name: "N", missing: "1" }, offered: Offered::Io, needs: &[],
        help: "IOSQE_ASYNC (Linux 5.6) on every request, or with =N on every Nth, =0 on none: the request goes straight to an io-wq worker thread [default: on every request where the target takes no non-blocking I/O (as /dev/zram0), where io_uring hands every request to io-wq anyway, after trying it inline; none elsewhere, and none with --mode iou].",
        evidence: "io_uring_queue_async_work per op about 1/N", refused: "",
        proof: Some(Proof {
            figure: "io_uring_queue_async_work_per_op", test: Test::AtLeastOfExpected(0.5), what: "io-wq offloads",
            why: "IOSQE_ASYNC hands every flagged request to io-wq, 1/N per request with =N, and without it a request that can be done without blocking is not offloaded at all: half of the expected figure is the midpoint between the two",
        }),
    }
    submit_batch: u32 = "submit-batch" {
        kernel_name: "", since: "-",
        kind: Kind::Ringlab, arg: Arg::Value("N"), offered: Offered::Io, needs: &[],
        help: "Hand requests to the kernel as soon as N are queued [default: once per loop turn, in the io_uring_enter that also waits]. 1 = one io_uring_enter per request.",
        evidence: "io_uring_enter per op", refused: "",
        proof: None,
    }
    complete_batch: u32 = "complete-batch" {
        kernel_name: "", since: "-",
        kind: Kind::Ringlab, arg: Arg::Value("N"), offered: Offered::Io, needs: &[],
        help: "Wait for at least N completions per reap (fio's iodepth_batch_complete_min) [default: 1].",
        evidence: "io_uring_enter per op", refused: "",
        proof: None,
    }
    complete_max: u32 = "complete-max" {
        kernel_name: "", since: "-",
        kind: Kind::Ringlab, arg: Arg::Value("N"), offered: Offered::Io, needs: &[],
        help: "Take at most N completions per reap, and refill before reaping more (fio's iodepth_batch_complete_max) [default: every completion that is ready].",
        evidence: "completions per reap (IO depths, complete)", refused: "",
        proof: None,
    }
    reap: Option<ReapMode> = "reap" {
        kernel_name: "", since: "-",
        kind: Kind::Ringlab, arg: Arg::Choice("REAP", ReapMode::NAMES), offered: Offered::Io, needs: &[],
        help: "How to wait for completions: wait (sleep in io_uring_enter), peek (enter without sleeping, repeatedly) or spin (poll the completion ring from user space) [default: wait; spin with --sqpoll].",
        evidence: "io_uring_enter and context switches per op", refused: "",
        proof: None,
    }
    completion_thread: Option<u32> = "completion-thread" {
        kernel_name: "", since: "-",
        kind: Kind::Ringlab, arg: Arg::Value("CPU"), offered: Offered::Io, needs: &[],
        help: "A second thread, pinned to CPU, reaps the completions and hands them to the job thread; latency is taken when that thread sees them (the case where COOP_TASKRUN delays completions by milliseconds).",
        evidence: "a ringlab-reaper thread", refused: "SINGLE_ISSUER and DEFER_TASKRUN (only the submitting thread may enter the ring)",
        proof: None,
    }
    register_ring: bool = "register-ring" {
        kernel_name: "IORING_REGISTER_RING_FDS", since: "5.18",
        kind: Kind::Registration, arg: Arg::Switch, offered: Offered::Io, needs: &[],
        help: "Register the ring's own descriptor (IORING_REGISTER_RING_FDS, Linux 5.18), saving a file lookup per io_uring_enter.",
        evidence: NO_EVIDENCE, refused: "",
        proof: None,
    }
    iowq_max_workers: Option<[u32; 2]> = "iowq-max-workers" {
        kernel_name: "IORING_REGISTER_IOWQ_MAX_WORKERS", since: "5.15",
        kind: Kind::Registration, arg: Arg::Value("B,U"), offered: Offered::Io, needs: &[],
        help: "Limit io-wq workers per NUMA node: bounded (file I/O) and unbounded (IORING_REGISTER_IOWQ_MAX_WORKERS, Linux 5.15); 0 leaves one as is.",
        evidence: "iou-wrk-* helper threads", refused: "",
        proof: None,
    }
}

/// The row of `flag`.
pub fn knob(flag: &str) -> Option<&'static Knob> {
    KNOBS.iter().find(|k| k.flag == flag)
}

/// The Linux release that introduced `flag`.
pub fn since(flag: &str) -> &'static str {
    knob(flag).map_or("?", |k| k.since)
}

impl UringOptions {
    /// The most completions one reap takes at queue depth `iodepth`:
    /// `--complete-max`, or without it every one that can be in flight.
    pub fn reap_cap(&self, iodepth: u32) -> u32 {
        match self.complete_max {
            0 => iodepth,
            n => n.min(iodepth),
        }
    }

    /// The setup flags `self` turns on, by flag name, in table order.
    pub fn setup_flag_names(&self) -> Vec<&'static str> {
        KNOBS
            .iter()
            .filter(|k| k.setup_bit().is_some() && k.is_on(self))
            .map(|k| k.flag)
            .collect()
    }

    /// The `io_uring_setup` flag bits `self` turns on.
    pub fn setup_bits(&self) -> u32 {
        KNOBS
            .iter()
            .filter(|k| k.is_on(self))
            .filter_map(Knob::setup_bit)
            .fold(0, |a, b| a | b)
    }

    /// The knobs as `config` entries of a result, by flag name.
    pub fn config_entries(&self) -> Vec<(&'static str, Value)> {
        KNOBS.iter().map(|k| (k.flag, (k.get)(self))).collect()
    }

    /// The options that turn on knob `flag` alone, with what it needs to
    /// be set up at all; `None` for a knob that is not a setup flag.
    pub fn single(flag: &str) -> Option<UringOptions> {
        let k = knob(flag)?;
        k.setup_bit()?;
        let mut one = UringOptions::default();
        for f in k.needs.iter().copied().chain([flag]) {
            let row = knob(f)?;
            let sample = match row.arg {
                Arg::Value(_) if f == "cq-size" => Some("8"),
                Arg::Value(_) => Some("0"),
                _ => None,
            };
            (row.set)(&mut one, sample).ok()?;
        }
        Some(one)
    }

    /// The knobs in effect, as a person would type them (`--sqpoll --reap
    /// spin`), defaults and the preset name left out (the preset is already
    /// expanded into its knobs); empty for a default ring.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        let defaults = UringOptions::default();
        for k in KNOBS {
            let v = (k.get)(self);
            if k.kind == Kind::Preset || !k.is_on(self) || v == (k.get)(&defaults) {
                continue;
            }
            if k.flag == "complete-batch" && v == 1 {
                continue;
            }
            match (&v, k.arg) {
                (Value::Bool(true), _) => parts.push(format!("--{}", k.flag)),
                (_, Arg::OptionalValue { missing, .. })
                    if v.as_u64().map(|n| n.to_string()).as_deref() == Some(missing) =>
                {
                    parts.push(format!("--{}", k.flag))
                }
                (_, Arg::OptionalValue { .. }) => parts.push(format!("--{}={v}", k.flag)),
                (Value::Array(a), _) => parts.push(format!(
                    "--{} {}",
                    k.flag,
                    a.iter()
                        .map(|x| x.to_string())
                        .collect::<Vec<_>>()
                        .join(",")
                )),
                (Value::String(t), _) => parts.push(format!("--{} {t}", k.flag)),
                (other, _) => parts.push(format!("--{} {other}", k.flag)),
            }
        }
        parts.join(" ")
    }
}

/// Refuses what the kernel refuses whatever the command: knobs that need
/// another (from the table's `needs`) and setup flags SQPOLL excludes.
/// `via(flag)` names how a knob was turned on (`--sqpoll` or `--mode iou+k
/// (SQPOLL)`).
pub fn check_combinations(o: &UringOptions, via: &dyn Fn(&str) -> String) -> anyhow::Result<()> {
    let on = |flag: &str| knob(flag).is_some_and(|k| k.is_on(o));
    if o.defer_taskrun && !o.single_issuer {
        crate::usage!("--defer-taskrun needs --single-issuer (the kernel refuses it alone): add --single-issuer");
    }
    if o.sqpoll {
        for flag in ["coop-taskrun", "defer-taskrun", "taskrun-flag"] {
            if on(flag) {
                crate::usage!(
                    "--{flag} cannot be combined with {}: the kernel refuses it (EINVAL), since with SQPOLL the poller thread, not yours, runs the completion work; drop one of them",
                    via("sqpoll")
                );
            }
        }
    }
    if o.taskrun_flag && !o.coop_taskrun && !o.defer_taskrun {
        crate::usage!("--taskrun-flag needs --coop-taskrun or --defer-taskrun (the kernel refuses it alone): add one");
    }
    for k in KNOBS
        .iter()
        .filter(|k| k.is_on(o) && k.flag != "taskrun-flag")
    {
        if let Some(need) = k.needs.iter().find(|n| !on(n)) {
            if *need == "sqpoll" {
                crate::usage!(
                    "--{} only applies to an SQPOLL ring: add --sqpoll (or --mode iou+k)",
                    k.flag
                );
            }
            crate::usage!(
                "--{} needs --{need} (the kernel refuses it alone: {}): add --{need}",
                k.flag,
                k.refused
            );
        }
    }
    Ok(())
}

/// The knobs of the default ring, where the kernel has them: what fio
/// (3.33+) and t/io_uring set up, and the seeds' advice for a ring one
/// thread owns.
pub const DEFAULT_RING: &[&str] = &["coop-taskrun", "single-issuer", "defer-taskrun"];

/// Who drives the ring, for choosing its default knobs.
pub struct RingUse<'a> {
    /// The flags the user gave.
    pub given: &'a [&'static str],
    /// A second thread enters the ring to wait (`--completion-thread`).
    pub completion_thread: bool,
    /// The job reaps by spinning on the completion ring without entering.
    pub spins: bool,
    /// Deferring completion work to the waits pays: false where each wait
    /// finds one or two completions (an HTTP client thread with few
    /// connections), where DEFER_TASKRUN costs more than it batches.
    pub defer_pays: bool,
}

/// Turns on, in `o`, the default-ring knobs that fit this use and that
/// `kernel_has`; returns them (recorded in the result as chosen by
/// default). None with `--mode iou` (the bare kernel ring), with SQPOLL
/// (the kernel refuses task-run flags with it), when the user chose any of
/// them, or when the job spins (completion work would wait for an entry
/// that never comes); COOP_TASKRUN alone with a completion thread (the
/// kernel refuses SINGLE_ISSUER and DEFER_TASKRUN when two threads enter);
/// no DEFER_TASKRUN where deferring does not pay (`RingUse::defer_pays`).
pub fn apply_default_ring(
    o: &mut UringOptions,
    u: &RingUse,
    kernel_has: &dyn Fn(&str) -> bool,
) -> Vec<&'static str> {
    let chose = u
        .given
        .iter()
        .any(|g| DEFAULT_RING.contains(g) || *g == "taskrun-flag");
    if o.mode == Some(Mode::Iou) || o.sqpoll || chose || u.spins {
        return Vec::new();
    }
    let wanted: &[&'static str] = if u.completion_thread {
        &["coop-taskrun"]
    } else if !u.defer_pays {
        &DEFAULT_RING[..2]
    } else {
        DEFAULT_RING
    };
    let mut on = Vec::new();
    for &flag in wanted {
        let fits = knob(flag).is_some_and(|k| k.needs.iter().all(|n| on.contains(n)));
        if fits && kernel_has(flag) {
            if let Some(k) = knob(flag) {
                if (k.set)(o, None).is_ok() {
                    on.push(flag);
                }
            }
        }
    }
    on
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_is_consistent() {
        let o = UringOptions::default();
        for (i, k) in KNOBS.iter().enumerate() {
            assert!(
                KNOBS[..i].iter().all(|p| p.flag != k.flag),
                "{} twice",
                k.flag
            );
            assert!(!k.is_on(&o), "{} on by default", k.flag);
            for n in k.needs {
                assert!(knob(n).is_some(), "{} needs unknown {n}", k.flag);
            }
            // A proof names a per-request figure, says what it counts and
            // why its one threshold; a knob without one says in words what
            // would show it.
            for p in k.proof.iter().chain([&MULTISHOT_RECV_PROOF]) {
                assert!(p.figure.ends_with("_per_op"), "{}", k.flag);
                assert!(!p.what.is_empty() && p.why.len() > 20, "{}", k.flag);
            }
            assert!(!k.evidence.is_empty(), "{}", k.flag);
            if let Kind::Setup { bit } = k.kind {
                assert_eq!(bit.count_ones(), 1, "{}", k.flag);
                assert!(k.kernel_name.starts_with("IORING_SETUP_"), "{}", k.flag);
                let one = UringOptions::single(k.flag).expect("setup flags can be tried alone");
                assert!(k.is_on(&one), "{}", k.flag);
                assert_eq!(one.setup_bits() & bit, bit, "{}", k.flag);
            }
        }
    }

    #[test]
    fn the_default_ring_fits_the_use_and_the_kernel() {
        let all = |_: &str| true;
        let use_ = |given: &'static [&'static str], completion_thread, spins| RingUse {
            given,
            completion_thread,
            spins,
            defer_pays: true,
        };
        let mut o = UringOptions::default();
        assert_eq!(
            apply_default_ring(&mut o, &use_(&[], false, false), &all),
            DEFAULT_RING
        );
        assert!(o.coop_taskrun && o.single_issuer && o.defer_taskrun);
        let mut o = UringOptions::default();
        let only_coop = apply_default_ring(&mut o, &use_(&[], true, false), &all);
        assert_eq!(only_coop, ["coop-taskrun"]);
        let mut o = UringOptions::default();
        let few = RingUse {
            defer_pays: false,
            ..use_(&[], false, false)
        };
        assert_eq!(
            apply_default_ring(&mut o, &few, &all),
            ["coop-taskrun", "single-issuer"]
        );
        assert!(o.coop_taskrun && o.single_issuer && !o.defer_taskrun);
        for (mut o, given) in [
            (
                UringOptions {
                    sqpoll: true,
                    ..Default::default()
                },
                &[][..],
            ),
            (
                UringOptions {
                    mode: Some(Mode::Iou),
                    ..Default::default()
                },
                &[][..],
            ),
            (UringOptions::default(), &["single-issuer"][..]),
        ] {
            let g: &'static [&'static str] = given;
            assert!(apply_default_ring(&mut o, &use_(g, false, false), &all).is_empty());
        }
        let mut o = UringOptions::default();
        assert!(apply_default_ring(&mut o, &use_(&[], false, true), &all).is_empty());
        // A kernel without SINGLE_ISSUER gets COOP_TASKRUN, and no
        // DEFER_TASKRUN (it needs SINGLE_ISSUER).
        let mut o = UringOptions::default();
        let old = |f: &str| f == "coop-taskrun" || f == "defer-taskrun";
        assert_eq!(
            apply_default_ring(&mut o, &use_(&[], false, false), &old),
            ["coop-taskrun"]
        );
        assert!(!o.defer_taskrun);
    }

    #[test]
    fn config_keys_are_the_flags_and_round_trip() {
        let mut o = UringOptions::default();
        (knob("force-async").unwrap().set)(&mut o, Some("4")).unwrap();
        (knob("iowq-max-workers").unwrap().set)(&mut o, Some("2, 0")).unwrap();
        (knob("sqpoll").unwrap().set)(&mut o, None).unwrap();
        (knob("reap").unwrap().set)(&mut o, Some("spin")).unwrap();
        let v = serde_json::to_value(&o).unwrap();
        assert_eq!(v["iowq-max-workers"], serde_json::json!([2, 0]));
        assert_eq!(v["reap"], "spin");
        let back: UringOptions = serde_json::from_value(v).unwrap();
        assert_eq!(back, o);
        assert_eq!(
            o.describe(),
            "--sqpoll --force-async=4 --reap spin --iowq-max-workers 2,0"
        );
        assert_eq!(since("defer-taskrun"), "6.1");
        assert_eq!(o.setup_flag_names(), vec!["sqpoll"]);
    }
}
