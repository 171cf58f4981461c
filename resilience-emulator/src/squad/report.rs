//! Presenting two runs side by side: a text table, a JSON object, an SVG plot.

use super::metrics::Metrics;
use super::Run;
use std::fmt::Write as _;
use std::time::Duration;

/// The side-by-side table of the naive and governed runs.
pub fn table(naive: &Metrics, governed: &Metrics) -> String {
    let rows: [(&str, String, String); 13] = [
        (
            "requests",
            naive.requests.to_string(),
            governed.requests.to_string(),
        ),
        (
            "rate-limited responses (403/429)",
            naive.rate_limited_responses.to_string(),
            governed.rate_limited_responses.to_string(),
        ),
        (
            "longest lockout",
            secs(naive.longest_lockout_s),
            secs(governed.longest_lockout_s),
        ),
        (
            "P0 wait p50",
            secs(naive.p0_wait_p50_s),
            secs(governed.p0_wait_p50_s),
        ),
        (
            "P0 wait p95",
            secs(naive.p0_wait_p95_s),
            secs(governed.p0_wait_p95_s),
        ),
        (
            "P0 wait max",
            secs(naive.p0_wait_max_s),
            secs(governed.p0_wait_max_s),
        ),
        (
            "priority inversions (P2 admitted while P0 waits)",
            naive.priority_inversions.to_string(),
            governed.priority_inversions.to_string(),
        ),
        (
            "P2 arriving while P0 waits (incl. sent before)",
            naive.p2_arrivals_during_p0_wait.to_string(),
            governed.p2_arrivals_during_p0_wait.to_string(),
        ),
        (
            "peak requests per 100 ms after a block",
            naive.peak_requests_per_100ms_after_block.to_string(),
            governed.peak_requests_per_100ms_after_block.to_string(),
        ),
        (
            "time to finish",
            secs(naive.completion_s),
            secs(governed.completion_s),
        ),
        (
            "lower bound (any scheduler)",
            secs(naive.lower_bound_s),
            secs(governed.lower_bound_s),
        ),
        (
            "goodput (lower bound / time to finish)",
            format!("{:.3}", naive.goodput_ratio),
            format!("{:.3}", governed.goodput_ratio),
        ),
        (
            "unfinished tasks",
            naive.unfinished_tasks.to_string(),
            governed.unfinished_tasks.to_string(),
        ),
    ];
    let mut out = String::new();
    let _ = writeln!(out, "{:<48} {:>12} {:>12}", "", "naive", "governed");
    let _ = writeln!(out, "{:-<48} {:->12} {:->12}", "", "", "");
    for (name, a, b) in rows {
        let _ = writeln!(out, "{name:<48} {a:>12} {b:>12}");
    }
    out
}

fn secs(s: f64) -> String {
    format!("{s:.1} s")
}

/// One JSON object with top-level `naive` and `governed` metric objects.
pub fn json(naive: &Metrics, governed: &Metrics) -> String {
    serde_json::json!({ "naive": naive, "governed": governed }).to_string()
}

const W: f64 = 900.0;
const PANEL: f64 = 220.0;
const LEFT: f64 = 70.0;
const TOP: f64 = 40.0;
const GAP: f64 = 60.0;

