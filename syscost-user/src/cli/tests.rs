use super::*;
use proptest::prelude::*;

#[test]
fn metrics_addresses_take_the_exporters_forms() {
    let a = |s: &str| parse_metrics_addr(s).map(|a| a.to_string());
    assert_eq!(a("127.0.0.1:9464").as_deref(), Ok("127.0.0.1:9464"));
    assert_eq!(a("[::1]:9464").as_deref(), Ok("[::1]:9464"));
    assert_eq!(a(":9999").as_deref(), Ok("[::]:9999"));
    assert_eq!(a("0.0.0.0:9999").as_deref(), Ok("0.0.0.0:9999"));
    assert_eq!(a("localhost:9999").as_deref(), Ok("127.0.0.1:9999"));
    assert!(a(":99999").unwrap_err().contains("not a port number"));
    assert!(
        a("example.org:80")
            .unwrap_err()
            .starts_with("not an address")
    );
    assert!(a("9464").is_err());
}

#[test]
fn bad_numbers_are_one_line_errors() {
    for bad in ["0", "-1", "1e20", "1e-10", "inf", "NaN", "x", ""] {
        assert!(parse_seconds(bad).is_err(), "{bad}");
    }
    assert!(parse_interval("0.01").is_err());
    assert_eq!(parse_interval("0.5"), Ok(0.5));
    assert_eq!(parse_seconds("0.5"), Ok(0.5));
    for bad in ["0", "-3", "1e-9", "1e10", "inf", "x"] {
        assert!(parse_rate(bad).is_err(), "{bad}");
    }
    assert!(parse_cpu("1024").is_err());
    assert!(parse_cpu("-1").is_err());
    assert_eq!(parse_cpu("0"), Ok(0));
}

/// The help names the interval the session takes unless told (it is written once,
/// in the session; the help's words are checked against it).
#[test]
fn the_interval_the_help_names_is_the_sessions() {
    use clap::CommandFactory as _;
    let secs = syscost_engine::session::INTERVAL.as_secs_f64();
    let cli = Cli::command();
    for sub in ["attach", "top"] {
        let help = cli
            .find_subcommand(sub)
            .and_then(|c| c.get_arguments().find(|a| a.get_id() == "interval"))
            .and_then(|a| a.get_help())
            .map(|h| h.to_string())
            .unwrap_or_default();
        assert!(
            help.contains(&format!("(default {secs})")),
            "{sub} -i: {help}"
        );
    }
    let c = cli
        .find_subcommand("attach")
        .and_then(|c| c.get_arguments().find(|a| a.get_id() == "live_text"))
        .and_then(|a| a.get_help())
        .map(|h| h.to_string())
        .unwrap_or_default();
    assert_eq!(c.contains("every second"), secs == 1.0, "-C: {c}");
}

proptest! {
    /// Whatever the text, a parser returns an error or a value every later use
    /// takes without panicking.
    #[test]
    fn parsed_values_are_usable(text in "\\PC{0,12}|[-+]?[0-9]{0,25}(\\.[0-9]{0,5})?(e[-+]?[0-9]{1,3})?") {
        if let Ok(v) = parse_seconds(&text) {
            prop_assert!(seconds(Some(v)).is_some_and(|d| !d.is_zero()));
            let _ = std::time::Instant::now() + std::time::Duration::from_secs_f64(v);
        }
        if let Ok(v) = parse_interval(&text) {
            prop_assert!(seconds(Some(v)).is_some_and(|d| d >= syscost_engine::session::SHORTEST_INTERVAL));
        }
        if let Ok(r) = parse_rate(&text) {
            let _ = std::time::Duration::from_secs_f64(1e6 / r);
        }
    }
}
