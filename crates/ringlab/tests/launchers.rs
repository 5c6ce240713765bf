//! Sharded runs launched by the engines people run: a one-node Slurm
//! cluster (munged, slurmctld and slurmd started here from a minimal
//! slurm.conf in a temporary directory, stopped at the end), Open MPI's
//! `mpirun`, and the Kubernetes manifests of deploy/kubernetes (parsed and
//! checked: no cluster here).

mod common;

use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const REPO: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

fn start_in(secs: f64) -> String {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    format!("{:.3}", now.as_secs_f64() + secs)
}

fn have(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A daemon in the foreground, killed and reaped when dropped.
struct Daemon(Child);

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// munged, slurmctld and slurmd of a one-node cluster in `dir`.
struct Slurm {
    conf: PathBuf,
    // Dropped in reverse: slurmd, slurmctld, then munged.
    _daemons: Vec<Daemon>,
}

impl Slurm {
    fn start(dir: &Path) -> Result<Slurm, String> {
        let host = sh("hostname", &["-s"])?;
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let key = dir.join("munge.key");
        let mut random = vec![0u8; 1024];
        {
            use std::io::Read;
            std::fs::File::open("/dev/urandom")
                .and_then(|mut f| f.read_exact(&mut random))
                .map_err(|e| format!("/dev/urandom: {e}"))?;
        }
        std::fs::write(&key, &random).map_err(|e| e.to_string())?;
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o400))
            .map_err(|e| e.to_string())?;
        let sock = dir.join("munge.sock");
        let p = |name: &str| dir.join(name).display().to_string();
        let mut daemons = Vec::new();
        let munged = Command::new("munged")
            .args([
                "-F",
                "-f",
                "-S",
                &p("munge.sock"),
                "--key-file",
                &p("munge.key"),
                "--log-file",
                &p("munged.log"),
                "--pid-file",
                &p("munged.pid"),
                "--seed-file",
                &p("munged.seed"),
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("munged: {e}"))?;
        daemons.push(Daemon(munged));
        wait_for(Duration::from_secs(10), || sock.exists()).map_err(|_| {
            format!(
                "munged did not create its socket: {}",
                log(dir, "munged.log")
            )
        })?;
        for d in ["state", "spool"] {
            std::fs::create_dir_all(dir.join(d)).map_err(|e| e.to_string())?;
        }
        let conf = dir.join("slurm.conf");
        let text = format!(
            "ClusterName=ringlab\n\
             SlurmctldHost={host}(127.0.0.1)\n\
             SlurmctldPort={}\n\
             SlurmdPort={}\n\
             AuthType=auth/munge\n\
             AuthInfo=socket={}\n\
             CredType=cred/munge\n\
             SlurmUser=root\n\
             SlurmdUser=root\n\
             StateSaveLocation={}\n\
             SlurmdSpoolDir={}\n\
             SlurmctldPidFile={}\n\
             SlurmdPidFile={}\n\
             SlurmctldLogFile={}\n\
             SlurmdLogFile={}\n\
             ProctrackType=proctrack/linuxproc\n\
             TaskPlugin=task/none\n\
             JobAcctGatherType=jobacct_gather/none\n\
             AccountingStorageType=accounting_storage/none\n\
             JobCompType=jobcomp/none\n\
             SelectType=select/cons_tres\n\
             SelectTypeParameters=CR_CPU\n\
             MpiDefault=none\n\
             ReturnToService=2\n\
             SchedulerType=sched/builtin\n\
             NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} State=UNKNOWN\n\
             PartitionName=ringlab Nodes={host} Default=YES MaxTime=INFINITE State=UP\n",
            free_port(),
            free_port(),
            sock.display(),
            p("state"),
            p("spool"),
            p("slurmctld.pid"),
            p("slurmd.pid"),
            p("slurmctld.log"),
            p("slurmd.log"),
        );
        std::fs::write(&conf, text).map_err(|e| e.to_string())?;
        for (daemon, extra) in [("slurmctld", &["-c"][..]), ("slurmd", &[][..])] {
            let child = Command::new(daemon)
                .arg("-D")
                .args(extra)
                .arg("-f")
                .arg(&conf)
                .env("SLURM_CONF", &conf)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .map_err(|e| format!("{daemon}: {e}"))?;
            daemons.push(Daemon(child));
        }
        let slurm = Slurm {
            conf,
            _daemons: daemons,
        };
        wait_for(Duration::from_secs(30), || {
            slurm
                .command("sinfo")
                .args(["-h", "-o", "%T"])
                .output()
                .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "idle")
        })
        .map_err(|_| {
            format!(
                "the node did not become idle in 30 s: {} {}",
                log(dir, "slurmctld.log"),
                log(dir, "slurmd.log")
            )
        })?;
        Ok(slurm)
    }

    fn command(&self, tool: &str) -> Command {
        let mut c = Command::new(tool);
        c.env("SLURM_CONF", &self.conf);
        c
    }
}