/// An SVG plot headed `title`: primary quota remaining over time (top) and requests per 10 s
/// with rate-limited answers marked (bottom), naive in red and governed in green.
pub fn svg(title: &str, naive: &Run, governed: &Run, limit: u32) -> String {
    let end = [naive, governed]
        .iter()
        .flat_map(|r| r.log.last().map(|e| e.at))
        .max()
        .unwrap_or(Duration::from_secs(1))
        .as_secs_f64()
        .max(1.0);
    let plot_w = W - LEFT - 20.0;
    let x = |t: f64| LEFT + plot_w * t / end;
    let mut s = String::new();
    let h = TOP + 2.0 * PANEL + GAP + 50.0;
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{h}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="{LEFT}" y="20" font-size="15">{}: naive retry (red) vs rate governor (green)</text>"#,
        escape(title)
    );

    // Top panel: remaining quota.
    let y0 = TOP;
    axes(
        &mut s,
        y0,
        "x-ratelimit-remaining",
        &format!("{limit}"),
        end,
    );
    for (run, colour) in [(naive, "#d62728"), (governed, "#2ca02c")] {
        let pts: Vec<String> = run
            .log
            .iter()
            .map(|e| {
                let y = y0 + PANEL * (1.0 - f64::from(e.remaining) / f64::from(limit.max(1)));
                format!("{:.1},{:.1}", x(e.at.as_secs_f64()), y)
            })
            .collect();
        let _ = writeln!(
            s,
            r#"<polyline fill="none" stroke="{colour}" stroke-width="1.5" points="{}"/>"#,
            pts.join(" ")
        );
    }

    // Bottom panel: requests per 10 s, and rate-limited ones as dots on the axis.
    let y1 = TOP + PANEL + GAP;
    let bucket = 10.0;
    let n = (end / bucket).ceil() as usize + 1;
    let counts = |run: &Run, limited: bool| {
        let mut c = vec![0u32; n];
        for e in run
            .log
            .iter()
            .filter(|e| !limited || e.outcome.is_rate_limited())
        {
            c[((e.at.as_secs_f64() / bucket) as usize).min(n - 1)] += 1;
        }
        c
    };
    let peak = [naive, governed]
        .iter()
        .flat_map(|r| counts(r, false))
        .max()
        .unwrap_or(1)
        .max(1);
    axes(
        &mut s,
        y1,
        "requests per 10 s (dots: rate-limited)",
        &peak.to_string(),
        end,
    );
    for (run, colour) in [(naive, "#d62728"), (governed, "#2ca02c")] {
        let pts: Vec<String> = counts(run, false)
            .iter()
            .enumerate()
            .map(|(i, c)| {
                format!(
                    "{:.1},{:.1}",
                    x(i as f64 * bucket),
                    y1 + PANEL * (1.0 - f64::from(*c) / f64::from(peak))
                )
            })
            .collect();
        let _ = writeln!(
            s,
            r#"<polyline fill="none" stroke="{colour}" stroke-width="1.2" points="{}"/>"#,
            pts.join(" ")
        );
        for (i, c) in counts(run, true)
            .iter()
            .enumerate()
            .filter(|(_, c)| **c > 0)
        {
            let r = (f64::from(*c)).sqrt().min(8.0) + 1.0;
            let _ = writeln!(
                s,
                r#"<circle cx="{:.1}" cy="{:.1}" r="{r:.1}" fill="{colour}" fill-opacity="0.5"/>"#,
                x(i as f64 * bucket),
                y1 + PANEL
            );
        }
    }
    let _ = writeln!(s, "</svg>");
    s
}

/// `text` safe inside an SVG text node.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

fn axes(s: &mut String, y0: f64, label: &str, top: &str, end: f64) {
    let (x0, x1, yb) = (LEFT, W - 20.0, y0 + PANEL);
    let _ = writeln!(
        s,
        r##"<path d="M{x0},{y0} L{x0},{yb} L{x1},{yb}" fill="none" stroke="#333"/>"##
    );
    let _ = writeln!(s, r#"<text x="{x0}" y="{}">{label}</text>"#, y0 - 6.0);
    let _ = writeln!(
        s,
        r#"<text x="{}" y="{}" text-anchor="end">{top}</text>"#,
        x0 - 4.0,
        y0 + 10.0
    );
    let _ = writeln!(
        s,
        r#"<text x="{}" y="{yb}" text-anchor="end">0</text>"#,
        x0 - 4.0
    );
    let _ = writeln!(
        s,
        r#"<text x="{x1}" y="{}" text-anchor="end">{:.0} s</text>"#,
        yb + 16.0,
        end
    );
}
