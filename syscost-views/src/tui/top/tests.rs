use super::state::*;
use super::*;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::{Terminal, backend::TestBackend};
use std::time::Duration;
use syscost_common::{TopKey, TopValue};
use syscost_report::profile::TopSort;
use syscost_report::report::top::ProcessRow;

fn row(pid: u32, comm: &str, cg: &str, key: u32, calls: u64, ns: u64) -> ProcessRow {
    let mut r = ProcessRow {
        pid,
        comm: comm.into(),
        cgroup: cg.into(),
        threads: 2,
        ..Default::default()
    };
    r.syscalls.insert(
        syscost_engine::process_table::top_id(&TopKey { tgid: pid, key }),
        TopValue {
            calls,
            errors: calls / 10,
            total_ns: ns,
            offcpu_ns: ns / 2,
        },
    );
    r
}

fn view() -> TopView {
    let mut v = TopView::new("the machine".into(), TopSort::Time);
    v.apply(
        vec![
            row(
                10,
                "nginx",
                "/system.slice/nginx.service",
                232,
                1000,
                800_000_000,
            ),
            row(
                20,
                "postgres",
                "/system.slice/pg.service",
                202,
                5000,
                300_000_000,
            ),
            row(30, "cron", "/system.slice/cron.service", 0, 10, 1_000),
        ],
        2.0,
    );
    v
}

fn key(c: KeyCode) -> KeyEvent {
    KeyEvent::new(c, KeyModifiers::NONE)
}

fn screen(v: &TopView) -> String {
    screen_of(&draw(v, 140, 12))
}

#[test]
fn rates_sort_filter_and_drill() {
    let mut v = view();
    let s = screen(&v);
    // 1000 calls in 2 s; 0.8 s in syscalls over 2 s.
    assert!(s.contains("    500 "), "{s}");
    assert!(s.contains("0.400"), "{s}");
    assert!(s.contains("epoll_wait 0.400"), "{s}");
    let nginx = s.lines().position(|l| l.contains("nginx")).unwrap();
    let pg = s.lines().position(|l| l.contains("postgres")).unwrap();
    assert!(nginx < pg, "most time first:\n{s}");
    v.handle_key(key(KeyCode::Char('s')));
    v.handle_key(key(KeyCode::Char('s')));
    assert_eq!(v.sort, TopSort::Calls);
    assert_eq!(v.process_rows()[0].pid, 20);
    v.handle_key(key(KeyCode::Char('/')));
    for c in "cron".chars() {
        v.handle_key(key(KeyCode::Char(c)));
    }
    v.handle_key(key(KeyCode::Enter));
    assert_eq!(v.process_rows().len(), 1);
    assert_eq!(
        v.handle_key(key(KeyCode::Enter)),
        Action::Drill {
            pid: 30,
            threads: false
        }
    );
    assert_eq!(
        v.handle_key(key(KeyCode::Char('t'))),
        Action::Drill {
            pid: 30,
            threads: true
        }
    );
    v.handle_key(key(KeyCode::Esc));
    assert_eq!(v.process_rows().len(), 3);
}

