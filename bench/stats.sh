# Copyright 2026 The memtrace Authors.
#
# stats.sh: the two summaries the benchmark scripts print, sourced by them (not run on its
# own). Each reads space- or newline-separated numbers (decimals or exponents) on stdin.
#   median    the middle one; of an even count, the lower of the two middle ones
#   fastest   the smallest one
#   largest   the largest one (the best of a rate, such as transactions per second)

median() { tr ' ' '\n' | grep . | sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
fastest() { tr ' ' '\n' | grep . | sort -g | head -1; }
largest() { tr ' ' '\n' | grep . | sort -g | tail -1; }
