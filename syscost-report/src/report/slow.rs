//! Slow calls as text lines, a Chrome/Perfetto trace, folded stacks and a flame graph.

use std::{collections::BTreeMap, fmt::Write as _};

use anyhow::{Context as _, Result, bail};

use crate::{
    profile::{ARGS_UNKNOWN, Frame, SlowCall},
    syscall_names,
    untrusted::shown,
};

/// One line per call (and its frames, indented), as `--no-tui` prints them.
pub fn line(c: &SlowCall) -> String {
    let mut s = format!(
        "slow: {}({}) = {}{} in {} ({} switched out) tid {} {}",
        c.syscall,
        args_text(c),
        c.ret,
        c.errno
            .as_deref()
            .map(|e| format!(" {e}"))
            .unwrap_or_default(),
        crate::units::human_ns(c.latency_ns),
        crate::units::human_ns(c.offcpu_ns),
        c.tid,
        shown(&c.comm),
    );
    for f in &c.stack {
        let _ = write!(
            s,
            "\n    {:#x} {}{}{}",
            f.addr,
            f.label(),
            f.location
                .as_deref()
                .map(|l| format!(" ({})", shown(l)))
                .unwrap_or_default(),
            f.unknown
                .as_deref()
                .map(|w| format!(" [unknown: {}]", shown(w)))
                .unwrap_or_default()
        );
    }
    if !c.kernel_stack.is_empty() {
        let names: Vec<String> = c.kernel_stack.iter().take(8).map(Frame::label).collect();
        let _ = write!(s, "\n    blocked in: {}", names.join(" <- "));
    }
    s
}

fn args_text(c: &SlowCall) -> String {
    let plain = c
        .syscall
        .strip_prefix(syscall_names::COMPAT_PREFIX)
        .unwrap_or(&c.syscall);
    if ARGS_UNKNOWN.contains(&plain) {
        return "...".to_string();
    }
    match (&c.fd, &c.fd_unknown) {
        (Some(name), _) => format!("{}<{}>, ...", c.args[0] as i64, shown(name)),
        (None, Some(why)) => format!("{}<?: {}>, ...", c.args[0] as i64, shown(why)),
        (None, None) => format!("{:#x}, {:#x}, {:#x}, ...", c.args[0], c.args[1], c.args[2]),
    }
}

/// The calls as a Chrome trace-event JSON (what ui.perfetto.dev and chrome://tracing
/// open): a track per thread, a slice per call with its figures as args.
pub fn trace_json(calls: &[SlowCall]) -> Result<String> {
    let mut events = Vec::new();
    let mut named = BTreeMap::new();
    for c in calls {
        named
            .entry((c.pid, c.tid))
            .or_insert_with(|| c.comm.clone());
        let frames: Vec<String> = c.stack.iter().map(Frame::raw_label).collect();
        events.push(serde_json::json!({
            "name": c.syscall,
            "cat": "syscall",
            "ph": "X",
            "ts": c.start_ns as f64 / 1e3,
            "dur": c.latency_ns as f64 / 1e3,
            "pid": c.pid,
            "tid": c.tid,
            "args": {
                "ret": c.ret,
                "errno": c.errno,
                "fd": c.fd,
                "fd_unknown": c.fd_unknown,
                "offcpu_us": c.offcpu_ns as f64 / 1e3,
                "args": c.args.iter().map(|a| format!("{a:#x}")).collect::<Vec<_>>(),
                "stack": frames,
                "kernel_stack": c.kernel_stack.iter().map(Frame::raw_label).collect::<Vec<_>>(),
            }
        }));
    }
    for ((pid, tid), comm) in named {
        events.push(serde_json::json!({
            "name": "thread_name", "ph": "M", "pid": pid, "tid": tid,
            "args": { "name": format!("{comm} ({tid})") }
        }));
    }
    Ok(
        crate::untrusted::json_safe(serde_json::to_string(&serde_json::json!({
            "traceEvents": events,
            "displayTimeUnit": "ms",
        }))?)
            + "\n",
    )
}

/// Folded stacks (`comm;outer;...;inner;syscall latency_us`), one line per distinct
/// stack, weighted by time in the call: what `inferno-flamegraph` and `flamegraph.pl`
/// take. Names as text outputs print them, `;` (the separator) as `:`.
pub fn folded(calls: &[SlowCall]) -> String {
    let mut weights: BTreeMap<String, u64> = BTreeMap::new();
    for c in calls {
        let mut path = vec![shown(&c.comm).replace(';', ":")];
        path.extend(
            c.stack
                .iter()
                .rev()
                .map(|f| f.folded_label().replace(';', ":")),
        );
        path.push(c.syscall.clone());
        *weights.entry(path.join(";")).or_default() += (c.latency_ns / 1000).max(1);
    }
    weights
        .into_iter()
        .map(|(k, v)| format!("{k} {v}\n"))
        .collect()
}

