#!/usr/bin/env python3
"""Writes strace-classes.tsv: the syscall classes of strace's `-e trace=%CLASS`, as
strace 6.1 defines them, for the x86_64 and i386 tables.

Usage: strace-classes.py STRACE_GIT_DIR > strace-classes.tsv

Reads, at the tag v6.1 of https://github.com/strace/strace: src/linux/ARCH/syscallent.h
for each of the four with the files they include, and the flag names of
src/sysent_shorthand_defs.h. arm's private calls (cacheflush, set_tls...), which strace
numbers apart from the kernel's 0xf0000 + N, are left out. Each output line: arch, number, strace's name, classes.
"""
import re
import subprocess
import sys

TAG = "v6.1"
FLAGS = {
    "TD": "%desc", "TF": "%file", "TI": "%ipc", "TN": "%net", "TP": "%process",
    "TS": "%signal", "TM": "%memory", "TST": "%stat", "TLST": "%lstat",
    "TFST": "%fstat", "TSTA": "%%stat", "TSF": "%statfs", "TFSF": "%fstatfs",
    "TSFA": "%%statfs", "PU": "%pure", "TC": "%creds", "TCL": "%clock",
}
ENTRY = re.compile(
    r'^\[\s*(?:BASE_NR\s*\+\s*)?(\d+)\s*\]\s*=\s*\{\s*[\w]+\s*,\s*([^,]*?)\s*,\s*SEN\(\w+\)\s*,\s*"([^"]+)"'
)


def show(git, path):
    return subprocess.run(
        ["git", "-C", git, "show", f"{TAG}:{path}"],
        check=True, capture_output=True, text=True,
    ).stdout


def exists(git, path):
    return subprocess.run(
        ["git", "-C", git, "cat-file", "-e", f"{TAG}:{path}"],
        capture_output=True,
    ).returncode == 0


def entries(git, path, seen):
    """The table's entries, following its #include lines as the build does (the
    file's own directory, then src/linux/generic)."""
    out = []
    directory = path.rsplit("/", 1)[0]
    for line in show(git, path).splitlines():
        inc = re.match(r'#\s*include\s+"([^"]+)"', line)
        if inc:
            name = inc.group(1)
            for cand in (f"{directory}/{name}", f"src/linux/generic/{name}"):
                cand = "/".join(_normalise(cand.split("/")))
                if exists(git, cand):
                    # i386's socketcall and ipc subcalls (numbers past the table) are
                    # not calls the kernel sees: syscost counts socketcall and ipc.
                    if "subcallent" not in cand and cand not in seen:
                        seen.add(cand)
                        out += entries(git, cand, seen)
                    break
            else:
                sys.exit(f"{path}: cannot find the included {name}")
            continue
        m = ENTRY.match(line)
        if m:
            nr, flags, name = int(m.group(1)), m.group(2), m.group(3)
            classes = sorted(
                {FLAGS[f.strip()] for f in flags.split("|") if f.strip() in FLAGS}
            )
            out.append((nr, name, classes))
    return out


def _normalise(parts):
    out = []
    for p in parts:
        if p == "..":
            out.pop()
        elif p not in ("", "."):
            out.append(p)
    return out


def main():
    git = sys.argv[1]
    print(f"# strace {TAG[1:]}'s syscall classes (https://github.com/strace/strace, tag {TAG}):")
    print("# src/linux/{x86_64,i386,aarch64,arm}/syscallent.h with their includes, flags as")
    print("# src/sysent_shorthand_defs.h names them; written by strace-classes.py.")
    print("# arch\tnumber\tname\tclasses")
    for arch in ("x86_64", "i386", "aarch64", "arm"):
        path = f"src/linux/{arch}/syscallent.h"
        rows = {}
        for nr, name, classes in entries(git, path, {path}):
            rows[nr] = (name, classes)
        for nr in sorted(rows):
            name, classes = rows[nr]
            print(f"{arch}\t{nr}\t{name}\t{','.join(classes)}")


main()
