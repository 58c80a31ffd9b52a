#!/bin/busybox sh
# The kernel matrix's init: the file systems syscost and its tests use, then the test
# binaries one after the other, their output on the second serial port (the first one
# carries the kernel's messages; arm64's virt machine has one, where the generated script
# writes both). Generated lines at the end call run_suite and finish.
/bin/busybox --install -s /bin
export PATH=/bin:/sbin:/usr/bin HOME=/root TMPDIR=/tmp CI=true RUST_BACKTRACE=1
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
# /tmp stays the initramfs's own (already in memory): the test binaries may sit under it.
mount -t tmpfs tmpfs /run
mount -t tracefs tracefs /sys/kernel/tracing
mount -t debugfs debugfs /sys/kernel/debug
mount -t securityfs securityfs /sys/kernel/security
mount -t cgroup2 cgroup2 /sys/fs/cgroup
mount -t bpf bpf /sys/fs/bpf
ip link set lo up
# BPF maps count against RLIMIT_MEMLOCK before 5.11.
ulimit -l unlimited
exec 3>/dev/ttyS1
echo "syscost-vm: kernel $(uname -r)" >&3

# run_suite NAME EXE TEST...: the named tests of one test binary, by exact name.
run_suite() {
    name=$1
    exe=$2
    shift 2
    "$exe" --exact --test-threads=1 "$@" >&3 2>&3
    echo "syscost-vm: $name exit $?" >&3
}

finish() {
    echo "syscost-vm: done" >&3
    sync
    poweroff -f
}
