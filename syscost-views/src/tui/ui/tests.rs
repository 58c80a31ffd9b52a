#[test]
fn long_names_keep_their_end() {
    assert_eq!(super::tail("pipe:[123]", 20), "pipe:[123]");
    assert_eq!(super::tail("/tmp/a/b/c/d/e/f/g/file.txt", 10), "…/file.txt");
    // Cut between escapes, never inside one.
    assert_eq!(super::tail("/tmp/x\u{1b}\u{1b}\u{1b}", 10), "…\\33\\33\\33");
    assert_eq!(super::tail("/tmp/xy\u{1b}", 8), "…p/xy\\33");
    assert_eq!(super::tail("\u{1b}\u{1b}\u{1b}\u{1b}", 10), "…\\33\\33\\33");
}

use super::{figures::spark, *};
use crate::tui::app::tests::{sample_app, syscall};
use crate::tui::handler::handle_key;
use ratatui::{
    Terminal,
    backend::TestBackend,
    crossterm::event::{KeyCode, KeyEvent},
};

fn draw(app: &App, w: u16, h: u16) -> Terminal<TestBackend> {
    let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
    t.draw(|f| render(f, app)).unwrap();
    t
}

/// The text of a drawn screen, line by line.
fn text(t: &Terminal<TestBackend>) -> String {
    let buf = t.backend().buffer();
    (0..buf.area.height)
        .map(|y| {
            (0..buf.area.width)
                .map(|x| buf[(x, y)].symbol())
                .collect::<String>()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn a_slow_call_is_named_by_the_programs_own_frame_then_the_wrapper() {
    let frame = |function: &str, module: &str| syscost_report::profile::Frame {
        addr: 1,
        function: Some(function.into()),
        location: None,
        module: Some(module.into()),
        unknown: None,
        mapping: None,
    };
    let libc = "/usr/lib/x86_64-linux-gnu/libc.so.6";
    let stack = [
        frame("__GI___clock_nanosleep", libc),
        frame("__nanosleep", libc),
        frame("syscost_workload::work", "/usr/bin/syscost-workload"),
        frame("main", "/usr/bin/syscost-workload"),
    ];
    assert_eq!(
        called_from(&stack),
        "syscost_workload::work via __GI___clock_nanosleep"
    );
    assert_eq!(called_from(&stack[2..]), "syscost_workload::work");
    assert_eq!(called_from(&stack[..2]), "__GI___clock_nanosleep");
    assert_eq!(called_from(&[]), "");
}

/// `w` with --stacks: the selected syscall's stacks by calls and by time, estimated
/// splits marked, other syscalls' and (drilled from top) other processes' left out.
#[test]
fn callers_pane_of_the_selected_syscall() {
    use syscost_report::profile::{CallStack, CallStacks, Frame};
    let mut app = sample_app();
    let name = app.selected_row().expect("a selected row").name.clone();
    let stack = |pid, syscall: &str, f: &[&str], calls, ns, estimated| CallStack {
        pid,
        comm: "app".into(),
        syscall: syscall.into(),
        calls,
        total_ns: ns,
        frames: f
            .iter()
            .map(|n| Frame {
                function: Some(n.to_string()),
                ..Frame::default()
            })
            .collect(),
        estimated,
        ..CallStack::default()
    };
    app.stacks = Some(std::sync::Arc::new(CallStacks {
        stacks: vec![
            stack(
                4242,
                &name,
                &["wrapper", "many_calls", "main"],
                900,
                1_000,
                false,
            ),
            stack(
                4242,
                &name,
                &["wrapper", "slow_calls", "main"],
                100,
                9_000_000,
                true,
            ),
            stack(4242, "not_it", &["elsewhere"], 5, 5, false),
            stack(7, &name, &["other_process"], 5, 5, false),
        ],
        ..CallStacks::default()
    }));
    assert!(!text(&draw(&app, 140, 32)).contains("callers of"));
    handle_key(&mut app, KeyEvent::from(KeyCode::Char('w')));
    let shown = text(&draw(&app, 140, 32));
    assert!(
        shown.contains(&format!("callers of {name} since the start: 3 stacks")),
        "{shown}"
    );
    assert!(
        shown.contains("by calls") && shown.contains("by time"),
        "{shown}"
    );
    assert!(shown.contains("wrapper < many_calls < main"), "{shown}");
    assert!(shown.contains("estimated split"), "{shown}");
    // The estimated line is marked, the exact one is not.
    let marked = |needle: &str| {
        shown
            .lines()
            .map(|l| l.chars().take(70).collect::<String>())
            .find(|l| l.contains(needle))
            .is_some_and(|l| l.contains('~'))
    };
    assert!(marked("slow_calls") && !marked("many_calls"), "{shown}");
    assert!(!shown.contains("elsewhere"), "{shown}");
    // By time, the slow caller comes first: its line is above the other's on the right.
    let right = |needle: &str| {
        shown.lines().position(|l| {
            let half: String = l.chars().skip(70).collect();
            half.contains(needle)
        })
    };
    let (slow, many) = (right("slow_calls"), right("many_calls"));
    assert!(slow.is_some() && many.is_some() && slow < many, "{shown}");
    // Drilled from top: that process's stacks alone.
    app.stacks_of = Some(4242);
    let shown = text(&draw(&app, 140, 32));
    assert!(
        shown.contains("2 stacks") && !shown.contains("other_process"),
        "{shown}"
    );
}

#[test]
fn main_table_wide() {
    let mut app = sample_app();
    app.per = Some("accept4".into());
    insta::assert_snapshot!(draw(&app, 140, 32).backend());
}

#[test]
fn main_table_80x24() {
    let mut app = sample_app();
    app.per = Some("accept4".into());
    app.hint = Some("watch close and epoll_ctl: the per-request cost is in the header".into());
    insta::assert_snapshot!(draw(&app, 80, 24).backend());
}

/// Names are shown whole (the column is as wide as the longest), and the detail
/// pane's "blocked NN%" is never cut, at 80 and at 140 columns.
#[test]
fn long_names_and_the_split_fit() {
    let mut p = crate::tui::app::tests::server_profile(1);
    p.syscalls
        .push(syscall("clock_nanosleep", 230, 10, 0, 1_000_000));
    p.syscalls
        .push(syscall("i386:clock_nanosleep_time64", 407, 5, 0, 900_000));
    let mut app = App::new(
        crate::tui::app::TargetInfo {
            pid: 1,
            comm: "x".into(),
            threads: 1,
            label: None,
        },
        crate::tui::app::tests::server_profile(0),
    );
    app.apply(crate::tui::app::tests::sample_of(p.clone(), p, 1));
    for (w, h) in [(80, 30), (140, 32)] {
        for selected in [0, 2] {
            app.selected = selected;
            let t = draw(&app, w, h);
            let b = t.backend().buffer();
            let text: String = (0..b.area.height)
                .map(|y| {
                    (0..b.area.width)
                        .map(|x| b[(x, y)].symbol())
                        .collect::<String>()
                        + "\n"
                })
                .collect();
            assert!(text.contains("│clock_nanosleep "), "{w} columns:\n{text}");
            // At 80 columns the 27 characters do not fit beside the others: cut,
            // and marked as cut.
            let long = if w == 80 {
                "│i386:clock_nan… "
            } else {
                "│i386:clock_nanosleep_time64 "
            };
            assert!(text.contains(long), "{w} columns:\n{text}");
            assert!(
                text.contains("on-CPU 100% blocked   0%"),
                "{w} columns:\n{text}"
            );
        }
    }
}

#[test]
fn histogram_pane_of_selected_row() {
    let mut app = sample_app();
    app.selected = 2;
    insta::assert_snapshot!(draw(&app, 100, 30).backend());
}

#[test]
fn a_stuck_call_in_the_header() {
    let mut app = sample_app();
    app.stuck = vec![
        crate::tui::app::StuckCall {
            tid: 4243,
            syscall: "read".into(),
            elapsed: std::time::Duration::from_millis(31_200),
            blocked: true,
        },
        crate::tui::app::StuckCall {
            tid: 4244,
            syscall: "futex".into(),
            elapsed: std::time::Duration::from_millis(1_500),
            blocked: true,
        },
    ];
    insta::assert_snapshot!(draw(&app, 80, 24).backend());
}

#[test]
fn main_table_160x45() {
    let mut app = sample_app();
    app.per = Some("accept4".into());
    insta::assert_snapshot!(draw(&app, 160, 45).backend());
}

/// The footer keeps "? help" at 80 columns, and a key that cannot act says why.
#[test]
fn keys_that_cannot_act_say_why() {
    let mut app = sample_app();
    let s = text(&draw(&app, 80, 24));
    assert!(
        s.lines().last().unwrap().trim_end().ends_with("? help"),
        "{s}"
    );
    for (k, why) in [('l', "--slow DURATION"), ('w', "--stacks FILE")] {
        crate::tui::handler::handle_key(
            &mut app,
            ratatui::crossterm::event::KeyEvent::new(
                ratatui::crossterm::event::KeyCode::Char(k),
                ratatui::crossterm::event::KeyModifiers::NONE,
            ),
        );
        let s = text(&draw(&app, 80, 24));
        assert!(s.lines().last().unwrap().contains(why), "{k}: {s}");
    }
}

/// `?`: every key's line whole at 80 columns.
#[test]
fn help_lines_are_whole_at_80() {
    let mut app = sample_app();
    app.show_help = true;
    let s = text(&draw(&app, 80, 24));
    for what in [
        "callers of the selected syscall, with --stacks",
        "slow calls, with --slow (Esc back)",
    ] {
        assert!(s.contains(what), "{what} cut:\n{s}");
    }
}

#[test]
fn per_thread_view() {
    let mut app = sample_app();
    app.show_threads = true;
    insta::assert_snapshot!(draw(&app, 80, 24).backend());
}

#[test]
fn help_overlay() {
    let mut app = sample_app();
    app.show_help = true;
    insta::assert_snapshot!(draw(&app, 80, 24).backend());
}

#[test]
fn exited_banner_and_pause() {
    let mut app = sample_app();
    app.exited = true;
    app.paused = true;
    app.filter = "e".into();
    insta::assert_snapshot!(draw(&app, 80, 24).backend());
}

#[test]
fn sparkline_text() {
    assert_eq!(spark(&[0, 1, 2, 4, 8], 10), "▁▂▃▅█");
    assert_eq!(spark(&[5, 5], 1), "█");
    assert_eq!(spark(&[0, 0], 5), "  ");
    assert_eq!(spark(&[], 5), "");
}

#[test]
fn histogram_bars_merge_to_fit() {
    let s = syscall("read", 0, 1000, 0, 2_000);
    let bars = histogram_bars(&s, 3);
    assert!(!bars.is_empty() && bars.len() <= 3, "{bars:?}");
    assert_eq!(bars.iter().map(|b| b.1).sum::<u64>(), 1000);
}
