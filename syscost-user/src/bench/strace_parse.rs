//! Reads `strace -c` summary tables (to put strace's figures next to syscost's).

/// One row of an strace -c table.
#[derive(Clone, Debug, PartialEq)]
pub struct StraceRow {
    pub name: String,
    pub seconds: f64,
    pub usecs_per_call: u64,
    pub calls: u64,
    pub errors: u64,
}

/// The syscall rows of an `strace -c` (or `-c -w`) summary; the total line and anything
/// that is not a row (tracee output, notes) are skipped.
pub fn parse(text: &str) -> Vec<StraceRow> {
    text.lines()
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            let (pct, rest) = f.split_first()?;
            pct.parse::<f64>().ok()?;
            let (seconds, usecs, calls, errors, name) = match rest {
                [s, u, c, n] => (s, u, c, "0", n),
                [s, u, c, e, n] => (s, u, c, *e, n),
                _ => return None,
            };
            if *name == "total" {
                return None;
            }
            Some(StraceRow {
                name: name.to_string(),
                seconds: seconds.parse().ok()?,
                usecs_per_call: usecs.parse().ok()?,
                calls: calls.parse().ok()?,
                errors: errors.parse().ok()?,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_strace_6_tables() {
        let text = "\
ls: cannot access '/nonexistent': No such file or directory
% time     seconds  usecs/call     calls    errors syscall
------ ----------- ----------- --------- --------- ----------------
 77.53    0.000069           3        23           close
  0.00    0.000000           0         2         2 ioctl
  0.00    0.000000           0        40        19 openat
------ ----------- ----------- --------- --------- ----------------
100.00    0.000089           0       157        27 total
";
        let rows = parse(text);
        assert_eq!(rows.len(), 3);
        assert_eq!(
            rows[0],
            StraceRow {
                name: "close".into(),
                seconds: 0.000069,
                usecs_per_call: 3,
                calls: 23,
                errors: 0
            }
        );
        assert_eq!(rows[2].errors, 19);
        assert_eq!(parse("garbage\n\n"), vec![]);
    }
}
