#!/bin/bash
# The profiles of the three-variant example in docs/usage.md: the lab's edge-triggered
# server plain and with --stop-on-short-read, and the level-triggered one, 5,000 short
# connections a run, three rounds with the variants interleaved. Run as root, here.
set -euo pipefail
syscost=${SYSCOST:-syscost}
for round in 1 2 3; do
  for v in "et-plain --mode et" "et-short --mode et --stop-on-short-read" "lt --mode lt"; do
    set -- $v
    name=$1
    shift
    "$syscost" run --json "$name-$round.json" -o /dev/null -- \
      "$syscost" lab echo-server "$@" --max-conns 5000 &
    # Until the server listens.
    for _ in $(seq 100); do ss -ltn | grep -q ':9988 ' && break; sleep 0.05; done
    "$syscost" lab echo-load -n 5000 -c 1
    wait
  done
done
