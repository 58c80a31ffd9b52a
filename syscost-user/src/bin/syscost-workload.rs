//! The tests' workload, built beside `syscost` so that the integration tests find it:
//! processes with known numbers of syscalls (see the `syscost-workload` crate). Not
//! packaged.

fn main() {
    syscost_workload::main()
}
