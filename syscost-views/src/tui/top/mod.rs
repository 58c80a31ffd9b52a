//! `syscost top`'s live view: every process with syscalls in the last interval, its
//! rates and top syscall; by cgroup (`g`); by syscall (`y`) and from a syscall to the
//! processes making it (Enter). Enter on a process drills into its per-syscall view (the
//! `attach` view, histograms included) without restarting; Esc comes back. The state is
//! in `state`, the keys in `keys`, the drawing in `render`, the loop in `run`.

mod keys;
mod render;
mod run;
mod state;

pub use self::render::render;
pub use self::run::{TopLive, run};
pub use self::state::{Action, Mode, TopView};

#[cfg(test)]
mod tests;
