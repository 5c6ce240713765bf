//! fio's zones of a region: `random_distribution=zoned:` / `zoned_abs:`
//! (a share of the random accesses per range of the region) and
//! `zonemode=strided` (`zonesize` bytes in each zone of `zonerange` bytes,
//! then `zoneskip` bytes skipped), as fio 3.33 draws them (io_u.c
//! `__get_next_rand_offset_zoned*`, `setup_strided_zone_mode`;
//! zone-dist.c; options.c `zone_split_ddir`).

use ringlab_stats::units::parse_size;

/// One zone of a zoned distribution: the share of accesses (percent) and
/// the size (percent of the region, or bytes for `zoned_abs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Zone {
    pub access: u32,
    pub size: u64,
}

/// fio's `random_distribution=zoned:...` or `zoned_abs:...`: the zones of
/// reads and of writes (fio's `R,W,T` split; without a comma one list for
/// all).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZonedSplit {
    /// Sizes are bytes (`zoned_abs`), not percent of the region.
    pub absolute: bool,
    /// Reads, writes.
    pub dirs: [Vec<Zone>; 2],
}

impl ZonedSplit {
    /// Parses fio's value: `zoned:50/5:30/15:20/` or
    /// `zoned_abs:50/10G:30/100G:20/500G`, with `,` between the lists of
    /// reads, writes and trims. `None` for another distribution.
    pub fn parse(text: &str) -> Option<Result<ZonedSplit, String>> {
        let t = text.trim();
        let (absolute, body) = if let Some(b) = t.strip_prefix("zoned_abs:") {
            (true, b)
        } else if let Some(b) = t.strip_prefix("zoned:") {
            (false, b)
        } else if t == "zoned" || t == "zoned_abs" {
            return Some(Err(format!(
                "{t}: a zoned distribution lists its zones: {t}:ACCESS%/SIZE:... (fio's syntax)"
            )));
        } else {
            return None;
        };
        Some(Self::parse_body(t, absolute, body))
    }

    fn parse_body(text: &str, absolute: bool, body: &str) -> Result<ZonedSplit, String> {
        // fio's str_split_parse: "R,W,T", "R,W" (trims as writes), or one
        // list for every direction.
        let parts: Vec<&str> = body.split(',').collect();
        let (r, w) = match parts.as_slice() {
            [one] => (*one, *one),
            [r, w] | [r, w, _] => (*r, *w),
            _ => return Err(format!("{text}: at most three lists (reads,writes,trims)")),
        };
        if let [_, _, t] = parts.as_slice() {
            // Trims are not a ringlab pattern; the list is still checked.
            zone_list(text, absolute, t)?;
        }
        Ok(ZonedSplit {
            absolute,
            dirs: [zone_list(text, absolute, r)?, zone_list(text, absolute, w)?],
        })
    }

    /// The zones of one direction as 100 entries, one per percent of
    /// accesses: `(first, len)` in units of `align` blocks of the region
    /// (`lastb` of them; `unit_bytes` per block), as fio's
    /// zone_state_index. An empty list: uniform over the region.
    pub fn table(
        &self,
        dir: usize,
        lastb: u64,
        align_bytes: u64,
    ) -> Result<Option<Vec<(u64, u64)>>, String> {
        let zones = &self.dirs[dir];
        if zones.is_empty() {
            return Ok(None);
        }
        let mut table = Vec::with_capacity(100);
        let (mut sprev, mut bprev) = (0u64, 0u64);
        for z in zones {
            let (first, len) = if self.absolute {
                let first = bprev / align_bytes;
                let end = (bprev + z.size) / align_bytes;
                if end > lastb {
                    return Err(format!(
                        "zoned_abs: the zones end at {} bytes, past the region of {} bytes (fio: 'zoned_abs sizes exceed file size')",
                        bprev + z.size,
                        lastb * align_bytes
                    ));
                }
                (first, end - first)
            } else {
                let first = sprev * lastb / 100;
                (first, lastb * z.size / 100)
            };
            for _ in 0..z.access {
                table.push((first, len));
            }
            sprev += z.size;
            bprev += z.size;
        }
        Ok(Some(table))
    }
}

