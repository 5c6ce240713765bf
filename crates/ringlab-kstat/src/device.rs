//! Block devices and their interrupts: which vectors a device raises, on
//! which CPUs they land (`/proc/interrupts`, `/proc/irq/N/*affinity_list`),
//! its queues and whether it can be polled. Results turn on exactly these
//! facts (the COOP_TASKRUN thesis: interrupt vs non-interrupt cores).

use ringlab_stats::{DeviceIrqDelta, InterruptDeltas};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

/// One line of `/proc/interrupts`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IrqLine {
    /// `36`, or a symbolic vector such as `RES` (rescheduling IPIs).
    pub irq: String,
    /// Count per CPU, in CPU order.
    pub per_cpu: Vec<u64>,
    /// The rest of the line: controller and name (`... virtio1-req.0`).
    pub desc: String,
}

/// Parses `/proc/interrupts`.
pub fn parse_interrupts(text: &str) -> Vec<IrqLine> {
    let mut lines = text.lines();
    let cpus = lines.next().map_or(0, |h| {
        h.split_whitespace()
            .filter(|w| w.starts_with("CPU"))
            .count()
    });
    lines
        .filter_map(|l| {
            let (irq, rest) = l.split_once(':')?;
            let mut words = rest.split_whitespace().peekable();
            let mut per_cpu = Vec::with_capacity(cpus);
            while per_cpu.len() < cpus {
                match words.peek().and_then(|w| w.parse::<u64>().ok()) {
                    Some(n) => {
                        per_cpu.push(n);
                        words.next();
                    }
                    None => break,
                }
            }
            Some(IrqLine {
                irq: irq.trim().to_string(),
                per_cpu,
                desc: words.collect::<Vec<_>>().join(" "),
            })
        })
        .collect()
}

/// Reads `/proc/interrupts` now.
pub fn read_interrupts() -> std::io::Result<Vec<IrqLine>> {
    Ok(parse_interrupts(&fs::read_to_string("/proc/interrupts")?))
}

/// A block device's own interrupt vector.
#[derive(Clone, Debug, Serialize)]
pub struct DeviceIrq {
    pub irq: u32,
    pub name: String,
    /// CPUs the vector may be routed to, and where it actually goes.
    pub affinity: Option<String>,
    pub effective_affinity: Option<String>,
    /// Interrupts so far, per CPU.
    pub count_per_cpu: Vec<u64>,
}

/// What sysfs says about a block device.
#[derive(Clone, Debug, Serialize)]
pub struct BlockDeviceInfo {
    pub name: String,
    pub scheduler: Option<String>,
    /// Hardware queues (blk-mq), where sysfs lists them.
    pub hw_queues: Option<u32>,
    /// `queue/io_poll`: whether the device accepts polled I/O (IOPOLL).
    pub io_poll: Option<bool>,
    /// Poll queues the driver was loaded with (nvme, virtio_blk), where
    /// the module parameter shows it.
    pub poll_queues: Option<u32>,
    pub irqs: Vec<DeviceIrq>,
}

/// The whole-disk name (`vda` for `vda1`) of block device `major:minor`.
pub fn disk_of_devno(major: u32, minor: u32) -> Option<String> {
    let dir = fs::canonicalize(format!("/sys/dev/block/{major}:{minor}")).ok()?;
    let disk = if dir.join("partition").exists() {
        dir.parent()?.to_path_buf()
    } else {
        dir
    };
    Some(disk.file_name()?.to_string_lossy().into_owned())
}

/// The block device a path lives on (itself for a device node), as a
/// whole-disk name.
pub fn disk_of_path(path: &Path) -> Option<String> {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let meta = fs::metadata(path).ok()?;
    let dev = if meta.file_type().is_block_device() {
        meta.rdev()
    } else {
        meta.dev()
    };
    disk_of_devno(rustix::fs::major(dev), rustix::fs::minor(dev))
}

fn read_trim(p: impl AsRef<Path>) -> Option<String> {
    fs::read_to_string(p).ok().map(|s| s.trim().to_string())
}

/// Sysfs facts and interrupt vectors of disk `name` (`vda`, `nvme0n1`).
pub fn block_device_info(name: &str) -> BlockDeviceInfo {
    let sys = PathBuf::from("/sys/block").join(name);
    let scheduler = read_trim(sys.join("queue/scheduler")).map(|s| {
        s.split_whitespace()
            .find(|w| w.starts_with('['))
            .map_or(s.clone(), |w| w.trim_matches(['[', ']']).to_string())
    });
    let hw_queues = fs::read_dir(sys.join("mq"))
        .ok()
        .map(|d| d.filter_map(Result::ok).count() as u32);
    let io_poll = read_trim(sys.join("queue/io_poll")).map(|v| v == "1");
    let driver = fs::canonicalize(sys.join("device/driver"))
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()));
    let module = match driver.as_deref() {
        Some("virtio_blk") => Some("virtio_blk"),
        _ if name.starts_with("nvme") => Some("nvme"),
        _ => None,
    };
    let poll_queues = module
        .and_then(|m| read_trim(format!("/sys/module/{m}/parameters/poll_queues")))
        .and_then(|v| v.parse().ok());
    BlockDeviceInfo {
        name: name.to_string(),
        scheduler,
        hw_queues,
        io_poll,
        poll_queues,
        irqs: device_irqs(name),
    }
}

