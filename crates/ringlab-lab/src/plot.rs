//! SVG plots with plotters (SVG backend only, no font files: text stays
//! text in the SVG and the viewer's sans-serif renders it).
//!
//! The legend is drawn in its own panel right of the plot area, so it can
//! never cover a curve, however the data fall.

use crate::metric::Unit;
use anyhow::{anyhow, Result};
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use serde_json::Value as Json;

/// How x values are placed.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum XScale {
    /// Position = value; ticks at the given values.
    Linear { ticks: Vec<f64> },
    /// Position = log2(value): powers of two spanning 8x or more.
    Log2 { values: Vec<f64> },
    /// Position = index of the label.
    Category(Vec<String>),
}

impl XScale {
    pub(crate) fn for_values(xs: &[f64]) -> XScale {
        let mut v: Vec<f64> = xs.to_vec();
        v.sort_by(f64::total_cmp);
        v.dedup();
        let pow2 = v
            .iter()
            .all(|&x| x >= 1.0 && x.fract() == 0.0 && (x as u64).is_power_of_two());
        let (lo, hi) = (
            v.first().copied().unwrap_or(0.0),
            v.last().copied().unwrap_or(0.0),
        );
        if pow2 && lo > 0.0 && hi / lo >= 8.0 {
            return XScale::Log2 { values: v };
        }
        let ticks = if v.len() <= 12 { v } else { nice_ticks(lo, hi) };
        XScale::Linear { ticks }
    }

    /// Where a value of the x axis goes; `None` for a value that is not on
    /// this axis (a string on a numeric axis).
    pub(crate) fn position(&self, v: &Json) -> Option<f64> {
        match self {
            XScale::Linear { .. } => v.as_f64(),
            XScale::Log2 { .. } => v.as_f64().filter(|x| *x > 0.0).map(f64::log2),
            XScale::Category(labels) => {
                let text = match v {
                    Json::String(s) => s.clone(),
                    other => other.to_string(),
                };
                labels.iter().position(|l| *l == text).map(|i| i as f64)
            }
        }
    }

    fn key_points(&self) -> Vec<f64> {
        match self {
            XScale::Linear { ticks } => ticks.clone(),
            XScale::Log2 { values } => values.iter().map(|v| v.log2()).collect(),
            XScale::Category(l) => (0..l.len()).map(|i| i as f64).collect(),
        }
    }

    fn range(&self) -> (f64, f64) {
        let k = self.key_points();
        let (lo, hi) = (
            k.iter().copied().fold(f64::INFINITY, f64::min),
            k.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        );
        if !lo.is_finite() {
            return (-0.5, 0.5);
        }
        match self {
            XScale::Category(_) => (-0.5, hi + 0.5),
            _ => {
                let pad = if hi > lo { (hi - lo) * 0.06 } else { 0.5 };
                (lo - pad, hi + pad)
            }
        }
    }

    fn label(&self, pos: f64) -> String {
        match self {
            XScale::Linear { .. } => tick(pos),
            XScale::Log2 { .. } => tick(pos.exp2().round()),
            XScale::Category(l) => {
                let i = pos.round();
                if (pos - i).abs() < 1e-9 && i >= 0.0 {
                    l.get(i as usize).cloned().unwrap_or_default()
                } else {
                    String::new()
                }
            }
        }
    }
}

/// The x coordinate: linear over positions, ticks exactly at the axis
/// values. (plotters' `with_key_points` cannot take a label formatter for
/// f64 in 0.3.7, hence this small coordinate of our own.)
struct XCoord {
    lo: f64,
    hi: f64,
    ticks: Vec<f64>,
}

impl Ranged for XCoord {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        let f = (value - self.lo) / (self.hi - self.lo);
        limit.0 + (f * f64::from(limit.1 - limit.0)).round() as i32
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.ticks.clone()
        }
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.lo..self.hi
    }
}

/// About six round ticks between lo and hi.
fn nice_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let span = (hi - lo).max(1e-12);
    let raw = span / 6.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    let mut t = (lo / step).ceil() * step;
    let mut out = Vec::new();
    while t <= hi + step * 1e-9 && out.len() < 50 {
        out.push(t);
        t += step;
    }
    out
}

/// A tick label without float noise: `0.25`, `4`, `1200`.
fn tick(v: f64) -> String {
    let r = (v * 1000.0).round() / 1000.0;
    if r == 0.0 {
        "0".to_string()
    } else {
        format!("{r}")
    }
}