#[test]
fn syscall_to_processes_and_cgroups() {
    let mut v = view();
    v.handle_key(key(KeyCode::Char('y')));
    assert_eq!(v.mode, Mode::Syscalls);
    let s = screen(&v);
    assert!(s.contains("epoll_wait"), "{s}");
    v.handle_key(key(KeyCode::Down));
    v.handle_key(key(KeyCode::Enter));
    let Mode::SyscallProcesses(id) = v.mode else {
        panic!("{:?}", v.mode)
    };
    assert_eq!(id.name(), "futex");
    assert!(screen(&v).contains("postgres"));
    assert_eq!(
        v.handle_key(key(KeyCode::Enter)),
        Action::Drill {
            pid: 20,
            threads: false
        }
    );
    v.handle_key(key(KeyCode::Esc));
    assert_eq!(v.mode, Mode::Syscalls);
    v.handle_key(key(KeyCode::Esc));
    v.handle_key(key(KeyCode::Char('g')));
    assert_eq!(v.mode, Mode::Cgroups);
    let s = screen(&v);
    assert!(s.contains("/system.slice/nginx.service"), "{s}");
    // A cgroup's columns: its processes and name, not a pid and a comm.
    let head = s.lines().find(|l| l.contains("CGROUP")).unwrap();
    let cols: Vec<&str> = head.split_whitespace().collect();
    assert_eq!(&cols[..3], ["PROCS", "NAME", "CGROUP"], "{s}");
    let nginx = s.lines().find(|l| l.contains("nginx.service")).unwrap();
    assert_eq!(nginx.split_whitespace().next(), Some("1"), "{s}");
    // A second nginx worker: its cgroup counts 2.
    let mut rows = v.rows.clone();
    rows.push(row(
        11,
        "nginx",
        "/system.slice/nginx.service",
        232,
        10,
        1_000,
    ));
    v.apply(rows, 2.0);
    let s = screen(&v);
    let nginx = s.lines().find(|l| l.contains("nginx.service")).unwrap();
    assert_eq!(nginx.split_whitespace().next(), Some("2"), "{s}");
    let pg = s.lines().find(|l| l.contains("pg.service")).unwrap();
    assert_eq!(pg.split_whitespace().next(), Some("1"), "{s}");
    v.handle_key(key(KeyCode::Enter));
    assert_eq!(v.mode, Mode::Processes);
    let pids: Vec<u32> = v.process_rows().iter().map(|r| r.pid).collect();
    assert_eq!(pids.len(), 2, "Enter on a cgroup filters by it: {pids:?}");
    assert!(pids.contains(&10) && pids.contains(&11), "{pids:?}");
    v.handle_key(key(KeyCode::Esc));
    assert_eq!(v.process_rows().len(), 4, "Esc clears it");
    assert_eq!(v.handle_key(key(KeyCode::Char('q'))), Action::Quit);
}

/// A name the process chose shows escaped in every view of it: the process table,
/// the busiest process of a syscall, the processes of a syscall, the cgroups.
#[test]
fn names_the_process_chose_show_escaped_in_every_mode() {
    let mut v = TopView::new("the machine".into(), TopSort::Time);
    v.apply(
        vec![row(
            7,
            "\u{1b}[31mEVIL\u{7}",
            "/\u{1b}]0;CG\u{7}",
            0,
            100,
            5_000,
        )],
        1.0,
    );
    let expect = |s: &str, what: &str| {
        assert!(s.contains(what), "{what} missing:\n{s}");
        assert!(!s.contains('\u{1b}') && !s.contains('\u{7}'), "{s}");
    };
    expect(&screen(&v), "\\33[31mEVIL\\7");
    v.handle_key(key(KeyCode::Char('y')));
    expect(&screen(&v), "\\33[31mEVIL\\7 (7)");
    v.handle_key(key(KeyCode::Enter));
    expect(&screen(&v), "\\33[31mEVIL\\7");
    v.handle_key(key(KeyCode::Esc));
    v.handle_key(key(KeyCode::Esc));
    v.handle_key(key(KeyCode::Char('g')));
    expect(&screen(&v), "\\33]0;CG\\7");
}

fn draw(v: &TopView, w: u16, h: u16) -> Terminal<TestBackend> {
    let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
    t.draw(|f| render(f, v)).unwrap();
    t
}

/// A view with a long name, a long cgroup and a measured own cost, as a busy host's.
fn busy_view() -> TopView {
    let mut v = view();
    let mut rows = v.rows.clone();
    rows.push(row(
        4242,
        "memfd:sealed-91",
        "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1.slice/cri-containerd-abc.scope",
        1,
        7001,
        2_500_000,
    ));
    v.apply(rows, 1.0);
    v.elapsed = Duration::from_secs(3725);
    v.own_cost = "188 ns/event, 0.4% of a CPU".into();
    v
}

