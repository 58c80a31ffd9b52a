#![no_std]
// The programs are the `syscost` binary target (main.rs); this empty library lets
// syscost-user declare a build-dependency on the crate so cargo rebuilds it on change.