pub(crate) struct Axis {
    /// Name and unit, e.g. `iodepth (I/Os in flight per job)`.
    pub(crate) desc: String,
}

/// One configuration: points (x position, median, min, max), sorted by x.
pub(crate) struct Series {
    pub(crate) name: String,
    pub(crate) points: Vec<(f64, f64, f64, f64)>,
}

pub(crate) struct Chart {
    pub(crate) title: String,
    pub(crate) x: Axis,
    pub(crate) y_unit: Unit,
    pub(crate) y_title: String,
    /// `IOPS` or `requests/s`.
    pub(crate) throughput_word: String,
    pub(crate) scale: XScale,
    pub(crate) series: Vec<Series>,
    /// Names of the axes that tell the series apart.
    pub(crate) legend_title: String,
    /// What a point is, in the legend ("median of repeats").
    pub(crate) points_note: String,
    /// Whether the points are medians of repeats (whose spread the bars
    /// show); false for single values such as a study's, which get no note
    /// about bars.
    pub(crate) repeats: bool,
}

/// Divisor and axis description for the y values of a chart.
fn y_scale(c: &Chart, ymax: f64) -> (f64, String) {
    match c.y_unit {
        Unit::PerSecond if ymax >= 2e6 => (1e6, format!("{} (millions)", c.throughput_word)),
        Unit::PerSecond if ymax >= 2e3 => (1e3, format!("{} (thousands)", c.throughput_word)),
        Unit::PerSecond => (1.0, c.throughput_word.clone()),
        Unit::BytesPerSecond if ymax >= 10.0 * (1u64 << 30) as f64 => {
            ((1u64 << 30) as f64, "bandwidth (GiB/s)".to_string())
        }
        Unit::BytesPerSecond => ((1u64 << 20) as f64, "bandwidth (MiB/s)".to_string()),
        Unit::Nanoseconds if ymax < 1e4 => (1.0, format!("{} (ns)", c.y_title)),
        Unit::Nanoseconds if ymax < 1e7 => (1e3, format!("{} (µs)", c.y_title)),
        Unit::Nanoseconds => (1e6, format!("{} (ms)", c.y_title)),
        Unit::PerOp | Unit::MicrosPerOp => (1.0, c.y_title.clone()),
    }
}

const PALETTE: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

const WIDTH: u32 = 1000;
const HEIGHT: u32 = 460;
const LEGEND_NAME_CHARS: usize = 44;
const FONT: &str = "sans-serif";

fn legend_name(s: &str) -> String {
    if s.chars().count() > LEGEND_NAME_CHARS {
        s.chars().take(LEGEND_NAME_CHARS - 1).collect::<String>() + "…"
    } else {
        s.to_string()
    }
}

/// Renders a chart as an SVG document.
pub(crate) fn render_svg(c: &Chart) -> Result<String> {
    let mut svg = String::new();
    draw(c, &mut svg).map_err(|e| anyhow!("drawing the plot '{}': {e}", c.title))?;
    Ok(svg)
}

fn draw(c: &Chart, svg: &mut String) -> std::result::Result<(), Box<dyn std::error::Error>> {
    let ymax_raw = c
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.3.max(p.1)))
        .fold(0.0f64, f64::max);
    let (div, y_desc) = y_scale(c, ymax_raw);
    let ymax = if ymax_raw > 0.0 {
        ymax_raw / div * 1.12
    } else {
        1.0
    };
    let longest = c
        .series
        .iter()
        .map(|s| legend_name(&s.name).chars().count())
        .chain(std::iter::once(c.legend_title.chars().count()))
        .max()
        .unwrap_or(10);
    // About 8 px per character of 14 px sans-serif, plus the swatch.
    let legend_w = (52.0 + 8.0 * longest as f64).clamp(190.0, 400.0) as u32;

    let root = SVGBackend::with_string(svg, (WIDTH, HEIGHT)).into_drawing_area();
    root.fill(&WHITE)?;
    let (plot_area, legend_area) = root.split_horizontally(WIDTH - legend_w);

    let (x0, x1) = c.scale.range();
    let scale = c.scale.clone();
    let x_fmt = move |v: &f64| scale.label(*v);
    let y_fmt = |v: &f64| tick(*v);
    let mut chart = ChartBuilder::on(&plot_area)
        .caption(&c.title, (FONT, 20))
        .margin(12)
        .x_label_area_size(58)
        .y_label_area_size(86)
        .build_cartesian_2d(
            XCoord {
                lo: x0,
                hi: x1,
                ticks: c.scale.key_points(),
            },
            0f64..ymax,
        )?;
    chart
        .configure_mesh()
        .x_desc(&c.x.desc)
        .y_desc(&y_desc)
        .x_label_formatter(&x_fmt)
        .y_label_formatter(&y_fmt)
        .y_labels(8)
        .axis_desc_style((FONT, 16))
        .label_style((FONT, 14))
        .light_line_style(WHITE.mix(0.0))
        .bold_line_style(BLACK.mix(0.12))
        .draw()?;

    for (i, s) in c.series.iter().enumerate() {
        draw_series(&mut chart, i, s, div)?;
    }
    draw_legend(&legend_area, c)?;
    if c.series.is_empty() {
        plot_area.draw(&Text::new("no data", (200, 200), (FONT, 16)))?;
    }
    root.present()?;
    Ok(())
}

