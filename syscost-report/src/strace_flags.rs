//! strace's flags syscost does not take, each with what syscost does instead: an
//! unknown flag that is strace's is one line saying so, never a silent difference in
//! meaning. (The flags syscost takes with strace's meaning are in `cli`: -c, -C, -e,
//! -f, -o, -O, -p, -S, -u, -U, -w, -z, -Z.)

/// What syscost does instead of strace's `flag` (as typed: `-T`, `--stack-trace`,
/// `-ttt`), `None` for a flag that is not strace's.
pub fn hint(flag: &str) -> Option<&'static str> {
    let flag = flag.split_once('=').map_or(flag, |(f, _)| f);
    Some(match flag {
        "-s"
        | "--string-limit"
        | "-v"
        | "--no-abbrev"
        | "-x"
        | "-xx"
        | "--strings-in-hex"
        | "-X"
        | "--const-print-style"
        | "-a"
        | "--columns"
        | "-y"
        | "-yy"
        | "--decode-fds"
        | "-Y"
        | "--decode-pids"
        | "-n"
        | "--syscall-number"
        | "-A"
        | "--output-append-mode" => {
            "prints each call; syscost prints no calls, it counts them: --slow DURATION shows each slow call with its arguments and descriptor"
        }
        "-t"
        | "-tt"
        | "-ttt"
        | "--absolute-timestamps"
        | "--timestamps"
        | "-r"
        | "--relative-timestamps" => {
            "timestamps each printed call; syscost prints no calls: --slow DURATION reports the slow ones, and `syscost trace` puts them on a timeline"
        }
        "-T" | "--syscall-times" => {
            "prints each call's time; syscost's table has each syscall's total and average, -L its p50, p99 and max, --slow each slow call"
        }
        "-k" | "--stack-trace" | "--stack-traces" => {
            "prints a stack for each call; --slow DURATION gives each slow call's user stack (--kernel-stacks: where it blocked)"
        }
        "-i" | "--instruction-pointer" => {
            "prints each call's instruction pointer; --slow DURATION gives each slow call's stack (syscost's -i is attach's interval)"
        }
        "-q" | "-qq" | "-qqq" | "--quiet" => {
            "quiets strace's messages; syscost's few go to stderr once each"
        }
        "-b" | "--detach-on" => "detaches at an execve; syscost follows the command through exec",
        "-D" | "-DD" | "-DDD" | "--daemonize" | "--daemonise" | "--daemonized" | "--daemonised" => {
            "runs the tracer apart from the command; syscost traces from the kernel, with no tracer process between"
        }
        "-E" | "--env" => "sets the command's environment: syscost run -- env VAR=VALUE CMD",
        "-I" | "--interruptible" => {
            "sets when strace may be interrupted; Ctrl-C reaches the command, syscost prints the summary when it exits"
        }
        "-P" | "--trace-path" => {
            "counts only calls on a path; syscost counts by syscall: -e trace=%file for the file calls"
        }
        "--seccomp-bpf" => {
            "filters in the kernel to make ptrace cheaper; syscost filters and counts in the kernel already, with no stop per call"
        }
        "-F" => "is an old spelling of -f: run follows every child, attach takes -f",
        "-ff" | "--output-separately" => {
            "writes a file per process; syscost sums the processes of a run (attach --cgroup --per-process and top split by process)"
        }
        "-d" | "--debug" => "prints strace's own debugging; RUST_LOG=debug does for syscost",
        "--kvm" => "traces KVM exits; syscost counts syscalls",
        "--pidns-translation" => {
            "prints pids of other pid namespaces as seen from strace's; syscost prints no calls"
        }
        "--abbrev" | "--verbose" | "--raw" | "--signal" | "--signals" | "--read" | "--reads"
        | "--write" | "--writes" | "--silent" | "--silence" => {
            "shapes how calls are printed; syscost prints no calls, it counts them (-e trace= and -e status= choose the rows)"
        }
        "--fault" | "--inject" => {
            "changes the traced calls; syscost injects nothing, it only counts"
        }
        "-o" | "--output" => {
            "writes the output to a file: run -o FILE writes the summary there; attach and report print on stdout (--json FILE saves a profile)"
        }
        "-u" | "--user" => {
            "runs the command as a user: run -u USER; attach and report start no command"
        }
        "-f" | "--follow-forks" => {
            "follows children: run always does, attach -f; report reads a saved profile"
        }
        "--tips" => "prints strace's tips; syscost --help, and docs/usage.md",
        "--secontext" => "prints SELinux contexts; syscost prints no calls",
        "--status" => "selects calls by status: -e status=successful|failed, -z, -Z",
        "-C" | "--summary" => {
            "prints each call and the summary; syscost prints no calls: attach -C prints each interval's table as text and the summary, run prints the summary when the command exits"
        }
        "-p" | "--attach" => "attaches to a running process: syscost attach -p PID",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strace_flags_have_a_hint_and_others_none() {
        assert!(hint("-T").unwrap().contains("-L"));
        assert!(hint("--stack-trace").unwrap().contains("--slow"));
        assert!(hint("-s=200").is_some());
        assert!(hint("-ttt").is_some());
        assert_eq!(hint("--bogus"), None);
        assert_eq!(hint("-c"), None, "-c is taken, with strace's meaning");
    }
}
