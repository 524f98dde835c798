//! Inline SVG charts generated in Rust: line charts over time or over a log axis, and a bar
//! histogram — no script and no network needed to draw them, so they print as they show.

use std::fmt::Write;

const WIDTH: f64 = 760.0;
const HEIGHT: f64 = 260.0;
const LEFT: f64 = 64.0;
const RIGHT: f64 = 16.0;
const TOP: f64 = 28.0;
const BOTTOM: f64 = 40.0;

/// Colours of successive series, readable on white and in greyscale print.
pub const PALETTE: [&str; 6] = [
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf",
];

/// One line of a chart.
#[derive(Debug, Clone)]
pub struct Line {
    pub name: String,
    pub color: &'static str,
    pub points: Vec<(f64, f64)>,
    pub dashed: bool,
}

/// How an axis maps values and labels ticks.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Axis {
    Linear,
    /// Logarithmic, base 10; values must be positive.
    Log,
    /// The HdrHistogram percentile axis: x = log10(1 / (1 - q)), ticks 0%, 90%, 99%, ...
    Percentile,
}

/// A chart: title, axes, and lines.
#[derive(Debug, Clone)]
pub struct Chart {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub x_axis: Axis,
    pub y_axis: Axis,
    pub lines: Vec<Line>,
}

fn escape(text: &str) -> String {
    super::escape(text)
}

/// Round-number tick positions covering `[low, high]` (about five).
fn linear_ticks(low: f64, high: f64) -> Vec<f64> {
    let span = (high - low).max(f64::MIN_POSITIVE);
    let raw = span / 5.0;
    let magnitude = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * magnitude)
        .find(|s| span / s <= 6.0)
        .unwrap_or(magnitude * 10.0);
    let mut ticks = Vec::new();
    let mut t = (low / step).ceil() * step;
    while t <= high + step * 1e-9 {
        ticks.push(t);
        t += step;
    }
    ticks
}

/// A number for a tick label: short, without trailing zeros.
pub fn short_number(v: f64) -> String {
    let a = v.abs();
    if a >= 1e6 {
        format!("{:.3}M", v / 1e6)
            .trim_end_matches('0')
            .trim_end_matches('.')
            .replace(".M", "M")
    } else if a >= 1e4 {
        format!("{:.0}k", v / 1e3)
    } else if a >= 100.0 || a == 0.0 || v.fract() == 0.0 {
        format!("{v:.0}")
    } else if a >= 1.0 {
        format!("{v:.1}")
    } else {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').to_string()
    }
}

fn transform(axis: Axis, v: f64) -> f64 {
    match axis {
        Axis::Linear | Axis::Percentile => v,
        Axis::Log => v.max(1e-9).log10(),
    }
}

/// Ticks as `(position in transformed units, label)`.
fn ticks(axis: Axis, low: f64, high: f64) -> Vec<(f64, String)> {
    match axis {
        Axis::Linear => linear_ticks(low, high)
            .into_iter()
            .map(|t| (t, short_number(t)))
            .collect(),
        // Less than a decade (bounds fitted to the data): round values inside it.
        Axis::Log if high - low < 1.0 => linear_ticks(10f64.powf(low), 10f64.powf(high))
            .into_iter()
            .filter(|&t| t > 0.0 && (low..=high).contains(&t.log10()))
            .map(|t| (t.log10(), short_number(t)))
            .collect(),
        Axis::Log => {
            let mut out = Vec::new();
            let mut decade = low.floor() as i32;
            while f64::from(decade) <= high.ceil() {
                out.push((f64::from(decade), short_number(10f64.powi(decade))));
                decade += 1;
            }
            out
        }
        Axis::Percentile => {
            let labels = ["0%", "90%", "99%", "99.9%", "99.99%", "99.999%", "99.9999%"];
            (0..labels.len())
                .filter(|&i| i as f64 <= high.ceil())
                .map(|i| (i as f64, labels[i].to_string()))
                .collect()
        }
    }
}

fn bounds(values: impl Iterator<Item = f64>, axis: Axis) -> (f64, f64) {
    let (mut low, mut high) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in values.filter(|v| v.is_finite()) {
        low = low.min(v);
        high = high.max(v);
    }
    if !low.is_finite() {
        return (0.0, 1.0);
    }
    match axis {
        Axis::Linear => {
            let low = low.min(0.0);
            (low, if high > low { high * 1.05 } else { low + 1.0 })
        }
        // Data within one decade keeps its own range (100–108 ms is not drawn flat against a
        // 100–1000 ms axis); wider data spans whole decades.
        Axis::Log if high - low < 1.0 => {
            let pad = ((high - low) * 0.05).max(0.002);
            (low - pad, high + pad)
        }
        Axis::Log => (low.floor(), high.ceil().max(low.floor() + 1.0)),
        Axis::Percentile => (0.0, high.ceil().max(1.0)),
    }
}

