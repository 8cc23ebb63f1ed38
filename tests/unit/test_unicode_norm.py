#!/usr/bin/python3
"""Every code point through sixi's Unicode normalization against Python's unicodedata.

Runs `test_unicode_norm --lines` (argv[1]) on each code point U+0000..U+10FFFF except
the surrogates, and compares NFC, NFD, NFKC, NFKD, the lowercase mapping and the
canonical combining class with unicodedata.normalize / str.lower / unicodedata.combining.

Versions: sixi's tables are Unicode 15.0.0 (Debian's unicode-data); Python 3.11's
unicodedata is 14.0.0. The comparison is pinned to what both versions define: a code
point unassigned in Python's version (category Cn) whose result differs is skipped,
counted and printed, and nothing else may differ. When Debian's unicode-data is
installed, its NormalizationTest.txt (the same version as the tables) is also checked,
every line, all four forms. Exit 0 pass, 1 fail.
"""
import bz2
import os
import subprocess
import sys
import unicodedata

FORMS = ('NFC', 'NFD', 'NFKC', 'NFKD')
NORM_TEST = '/usr/share/unicode/NormalizationTest.txt.bz2'


def hexs(s):
    return ' '.join('%04X' % ord(c) for c in s)


def run(exe, seqs):
    """sixi's results for each sequence of code points: (NFC, NFD, NFKC, NFKD, lower, ccc)."""
    inp = ''.join(' '.join('%X' % c for c in seq) + '\n' for seq in seqs)
    out = subprocess.run([exe, '--lines'], input=inp, capture_output=True, text=True, check=True, timeout=60)
    rows = [line.split(';') for line in out.stdout.splitlines()]
    if len(rows) != len(seqs):
        sys.exit('FAIL: %d lines in, %d out' % (len(seqs), len(rows)))
    return rows


def main():
    exe = sys.argv[1]
    cps = [cp for cp in range(0x110000) if not 0xD800 <= cp <= 0xDFFF]
    rows = run(exe, [[cp] for cp in cps])
    bad, skipped = [], []
    for cp, row in zip(cps, rows):
        c = chr(cp)
        want = [hexs(unicodedata.normalize(f, c)) for f in FORMS] + [hexs(c.lower()), str(unicodedata.combining(c))]
        if row == want:
            continue
        if unicodedata.category(c) == 'Cn':
            skipped.append(cp)
            continue
        bad.append((cp, row, want))
    tables = subprocess.run([exe, '--version'], capture_output=True, text=True, check=True).stdout.strip()
    print('Python unicodedata %s, sixi tables %s' % (unicodedata.unidata_version, tables))
    print('%d code points compared (NFC, NFD, NFKC, NFKD, lowercase, ccc); %d skipped: unassigned in Unicode %s '
          'but not in %s' % (len(cps), len(skipped), unicodedata.unidata_version, tables))
    if skipped:
        print('  skipped: ' + ', '.join('U+%04X' % cp for cp in skipped[:12]) + (' ...' if len(skipped) > 12 else ''))
    for cp, row, want in bad[:20]:
        print('FAIL U+%04X: sixi %s, unicodedata %s' % (cp, row, want))

    if os.path.exists(NORM_TEST):
        # NormalizationTest.txt: c1;c2;c3;c4;c5 with NFC(c1)=c2, NFD(c1)=c3, NFKC(c1)=c4, NFKD(c1)=c5
        cases = []
        with bz2.open(NORM_TEST, 'rt', encoding='utf-8') as f:
            for line in f:
                line = line.split('#')[0].strip()
                if not line or line.startswith('@'):
                    continue
                cols = [[int(x, 16) for x in col.split()] for col in line.split(';')[:5]]
                cases.append(cols)
        rows = run(exe, [c[0] for c in cases])
        nt_bad = 0
        for cols, row in zip(cases, rows):
            want = [' '.join('%04X' % x for x in cols[k]) for k in (1, 2, 3, 4)]
            if row[:4] != want:
                nt_bad += 1
                if nt_bad <= 20:
                    print('FAIL NormalizationTest %s: sixi %s, expected %s' % (hexs(''.join(map(chr, cols[0]))),
                                                                             row[:4], want))
        print('NormalizationTest.txt: %d lines, %d differ' % (len(cases), nt_bad))
        bad += [None] * nt_bad
    else:
        print('NormalizationTest.txt: not checked (%s absent: Debian package unicode-data)' % NORM_TEST)
    print('%d differ' % len(bad))
    return 1 if bad else 0


sys.exit(main())