/// The interrupt vectors of disk `name`: the MSI vectors of the PCI device
/// behind it (less the virtio config/control ones), or for NVMe the
/// `nvme0q*` queues.
pub fn device_irqs(name: &str) -> Vec<DeviceIrq> {
    let sys = PathBuf::from("/sys/block").join(name).join("device");
    // virtio: block/vda/device is virtioN, its parent the PCI function.
    let virtio = fs::canonicalize(&sys)
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .filter(|n| n.starts_with("virtio"));
    let nvme_ctrl = name
        .strip_prefix("nvme")
        .and_then(|rest| rest.split('n').next())
        .map(|n| format!("nvme{n}q"));
    let lines = read_interrupts().unwrap_or_default();
    let mut by_irq: BTreeMap<u32, DeviceIrq> = BTreeMap::new();
    for l in &lines {
        let Ok(irq) = l.irq.parse::<u32>() else {
            continue;
        };
        let vector = l.desc.split_whitespace().last().unwrap_or("");
        let ours = match (&virtio, &nvme_ctrl) {
            (Some(v), _) => vector.starts_with(&format!("{v}-")) && !vector.ends_with("-config"),
            (None, Some(q)) => vector.starts_with(q.as_str()),
            _ => false,
        };
        if ours {
            by_irq.insert(
                irq,
                DeviceIrq {
                    irq,
                    name: vector.to_string(),
                    affinity: read_trim(format!("/proc/irq/{irq}/smp_affinity_list")),
                    effective_affinity: read_trim(format!(
                        "/proc/irq/{irq}/effective_affinity_list"
                    )),
                    count_per_cpu: l.per_cpu.clone(),
                },
            );
        }
    }
    by_irq.into_values().collect()
}

/// Per CPU, how much interrupt line `irq` (`RES`, `36`) rose from `a` to
/// `b`; empty when either has no such line.
pub fn per_cpu_delta(a: &[IrqLine], b: &[IrqLine], irq: &str) -> Vec<u64> {
    let find = |lines: &[IrqLine]| {
        lines
            .iter()
            .find(|l| l.irq == irq)
            .map(|l| l.per_cpu.clone())
    };
    match (find(a), find(b)) {
        (Some(x), Some(y)) => y
            .iter()
            .zip(x.iter().chain(std::iter::repeat(&0)))
            .map(|(after, before)| after.saturating_sub(*before))
            .collect(),
        _ => Vec::new(),
    }
}

/// The rises of the IPI lines and of `device`'s interrupt vectors from
/// `a` to `b` (two reads of /proc/interrupts).
pub fn irq_deltas(a: &[IrqLine], b: &[IrqLine], device: Option<&str>) -> InterruptDeltas {
    let device_vectors = device.map(device_irqs).unwrap_or_default();
    InterruptDeltas {
        rescheduling_per_cpu: per_cpu_delta(a, b, "RES"),
        function_call_per_cpu: per_cpu_delta(a, b, "CAL"),
        device: device_vectors
            .into_iter()
            .map(|d| DeviceIrqDelta {
                irq: d.irq,
                per_cpu: per_cpu_delta(a, b, &d.irq.to_string()),
                name: d.name,
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "           CPU0       CPU1       \n\
  36:          0   15264516 PCI-MSIX-0000:00:02.0   1-edge      virtio1-req.0\n\
 RES:       1234       5678   Rescheduling interrupts\n\
 CAL:         10         20   Function call interrupts\n\
 ERR:          0\n";

    #[test]
    fn parses_per_cpu_counts_and_names() {
        let lines = parse_interrupts(SAMPLE);
        assert_eq!(lines.len(), 4);
        assert_eq!(lines[0].irq, "36");
        assert_eq!(lines[0].per_cpu, vec![0, 15_264_516]);
        assert!(lines[0].desc.ends_with("virtio1-req.0"));
        assert_eq!(lines[1].irq, "RES");
        assert_eq!(lines[1].per_cpu, vec![1234, 5678]);
        assert_eq!(lines[1].desc, "Rescheduling interrupts");
        assert_eq!(lines[3].per_cpu, vec![0], "ERR has one total");
    }

    #[test]
    fn this_machine_has_interrupts() {
        let lines = read_interrupts().expect("/proc/interrupts is readable");
        assert!(lines.iter().any(|l| l.irq == "RES" || l.irq == "LOC"));
    }
}
