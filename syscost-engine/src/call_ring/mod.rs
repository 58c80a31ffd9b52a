//! The ring of calls the kernel side sends (`CALL_RING`): slow calls (`--slow`) and
//! samples of each stack's calls (`--stacks`), a record each, one record for a call that
//! is both. `decode` turns a record into a call with its arguments, file descriptors and
//! stacks named (through [`crate::unwind`]), `reader` receives them as they come and
//! hands each to its side: slow calls to the command's list, stack samples to the calls
//! by stack ([`crate::by_stack::Samples`]).

pub mod decode;
pub mod reader;
