//! The kernel suite: the root integration tests that run on every kernel of the matrix.
//! Each exercises the kernel side (what the verifier accepts, what the hooks see) with a
//! workload of known syscalls. The tmux, Prometheus-server and package tests stay on the
//! host: they test userspace, the same on every kernel.

/// (test binary, tests in it).
pub const SUITE: &[(&str, &[&str])] = &[
    (
        "commands",
        &[
            "run_counts_getppid_exactly",
            "blocking_read_is_off_cpu",
            "run_counts_errors_by_errno",
            "run_counts_every_thread",
            "run_follows_forked_children",
            "nanosleep_latency_matches_the_workloads_own_timing",
            "attach_misses_nothing_after_attaching",
            "attach_follow_traces_the_tree_that_exists_at_attach",
            "doctor_says_yes_exactly_when_the_default_commands_work",
            "compat_syscalls_are_named_from_the_32_bit_table",
        ],
    ),
    (
        "datapath",
        &[
            "threads_beyond_the_tables_are_counted_as_dropped",
            "children_beyond_the_process_tables_are_counted_as_dropped",
            "leader_exiting_first_loses_nothing",
            "exec_from_a_thread_keeps_its_syscall",
            "numbers_the_tables_lack_are_counted_apart",
            "switches_agree_with_the_kernels_own_counts",
        ],
    ),
    (
        "reliability",
        &["attach_ended_by_any_signal_unloads_and_spares_the_target"],
    ),
    (
        "slow",
        &[
            "exactly_the_slow_calls_with_fd_and_function",
            "a_full_ring_buffer_is_counted",
        ],
    ),
    (
        "stacks",
        &[
            "stacks_reach_main_through_code_without_frame_pointers",
            "processes_that_exit_right_after_their_slow_calls_keep_their_names",
            "a_descriptor_is_named_only_while_it_names_the_file_of_its_call",
            "calls_by_stack_count_each_call_site_exactly_with_frame_pointers",
            "calls_by_stack_name_each_call_site_without_frame_pointers",
            "calls_by_stack_past_the_tables_are_counted_as_dropped",
            "calls_by_stack_alone_count_each_walk_exactly",
            "calls_by_stack_of_processes_gone_leave_room_for_the_next",
            "calls_by_stack_of_a_process_that_lives_on_are_drained_window_by_window",
            "calls_by_stack_stay_exact_while_windows_swap_under_load",
        ],
    ),
    (
        "scope",
        &[
            "a_cgroup_is_counted_exactly_with_processes_started_and_moved_in",
            "top_counts_every_process_exactly_but_itself",
            "top_of_a_cgroup_leaves_the_rest_out",
            "top_keeps_every_call_of_3000_short_lived_processes",
            "top_names_a_gone_process_by_the_name_it_ended_with",
            "a_shrunken_per_process_table_counts_every_call_it_loses",
            "idle_pairs_make_room_for_the_busy",
            "threads_already_inside_a_call_count_as_unpaired",
        ],
    ),
    (
        "metrics",
        &["each_process_has_its_own_exact_series_from_one_set_of_programs"],
    ),
    (
        "ready",
        &[
            "attach_counts_from_its_tracing_line",
            "attach_f_counts_the_children_forked_after_its_tracing_line",
            "cgroup_modes_count_a_process_that_runs_and_exits_after_the_line",
            "top_counts_from_its_watching_line",
            "export_counts_from_its_serving_line",
            "export_of_a_cgroup_counts_from_its_serving_line",
        ],
    ),
    (
        "in_process",
        &[
            "a_session_counts_this_process_exactly_and_every_subscriber_sees_the_same_samples",
            "samples_grow_exactly_and_their_intervals_are_valid_profiles",
            "a_return_to_the_cpu_that_is_not_seen_is_counted_and_never_on_cpu",
            "a_slow_call_wakes_the_reader_past_a_quiet_stack_sample",
            "the_benchmarks_stack_limit_counts_a_loops_calls_exactly",
        ],
    ),
];

/// The runs of one boot: each test binary with the tests it runs, in the suite's order.
/// `only` keeps the tests named (every one when empty; a name the suite lacks is an
/// error), and the whole selection is run `repeat` times over (to chase a test that
/// fails now and then on one kernel).
pub fn runs(
    only: &[String],
    repeat: usize,
) -> anyhow::Result<Vec<(&'static str, Vec<&'static str>)>> {
    if let Some(unknown) = only
        .iter()
        .find(|o| !SUITE.iter().any(|(_, tests)| tests.contains(&o.as_str())))
    {
        anyhow::bail!("the kernel suite has no test '{unknown}'");
    }
    let once = SUITE
        .iter()
        .map(|&(binary, tests)| {
            let picked = tests
                .iter()
                .copied()
                .filter(|t| only.is_empty() || only.iter().any(|o| o == t))
                .collect::<Vec<_>>();
            (binary, picked)
        })
        .filter(|(_, tests)| !tests.is_empty())
        .collect::<Vec<_>>();
    Ok(std::iter::repeat_n(once, repeat.max(1)).flatten().collect())
}

/// The tests of the suite missing from `listed` (a test binary's `--list --format terse`
/// output), so a renamed test fails the matrix instead of leaving it.
pub fn missing<'a>(tests: &[&'a str], listed: &str) -> Vec<&'a str> {
    let names: Vec<&str> = listed
        .lines()
        .filter_map(|l| l.strip_suffix(": test"))
        .collect();
    tests
        .iter()
        .copied()
        .filter(|t| !names.contains(t))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_renamed_test_is_missing() {
        let listed = "run_counts_getppid_exactly: test\nother: test\n";
        assert_eq!(
            missing(&["run_counts_getppid_exactly", "gone"], listed),
            ["gone"]
        );
        assert!(missing(&["other"], listed).is_empty());
    }

    #[test]
    fn runs_keep_the_named_tests_repeated() {
        let all = runs(&[], 1).unwrap();
        assert_eq!(
            all.iter().map(|(_, t)| t.len()).sum::<usize>(),
            SUITE.iter().map(|(_, t)| t.len()).sum::<usize>()
        );
        let one = runs(&["blocking_read_is_off_cpu".into()], 3).unwrap();
        assert_eq!(one, vec![("commands", vec!["blocking_read_is_off_cpu"]); 3]);
        assert!(runs(&["no_such_test".into()], 1).is_err());
    }
}