/// A flame graph (SVG) of the folded stacks, by time in slow calls (microseconds).
pub fn flame_svg(folded: &str, title: &str) -> Result<Vec<u8>> {
    let mut opts = inferno::flamegraph::Options::default();
    opts.title = title.to_string();
    opts.count_name = "us".to_string();
    let mut out = Vec::new();
    inferno::flamegraph::from_lines(&mut opts, folded.lines(), &mut out)
        .context("cannot draw the flame graph")?;
    if out.is_empty() {
        bail!("no stacks to draw");
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(syscall: &str, tid: u32, ns: u64, frames: &[&str]) -> SlowCall {
        SlowCall {
            start_ns: 1_000_000,
            end_ns: 1_000_000 + ns,
            pid: 7,
            tid,
            comm: "app".into(),
            syscall: syscall.into(),
            latency_ns: ns,
            offcpu_ns: ns / 2,
            ret: 1,
            stack: frames
                .iter()
                .enumerate()
                .map(|(i, f)| Frame {
                    addr: 0x1000 + i as u64,
                    function: Some(f.to_string()),
                    ..Frame::default()
                })
                .collect(),
            ..SlowCall::default()
        }
    }

    #[test]
    fn folded_trace_and_flame() {
        let calls = [
            call("nanosleep", 7, 2_000_000, &["sleepy", "main"]),
            call("nanosleep", 7, 3_000_000, &["sleepy", "main"]),
            call("read", 8, 20_000_000, &["reader", "main"]),
        ];
        let f = folded(&calls);
        assert_eq!(
            f, "app;main;reader;read 20000\napp;main;sleepy;nanosleep 5000\n",
            "outermost first, weighted by microseconds"
        );
        let t: serde_json::Value = serde_json::from_str(&trace_json(&calls).unwrap()).unwrap();
        let ev = t["traceEvents"].as_array().unwrap();
        let slices: Vec<_> = ev.iter().filter(|e| e["ph"] == "X").collect();
        assert_eq!(slices.len(), 3);
        assert_eq!(slices[2]["dur"], 20_000.0);
        assert_eq!(slices[0]["args"]["stack"][0], "sleepy");
        assert_eq!(
            ev.iter().filter(|e| e["ph"] == "M").count(),
            2,
            "a name per thread"
        );
        let svg = String::from_utf8(flame_svg(&f, "slow calls").unwrap()).unwrap();
        assert!(svg.contains("<svg") && svg.contains("sleepy"), "{svg}");
        let l = line(&calls[2]);
        assert!(l.starts_with("slow: read("), "{l}");
        assert!(
            l.contains("in 20.0ms (10.0ms switched out) tid 8 app"),
            "{l}"
        );
        assert!(l.contains("\n    0x1000 reader"), "{l}");
    }

    /// Names a traced process chose reach no output raw: text outputs escape them, the
    /// SVG stays well-formed XML with no element of theirs, the trace keeps them exactly.
    #[test]
    fn hostile_names_are_escaped_in_every_output() {
        let comm = "\u{1b}]0;PWNED\u{7}x";
        let mut c = call(
            "read",
            9,
            5_000_000,
            &["evil<script>alert(1)</script>", "m\u{9b}2J"],
        );
        c.comm = comm.into();
        c.fd = Some(crate::untrusted::decode(b"/tmp/\x1b[31mred\xff"));
        c.stack[0].location = Some("/src/\u{1b}[2J.rs:3".into());
        let clean = |text: &str| {
            text.chars()
                .all(|ch| !ch.is_control() || ch == '\n' || ch == '\t')
        };
        let l = line(&c);
        assert!(clean(&l), "{l:?}");
        assert!(l.contains("tid 9 \\33]0;PWNED\\7x"), "{l}");
        assert!(l.contains("</tmp/\\33[31mred\\xff>"), "{l}");
        assert!(
            l.contains("m\\u{9b}2J") && l.contains("/src/\\33[2J.rs:3"),
            "{l}"
        );
        let f = folded(std::slice::from_ref(&c));
        assert!(clean(&f) && f.contains("\\33]0:PWNED"), "{f:?}");
        let svg = String::from_utf8(flame_svg(&f, "slow calls").unwrap()).unwrap();
        assert!(
            clean(&svg.replace('\r', "")),
            "control characters in the SVG"
        );
        let mut reader = quick_xml::Reader::from_str(&svg);
        let mut elements = Vec::new();
        loop {
            match reader.read_event() {
                Ok(quick_xml::events::Event::Eof) => break,
                Ok(quick_xml::events::Event::Start(e) | quick_xml::events::Event::Empty(e)) => {
                    elements.push(String::from_utf8_lossy(e.name().as_ref()).into_owned())
                }
                Ok(_) => {}
                Err(e) => panic!("the SVG is not well-formed XML: {e}"),
            }
        }
        assert!(
            !elements
                .iter()
                .any(|e| e == "script" && svg.contains("alert(1)</script"))
        );
        assert!(
            svg.contains("evil&lt;script&gt;"),
            "the name is there, escaped"
        );
        let t: serde_json::Value =
            serde_json::from_str(&trace_json(&[c.clone()]).unwrap()).unwrap();
        let ev = t["traceEvents"].as_array().unwrap();
        assert_eq!(ev[0]["args"]["stack"][0], "evil<script>alert(1)</script>");
        assert_eq!(ev[1]["args"]["name"], format!("{comm} (9)"));
    }
}
