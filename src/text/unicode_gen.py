#!/usr/bin/python3
"""Generates src/text/unicode_data.c: the Unicode tables the tokenizers need.

- general-category ranges, letter subcategories and the White_Space property (the
  pre-tokenizers' splits);
- canonical combining classes, one-level decomposition mappings (canonical and
  compatibility), primary composites (canonical pairs that are not Full_Composition_Exclusion)
  for NFC/NFD/NFKC/NFKD (UAX #15);
- lowercase mappings: UnicodeData's simple lowercase plus SpecialCasing's unconditional
  lowercase mappings (what Rust's char::to_lowercase gives, which Hugging Face's Lowercase uses).

Input: Debian's unicode-data package (/usr/share/unicode: UnicodeData.txt, PropList.txt,
CompositionExclusions.txt, DerivedNormalizationProps.txt, SpecialCasing.txt).
Command (run from the repository root, output committed):
    /usr/bin/python3 src/text/unicode_gen.py /usr/share/unicode > src/text/unicode_data.c
"""
import re
import sys

# Major category letters -> enum unicode_cat values in unicode.h
CATS = {'L': 'UCAT_LETTER', 'M': 'UCAT_MARK', 'N': 'UCAT_NUMBER', 'P': 'UCAT_PUNCT',
        'S': 'UCAT_SYMBOL', 'Z': 'UCAT_SEPARATOR', 'C': 'UCAT_OTHER'}


def read_unicode_data(path):
    """Per code point: general category, ccc, decomposition (compat flag, list), lowercase."""
    cat, ccc, decomp, lower, gc2 = {}, {}, {}, {}, {}
    first = None
    with open(path, encoding='utf-8') as f:
        for line in f:
            fields = line.rstrip('\n').split(';')
            cp = int(fields[0], 16)
            name, gc = fields[1], fields[2]
            if name.endswith(', First>'):
                first = cp
                continue
            if name.endswith(', Last>'):
                for c in range(first, cp + 1):
                    cat[c] = gc[0]
                    gc2[c] = gc
                    if int(fields[3]):
                        ccc[c] = int(fields[3])
                first = None
                continue
            cat[cp] = gc[0]
            gc2[cp] = gc
            if int(fields[3]):
                ccc[cp] = int(fields[3])
            if fields[5]:
                d = fields[5].split()
                compat = d[0].startswith('<')
                if compat:
                    d = d[1:]
                decomp[cp] = (compat, [int(x, 16) for x in d])
            if fields[13]:
                lower[cp] = [int(fields[13], 16)]
    return cat, ccc, decomp, lower, gc2


def read_ranges(path, prop):
    out = []
    with open(path, encoding='utf-8') as f:
        for line in f:
            line = line.split('#')[0].strip()
            if not line:
                continue
            parts = [x.strip() for x in line.split(';')]
            if parts[1] != prop or len(parts) != 2:
                continue
            if '..' in parts[0]:
                a, b = parts[0].split('..')
                out.append((int(a, 16), int(b, 16)))
            else:
                out.append((int(parts[0], 16), int(parts[0], 16)))
    return out


def read_exclusions(path):
    out = set()
    with open(path, encoding='utf-8') as f:
        for line in f:
            line = line.split('#')[0].strip()
            if line:
                out.add(int(line, 16))
    return out


def read_special_lower(path):
    """Unconditional lowercase mappings of SpecialCasing.txt (lines without a condition)."""
    out = {}
    with open(path, encoding='utf-8') as f:
        for line in f:
            line = line.split('#')[0].strip()
            if not line:
                continue
            parts = [x.strip() for x in line.split(';')]
            if len(parts) > 4 and parts[4]:
                continue  # conditional (Final_Sigma, language-specific)
            out[int(parts[0], 16)] = [int(x, 16) for x in parts[1].split()]
    return out


def version(path):
    with open(path, encoding='utf-8') as f:
        m = re.search(r'-(\d+\.\d+\.\d+)\.txt', f.readline())
    return m.group(1)


