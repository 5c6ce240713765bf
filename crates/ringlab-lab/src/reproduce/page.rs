//! `DIR/index.html`: every recipe's verdict, its plot (the paper's values
//! beside ours where the paper gives numbers) and the evidence table. Built
//! from the `verdict.json` files alone, so it can be rebuilt any time.

use super::recipe::{Recipe, BUILTIN};
use super::verdict::{num, series_repeats, value_text, Point};
use super::EVIDENCE;
use crate::metric::Unit;
use crate::plot::{render_svg, Axis, Chart, Series, XScale};
use anyhow::Result;
use serde_json::{json, Value as Json};
use std::path::Path;

/// The plot's data, kept in verdict.json: our series and the paper's.
pub fn plot_data(r: &Recipe, points: &[Point]) -> Json {
    let Some(p) = &r.plot else {
        return Json::Null;
    };
    let ours: Vec<Json> = p
        .series
        .iter()
        .map(|name| {
            // [x, median, lowest, highest] over the sane repeats.
            let pts: Vec<Json> = series_repeats(r, name, &p.metric, points)
                .into_iter()
                .filter_map(|rep| {
                    let y = rep.median()?;
                    let (lo, hi) = rep.range()?;
                    let x = if rep.x.is_null() { json!(name) } else { rep.x };
                    Some(json!([x, y, lo, hi]))
                })
                .collect();
            json!({"label": name, "points": pts})
        })
        .collect();
    let paper: Vec<Json> = r
        .paper
        .iter()
        .map(|s| {
            let pts: Vec<Json> = s
                .points
                .iter()
                .map(|(x, y)| json!([serde_json::to_value(x).unwrap_or(Json::Null), y]))
                .collect();
            json!({"label": s.label, "points": pts})
        })
        .collect();
    json!({
        "title": p.title,
        "metric": p.metric,
        "unit": p.unit,
        "x": r.x,
        "ours": ours,
        "paper": paper,
    })
}

fn unit_of(word: &str) -> (Unit, &'static str, &'static str) {
    match word {
        "latency" => (Unit::Nanoseconds, "latency", "latency"),
        "per-op" => (Unit::PerOp, "per operation", "per operation"),
        "requests" => (Unit::PerSecond, "requests/s", "requests/s"),
        _ => (Unit::PerSecond, "IOPS", "IOPS"),
    }
}