fn log(dir: &Path, name: &str) -> String {
    let text = std::fs::read_to_string(dir.join(name)).unwrap_or_default();
    let tail: Vec<&str> = text.lines().rev().take(5).collect();
    format!(
        "{name}: {}",
        tail.into_iter().rev().collect::<Vec<_>>().join(" | ")
    )
}

fn wait_for(limit: Duration, mut ok: impl FnMut() -> bool) -> Result<(), ()> {
    let start = Instant::now();
    while start.elapsed() < limit {
        if ok() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    Err(())
}

/// Runs `cmd` (up to 90 s) and asserts it succeeded.
fn run_ok(mut cmd: Command, what: &str) -> String {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(90) {
            let _ = child.kill();
            panic!("{what} did not finish in 90 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{what} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn read(p: &Path) -> Value {
    let bytes = std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Merges the results in `dir` into `dir/merged.json` and checks it.
fn merge(dir: &Path, shards: u64) -> Value {
    let merged = dir.join("merged.json");
    let out = ringlab(&format!(
        "merge {} -o {}",
        dir.join("results").display(),
        merged.display()
    ));
    assert_ok(&out);
    let m = read(&merged);
    assert_schema_valid(&m);
    assert_eq!(
        m["merged"]["shards"].as_array().unwrap().len() as u64,
        shards
    );
    assert!(m["merged"]["missing"].as_array().unwrap().is_empty());
    m
}

#[test]
fn slurm_srun_runs_four_http_shards_that_merge() {
    let name = "slurm_srun_runs_four_http_shards_that_merge";
    for tool in ["munged", "slurmctld", "slurmd", "srun", "sinfo"] {
        if !have(tool) {
            return skip_root_only(
                name,
                &format!("{tool} not found: apt-get install slurm-wlm munge (.ci/run does)"),
            );
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let slurm = match Slurm::start(dir.path()) {
        Ok(s) => s,
        Err(e) => {
            return skip_root_only(name, &format!("cannot start a one-node Slurm cluster: {e}"))
        }
    };
    let server = Server::start("");
    let results = dir.path().join("results");
    std::fs::create_dir(&results).unwrap();
    let mut srun = slurm.command("srun");
    srun.args(["-n", "4", "--overcommit", "-o"])
        .arg(results.join("shard-%t.json"))
        .arg("-e")
        .arg(dir.path().join("shard-%t.err"))
        .arg(BIN)
        .args(argv(&format!(
            "http {} -t 1 -c 2 -d 1s -R 800 --no-kstat --shard auto --start-at {} --output-format json",
            server.url(),
            start_in(5.0)
        )));
    run_ok(srun, "srun -n 4 ringlab http");
    let mut jobs = Vec::new();
    for t in 0..4 {
        let r = read(&results.join(format!("shard-{t}.json")));
        assert_schema_valid(&r);
        assert_eq!(r["shard"]["index"], t);
        assert_eq!(r["shard"]["count"], 4);
        assert_eq!(r["shard"]["source"], "SLURM_PROCID/SLURM_NTASKS");
        jobs.push(r["shard"]["job_id"].clone());
    }
    assert!(
        jobs.iter().all(|j| j.is_string() && *j == jobs[0]),
        "{jobs:?}"
    );
    let m = merge(dir.path(), 4);
    let rate = m["total"]["iops"].as_f64().unwrap();
    assert!((rate - 800.0).abs() <= 800.0 * 0.03, "merged rate {rate}");
    assert_eq!(m["http"]["connections"], 8);

    // The sbatch script of deploy/slurm, as a user submits it (4 tasks on
    // this machine's CPUs: --overcommit), with its merge step.
    let out = dir.path().join("sbatch");
    let mut sbatch = slurm.command("sbatch");
    sbatch
        .current_dir(dir.path())
        .args(["--wait", "--ntasks=4", "--cpus-per-task=1", "--overcommit"])
        .arg(Path::new(REPO).join("deploy/slurm/ringlab-http.sbatch"))
        .args([server.url().as_str(), "400", "1s"])
        .env("RINGLAB", BIN)
        .env("RINGLAB_RESULTS", &out)
        .env("RINGLAB_START_IN", "4");
    run_ok(sbatch, "sbatch deploy/slurm/ringlab-http.sbatch");
    let m = read(&out.join("merged.json"));
    assert_schema_valid(&m);
    assert_eq!(m["merged"]["shards"].as_array().unwrap().len(), 4);
    assert_eq!(m["config"]["rate"], 400.0);
}

#[test]
fn mpirun_runs_http_and_io_shards_that_merge() {
    let name = "mpirun_runs_http_and_io_shards_that_merge";
    if !have("mpirun") {
        return skip_root_only(
            name,
            "mpirun not found: apt-get install openmpi-bin (.ci/run does)",
        );
    }
    let mpirun = |np: &str, line: &str| {
        let mut c = Command::new("mpirun");
        c.args(["--oversubscribe", "-np", np]);
        if is_root() {
            c.arg("--allow-run-as-root");
        }
        // One node, no network fabric to probe.
        c.env("OMPI_MCA_btl", "self,tcp")
            .env("OMPI_MCA_btl_tcp_if_include", "lo")
            .env("OMPI_MCA_oob_tcp_if_include", "lo");
        c.arg(BIN).args(argv(line));
        c
    };
    // http: 4 ranks.
    let server = Server::start("");
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("results");
    std::fs::create_dir(&results).unwrap();
    run_ok(
        mpirun(
            "4",
            &format!(
                "http {} -t 1 -c 2 -d 1s -R 400 --no-kstat --shard auto --start-at {} --output-format json --output {}/shard-{{shard}}.json",
                server.url(),
                start_in(5.0),
                results.display()
            ),
        ),
        "mpirun -np 4 ringlab http",
    );
    for r in 0..4 {
        let x = read(&results.join(format!("shard-{r}.json")));
        assert_eq!(
            x["shard"]["source"],
            "OMPI_COMM_WORLD_RANK/OMPI_COMM_WORLD_SIZE"
        );
    }
    let m = merge(dir.path(), 4);
    let rate = m["total"]["iops"].as_f64().unwrap();
    assert!((rate - 400.0).abs() <= 400.0 * 0.03, "merged rate {rate}");

    // io: 2 ranks on one shared file, each on its own half.
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("results");
    std::fs::create_dir(&results).unwrap();
    let file = dir.path().join("shared.dat");
    std::fs::write(&file, vec![1u8; 4 << 20]).unwrap();
    run_ok(
        mpirun(
            "2",
            &format!(
                "io {} --rw randread --bs 4k --iodepth 4 --engine uring --runtime 500ms --no-kstat --shard auto --start-at {} --output-format json --output {}/io-{{shard}}.json",
                file.display(),
                start_in(3.0),
                results.display()
            ),
        ),
        "mpirun -np 2 ringlab io",
    );
    let halves: Vec<u64> = (0..2)
        .map(|r| {
            read(&results.join(format!("io-{r}.json")))["shard"]["region_offset_bytes"]
                .as_u64()
                .unwrap()
        })
        .collect();
    assert_eq!(halves, vec![0, 2 << 20]);
    let m = merge(dir.path(), 2);
    assert!(m["total"]["read"]["lat_ns"]["p99"].as_u64().unwrap() > 0);

    // The wrapper of deploy/mpi, as a user runs it.
    let out = dir.path().join("wrapper");
    let mut script = Command::new("bash");
    script
        .arg(Path::new(REPO).join("deploy/mpi/ringlab-mpi.sh"))
        .args(argv(&format!(
            "http {} -t 1 -c 1 -d 500ms -R 200 --no-kstat",
            server.url()
        )))
        .env("NP", "2")
        .env("RINGLAB", BIN)
        .env("RINGLAB_RESULTS", &out)
        .env("RINGLAB_START_IN", "3")
        .env("OMPI_MCA_btl", "self,tcp")
        .env("OMPI_MCA_btl_tcp_if_include", "lo")
        .env("OMPI_MCA_oob_tcp_if_include", "lo");
    run_ok(script, "deploy/mpi/ringlab-mpi.sh");
    let m = read(&out.join("merged.json"));
    assert_eq!(m["merged"]["shards"].as_array().unwrap().len(), 2);
}

/// The documents of a YAML file.
fn yaml_docs(path: &Path) -> Vec<serde_yaml::Value> {
    use serde::Deserialize;
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_yaml::Deserializer::from_str(&text)
        .map(|d| {
            serde_yaml::Value::deserialize(d).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        })
        .filter(|v| !v.is_null())
        .collect()
}

fn get<'a>(v: &'a serde_yaml::Value, path: &str) -> &'a serde_yaml::Value {
    let mut cur = v;
    for key in path.split('.') {
        cur = match key.parse::<usize>() {
            Ok(i) => &cur[i],
            Err(_) => &cur[key],
        };
        assert!(!cur.is_null(), "{path}: missing at {key}");
    }
    cur
}

#[test]
fn kubernetes_manifests_wire_the_index_into_the_shard() {
    let dir = Path::new(REPO).join("deploy/kubernetes");
    let mut jobs = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|x| x != "yaml") {
            continue;
        }
        for doc in yaml_docs(&path) {
            for key in ["apiVersion", "kind", "metadata.name"] {
                get(&doc, key);
            }
            if doc["kind"].as_str() != Some("Job") {
                continue;
            }
            let name = path.display();
            let spec = get(&doc, "spec");
            let pod = get(spec, "template.spec");
            assert_eq!(get(pod, "restartPolicy").as_str(), Some("Never"), "{name}");
            let container = get(pod, "containers.0");
            let cmd: Vec<String> = ["command", "args"]
                .iter()
                .filter_map(|k| container[*k].as_sequence())
                .flatten()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect();
            let line = cmd.join(" ");
            if line.contains("ringlab merge") {
                jobs += 1;
                continue;
            }
            // The sharded Job: Indexed, N pods at once, the index as shard.
            assert_eq!(
                get(spec, "completionMode").as_str(),
                Some("Indexed"),
                "{name}"
            );
            let n = get(spec, "completions").as_u64().unwrap();
            assert_eq!(
                get(spec, "parallelism").as_u64(),
                Some(n),
                "{name}: all shards at once"
            );
            assert!(line.contains("--shard auto"), "{name}: {line}");
            assert!(line.contains("--start-at"), "{name}: {line}");
            let env = get(container, "env").as_sequence().unwrap();
            let var = |k: &str| {
                env.iter()
                    .find(|e| e["name"].as_str() == Some(k))
                    .unwrap_or_else(|| panic!("{name}: no env {k}"))
            };
            assert_eq!(
                var("RINGLAB_SHARDS")["value"].as_str(),
                Some(n.to_string().as_str()),
                "{name}"
            );
            var("RINGLAB_START_AT");
            // The results go to a volume the merge step reads.
            let mounts = get(container, "volumeMounts").as_sequence().unwrap();
            assert!(
                mounts
                    .iter()
                    .any(|m| m["mountPath"].as_str() == Some("/results")),
                "{name}"
            );
            assert!(line.contains("/results/"), "{name}: {line}");
            // io_uring in a pod: the default seccomp profile blocks it.
            let seccomp = get(pod, "securityContext.seccompProfile.type").as_str();
            assert!(
                matches!(seccomp, Some("Unconfined") | Some("Localhost")),
                "{name}: seccompProfile {seccomp:?} blocks io_uring_setup"
            );
            jobs += 1;
        }
    }
    assert!(
        jobs >= 2,
        "deploy/kubernetes holds no sharded Job and merge Job"
    );
    // kubectl checks them too where it can: its client-side dry run still
    // asks an API server for the kinds, and there is none here.
    let name = "kubectl apply --dry-run=client of deploy/kubernetes";
    if !have("kubectl") {
        return skip(
            name,
            "kubectl not installed; the manifests were parsed and checked above",
        );
    }
    let out = Command::new("kubectl")
        .args(["apply", "--dry-run=client", "--validate=false", "-f"])
        .arg(&dir)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    if !out.status.success()
        && (err.contains("connection refused") || err.contains("couldn't get current server"))
    {
        return skip(name, "kubectl needs an API server even for --dry-run=client, and none runs here; the manifests were parsed and checked above");
    }
    assert!(out.status.success(), "{err}");
}

#[test]
fn the_slurm_and_mpi_scripts_are_valid_shell() {
    for script in [
        "deploy/slurm/ringlab-http.sbatch",
        "deploy/slurm/ringlab-io.sbatch",
        "deploy/mpi/ringlab-mpi.sh",
    ] {
        let path = Path::new(REPO).join(script);
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{script}: {e}"));
        assert!(text.contains("--shard auto"), "{script}");
        assert!(text.contains("\" merge "), "{script}: no merge step");
        let out = Command::new("bash").arg("-n").arg(&path).output().unwrap();
        assert!(
            out.status.success(),
            "{script}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
