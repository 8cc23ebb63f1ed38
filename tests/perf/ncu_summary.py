#!/usr/bin/env python3
"""ncu_summary.py: per-kernel times of one pass, from the CSV of
    ncu --profile-from-start off --clock-control none --metrics gpu__time_duration.sum --csv --print-units base \
        perf_cuda_engine profile SHAPE TYPE STREAMS MASK COLS PDL > FILE.csv
(the pass between cudaProfilerStart and Stop, every kernel launched, no graph). Prints, per
file, the kernel count and the sum of their times, then per kernel name its count, total and
mean, the six longest kernels and the first 14 of the pass in order. ncu runs the kernels one
at a time and by default flushes the caches before each, so a kernel's time here is what it
takes alone from cold caches: an upper bound on its share of a replayed pass.
Usage: ncu_summary.py FILE.csv..."""
import collections
import csv
import os
import sys

for f in sys.argv[1:]:
    rows = [line for line in open(f) if line.startswith('"')]
    ks = []
    for r in csv.DictReader(rows):
        if r['Metric Name'] != 'gpu__time_duration.sum':
            continue
        name = r['Kernel Name'].split('(')[0].replace('void ', '')
        v = float(r['Metric Value'].replace(',', ''))
        ks.append((name, r['Grid Size'].replace(' ', ''), v / 1000.0 if r['Metric Unit'] in ('ns', 'nsecond') else v))
    print('== %s: %d kernels, sum of kernel times %.1f us' % (os.path.basename(f), len(ks), sum(k[2] for k in ks)))
    agg = collections.OrderedDict()
    for name, _, t in ks:
        a = agg.setdefault(name, [0, 0.0])
        a[0] += 1
        a[1] += t
    for name, (c, t) in sorted(agg.items(), key=lambda x: -x[1][1]):
        print('  %-28s %4d x  total %7.1f us  mean %6.2f us' % (name, c, t, t / c))
    print('  longest:', '; '.join('%s grid %s %.1f us' % k for k in sorted(ks, key=lambda k: -k[2])[:6]))
    print('  first 14:', ' '.join('%s %.1f' % (n.split('<')[0], t) for n, _, t in ks[:14]))