/// Two SVGs: the paper's values (when it gives numbers) and ours.
pub fn plot_svgs(plot: &Json) -> Result<Vec<String>> {
    if plot.is_null() {
        return Ok(Vec::new());
    }
    let xname = plot["x"].as_str().map(str::to_string);
    let all_x: Vec<Json> = ["ours", "paper"]
        .iter()
        .flat_map(|k| plot[*k].as_array().cloned().unwrap_or_default())
        .flat_map(|s| s["points"].as_array().cloned().unwrap_or_default())
        .map(|p| p[0].clone())
        .collect();
    let numeric = all_x.iter().all(Json::is_number) && !all_x.is_empty();
    let scale = if numeric {
        let mut xs: Vec<f64> = all_x.iter().filter_map(Json::as_f64).collect();
        match XScale::for_values(&xs) {
            log2 @ XScale::Log2 { .. } => log2,
            // Evenly spaced, so that 1, 10, 20 ... 600 stay readable.
            _ => {
                xs.sort_by(f64::total_cmp);
                xs.dedup();
                let label = |x: &f64| {
                    if x.fract() == 0.0 {
                        format!("{}", *x as i64)
                    } else {
                        x.to_string()
                    }
                };
                XScale::Category(xs.iter().map(label).collect())
            }
        }
    } else {
        let mut labels: Vec<String> = Vec::new();
        for x in &all_x {
            let t = value_text(x);
            if !labels.contains(&t) {
                labels.push(t);
            }
        }
        XScale::Category(labels)
    };
    let (unit, word, ytitle) = unit_of(plot["unit"].as_str().unwrap_or("iops"));
    let mut out = Vec::new();
    for (key, who) in [("paper", "the paper"), ("ours", "this machine")] {
        let series: Vec<Series> = plot[key]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .iter()
            .map(|s| {
                let mut pts: Vec<(f64, f64, f64, f64)> = s["points"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
                    .iter()
                    .filter_map(|p| {
                        let x = scale.position(&p[0])?;
                        let y = p[1].as_f64()?;
                        let lo = p.get(2).and_then(Json::as_f64).unwrap_or(y);
                        let hi = p.get(3).and_then(Json::as_f64).unwrap_or(y);
                        Some((x, y, lo, hi))
                    })
                    .collect();
                pts.sort_by(|a, b| a.0.total_cmp(&b.0));
                Series {
                    name: s["label"].as_str().unwrap_or("").to_string(),
                    points: pts,
                }
            })
            .filter(|s| !s.points.is_empty())
            .collect();
        if series.is_empty() {
            continue;
        }
        let chart = Chart {
            title: format!("{}: {who}", plot["title"].as_str().unwrap_or("")),
            x: Axis {
                desc: xname.clone().unwrap_or_else(|| "configuration".into()),
            },
            y_unit: unit,
            y_title: ytitle.to_string(),
            throughput_word: word.to_string(),
            scale: scale.clone(),
            series,
            legend_title: "series".into(),
            repeats: key == "ours",
            points_note: if key == "paper" {
                "the study's values".into()
            } else {
                "median of repeats".into()
            },
        };
        out.push(render_svg(&chart)?);
    }
    Ok(out)
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn cell(v: &Json, path: &str) -> String {
    match v.as_f64() {
        None => "–".into(),
        Some(x) if path.contains("lat_ns") => num(x / 1000.0),
        Some(x) => num(x),
    }
}

const STYLE: &str = "body{font-family:sans-serif;margin:24px;max-width:1500px;color:#222}\
h2{margin-top:40px;border-top:1px solid #ccc;padding-top:16px}\
table{border-collapse:collapse;margin:8px 0;font-size:13px}\
td,th{border:1px solid #ccc;padding:3px 7px;text-align:right}\
td.l,th.l{text-align:left}\
blockquote{border-left:4px solid #bbb;margin:8px 0;padding:4px 12px;color:#444;font-style:italic}\
.v{display:inline-block;padding:2px 10px;border-radius:10px;color:#fff;font-weight:bold}\
.reproduced{background:#2a7d2a}.inconclusive{background:#b07a00}\
.contradicted{background:#b02020}.cannot-run{background:#777}\
.plots{display:flex;gap:8px}.plots>div{flex:1 1 0;min-width:0;max-width:1000px}.note{color:#666;font-size:13px}.plots svg{width:100%;height:auto}";

/// Writes DIR/index.html from every DIR/NAME/verdict.json.
pub fn write_index(dir: &Path) -> Result<()> {
    let mut verdicts = Vec::new();
    for (name, _) in BUILTIN {
        let p = dir.join(name).join("verdict.json");
        if let Ok(text) = std::fs::read_to_string(&p) {
            if let Ok(v) = serde_json::from_str::<Json>(&text) {
                verdicts.push(v);
            }
        }
    }
    let html = render_index(&verdicts)?;
    crate::store::write_atomic(&dir.join("index.html"), html.as_bytes())
}

pub fn render_index(verdicts: &[Json]) -> Result<String> {
    let mut h = String::new();
    h += &format!("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"/><title>ringlab reproduce</title><style>{STYLE}</style></head><body>\n");
    h += "<h1>ringlab reproduce: the seeds' findings on this machine</h1>\n";
    if let Some(k) = verdicts.first().map(|v| &v["kernel"]) {
        h += &format!(
            "<p>Kernel {} on CPUs {}, CONFIG_HZ {}, {} NUMA node(s). Each check compares repeated runs: its figure is the ratio of medians with a 95% bootstrap interval over the repeats; a verdict is reproduced or contradicted only when that interval lies wholly on one side of the claim's threshold, inconclusive when it holds it.</p>\n",
            esc(k["release"].as_str().unwrap_or("?")),
            esc(k["cpus"].as_str().unwrap_or("?")),
            k["config_hz"].as_u64().map(|x| x.to_string()).unwrap_or_else(|| format!("unavailable ({})", k["config_hz_unavailable"].as_str().unwrap_or("?"))),
            k["numa_nodes"]
        );
    }
    h += "<p>Each row is the check that decided the verdict: what it compares, its threshold (the claim with the recipe's tolerance) and the measured figure with its 95% interval.</p>\n";
    h += "<table><tr><th class=\"l\">recipe</th><th class=\"l\">study</th><th class=\"l\">section</th><th class=\"l\">deciding check</th><th class=\"l\">claim → threshold</th><th>measured [95% interval]</th><th class=\"l\">verdict</th></tr>\n";
    for v in verdicts {
        let name = v["recipe"].as_str().unwrap_or("");
        let (what, claim, measured) = deciding(v);
        h += &format!(
            "<tr><td class=\"l\"><a href=\"#{n}\">{n}</a></td><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td><td class=\"l\"><span class=\"v {w}\">{w}</span></td></tr>\n",
            esc(v["seed"].as_str().unwrap_or("")),
            esc(v["section"].as_str().unwrap_or("")),
            esc(&what),
            esc(&claim),
            esc(&measured),
            n = esc(name),
            w = esc(v["verdict"].as_str().unwrap_or("cannot-run")),
        );
    }
    h += "</table>\n";
    for v in verdicts {
        h += &section(v)?;
    }
    h += "</body></html>\n";
    Ok(h)
}

/// The deciding check's (what, claim with its threshold, measured with its
/// interval): the page's headline. Without a deciding check (cannot run,
/// no rule), the recipe's own figures.
fn deciding(v: &Json) -> (String, String, String) {
    let check = v["decided_by"]
        .as_u64()
        .and_then(|i| v["checks"].get(usize::try_from(i).ok()?.checked_sub(1)?));
    match check {
        Some(c) => {
            let what = format!(
                "check {}: {}",
                v["decided_by"],
                c["what"].as_str().unwrap_or("")
            );
            let claim = format!(
                "{} → {}",
                c["paper"].as_str().unwrap_or(""),
                c["threshold"]
                    .as_str()
                    .unwrap_or("(threshold not recorded)")
            );
            let measured = match c["figure"].as_str() {
                Some(f) => f.to_string(),
                None => "no interval: undecided".to_string(),
            };
            (what, claim, measured)
        }
        None => (
            "–".to_string(),
            figure_text(&v["claim"]),
            figure_text(&v["measured"]),
        ),
    }
}

/// A figure with its 95% interval: `+3.1 [-2.0, +8.4] % ...`.
pub fn figure_text(f: &Json) -> String {
    let Some(x) = f["value"].as_f64() else {
        return "–".into();
    };
    let unit = f["unit"].as_str().unwrap_or("");
    let signed = unit.starts_with('%');
    let n = |v: f64| match (signed, v.abs() < 100.0) {
        (true, true) => format!("{v:+.1}"),
        (true, false) => format!("{v:+.0}"),
        _ => num(v),
    };
    match f["interval"]
        .as_array()
        .and_then(|a| Some((a.first()?.as_f64()?, a.get(1)?.as_f64()?)))
    {
        Some((lo, hi)) => format!("{} [{}, {}] {unit}", n(x), n(lo), n(hi)),
        None => format!("{} {unit}", n(x)),
    }
}

fn section(v: &Json) -> Result<String> {
    let name = v["recipe"].as_str().unwrap_or("");
    let word = v["verdict"].as_str().unwrap_or("cannot-run");
    let head = deciding(v);
    let mut h = format!(
        "<h2 id=\"{n}\">{n} <span class=\"v {w}\">{w}</span></h2>\n<p><b>{}</b> · {} · {}</p>\n<p>{}</p>\n<blockquote>“{}”</blockquote>\n<p><b>Decided by {}</b><br/>claim: {} · measured here: <b>{}</b></p>\n<p>{}</p>\n",
        esc(v["seed"].as_str().unwrap_or("")),
        esc(v["study"].as_str().unwrap_or("")),
        esc(v["section"].as_str().unwrap_or("")),
        esc(v["claim"]["text"].as_str().unwrap_or("")),
        esc(v["claim"]["quote"].as_str().unwrap_or("")),
        esc(&head.0),
        esc(&head.1),
        esc(&head.2),
        esc(v["reason"].as_str().unwrap_or("")),
        n = esc(name),
        w = esc(word),
    );
    if let Some(s) = v["setup"]["background"].as_str() {
        h += &format!("<p>{}</p>\n", esc(s));
    }
    let checks = v["checks"].as_array().cloned().unwrap_or_default();
    if !checks.is_empty() {
        h += "<table><tr><th>#</th><th class=\"l\">check</th><th class=\"l\">the paper</th><th class=\"l\">rule</th><th>measured [95% interval]</th><th>p</th><th>repeats</th><th class=\"l\">verdict</th></tr>\n";
        let decided = v["decided_by"].as_u64();
        for (i, c) in checks.iter().enumerate() {
            let mark = if decided == Some(i as u64 + 1) {
                " (decided)"
            } else {
                ""
            };
            let measured = match (
                c["measured"].as_f64(),
                c["interval"]["lo"].as_f64(),
                c["interval"]["hi"].as_f64(),
            ) {
                (Some(m), Some(lo), Some(hi)) => format!("{} [{}, {}]", num(m), num(lo), num(hi)),
                (Some(m), _, _) => num(m),
                _ => "–".into(),
            };
            let mut notes = String::new();
            for f in c["flagged"].as_array().cloned().unwrap_or_default() {
                notes += &format!(
                    "<br/><span class=\"note\">⚠ {}</span>",
                    esc(f.as_str().unwrap_or(""))
                );
            }
            h += &format!(
                "<tr><td>{}{mark}</td><td class=\"l\">{}{notes}</td><td class=\"l\">{}</td><td class=\"l\">{} ({})</td><td>{}</td><td>{}</td><td>{}</td><td class=\"l\"><span class=\"v {w}\">{w}</span></td></tr>\n",
                i + 1,
                esc(c["what"].as_str().unwrap_or("")),
                esc(c["paper"].as_str().unwrap_or("")),
                esc(c["rule"].as_str().unwrap_or("")),
                esc(c["metric"].as_str().unwrap_or("")),
                measured,
                c["p_value"].as_f64().map(num).unwrap_or_else(|| "–".into()),
                c["repeats"],
                w = esc(c["verdict"].as_str().unwrap_or("")),
            );
        }
        h += "</table>\n";
    }
    let svgs = plot_svgs(&v["plot"])?;
    let paper_numbers = v["plot"]["paper"].as_array().is_some_and(|a| !a.is_empty());
    if !svgs.is_empty() && !paper_numbers {
        h += "<p class=\"note\">The study gives this figure as a plot without numbers in its text, so only ours is drawn.</p>\n";
    }
    if !svgs.is_empty() {
        h += "<div class=\"plots\">";
        for s in svgs {
            h += &format!("<div>{s}</div>");
        }
        h += "</div>\n";
    }
    let rows = v["evidence"].as_array().cloned().unwrap_or_default();
    if !rows.is_empty() {
        h += "<table><tr><th class=\"l\">series</th><th>x</th>";
        for (label, _) in EVIDENCE {
            h += &format!("<th>{}</th>", esc(label));
        }
        h += "</tr>\n";
        for r in &rows {
            h += &format!(
                "<tr><td class=\"l\">{}</td><td>{}</td>",
                esc(r["series"].as_str().unwrap_or("")),
                if r["x"].is_null() {
                    "".into()
                } else {
                    esc(&value_text(&r["x"]))
                }
            );
            for (_, path) in EVIDENCE {
                h += &format!("<td>{}</td>", cell(&r[path], path));
            }
            h += "</tr>\n";
        }
        h += "</table>\n";
    }
    Ok(h)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_headline_is_the_deciding_check() {
        // The recipe's own figure (13 KIOPS) belongs to check 1; check 2
        // decided: the table and the section head with check 2.
        let v = json!({
            "recipe": "r", "seed": "002", "study": "s", "section": "§3",
            "claim": {"text": "t", "quote": "q", "value": 13.0, "unit": "KIOPS"},
            "measured": {"value": 7.16, "unit": "KIOPS", "interval": null},
            "verdict": "inconclusive", "decided_by": 2, "reason": "why",
            "checks": [
                {"what": "first", "paper": "13 KIOPS", "threshold": "a/b <= 0.150x",
                 "figure": "0.5x [0.4x, 0.6x]", "rule": "r1", "metric": "m",
                 "repeats": 5, "verdict": "contradicted"},
                {"what": "iou+k vs iou", "paper": "about 0.1 x", "threshold": "a/b <= 0.150x",
                 "figure": "0.286x [0.072x, 0.673x]", "rule": "r2", "metric": "m",
                 "repeats": 5, "verdict": "inconclusive"}
            ],
            "plot": null, "evidence": [],
        });
        let html = render_index(&[v]).unwrap();
        assert!(
            html.contains("<td class=\"l\">check 2: iou+k vs iou</td><td class=\"l\">about 0.1 x → a/b &lt;= 0.150x</td><td>0.286x [0.072x, 0.673x]</td>"),
            "{html}"
        );
        assert!(html.contains("Decided by check 2: iou+k vs iou"), "{html}");
        assert!(
            !html.contains("7.16"),
            "the figure of check 1 heads nothing"
        );
    }
}
