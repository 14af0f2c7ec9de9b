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

/// An SVG line chart. `marks` are x positions drawn as thin vertical
/// lines (latency spikes); `limits` horizontal dashed lines (pass limits).
pub fn line_chart(
    id: &str,
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[Series],
    marks: &[f64],
    limits: &[(f64, &str)],
) -> String {
    let mut svg = String::new();
    {
        let backend = SVGBackend::with_string(&mut svg, (760, 300));
        let root = backend.into_drawing_area();
        let _ = draw(&root, title, x_label, y_label, series, marks, limits);
        let _ = root.present();
    }
    // An id and a class the page (and its tests) can find the chart by.
    svg.replacen("<svg ", &format!("<svg id=\"{id}\" class=\"chart\" "), 1)
}

/// What drawing on the SVG backend can fail with (plotters' own error).
type DrawError = DrawingAreaErrorKind<std::io::Error>;

fn draw(
    root: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[Series],
    marks: &[f64],
    limits: &[(f64, &str)],
) -> Result<(), DrawError> {
    root.fill(&WHITE)?;
    let all = series.iter().flat_map(|s| s.points.iter());
    let (mut x0, mut x1, mut y1) = (f64::MAX, f64::MIN, 0.0f64);
    for &(x, y) in all {
        x0 = x0.min(x);
        x1 = x1.max(x);
        y1 = y1.max(y);
    }
    for (l, _) in limits {
        y1 = y1.max(*l);
    }
    if x0 > x1 {
        (x0, x1) = (0.0, 1.0);
    }
    if x1 <= x0 {
        x1 = x0 + 1.0;
    }
    let y1 = if y1 <= 0.0 { 1.0 } else { y1 * 1.1 };
    let mut chart = ChartBuilder::on(root)
        .caption(title, ("sans-serif", 16))
        .margin(8)
        .x_label_area_size(36)
        .y_label_area_size(56)
        .build_cartesian_2d(x0..x1, 0.0..y1)?;
    chart
        .configure_mesh()
        .x_desc(x_label)
        .y_desc(y_label)
        .light_line_style(WHITE.mix(0.0))
        .draw()?;
    for &m in marks {
        chart.draw_series(LineSeries::new(
            [(m, 0.0), (m, y1)],
            RGBColor(255, 160, 0).mix(0.5),
        ))?;
    }
    for (l, name) in limits {
        chart
            .draw_series(LineSeries::new([(x0, *l), (x1, *l)], BLACK.mix(0.35)))?
            .label(name.to_string())
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], BLACK.mix(0.35)));
    }
    for (i, s) in series.iter().enumerate() {
        let c = COLORS[i % COLORS.len()];
        // Points as well as the line, so a single slice still shows.
        chart.draw_series(s.points.iter().map(|&p| Circle::new(p, 3, c.filled())))?;
        chart
            .draw_series(LineSeries::new(s.points.iter().copied(), c.stroke_width(2)))?
            .label(s.name.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], c.stroke_width(2)));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK.mix(0.2))
        .draw()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

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
            svg.starts_with("<svg id=\"t\" class=\"chart\" "),
            "{}",
            &svg[..80]
        );
        assert!(
            svg.contains("reads &gt; 1 ms") || svg.contains("reads > 1 ms"),
            "legend"
        );
        assert!(svg.contains("<polyline"), "{svg}");
    }
}