/// At 80x24, the default terminal: whole names, the header's figures, "? help".
#[test]
fn fits_80x24() {
    let v = busy_view();
    let t = draw(&v, 80, 24);
    let s = screen_of(&t);
    assert!(s.contains("memfd:sealed-91"), "{s}");
    assert!(s.contains("? help"), "{s}");
    // Whole parts of the header only: no phrase cut.
    let second = s.lines().nth(1).unwrap();
    let whole = [
        "13,011 syscalls/s",
        "1.103 s/s in syscalls",
        "dropped 0",
        "own cost 188 ns/event, 0.4% of a CPU",
    ];
    for part in second.trim().split(" · ") {
        assert!(whole.contains(&part), "{part:?} is cut: {second}");
    }
    // Numbers right-aligned under their right-aligned title: every row's rate
    // ends where "CALLS/s" ends (1,000 and 10 alike).
    let head = s.lines().find(|l| l.contains("CALLS/s")).unwrap();
    let end = head.find("CALLS/s").unwrap() + "CALLS/s".len();
    for name in ["nginx", "postgres", "memfd", "cron"] {
        let line: Vec<char> = s
            .lines()
            .find(|l| l.contains(name))
            .unwrap()
            .chars()
            .collect();
        assert!(
            line[end - 1].is_ascii_digit() && line[end] == ' ',
            "{name}'s rate does not end under CALLS/s:\n{s}"
        );
    }
    insta::assert_snapshot!(t.backend());
}

/// `g` at 80 columns: each cgroup by the end of its path, which tells containers
/// apart.
#[test]
fn cgroups_at_80_columns_show_the_end_of_their_paths() {
    let mut v = busy_view();
    v.handle_key(key(KeyCode::Char('g')));
    let s = screen_of(&draw(&v, 80, 24));
    assert!(s.contains("…"), "{s}");
    assert!(s.contains("cri-containerd-abc.scope"), "{s}");
    assert!(s.contains("/system.slice/nginx.service"), "{s}");
}

#[test]
fn fits_160x45() {
    insta::assert_snapshot!(draw(&busy_view(), 160, 45).backend());
}

/// `?`: every key whole at 80 columns.
#[test]
fn help_fits_80_columns() {
    let mut v = busy_view();
    v.handle_key(key(KeyCode::Char('?')));
    let t = draw(&v, 80, 24);
    let s = screen_of(&t);
    for (k, d) in render::HELP {
        assert!(s.contains(d), "{k}: {d} not whole:\n{s}");
    }
    insta::assert_snapshot!(t.backend());
}

/// A filter shows in the header, and the header counts what it shows.
#[test]
fn an_active_filter_shows_and_counts() {
    let mut v = busy_view();
    v.handle_key(key(KeyCode::Char('/')));
    for c in "nginx".chars() {
        v.handle_key(key(KeyCode::Char(c)));
    }
    v.handle_key(key(KeyCode::Enter));
    let s = screen_of(&draw(&v, 120, 12));
    assert!(s.contains("filter \"nginx\""), "{s}");
    assert!(s.contains("1 of 4 processes with syscalls"), "{s}");
    // 1000 calls in 1 s of nginx alone.
    assert!(s.contains(" 1,000 syscalls/s"), "{s}");
}

fn screen_of(t: &Terminal<TestBackend>) -> String {
    let b = t.backend().buffer();
    (0..b.area.height)
        .map(|y| {
            (0..b.area.width)
                .map(|x| b[(x, y)].symbol().to_string())
                .collect::<String>()
                + "\n"
        })
        .collect()
}

#[test]
fn paused_keeps_the_rows() {
    let mut v = view();
    v.handle_key(key(KeyCode::Char('p')));
    v.apply(Vec::new(), 1.0);
    assert_eq!(v.rows.len(), 3);
    v.handle_key(key(KeyCode::Char('p')));
    v.apply(Vec::new(), 1.0);
    assert!(v.rows.is_empty());
}
