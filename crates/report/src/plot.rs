//! Line charts as inline SVG (plotters' SVG backend), for the report.

use plotters::prelude::*;

pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

const COLORS: [RGBColor; 4] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
];

fn css(c: RGBColor) -> String {
    format!("#{:02x}{:02x}{:02x}", c.0, c.1, c.2)
}

/// The pages' one escaper: entities, and a bundle's control and bidi
/// characters shown escaped.
fn esc(s: &str) -> String {
    storcert_util::text::html_escape(s)
}

/// An SVG line chart with its legend beside it (HTML, so it covers no
/// data). `marks` are x positions drawn as thin vertical lines (latency
/// spikes); `limits` horizontal lines (pass limits). Where no series has
/// more than one point, a table says it better than a lone dot: the
/// values, by series, under the same id.
pub fn line_chart(
    id: &str,
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[Series],
    marks: &[f64],
    limits: &[(f64, &str)],
) -> String {
    if series.iter().all(|s| s.points.len() <= 1) {
        let mut t = format!(
            "<table id=\"{id}\" class=\"chart-table\"><caption>{}</caption><thead><tr><th class=\"l\"></th><th>{}</th><th>{}</th></tr></thead><tbody>",
            esc(title),
            esc(x_label),
            esc(y_label)
        );
        for s in series {
            for (x, y) in &s.points {
                t += &format!(
                    "<tr><td class=\"l\">{}</td><td>{}</td><td>{y:.2}</td></tr>",
                    esc(&s.name),
                    trim_number(*x)
                );
            }
        }
        for (l, name) in limits {
            t += &format!(
                "<tr class=\"limit\"><td class=\"l\">{}</td><td></td><td>{l:.2}</td></tr>",
                esc(name)
            );
        }
        return t + "</tbody></table>";
    }
    let mut svg = String::new();
    {
        let backend = SVGBackend::with_string(&mut svg, (760, 300));
        let root = backend.into_drawing_area();
        // plotters escapes the SVG's markup but not control characters:
        // a title holding a bundle's histogram name is shown escaped.
        let [title, x_label, y_label] =
            [title, x_label, y_label].map(storcert_util::text::printable_lines);
        let _ = draw(&root, &title, &x_label, &y_label, series, marks, limits);
        let _ = root.present();
    }
    // An id and a class the page (and its tests) can find the chart by.
    let svg = svg.replacen("<svg ", &format!("<svg id=\"{id}\" class=\"chart\" "), 1);
    let mut legend = format!("<ul class=\"legend\" id=\"{id}-legend\">");
    for (i, s) in series.iter().enumerate() {
        legend += &format!(
            "<li><span class=\"swatch\" style=\"background:{}\"></span>{}</li>",
            css(COLORS[i % COLORS.len()]),
            esc(&s.name)
        );
    }
    for (_, name) in limits {
        legend += &format!("<li><span class=\"swatch limit\"></span>{}</li>", esc(name));
    }
    if !marks.is_empty() {
        legend += "<li><span class=\"swatch mark\"></span>spike</li>";
    }
    format!("<figure class=\"chart-figure\">{svg}{legend}</ul></figure>")
}

/// 3.0 → "3", 2.5 → "2.5".
fn trim_number(x: f64) -> String {
    if x.fract() == 0.0 {
        format!("{x:.0}")
    } else {
        format!("{x}")
    }
}

/// What drawing on the SVG backend can fail with (plotters' own error).
type DrawError = DrawingAreaErrorKind<std::io::Error>;

/// The highest value a chart's scale reaches: a figure from a bundle may
/// be any number, and plotters' ticks over an infinite (or near-infinite)
/// range never end. Latencies in µs and percentages are far below it.
const LARGEST: f64 = 1e15;

/// The series as they can be drawn: points that are not finite numbers
/// left out, values above `LARGEST` drawn at it.
fn drawable(series: &[Series]) -> Vec<Series> {
    series
        .iter()
        .map(|s| Series {
            name: s.name.clone(),
            points: s
                .points
                .iter()
                .filter(|(x, y)| x.is_finite() && y.is_finite())
                .map(|&(x, y)| (x.clamp(-LARGEST, LARGEST), y.min(LARGEST)))
                .collect(),
        })
        .collect()
}

