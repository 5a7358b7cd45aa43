//! PNG line plots (plotters, bitmap backend, the DejaVu Sans font embedded).

use crate::CliResult;
use plotters::prelude::*;
use std::path::Path;
use std::sync::Once;

/// Width and height of every plot in pixels.
pub const SIZE: (u32, u32) = (900, 600);

/// One line of a plot.
pub struct Series {
    /// Legend label.
    pub label: String,
    /// Points (x, y); non-positive values are dropped on log axes.
    pub points: Vec<(f64, f64)>,
    /// Dashed-looking style (points only) for reference data such as the paper's.
    pub reference: bool,
}

/// A plot's axes.
pub struct Axes<'a> {
    /// Title.
    pub title: &'a str,
    /// x-axis label with units.
    pub x: &'a str,
    /// y-axis label with units.
    pub y: &'a str,
    /// Logarithmic x axis.
    pub log_x: bool,
    /// Logarithmic y axis.
    pub log_y: bool,
    /// Legend in the upper right corner instead of the upper left.
    pub legend_right: bool,
}

fn font() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // The font is compiled in, so this cannot fail at run time.
        let _ = plotters::style::register_font(
            "sans-serif",
            FontStyle::Normal,
            dejavu::sans::regular(),
        );
    });
}

fn range(v: impl Iterator<Item = f64>, log: bool) -> (f64, f64) {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for x in v.filter(|x| x.is_finite() && (!log || *x > 0.0)) {
        lo = lo.min(x);
        hi = hi.max(x);
    }
    if !lo.is_finite() {
        return (1.0, 10.0);
    }
    if log {
        (lo / 1.5, hi * 1.5)
    } else {
        let pad = ((hi - lo) * 0.08).max(hi.abs() * 0.05).max(1e-12);
        ((lo - pad).min(0.0_f64.max(lo - pad)), hi + pad)
    }
}

/// Labelled and grid-only ticks of a log axis over [lo, hi]: 1–9 × 10^k on up to 1.5 decades,
/// 1, 2, 5 × 10^k on up to 3, powers of ten beyond; every m × 10^k a grid line.
fn log_ticks(lo: f64, hi: f64) -> (Vec<f64>, Vec<f64>) {
    let decades = (hi / lo).log10();
    let labelled: &[f64] = if decades <= 1.5 {
        &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]
    } else if decades <= 3.0 {
        &[1.0, 2.0, 5.0]
    } else {
        &[1.0]
    };
    let (mut bold, mut light) = (vec![], vec![]);
    for k in lo.log10().floor() as i32..=hi.log10().ceil() as i32 {
        for m in 1..10 {
            let v = if k < 0 {
                m as f64 / 10f64.powi(-k)
            } else {
                m as f64 * 10f64.powi(k)
            };
            if v < lo || v > hi {
                continue;
            }
            if labelled.contains(&(m as f64)) {
                bold.push(v);
            } else {
                light.push(v);
            }
        }
    }
    (bold, light)
}

