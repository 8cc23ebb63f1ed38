#!/usr/bin/env python3
"""Every `#include "area/..."` in src/ must be allowed by the table in src/README.md:
an area includes itself and the areas its row names; sqlite3.h (and so any SQL) and
store/internal.h belong to src/store/ alone. Prints each violation."""
import os
import re
import sys

root = os.environ.get('SIXI_SOURCE_ROOT') or os.path.join(os.path.dirname(__file__), '..', '..')
src = os.path.join(root, 'src')
allowed = {}
for line in open(os.path.join(src, 'README.md'), encoding='utf-8'):
    m = re.match(r'^\| `([a-z]+)` \|[^|]*\|([^|]*)\|\s*$', line)
    if m:
        allowed[m.group(1)] = {a.strip() for a in m.group(2).split(',') if a.strip()}
if len(allowed) < 10:
    sys.exit('test_layers: the area table in src/README.md was not found (%d rows)' % len(allowed))

bad = 0
seen = 0
for area in sorted(os.listdir(src)):
    d = os.path.join(src, area)
    if not os.path.isdir(d):
        continue
    if area not in allowed:
        print('src/%s: not in the table of src/README.md' % area)
        bad += 1
        continue
    for name in sorted(os.listdir(d)):
        if not re.search(r'\.(c|h|cu)$', name):
            continue
        for n, line in enumerate(open(os.path.join(d, name), encoding='utf-8', errors='replace'), 1):
            if area != 'store' and re.match(r'\s*#\s*include\s+(<sqlite3\.h>|"store/internal\.h")', line):
                print('src/%s/%s:%d includes %s: only src/store/ talks to SQLite (add a named '
                      'function to store.h instead)' % (area, name, n, line.split()[-1]))
                bad += 1
                continue
            m = re.match(r'\s*#\s*include\s+"([a-z_]+)/', line)
            if not m:
                continue
            seen += 1
            dep = m.group(1)
            if dep != area and dep not in allowed[area]:
                print('src/%s/%s:%d includes %s/, which %s/ may not include (src/README.md)' %
                      (area, name, n, dep, area))
                bad += 1
if seen < 100:
    sys.exit('test_layers: only %d area includes found: is SIXI_SOURCE_ROOT right?' % seen)
print('%d area includes checked, %d not allowed' % (seen, bad))
sys.exit(1 if bad else 0)