fn draw(
    root: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    title: &str,
    x_label: &str,
    y_label: &str,
    given: &[Series],
    marks: &[f64],
    limits: &[(f64, &str)],
) -> Result<(), DrawError> {
    root.fill(&WHITE)?;
    let series = drawable(given);
    let series = &series[..];
    let marks: Vec<f64> = marks.iter().copied().filter(|m| m.is_finite()).collect();
    let limits: Vec<(f64, &str)> = limits
        .iter()
        .copied()
        .filter(|(l, _)| l.is_finite())
        .map(|(l, n)| (l.min(LARGEST), n))
        .collect();
    let all = series.iter().flat_map(|s| s.points.iter());
    let (mut x0, mut x1, mut y1) = (f64::MAX, f64::MIN, 0.0f64);
    for &(x, y) in all {
        x0 = x0.min(x);
        x1 = x1.max(x);
        y1 = y1.max(y);
    }
    for (l, _) in &limits {
        y1 = y1.max(*l);
    }
    if x0 > x1 {
        (x0, x1) = (0.0, 1.0);
    }
    // Whole-number x (slices, seconds, loads): ticks only on whole numbers.
    let whole = series
        .iter()
        .flat_map(|s| s.points.iter())
        .all(|(x, _)| x.fract() == 0.0);
    if x1 <= x0 {
        x1 = x0 + 1.0;
    }
    let span = x1 - x0;
    let x_ticks = if whole {
        (span as usize + 1).min(12)
    } else {
        10
    };
    let y1 = if y1 <= 0.0 { 1.0 } else { y1 * 1.1 };
    let mut chart = ChartBuilder::on(root)
        .caption(title, ("sans-serif", 16))
        .margin(8)
        .x_label_area_size(36)
        .y_label_area_size(56)
        .build_cartesian_2d(x0..x1, 0.0..y1)?;
    let x_fmt = move |x: &f64| {
        if !whole {
            trim_number((x * 100.0).round() / 100.0)
        } else if (x - x.round()).abs() < 1e-6 {
            format!("{x:.0}")
        } else {
            String::new()
        }
    };
    chart
        .configure_mesh()
        .x_desc(x_label)
        .y_desc(y_label)
        .x_labels(x_ticks)
        .x_label_formatter(&x_fmt)
        .light_line_style(WHITE.mix(0.0))
        .draw()?;
    for &m in &marks {
        chart.draw_series(LineSeries::new(
            [(m, 0.0), (m, y1)],
            RGBColor(255, 160, 0).mix(0.5),
        ))?;
    }
    for (l, _) in &limits {
        chart.draw_series(LineSeries::new([(x0, *l), (x1, *l)], BLACK.mix(0.35)))?;
    }
    for (i, s) in series.iter().enumerate() {
        let c = COLORS[i % COLORS.len()];
        // Points as well as the line, so a single slice still shows.
        chart.draw_series(s.points.iter().map(|&p| Circle::new(p, 3, c.filled())))?;
        chart.draw_series(LineSeries::new(s.points.iter().copied(), c.stroke_width(2)))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chart_of_absurd_values_is_drawn_and_ends() {
        let svg = line_chart(
            "t",
            "title",
            "s",
            "%",
            &[Series {
                name: "x".into(),
                points: vec![
                    (1.0, 1.7e308),
                    (2.0, f64::INFINITY),
                    (3.0, f64::NAN),
                    (f64::INFINITY, 1.0),
                    (4.0, 2.0),
                ],
            }],
            &[f64::NAN],
            &[(f64::INFINITY, "limit")],
        );
        assert!(svg.contains("<svg"), "{svg}");
    }

    #[test]
    fn draws_the_points_given() {
        let svg = line_chart(
            "t",
            "title",
            "s",
            "%",
            &[Series {
                name: "reads > 1 ms".into(),
                points: vec![(1.0, 0.5), (2.0, 3.0), (3.0, 1.0)],
            }],
            &[2.0],
            &[(5.0, "limit 5%")],
        );
        assert!(
            svg.starts_with("<figure class=\"chart-figure\"><svg id=\"t\" class=\"chart\" "),
            "{}",
            &svg[..80]
        );
        // The legend is beside the chart, not over it.
        assert!(
            svg.contains("<ul class=\"legend\" id=\"t-legend\"><li>"),
            "{svg}"
        );
        assert!(svg.contains("reads &gt; 1 ms</li>"), "legend");
        assert!(svg.contains("<polyline"), "{svg}");
    }

    #[test]
    fn one_point_is_a_table_and_whole_numbers_tick_whole() {
        let one = line_chart(
            "s",
            "slices",
            "slice",
            "% of reads",
            &[Series {
                name: "% > 1 ms".into(),
                points: vec![(1.0, 0.82)],
            }],
            &[],
            &[(5.0, "5% limit")],
        );
        assert!(
            one.starts_with("<table id=\"s\" class=\"chart-table\">"),
            "{one}"
        );
        assert!(one.contains("<td>1</td><td>0.82</td>"), "{one}");
        let two = line_chart(
            "s",
            "slices",
            "slice",
            "%",
            &[Series {
                name: "x".into(),
                points: vec![(1.0, 0.5), (2.0, 0.7)],
            }],
            &[],
            &[],
        );
        // Ticks at 1 and 2 only: no "1.2" or "slice 1.3".
        let ticks: Vec<&str> = two
            .split("</text>")
            .filter_map(|t| t.rsplit('>').next())
            .map(str::trim)
            .collect();
        assert!(ticks.contains(&"1") && ticks.contains(&"2"), "{ticks:?}");
        assert!(!ticks.iter().any(|t| t.starts_with("1.")), "{ticks:?}");
    }
}