/// One list: `ACCESS/SIZE:ACCESS/SIZE...`; a missing access or size takes
/// an equal part of what the others leave of 100 (fio's rule).
fn zone_list(text: &str, absolute: bool, list: &str) -> Result<Vec<Zone>, String> {
    let mut given: Vec<(Option<u32>, Option<u64>)> = Vec::new();
    for part in list.split(':').map(str::trim).filter(|p| !p.is_empty()) {
        let (a, s) = part.split_once('/').unwrap_or((part, ""));
        let access = match a.trim() {
            "" => None,
            a => Some(a.parse::<u32>().ok().filter(|v| *v <= 100).ok_or_else(|| {
                format!("{text}: {part}: the access share is a whole percent from 0 to 100")
            })?),
        };
        let size = match s.trim() {
            "" => None,
            s if absolute => Some(parse_size(s).map_err(|e| format!("{text}: {part}: {e}"))?),
            s => Some(
                s.parse::<u64>()
                    .ok()
                    .filter(|v| *v <= 100)
                    .ok_or_else(|| format!("{text}: {part}: the size is a whole percent of the region from 0 to 100 (zoned_abs: for sizes in bytes)"))?,
            ),
        };
        if absolute && size.is_none() {
            return Err(format!(
                "{text}: {part}: zoned_abs needs a size in each zone (ACCESS/SIZE)"
            ));
        }
        given.push((access, size));
    }
    if given.len() > 256 {
        return Err(format!("{text}: at most 256 zones (fio's ZONESPLIT_MAX)"));
    }
    if given.is_empty() {
        return Ok(Vec::new());
    }
    let perc: u32 = given.iter().filter_map(|g| g.0).sum();
    let missing = given.iter().filter(|g| g.0.is_none()).count() as u32;
    let sperc: u64 = given.iter().filter_map(|g| g.1).sum();
    let smissing = given.iter().filter(|g| g.1.is_none()).count() as u64;
    if perc > 100 || (!absolute && sperc > 100) {
        return Err(format!(
            "{text}: the percentages add to more than 100 (fio refuses it)"
        ));
    }
    // fio checks the shares given before it fills the missing ones, so
    // they must come to 100 (a missing one then gets 0).
    if perc < 100 {
        return Err(format!(
            "{text}: the access percentages add to {perc}, not 100 (fio: 'access percentage don't add up to 100')"
        ));
    }
    let perc_all = perc;
    let sperc_all = if smissing == 1 && given.len() == 1 {
        100
    } else {
        sperc
    };
    Ok(given
        .into_iter()
        .map(|(a, s)| Zone {
            access: a.unwrap_or((100 - perc_all.min(100)) / missing.max(1)),
            size: s.unwrap_or((100 - sperc_all.min(100)) / smissing.max(1)),
        })
        .collect())
}

/// fio's `zonemode=strided`: `size` bytes of I/O in each zone of `range`
/// bytes, then on past `range + skip`; wraps to the start at the end of
/// the target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Strided {
    pub size: u64,
    pub range: u64,
    pub skip: u64,
}

impl Strided {
    /// From fio's `zonesize`, `zonerange` (default: `zonesize`) and
    /// `zoneskip` (default 0); every value a multiple of the block unit.
    pub fn new(
        size: u64,
        range: Option<u64>,
        skip: Option<u64>,
        unit: u64,
    ) -> Result<Strided, String> {
        let s = Strided {
            size,
            range: range.filter(|r| *r > 0).unwrap_or(size),
            skip: skip.unwrap_or(0),
        };
        if s.size == 0 {
            return Err("zonesize must be above zero with zonemode=strided (fio: '--zonesize must be specified')".to_string());
        }
        for (name, v) in [
            ("zonesize", s.size),
            ("zonerange", s.range),
            ("zoneskip", s.skip),
        ] {
            if v % unit != 0 {
                return Err(format!(
                    "{name}={v}: not a multiple of the block size {unit}; ringlab's offsets are whole blocks, so fio's zones must be too"
                ));
            }
        }
        Ok(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zoned_fills_the_missing_size_and_maps_percent() {
        let z = ZonedSplit::parse("zoned:50/5:30/15:20/").unwrap().unwrap();
        assert_eq!(
            z.dirs[0][2],
            Zone {
                access: 20,
                size: 80
            }
        );
        assert_eq!(z.dirs[0], z.dirs[1]);
        let t = z.table(0, 1000, 4096).unwrap().unwrap();
        assert_eq!(t.len(), 100);
        assert_eq!(t[0], (0, 50));
        assert_eq!(t[50], (50, 150));
        assert_eq!(t[99], (200, 800));
    }

    #[test]
    fn zoned_per_direction_and_refusals() {
        let z = ZonedSplit::parse("zoned:50/5:30/15:20/,50/10:50/90")
            .unwrap()
            .unwrap();
        assert_eq!(
            z.dirs[1][1],
            Zone {
                access: 50,
                size: 90
            }
        );
        assert!(ZonedSplit::parse("zoned:50/5:30/15").unwrap().is_err());
        assert!(ZonedSplit::parse("zoned:60/50:60/50").unwrap().is_err());
        assert!(ZonedSplit::parse("zipf:1.2").is_none());
        let a = ZonedSplit::parse("zoned_abs:50/1m:50/2m").unwrap().unwrap();
        assert!(a.table(0, 256, 4096).is_err(), "3m past a 1m region");
        let t = a.table(0, 1024, 4096).unwrap().unwrap();
        assert_eq!(t[0], (0, 256));
        assert_eq!(t[99], (256, 512));
    }
}