impl Chart {
    /// The chart as an `<svg>` element. Each line is one `<path class="series">` whose `d`
    /// lists its points (what the browser test counts).
    pub fn to_svg(&self) -> String {
        let xs = self
            .lines
            .iter()
            .flat_map(|l| l.points.iter().map(|p| transform(self.x_axis, p.0)));
        let ys = self
            .lines
            .iter()
            .flat_map(|l| l.points.iter().map(|p| transform(self.y_axis, p.1)));
        let (x0, x1) = bounds(xs, self.x_axis);
        let (y0, y1) = bounds(ys, self.y_axis);
        let plot_w = WIDTH - LEFT - RIGHT;
        let plot_h = HEIGHT - TOP - BOTTOM;
        let sx = |v: f64| LEFT + (transform(self.x_axis, v) - x0) / (x1 - x0) * plot_w;
        let sy = |v: f64| TOP + plot_h - (transform(self.y_axis, v) - y0) / (y1 - y0) * plot_h;
        let mut svg = String::new();
        let _ = write!(
            svg,
            r#"<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{title}" xmlns="http://www.w3.org/2000/svg"><text class="title" x="{LEFT}" y="16">{title}</text>"#,
            title = escape(&self.title)
        );
        for (t, label) in ticks(self.y_axis, y0, y1) {
            let y = TOP + plot_h - (t - y0) / (y1 - y0) * plot_h;
            y_grid_line(&mut svg, y, &label);
        }
        for (t, label) in ticks(self.x_axis, x0, x1) {
            let x = LEFT + (t - x0) / (x1 - x0) * plot_w;
            // A label at the right edge ends there instead of running off the chart.
            let anchor = if x > WIDTH - RIGHT - 24.0 {
                "end"
            } else {
                "middle"
            };
            x_grid_line(&mut svg, x, plot_h, anchor, &label);
        }
        axis_titles(&mut svg, plot_w, plot_h, &self.x_label, &self.y_label);
        let mut legend_x = WIDTH - RIGHT;
        for line in self.lines.iter().rev() {
            legend_x -= 14.0 + 7.0 * line.name.chars().count() as f64;
            let _ = write!(
                svg,
                r#"<rect x="{legend_x:.1}" y="8" width="10" height="10" fill="{c}"/><text class="legend" x="{:.1}" y="17">{}</text>"#,
                legend_x + 13.0,
                escape(&line.name),
                c = line.color
            );
        }
        for line in &self.lines {
            if line.points.is_empty() {
                continue;
            }
            let mut d = String::with_capacity(line.points.len() * 14);
            for (i, &(x, y)) in line.points.iter().enumerate() {
                let _ = write!(
                    d,
                    "{}{:.1} {:.1}",
                    if i == 0 { "M" } else { " L" },
                    sx(x),
                    sy(y)
                );
            }
            let _ = write!(
                svg,
                r#"<path class="series line" data-name="{}" d="{d}" stroke="{}"{}/>"#,
                escape(&line.name),
                line.color,
                if line.dashed {
                    r#" stroke-dasharray="6 4""#
                } else {
                    ""
                }
            );
        }
        svg.push_str("</svg>");
        svg
    }
}

