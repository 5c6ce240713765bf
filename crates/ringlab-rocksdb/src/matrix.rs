//! The configurations `ringlab rocksdb` measures: the first study's six
//! (thesis 000, Fig. 5.2-5.3) plus DEFER_TASKRUN and registered files.

/// The study's figures for one configuration (Fig. 5.2 and 5.3: Optane,
/// ext4, 10M keys, 1 CPU, batch 4, 3 runs).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StudyFigures {
    pub mb_per_s: f64,
    pub p95_us: f64,
    pub device_kiops: f64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Configuration {
    pub name: &'static str,
    /// What it is, for the table's legend.
    pub what: &'static str,
    /// Plugin knobs (`coop_taskrun`); `None` for RocksDB's own backend.
    pub knobs: Option<Vec<String>>,
    /// db_bench --io_uring_enabled (RocksDB's own backend only).
    pub io_uring_enabled: bool,
    pub study: Option<StudyFigures>,
}

impl Configuration {
    /// `--fs_uri` for db_bench, `None` for the default FileSystem.
    pub fn fs_uri(&self) -> Option<String> {
        self.knobs
            .as_ref()
            .map(|k| format!("ringlab://{}", k.join(",")))
    }

    pub fn knob_text(&self) -> String {
        match &self.knobs {
            None if self.io_uring_enabled => "RocksDB posix, io_uring_enabled".into(),
            None => "RocksDB posix, io_uring disabled".into(),
            Some(k) if k.is_empty() => "(default ring)".into(),
            Some(k) => k.join(","),
        }
    }
}

fn study(mb_per_s: f64, p95_us: f64, device_kiops: f64) -> Option<StudyFigures> {
    Some(StudyFigures {
        mb_per_s,
        p95_us,
        device_kiops,
    })
}

/// Every configuration, in the study's order; SQPOLL's poller goes on
/// `sqpoll_cpu`.
pub fn all(sqpoll_cpu: u32) -> Vec<Configuration> {
    let k = |v: &[&str]| Some(v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
    vec![
        Configuration {
            name: "P-DEF",
            what: "RocksDB's posix backend as built (its MultiRead uses io_uring only if RocksDB was built with liburing)",
            knobs: None,
            io_uring_enabled: true,
            study: study(4.3, 218.38, 45.36),
        },
        Configuration {
            name: "P-SYNC",
            what: "RocksDB's posix backend, --io_uring_enabled=false (pread per block)",
            knobs: None,
            io_uring_enabled: false,
            study: study(3.4, 261.29, 35.12),
        },
        Configuration {
            name: "L-DEF",
            what: "ringlab plugin, a ring without flags",
            knobs: k(&[]),
            io_uring_enabled: true,
            study: study(4.2, 221.86, 44.12),
        },
        Configuration {
            name: "L-COOP",
            what: "ringlab plugin, IORING_SETUP_COOP_TASKRUN",
            knobs: k(&["coop_taskrun"]),
            io_uring_enabled: true,
            study: study(4.2, 223.66, 43.98),
        },
        Configuration {
            name: "L-SQPOLL",
            what: "ringlab plugin, IORING_SETUP_SQPOLL, poller pinned",
            knobs: Some(vec!["sqpoll".into(), format!("sqpoll_cpu={sqpoll_cpu}")]),
            io_uring_enabled: true,
            study: study(4.7, 192.67, 48.68),
        },
        Configuration {
            name: "L-ASYNC",
            what: "ringlab plugin, IOSQE_ASYNC on every read (io-wq)",
            knobs: k(&["force_async"]),
            io_uring_enabled: true,
            study: study(3.6, 240.95, 38.07),
        },
        Configuration {
            name: "L-DEFER",
            what: "ringlab plugin, SINGLE_ISSUER + DEFER_TASKRUN (not in the study)",
            knobs: k(&["single_issuer", "defer_taskrun"]),
            io_uring_enabled: true,
            study: None,
        },
        Configuration {
            name: "L-FIXED",
            what: "ringlab plugin, registered files (the study could not get them working)",
            knobs: k(&["fixed_files"]),
            io_uring_enabled: true,
            study: None,
        },
    ]
}

/// The configurations named in `names` (case-insensitive), in matrix order,
/// or all of them for an empty list.
pub fn select(names: &[String], sqpoll_cpu: u32) -> Result<Vec<Configuration>, String> {
    let all = all(sqpoll_cpu);
    if names.is_empty() {
        return Ok(all);
    }
    for n in names {
        if !all.iter().any(|c| c.name.eq_ignore_ascii_case(n)) {
            let known: Vec<&str> = all.iter().map(|c| c.name).collect();
            return Err(format!(
                "--configs: unknown configuration '{n}'; known: {}",
                known.join(", ")
            ));
        }
    }
    Ok(all
        .into_iter()
        .filter(|c| names.iter().any(|n| c.name.eq_ignore_ascii_case(n)))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_matrix_is_the_study_plus_two() {
        let m = all(0);
        let names: Vec<&str> = m.iter().map(|c| c.name).collect();
        assert_eq!(
            names,
            ["P-DEF", "P-SYNC", "L-DEF", "L-COOP", "L-SQPOLL", "L-ASYNC", "L-DEFER", "L-FIXED"]
        );
        assert_eq!(m[0].fs_uri(), None);
        assert_eq!(m[2].fs_uri().as_deref(), Some("ringlab://"));
        assert_eq!(
            m[4].fs_uri().as_deref(),
            Some("ringlab://sqpoll,sqpoll_cpu=0")
        );
        assert_eq!(m.iter().filter(|c| c.study.is_some()).count(), 6);
    }

    #[test]
    fn selection_is_by_name_and_refuses_unknown_ones() {
        let s = select(&["l-coop".into(), "P-SYNC".into()], 1).unwrap();
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].name, "P-SYNC");
        let e = select(&["L-TURBO".into()], 1).unwrap_err();
        assert!(e.contains("L-TURBO") && e.contains("L-FIXED"), "{e}");
    }
}
