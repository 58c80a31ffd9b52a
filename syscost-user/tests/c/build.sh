#!/bin/sh
# Builds the slow-call stack tests' C programs into $1, the usual way (-O2, no frame
# pointers, no debug information): chain, chain-static, chain-lib with libchainlib.so
# (found beside it), short, fdreuse, flockwait, classes, sites; and chain-fp (-O0 -g,
# frame pointers), sites-fp and depths (-O2, frame pointers); in_syscall.h and stdin_wait.h are their handshakes. The tests
# run it; so does `cargo xtask vm-test`, which ships the results to the VMs (no
# compiler there), with CC=aarch64-linux-gnu-gcc for the arm64 ones.
set -eu
out=$1
src=$(dirname "$0")
mkdir -p "$out"
cc=${CC:-gcc}
flags="-O2 -fomit-frame-pointer"
$cc $flags -o "$out/chain.tmp" "$src/chain.c" && mv "$out/chain.tmp" "$out/chain"
$cc $flags -static -o "$out/chain-static.tmp" "$src/chain.c" && mv "$out/chain-static.tmp" "$out/chain-static"
$cc $flags -fPIC -shared -o "$out/libchainlib.so.tmp" "$src/chainlib.c" && mv "$out/libchainlib.so.tmp" "$out/libchainlib.so"
$cc $flags -o "$out/chain-lib.tmp" "$src/chain-lib.c" -L"$out" -lchainlib -Wl,-rpath,'$ORIGIN' && mv "$out/chain-lib.tmp" "$out/chain-lib"
$cc $flags -o "$out/short.tmp" "$src/short.c" && mv "$out/short.tmp" "$out/short"
$cc $flags -pthread -o "$out/fdreuse.tmp" "$src/fdreuse.c" && mv "$out/fdreuse.tmp" "$out/fdreuse"
# The same chain built for debugging (-O0 -g, frame pointers kept).
$cc -O0 -g -fno-omit-frame-pointer -o "$out/chain-fp.tmp" "$src/chain.c" && mv "$out/chain-fp.tmp" "$out/chain-fp"
$cc $flags -pthread -o "$out/flockwait.tmp" "$src/flockwait.c" && mv "$out/flockwait.tmp" "$out/flockwait"
# The calls-by-stack sites, the usual way and with frame pointers kept.
$cc $flags -o "$out/sites.tmp" "$src/sites.c" && mv "$out/sites.tmp" "$out/sites"
$cc -O2 -fno-omit-frame-pointer -o "$out/sites-fp.tmp" "$src/sites.c" && mv "$out/sites-fp.tmp" "$out/sites-fp"
# Calls from many stacks in phases, with frame pointers (the windows of --stacks).
$cc -O2 -fno-omit-frame-pointer -o "$out/depths.tmp" "$src/depths.c" && mv "$out/depths.tmp" "$out/depths"
# strace's syscall classes, one call of each of a list of x86_64 syscalls
# (tests/strace_compat.rs, which runs on x86_64 only).
case $($cc -dumpmachine) in
x86_64*) $cc $flags -o "$out/classes.tmp" "$src/classes.c" && mv "$out/classes.tmp" "$out/classes" ;;
esac