/// A bar histogram: `(low, high, count)` bins on a log x axis.
pub fn histogram_svg(title: &str, x_label: &str, bins: &[(f64, f64, u64)]) -> String {
    let peak = bins.iter().map(|b| b.2).max().unwrap_or(0).max(1) as f64;
    let (x0, x1) = bounds(
        bins.iter()
            .flat_map(|b| [b.0.max(1e-9).log10(), b.1.max(1e-9).log10()]),
        Axis::Log,
    );
    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = HEIGHT - TOP - BOTTOM;
    let sx = |v: f64| LEFT + (v.max(1e-9).log10() - x0) / (x1 - x0) * plot_w;
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{t}" xmlns="http://www.w3.org/2000/svg"><text class="title" x="{LEFT}" y="16">{t}</text>"#,
        t = escape(title)
    );
    for (t, label) in ticks(Axis::Linear, 0.0, peak) {
        let y = TOP + plot_h - t / peak * plot_h;
        y_grid_line(&mut svg, y, &label);
    }
    for (t, label) in ticks(Axis::Log, x0, x1) {
        let x = LEFT + (t - x0) / (x1 - x0) * plot_w;
        x_grid_line(&mut svg, x, plot_h, "middle", &label);
    }
    axis_titles(&mut svg, plot_w, plot_h, x_label, "responses");
    // One path of rectangles: cheap for the browser, and counted like the line charts.
    let mut d = String::new();
    for &(low, high, count) in bins.iter().filter(|b| b.2 > 0) {
        let (xa, xb) = (sx(low), sx(high).max(sx(low) + 1.0));
        let h = count as f64 / peak * plot_h;
        let y = TOP + plot_h - h;
        let _ = write!(
            d,
            "M{xa:.1} {:.1} L{xa:.1} {y:.1} L{xb:.1} {y:.1} L{xb:.1} {:.1} Z ",
            TOP + plot_h,
            TOP + plot_h
        );
    }
    let _ = write!(
        svg,
        r#"<path class="series bars" data-name="responses" d="{}" fill="{}" stroke="none"/></svg>"#,
        d.trim_end(),
        PALETTE[0]
    );
    svg
}

/// A horizontal grid line at `y` with its tick label left of the plot.
fn y_grid_line(svg: &mut String, y: f64, label: &str) {
    let _ = write!(
        svg,
        r#"<line class="grid" x1="{LEFT}" x2="{:.1}" y1="{y:.1}" y2="{y:.1}"/><text class="tick" x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"#,
        WIDTH - RIGHT,
        LEFT - 6.0,
        y + 4.0,
        escape(label)
    );
}

/// A vertical grid line at `x` with its tick label under the plot.
fn x_grid_line(svg: &mut String, x: f64, plot_h: f64, anchor: &str, label: &str) {
    let _ = write!(
        svg,
        r#"<line class="grid" x1="{x:.1}" x2="{x:.1}" y1="{TOP}" y2="{:.1}"/><text class="tick" x="{x:.1}" y="{:.1}" text-anchor="{anchor}">{}</text>"#,
        TOP + plot_h,
        TOP + plot_h + 16.0,
        escape(label)
    );
}

/// The axis titles: `x_label` under the plot, `y_label` turned along its left side.
fn axis_titles(svg: &mut String, plot_w: f64, plot_h: f64, x_label: &str, y_label: &str) {
    let _ = write!(
        svg,
        r#"<text class="axis" x="{:.1}" y="{:.1}" text-anchor="middle">{}</text><text class="axis" transform="translate(14 {:.1}) rotate(-90)" text-anchor="middle">{}</text>"#,
        LEFT + plot_w / 2.0,
        HEIGHT - 4.0,
        escape(x_label),
        TOP + plot_h / 2.0,
        escape(y_label)
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_chart_draws_each_point_and_labels_axes() {
        let chart = Chart {
            title: "requests/s".into(),
            x_label: "seconds".into(),
            y_label: "per second".into(),
            x_axis: Axis::Linear,
            y_axis: Axis::Linear,
            lines: vec![Line {
                name: "requests <all>".into(),
                color: PALETTE[0],
                points: vec![(0.0, 10.0), (1.0, 20.0), (2.0, 15.0)],
                dashed: false,
            }],
        };
        let svg = chart.to_svg();
        assert_eq!(svg.matches(" L").count(), 2, "{svg}");
        assert!(svg.contains("requests &lt;all&gt;"));
        assert!(svg.contains(">20<"), "a tick at 20: {svg}");
    }

    #[test]
    fn ticks_are_round_numbers() {
        assert_eq!(
            linear_ticks(0.0, 100.0),
            vec![0.0, 20.0, 40.0, 60.0, 80.0, 100.0]
        );
        assert_eq!(short_number(25_000.0), "25k");
        assert_eq!(short_number(0.25), "0.25");
        let narrow = ticks(Axis::Log, 100f64.log10(), 108f64.log10());
        assert_eq!(
            narrow.iter().map(|t| t.1.as_str()).collect::<Vec<_>>(),
            ["100", "102", "104", "106", "108"]
        );
        let (low, high) = bounds([100f64.log10(), 108f64.log10()].into_iter(), Axis::Log);
        assert!(
            high - low < 0.05,
            "100–108 ms keeps its range: {low}..{high}"
        );
        let log = ticks(Axis::Log, -1.0, 2.0);
        assert_eq!(
            log.iter().map(|t| t.1.as_str()).collect::<Vec<_>>(),
            ["0.1", "1", "10", "100"]
        );
    }
}
