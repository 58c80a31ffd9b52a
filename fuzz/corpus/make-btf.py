#!/usr/bin/env python3
"""The kernel_btf seeds, from the running kernel's /sys/kernel/btf/vmlinux (run from fuzz/):

- layout-<release>.btf: the structs, members and prototype KernelLayout::from_btf reads,
  reduced to those members (their real offsets, in the anonymous structs and unions
  they sit in), every member an int; btf_trace_sched_switch with its real parameter
  count;
- vmlinux-head.btf: the first whole types (about 3 KiB) and first KiB of strings of the
  kernel's BTF under a header saying so (most names lie beyond the strings kept);
- unit-test.btf: the BTF of raw.rs's unit test (reads_structs_members_and_prototypes).
"""
import os, struct

raw = open('/sys/kernel/btf/vmlinux', 'rb').read()
magic, _, _, hdr_len, toff, tlen, soff, slen = struct.unpack_from('<HBBIIIII', raw)
assert magic == 0xeb9f, 'not little-endian BTF'
TYPES = raw[hdr_len + toff: hdr_len + toff + tlen]
STRS = raw[hdr_len + soff: hdr_len + soff + slen]


def extra_len(k, vlen):
    if k in (4, 5, 15, 19):  # struct, union, datasec, enum64
        return 12 * vlen
    if k in (6, 13):  # enum, func_proto
        return 8 * vlen
    return {1: 4, 14: 4, 17: 4, 3: 12}.get(k, 0)  # int, var, decl_tag, array


def name(off):
    return STRS[off:STRS.index(b'\0', off)].decode()


class Writer:
    def __init__(self):
        self.types, self.strs = [], bytearray(b'\0')

    def string(self, s):
        if not s:
            return 0
        off = len(self.strs)
        self.strs += s.encode() + b'\0'
        return off

    def push(self, nm, k, vlen, kflag, size_or_type, extra=b''):
        info = (kflag << 31) | (k << 24) | vlen
        self.types.append(struct.pack('<III', self.string(nm), info, size_or_type) + extra)
        return len(self.types)

    def bytes(self):
        t = b''.join(self.types)
        return struct.pack('<HBBIIIII', 0xeb9f, 1, 0, 24, 0, len(t), len(t), len(self.strs)) + t + self.strs


def kernel_types():
    recs, at = [None], 0
    while at < len(TYPES):
        n, info, st = struct.unpack_from('<III', TYPES, at)
        k, vlen = (info >> 24) & 0x1f, info & 0xffff
        ex = extra_len(k, vlen)
        recs.append((name(n), k, vlen, info >> 31, st, TYPES[at + 12: at + 12 + ex]))
        at += 12 + ex
    return recs


WANT = {
    'task_struct': ['pid', 'tgid', 'signal', 'mm', 'self_exec_id', 'files', '__state', 'state', 'cgroups'],
    'signal_struct': ['live'],
    'pt_regs': ['cs', 'di', 'si', 'dx', 'r10', 'r8', 'r9', 'bx', 'cx', 'bp', 'ip', 'sp',
                'regs', 'orig_x0', 'pstate', 'pc'],
    'files_struct': ['fdt'],
    'fdtable': ['max_fds', 'fd'],
    'file': ['f_inode', 'f_path'],
    'inode': ['i_ino'],
    'path': ['mnt'],
    'mount': ['mnt_id', 'mnt'],
    'css_set': ['dfl_cgrp'],
    'cgroup': ['level', 'ancestor_ids', 'ancestors'],
}


def layout():
    recs, w = kernel_types(), Writer()
    int_id = w.push('int', 1, 0, 0, 4, struct.pack('<I', 32))

    def reduce(tid, wanted):
        nm, k, vlen, kflag, size, ex = recs[tid]
        kept = []
        for i in range(vlen):
            mn, mt, mo = struct.unpack_from('<III', ex, 12 * i)
            if name(mn) in wanted:
                kept.append((name(mn), int_id, mo))
            elif name(mn) == '' and recs[mt][1] in (4, 5):
                inner = reduce(mt, wanted)
                if inner is not None:
                    kept.append(('', inner, mo))
        if not kept:
            return None
        members = b''.join(struct.pack('<III', w.string(a), b, c) for a, b, c in kept)
        return w.push(nm, k, len(kept), kflag, size, members)

    for struct_name, wanted in WANT.items():
        tid = next(i for i, r in enumerate(recs) if r and r[0] == struct_name and r[1] == 4 and r[2])
        assert reduce(tid, set(wanted)) is not None, struct_name
    # btf_trace_sched_switch: typedef -> pointer -> prototype.
    td = next(i for i, r in enumerate(recs) if r and r[0] == 'btf_trace_sched_switch' and r[1] == 8)
    ptr = recs[td][4]
    proto = recs[ptr][4]
    assert recs[ptr][1] == 2 and recs[proto][1] == 13
    params = recs[proto][2]
    fp = w.push('', 13, params, 0, 0, b''.join(struct.pack('<II', 0, int_id) for _ in range(params)))
    w.push('btf_trace_sched_switch', 8, 0, 0, w.push('', 2, 0, 0, fp))
    return w.bytes()


def head():
    at = 0
    while True:
        _, info, _ = struct.unpack_from('<III', TYPES, at)
        size = 12 + extra_len((info >> 24) & 0x1f, info & 0xffff)
        if at + size > 3072:
            break
        at += size
    strs = STRS[:1024]
    return struct.pack('<HBBIIIII', 0xeb9f, 1, 0, 24, 0, at, at, len(strs)) + TYPES[:at] + strs


def unit_test():
    w = Writer()
    words = lambda *ws: b''.join(struct.pack('<I', x) for x in ws)
    w.push('int', 1, 0, 0, 4, words(32))
    pid, tgid, flags = w.string('pid'), w.string('tgid'), w.string('flags')
    w.push('task', 4, 4, 1, 16, words(pid, 1, 0, tgid, 1, 32, 0, 3, 64, flags, 1, (3 << 24) | 96))
    a = w.string('a')
    w.push('', 5, 1, 0, 4, words(a, 1, 0))
    w.push('e', 6, 2, 0, 4, words(0, 0, 0, 1))
    w.push('', 13, 3, 0, 0, words(0, 1, 0, 1, 0, 1))
    w.push('', 2, 0, 0, 5)
    w.push('btf_trace_x', 8, 0, 0, 6)
    return w.bytes()


release = os.uname().release.split('-')[0].rsplit('.', 1)[0]
for file, data in [(f'layout-{release}.btf', layout()), ('vmlinux-head.btf', head()),
                   ('unit-test.btf', unit_test())]:
    with open(os.path.join('corpus/kernel_btf', file), 'wb') as f:
        f.write(data)
    print(f'corpus/kernel_btf/{file}: {len(data)} bytes')
