//! Figures as the panes show them: counts, durations, a sparkline.

pub(super) fn clock(d: std::time::Duration) -> String {
    let s = d.as_secs();
    format!("{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

pub(super) fn count(n: f64) -> String {
    if n >= 10_000_000.0 {
        format!("{:.1}M", n / 1e6)
    } else if n >= 100_000.0 {
        format!("{:.0}k", n / 1e3)
    } else {
        format!("{n:.0}")
    }
}

/// A sparkline as text, one character per sample, scaled to the largest.
pub(super) fn spark(history: &[u64], width: usize) -> String {
    const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let tail = &history[history.len().saturating_sub(width)..];
    let max = tail.iter().copied().max().unwrap_or(0);
    tail.iter()
        .map(|&v| match (v * 7 + max / 2).checked_div(max) {
            Some(level) => BARS[level as usize],
            None => ' ',
        })
        .collect()
}