/// A tick label: as few digits as the value needs (3 significant), no trailing zeros.
fn tick(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    let a = v.abs();
    if !(1e-3..1e6).contains(&a) {
        return format!("{v:.1e}");
    }
    let decimals = (2 - a.log10().floor() as i32).max(0) as usize;
    let s = format!("{v:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

const COLOURS: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(23, 190, 207),
];

/// Draws `series` into a PNG at `path`.
pub fn line_plot(path: &Path, axes: &Axes, series: &[Series]) -> CliResult<()> {
    font();
    let ok = |p: &(f64, f64)| {
        p.0.is_finite()
            && p.1.is_finite()
            && (!axes.log_x || p.0 > 0.0)
            && (!axes.log_y || p.1 > 0.0)
    };
    let pts = || {
        series
            .iter()
            .flat_map(|s| s.points.iter().filter(|p| ok(p)))
    };
    let (x0, x1) = range(pts().map(|p| p.0), axes.log_x);
    let (y0, y1) = range(pts().map(|p| p.1), axes.log_y);
    // A linear axis of whole numbers (levels, ranks) gets one label per whole number.
    let x_labels = if !axes.log_x && pts().all(|p| p.0.fract() == 0.0) {
        ((x1 - x0).floor() as usize + 1).clamp(2, 20)
    } else {
        10
    };
    let root = BitMapBackend::new(path, SIZE).into_drawing_area();
    let err = |e: &dyn std::fmt::Display| format!("plot {}: {e}", path.display());
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let mut b = ChartBuilder::on(&root);
    b.caption(axes.title, ("sans-serif", 22))
        .margin(15)
        .x_label_area_size(50)
        .y_label_area_size(80);
    macro_rules! draw {
        ($chart:expr) => {{
            let mut chart = $chart.map_err(|e| err(&e))?;
            chart
                .configure_mesh()
                .x_desc(axes.x)
                .y_desc(axes.y)
                .label_style(("sans-serif", 14))
                .x_labels(x_labels)
                .x_label_formatter(&|v| tick(*v))
                .y_label_formatter(&|v| tick(*v))
                .draw()
                .map_err(|e| err(&e))?;
            for (i, s) in series.iter().enumerate() {
                let c = COLOURS[i % COLOURS.len()];
                let data: Vec<(f64, f64)> = s.points.iter().copied().filter(|p| ok(p)).collect();
                if s.reference {
                    chart
                        .draw_series(data.iter().map(|&p| TriangleMarker::new(p, 7, c.filled())))
                        .map_err(|e| err(&e))?
                        .label(s.label.clone())
                        .legend(move |(x, y)| TriangleMarker::new((x + 10, y), 6, c.filled()));
                } else {
                    chart
                        .draw_series(LineSeries::new(data.clone(), c.stroke_width(2)))
                        .map_err(|e| err(&e))?
                        .label(s.label.clone())
                        .legend(move |(x, y)| {
                            PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2))
                        });
                    chart
                        .draw_series(data.iter().map(|&p| Circle::new(p, 4, c.filled())))
                        .map_err(|e| err(&e))?;
                }
            }
            chart
                .configure_series_labels()
                .background_style(WHITE.mix(0.9))
                .border_style(BLACK)
                .label_font(("sans-serif", 14))
                .position(if axes.legend_right {
                    SeriesLabelPosition::UpperRight
                } else {
                    SeriesLabelPosition::UpperLeft
                })
                .draw()
                .map_err(|e| err(&e))?;
        }};
    }
    let log = |lo: f64, hi: f64| {
        let (bold, light) = log_ticks(lo, hi);
        (lo..hi)
            .log_scale()
            .with_key_points(bold)
            .with_light_points(light)
    };
    match (axes.log_x, axes.log_y) {
        (true, true) => draw!(b.build_cartesian_2d(log(x0, x1), log(y0, y1))),
        (true, false) => draw!(b.build_cartesian_2d(log(x0, x1), y0..y1)),
        (false, true) => draw!(b.build_cartesian_2d(x0..x1, log(y0, y1))),
        (false, false) => draw!(b.build_cartesian_2d(x0..x1, y0..y1)),
    }
    root.present().map_err(|e| err(&e))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{log_ticks, tick};

    #[test]
    fn log_ticks_label_what_fits() {
        assert_eq!(
            log_ticks(0.7, 6.0).0,
            [0.7, 0.8, 0.9, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
        );
        assert_eq!(
            log_ticks(10.0, 1100.0).0,
            [10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0]
        );
        let (bold, light) = log_ticks(0.05, 150.0);
        assert_eq!(bold.len(), 4);
        assert!(light.contains(&3.0) && light.contains(&0.06));
    }

    #[test]
    fn tick_labels_are_short() {
        assert_eq!(tick(60.0), "60");
        assert_eq!(tick(4.0), "4");
        assert_eq!(tick(0.25), "0.25");
        assert_eq!(tick(1234.0), "1234");
        assert_eq!(tick(2.5e-5), "2.5e-5");
        assert_eq!(tick(0.0), "0");
    }
}