type Plotted<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<XCoord, RangedCoordf64>>;
type DrawResult = std::result::Result<(), Box<dyn std::error::Error>>;

/// Series `i`: its line, min-max bars with end ticks, and its marker (one
/// of three shapes, so series stay apart without colour).
fn draw_series(chart: &mut Plotted<'_, '_>, i: usize, s: &Series, div: f64) -> DrawResult {
    let color = PALETTE[i % PALETTE.len()];
    let pts: Vec<(f64, f64)> = s.points.iter().map(|p| (p.0, p.1 / div)).collect();
    chart.draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))?;
    let bars: Vec<&(f64, f64, f64, f64)> = s.points.iter().filter(|p| p.3 > p.2).collect();
    chart.draw_series(bars.iter().map(|p| {
        PathElement::new(
            vec![(p.0, p.2 / div), (p.0, p.3 / div)],
            color.stroke_width(1),
        )
    }))?;
    for end in [2usize, 3] {
        chart.draw_series(bars.iter().map(|p| {
            let y = if end == 2 { p.2 } else { p.3 } / div;
            EmptyElement::at((p.0, y))
                + PathElement::new(vec![(-5, 0), (5, 0)], color.stroke_width(1))
        }))?;
    }
    match i % 3 {
        0 => chart.draw_series(pts.iter().map(|&p| Circle::new(p, 4, color.filled())))?,
        1 => chart.draw_series(
            pts.iter()
                .map(|&p| TriangleMarker::new(p, 5, color.filled())),
        )?,
        _ => chart
            .draw_series(pts.iter().map(|&p| {
                EmptyElement::at(p) + Rectangle::new([(-4, -4), (4, 4)], color.filled())
            }))?,
    };
    Ok(())
}