def ranges_of(values, default):
    """Sorted disjoint (first, last, value) runs of code points whose value is not default."""
    out, cur = [], None
    for cp in range(0x110000):
        v = values.get(cp, default)
        if v == default:
            cur = None
            continue
        if cur and cur[2] == v and cur[1] == cp - 1:
            cur[1] = cp
        else:
            cur = [cp, cp, v]
            out.append(cur)
    return out


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else '/usr/share/unicode'
    cat, ccc, decomp, lower, gc2 = read_unicode_data(root + '/UnicodeData.txt')
    ws = read_ranges(root + '/PropList.txt', 'White_Space')
    fce = set()
    for a, b in read_ranges(root + '/DerivedNormalizationProps.txt', 'Full_Composition_Exclusion'):
        fce.update(range(a, b + 1))
    # Full_Composition_Exclusion = the exclusion table + singletons + non-starter decompositions;
    # checked here so a data file that disagrees with itself stops the generator.
    derived = set(read_exclusions(root + '/CompositionExclusions.txt'))
    for cp, (compat, d) in decomp.items():
        if not compat and (len(d) == 1 or ccc.get(cp, 0) or ccc.get(d[0], 0)):
            derived.add(cp)
    assert derived == fce, 'CompositionExclusions.txt and DerivedNormalizationProps.txt disagree'
    for cp, m in read_special_lower(root + '/SpecialCasing.txt').items():
        lower[cp] = m
    ver = version(root + '/DerivedNormalizationProps.txt')

    cats = ranges_of({cp: c for cp, c in cat.items() if c != 'C'}, None)
    letters = ranges_of({cp: g for cp, g in gc2.items() if g[0] == 'L'}, None)
    cccs = ranges_of(ccc, 0)
    comps = sorted((d[0], d[1], cp) for cp, (compat, d) in decomp.items()
                   if not compat and len(d) == 2 and cp not in fce)
    pool, entries = [], []
    for cp in sorted(decomp):
        compat, d = decomp[cp]
        entries.append((cp, len(pool), len(d), compat))
        pool.extend(d)
    lowers = sorted((cp, m) for cp, m in lower.items() if m != [cp])
    assert all(len(m) <= 3 for _, m in lowers) and max(len(d) for _, d in decomp.values()) <= 18

    print('/* unicode_data — GENERATED by src/text/unicode_gen.py from Debian\'s unicode-data %s' % ver)
    print(' * (UnicodeData.txt, PropList.txt, CompositionExclusions.txt, DerivedNormalizationProps.txt,')
    print(' * SpecialCasing.txt); do not edit. All tables are sorted by code point. */')
    print('#include "text/unicode.h"')
    print()
    print('const char unicode_data_version[] = "%s";' % ver)
    print()
    print('/* Major general categories (code points not listed are Other: C*). */')
    print('const struct unicode_range unicode_cat_ranges[] = {')
    for a, b, c in cats:
        print('\t{0x%04X, 0x%04X, %s},' % (a, b, CATS[c]))
    print('};')
    print('const size_t unicode_cat_ranges_count = sizeof unicode_cat_ranges / sizeof unicode_cat_ranges[0];')
    print()
    print('const struct unicode_range unicode_space_ranges[] = {')
    for a, b in ws:
        print('\t{0x%04X, 0x%04X, UCAT_SEPARATOR},' % (a, b))
    print('};')
    print('const size_t unicode_space_ranges_count = sizeof unicode_space_ranges / sizeof unicode_space_ranges[0];')
    print()
    print('/* Letter subcategories (Lu, Ll, Lt, Lm, Lo) of the code points whose major category is L. */')
    print('const struct unicode_range unicode_letter_ranges[] = {')
    for a, b, g in letters:
        print('\t{0x%04X, 0x%04X, ULET_%s},' % (a, b, g.upper()))
    print('};')
    print('const size_t unicode_letter_ranges_count = sizeof unicode_letter_ranges / sizeof unicode_letter_ranges[0];')
    print()
    print('/* Canonical combining classes other than 0. */')
    print('const struct unicode_range unicode_ccc_ranges[] = {')
    for a, b, c in cccs:
        print('\t{0x%04X, 0x%04X, %d},' % (a, b, c))
    print('};')
    print('const size_t unicode_ccc_ranges_count = sizeof unicode_ccc_ranges / sizeof unicode_ccc_ranges[0];')
    print()
    print('/* One level of decomposition: unicode_decomp_pool[off .. off + len). Hangul syllables are')
    print(' * not listed (they decompose algorithmically). */')
    print('const uint32_t unicode_decomp_pool[] = {')
    for i in range(0, len(pool), 8):
        print('\t' + ' '.join('0x%04X,' % x for x in pool[i:i + 8]))
    print('};')
    print('const struct unicode_decomp unicode_decomps[] = {')
    for cp, off, n, compat in entries:
        print('\t{0x%04X, %d, %d, %d},' % (cp, off, n, 1 if compat else 0))
    print('};')
    print('const size_t unicode_decomps_count = sizeof unicode_decomps / sizeof unicode_decomps[0];')
    print()
    print('/* Primary composites: canonical pairs (first, second) -> composite, sorted by pair. */')
    print('const struct unicode_comp unicode_comps[] = {')
    for a, b, c in comps:
        print('\t{0x%04X, 0x%04X, 0x%04X},' % (a, b, c))
    print('};')
    print('const size_t unicode_comps_count = sizeof unicode_comps / sizeof unicode_comps[0];')
    print('const uint32_t unicode_comp_min_second = 0x%04X;' % min(b for _, b, _ in comps))
    print()
    print('/* Lowercase mappings that differ from the code point (up to 3 code points, 0-padded). */')
    print('const struct unicode_lower unicode_lowers[] = {')
    for cp, m in lowers:
        m = m + [0] * (3 - len(m))
        print('\t{0x%04X, {0x%04X, 0x%04X, 0x%04X}},' % (cp, m[0], m[1], m[2]))
    print('};')
    print('const size_t unicode_lowers_count = sizeof unicode_lowers / sizeof unicode_lowers[0];')


main()