/// The legend panel: title, one swatch per series, what the marks mean.
fn draw_legend(legend_area: &DrawingArea<SVGBackend<'_>, Shift>, c: &Chart) -> DrawResult {
    let mut y = 48;
    if !c.legend_title.is_empty() {
        legend_area.draw(&Text::new(
            legend_name(&c.legend_title),
            (8, y),
            (FONT, 15).into_font().style(FontStyle::Bold),
        ))?;
        y += 24;
    }
    for (i, s) in c.series.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        let mid = y + 7;
        legend_area.draw(&PathElement::new(
            vec![(8, mid), (34, mid)],
            color.stroke_width(2),
        ))?;
        match i % 3 {
            0 => legend_area.draw(&Circle::new((21, mid), 4, color.filled()))?,
            1 => legend_area.draw(&TriangleMarker::new((21, mid), 5, color.filled()))?,
            _ => legend_area.draw(&Rectangle::new(
                [(17, mid - 4), (25, mid + 4)],
                color.filled(),
            ))?,
        }
        // Text centred on the swatch's line.
        let style = (FONT, 14)
            .into_font()
            .into_text_style(legend_area)
            .pos(Pos::new(HPos::Left, VPos::Center));
        legend_area.draw(&Text::new(legend_name(&s.name), (42, mid), style))?;
        y += 24;
        if y > HEIGHT as i32 - 70 {
            legend_area.draw(&Text::new(
                format!("… {} more series", c.series.len() - i - 1),
                (8, y),
                (FONT, 13),
            ))?;
            y += 22;
            break;
        }
    }
    let note_style = (FONT, 13).into_font().color(&BLACK.mix(0.6));
    legend_area.draw(&Text::new(
        format!("points: {}", c.points_note),
        (8, y + 10),
        note_style.clone(),
    ))?;
    // The legend promises bars only where some are drawn.
    let bars = c.series.iter().any(|s| s.points.iter().any(|p| p.3 > p.2));
    let bars_note = if bars {
        "bars: lowest to highest repeat"
    } else {
        "no bars: no spread (one run or equal repeats)"
    };
    if c.repeats {
        legend_area.draw(&Text::new(bars_note, (8, y + 28), note_style))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn powers_of_two_spanning_8x_get_a_log2_axis() {
        assert!(matches!(
            XScale::for_values(&[1.0, 2.0, 4.0, 8.0, 128.0]),
            XScale::Log2 { .. }
        ));
        assert!(matches!(
            XScale::for_values(&[1.0, 4.0]),
            XScale::Linear { .. }
        ));
        assert!(matches!(
            XScale::for_values(&[1.0, 10.0, 100.0]),
            XScale::Linear { .. }
        ));
        let s = XScale::for_values(&[1.0, 8.0, 64.0]);
        assert_eq!(s.position(&serde_json::json!(8)), Some(3.0));
        assert_eq!(s.label(6.0), "64");
    }

    #[test]
    fn categories_label_whole_positions_only() {
        let s = XScale::Category(vec!["sync".into(), "uring".into()]);
        assert_eq!(s.position(&serde_json::json!("uring")), Some(1.0));
        assert_eq!(s.label(1.0), "uring");
        assert_eq!(s.label(0.5), "");
        assert_eq!(s.range(), (-0.5, 1.5));
    }

    #[test]
    fn nice_ticks_are_round() {
        assert_eq!(nice_ticks(0.0, 100.0), [0.0, 20.0, 40.0, 60.0, 80.0, 100.0]);
    }

    #[test]
    fn a_chart_is_well_formed_svg_with_its_labels() {
        let c = Chart {
            title: "p99 latency vs iodepth".into(),
            x: Axis {
                desc: "iodepth (I/Os in flight per job)".into(),
            },
            y_unit: Unit::Nanoseconds,
            y_title: "p99 latency".into(),
            throughput_word: "IOPS".into(),
            scale: XScale::for_values(&[1.0, 4.0]),
            series: vec![
                Series {
                    name: "engine=sync".into(),
                    points: vec![(1.0, 2e3, 1e3, 3e3), (4.0, 5e3, 5e3, 5e3)],
                },
                Series {
                    name: "engine=<uring> & co".into(),
                    points: vec![(1.0, 1e3, 1e3, 2e3)],
                },
            ],
            legend_title: "engine".into(),
            points_note: "median of repeats".into(),
            repeats: true,
        };
        let svg = render_svg(&c).unwrap();
        let doc = roxmltree::Document::parse(&svg).expect("SVG is XML");
        let texts: Vec<String> = doc
            .descendants()
            .filter(|n| n.has_tag_name("text"))
            .filter_map(|n| n.text().map(|t| t.trim().to_string()))
            .collect();
        for want in [
            "iodepth (I/Os in flight per job)",
            "p99 latency (ns)",
            "engine=sync",
            "engine=<uring> & co",
        ] {
            assert!(texts.iter().any(|t| t == want), "{want} not in {texts:?}");
        }
    }

    #[test]
    fn the_legend_promises_bars_only_where_they_are_drawn() {
        let chart = |points: Vec<(f64, f64, f64, f64)>| Chart {
            title: "t".into(),
            x: Axis { desc: "x".into() },
            y_unit: Unit::PerSecond,
            y_title: "IOPS".into(),
            throughput_word: "IOPS".into(),
            scale: XScale::for_values(&[1.0, 4.0]),
            series: vec![Series {
                name: "s".into(),
                points,
            }],
            legend_title: String::new(),
            points_note: "median of repeats".into(),
            repeats: true,
        };
        let lines = |svg: &str| svg.matches("<polyline").count() + svg.matches("<path").count();
        let with = render_svg(&chart(vec![(1.0, 2e3, 1e3, 3e3), (4.0, 5e3, 4e3, 6e3)])).unwrap();
        let without = render_svg(&chart(vec![(1.0, 2e3, 2e3, 2e3), (4.0, 5e3, 5e3, 5e3)])).unwrap();
        assert!(with.contains("bars: lowest to highest repeat"));
        assert!(without.contains("no bars: no spread"), "{without}");
        assert!(!without.contains("bars: lowest"));
        // Two bars, each with two end ticks, are drawn as extra lines.
        assert!(
            lines(&with) >= lines(&without) + 2,
            "{} vs {}",
            lines(&with),
            lines(&without)
        );
    }
}
