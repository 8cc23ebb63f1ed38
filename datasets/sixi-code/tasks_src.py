# tasks_src.py — the sixi-code task definitions, read by make_tasks.py.
# Each task: id, diff (easy|medium|hard), entry, prompt, ref (reference
# solution), brute (an independent slow implementation named _sx_brute), gen
# (_sx_gen(rng) returning one argument tuple), edges (argument tuples) and
# mutants [(label, old, new)]: text replacements of the reference giving a
# plausible wrong solution. bugfix=True shows the first mutant in the prompt
# as the code to repair.
TASKS = []


def T(**kw):
    TASKS.append(kw)


T(id="max-subarray", diff="easy", entry="max_subarray",
  prompt="Write a Python function max_subarray(a) that returns the largest sum of a non-empty contiguous "
         "subarray of the non-empty list of integers a. It must run in linear time.",
  ref='''def max_subarray(a):
    best = cur = a[0]
    for x in a[1:]:
        cur = max(x, cur + x)
        best = max(best, cur)
    return best
''',
  brute='''def _sx_brute(a):
    return max(sum(a[i:j]) for i in range(len(a)) for j in range(i + 1, len(a) + 1))
''',
  gen='''def _sx_gen(rng):
    return ([rng.randint(-20, 20) for _ in range(rng.randint(1, 10))],)
''',
  edges=[([5],), ([-3],), ([-5, -2, -8],), ([1, 2, 3],)],
  mutants=[("zero-start", "best = cur = a[0]", "best = cur = 0"),
           ("skip-last", "for x in a[1:]:", "for x in a[1:-1]:"),
           ("no-restart", "cur = max(x, cur + x)", "cur = cur + x")])

T(id="lower-bound", diff="easy", entry="lower_bound", bugfix=True,
  prompt="lower_bound(a, x) should return the first index i such that a[i] >= x in the sorted list a, "
         "or len(a) when there is none, using binary search.",
  ref='''def lower_bound(a, x):
    lo, hi = 0, len(a)
    while lo < hi:
        mid = (lo + hi) // 2
        if a[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    return lo
''',
  brute='''def _sx_brute(a, x):
    for i, v in enumerate(a):
        if v >= x:
            return i
    return len(a)
''',
  gen='''def _sx_gen(rng):
    a = sorted(rng.randint(0, 15) for _ in range(rng.randint(0, 9)))
    return (a, rng.randint(-1, 16))
''',
  edges=[([], 3), ([1], 1), ([1], 2), ([2, 2, 2], 2), ([1, 3], 4)],
  mutants=[("wrong-boundary", "lo, hi = 0, len(a)", "lo, hi = 0, len(a) - 1"),
           ("swapped-condition", "if a[mid] < x:", "if a[mid] <= x:"),
           ("off-by-one", "return lo", "return max(lo - 1, 0) if lo == len(a) else lo")])

T(id="balanced-brackets", diff="easy", entry="is_balanced",
  prompt="Write a Python function is_balanced(s) that returns True when every bracket in the string s "
         "(only the characters ()[]{}) is closed by the matching bracket in the right order, else False.",
  ref='''def is_balanced(s):
    pairs = {')': '(', ']': '[', '}': '{'}
    stack = []
    for c in s:
        if c in '([{':
            stack.append(c)
        elif not stack or stack.pop() != pairs[c]:
            return False
    return not stack
''',
  brute='''def _sx_brute(s):
    prev = None
    while prev != s:
        prev = s
        s = s.replace('()', '').replace('[]', '').replace('{}', '')
    return s == ''
''',
  gen='''def _sx_gen(rng):
    if rng.random() < 0.5:
        s = ''
        for _ in range(rng.randint(0, 5)):
            o, c = rng.choice(['()', '[]', '{}'])
            k = rng.randint(0, len(s))
            s = s[:k] + o + c + s[k:] if rng.random() < 0.5 else o + s + c
        return (s,)
    return (''.join(rng.choice('()[]{}') for _ in range(rng.randint(0, 8))),)
''',
  edges=[('',), ('(',), (')',), ('([)]',), ('{[()]}',), ('(()',)],
  mutants=[("ignore-leftover", "return not stack", "return True"),
           ("no-empty-check", "elif not stack or stack.pop() != pairs[c]:", "elif stack and stack.pop() != pairs[c]:"),
           ("wrong-pairs", "pairs = {')': '(', ']': '[', '}': '{'}", "pairs = {')': '(', ']': '(', '}': '{'}")])

T(id="count-primes", diff="easy", entry="count_primes",
  prompt="Write a Python function count_primes(n) that returns how many prime numbers are strictly less "
         "than the integer n (n >= 0). Use a sieve.",
  ref='''def count_primes(n):
    if n < 3:
        return 0
    sieve = [True] * n
    sieve[0] = sieve[1] = False
    i = 2
    while i * i < n:
        if sieve[i]:
            for j in range(i * i, n, i):
                sieve[j] = False
        i += 1
    return sum(sieve)
''',
  brute='''def _sx_brute(n):
    return sum(1 for k in range(2, n) if all(k % d for d in range(2, k)))
''',
  gen='''def _sx_gen(rng):
    return (rng.randint(0, 200),)
''',
  edges=[(0,), (1,), (2,), (3,), (4,), (25,), (26,)],
  mutants=[("one-is-prime", "sieve[0] = sieve[1] = False", "sieve[0] = False"),
           ("loop-bound", "while i * i < n:", "while i * i < n - 1:"),
           ("inclusive", "return sum(sieve)", "return sum(sieve) + (1 if all(n % d for d in range(2, n)) else 0)")])

T(id="merge-intervals", diff="medium", entry="merge_intervals",
  prompt="Write a Python function merge_intervals(iv) that takes a list of [start, end] integer pairs "
         "(start <= end, in any order) and returns the merged intervals as a list of [start, end] lists sorted "
         "by start; intervals that overlap or touch (end == next start) are merged.",
  ref='''def merge_intervals(iv):
    out = []
    for s, e in sorted(iv):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out
''',
  brute='''def _sx_brute(iv):
    iv = [list(x) for x in iv]
    changed = True
    while changed:
        changed = False
        for i in range(len(iv)):
            for j in range(i + 1, len(iv)):
                a, b = iv[i], iv[j]
                if a[0] <= b[1] and b[0] <= a[1]:
                    iv[i] = [min(a[0], b[0]), max(a[1], b[1])]
                    del iv[j]
                    changed = True
                    break
            if changed:
                break
    return sorted(iv)
''',
  gen='''def _sx_gen(rng):
    out = []
    for _ in range(rng.randint(0, 7)):
        s = rng.randint(0, 20)
        out.append([s, s + rng.randint(0, 5)])
    return (out,)
''',
  edges=[([],), ([[1, 2]],), ([[1, 2], [2, 3]],), ([[1, 10], [2, 3]],), ([[5, 6], [1, 2]],)],
  mutants=[("strict-touch", "if out and s <= out[-1][1]:", "if out and s < out[-1][1]:"),
           ("no-max", "out[-1][1] = max(out[-1][1], e)", "out[-1][1] = e"),
           ("unsorted", "for s, e in sorted(iv):", "for s, e in iv:")])

T(id="count-pairs-sum", diff="easy", entry="count_pairs",
  prompt="Write a Python function count_pairs(a, t) that returns the number of index pairs i < j with "
         "a[i] + a[j] == t, in linear time.",
  ref='''def count_pairs(a, t):
    seen = {}
    n = 0
    for x in a:
        n += seen.get(t - x, 0)
        seen[x] = seen.get(x, 0) + 1
    return n
''',
  brute='''def _sx_brute(a, t):
    return sum(1 for i in range(len(a)) for j in range(i + 1, len(a)) if a[i] + a[j] == t)
''',
  gen='''def _sx_gen(rng):
    return ([rng.randint(-5, 5) for _ in range(rng.randint(0, 10))], rng.randint(-6, 6))
''',
  edges=[([], 0), ([1], 2), ([1, 1], 2), ([2, 2, 2], 4), ([0, 0, 0, 0], 0)],
  mutants=[("count-self", "        n += seen.get(t - x, 0)\n        seen[x] = seen.get(x, 0) + 1",
            "        seen[x] = seen.get(x, 0) + 1\n        n += seen.get(t - x, 0)"),
           ("set-not-count", "seen[x] = seen.get(x, 0) + 1", "seen[x] = 1"),
           ("wrong-key", "n += seen.get(t - x, 0)", "n += seen.get(x - t, 0)")])

T(id="lis-length", diff="medium", entry="lis_length",
  prompt="Write a Python function lis_length(a) that returns the length of the longest strictly increasing "
         "subsequence of the list of integers a, in O(n log n).",
  ref='''import bisect


def lis_length(a):
    tails = []
    for x in a:
        i = bisect.bisect_left(tails, x)
        if i == len(tails):
            tails.append(x)
        else:
            tails[i] = x
    return len(tails)
''',
  brute='''import itertools as _sx_it


def _sx_brute(a):
    best = 0
    for mask in range(1 << len(a)):
        s = [a[i] for i in range(len(a)) if mask >> i & 1]
        if all(s[k] < s[k + 1] for k in range(len(s) - 1)):
            best = max(best, len(s))
    return best
''',
  gen='''def _sx_gen(rng):
    return ([rng.randint(0, 8) for _ in range(rng.randint(0, 10))],)
''',
  edges=[([],), ([3],), ([2, 2, 2],), ([1, 2, 3],), ([3, 2, 1],)],
  mutants=[("non-strict", "i = bisect.bisect_left(tails, x)", "i = bisect.bisect_right(tails, x)"),
           ("never-replace", "            tails[i] = x", "            pass"),
           ("off-by-one", "return len(tails)", "return len(tails) - (1 if len(tails) > 1 else 0)")])

T(id="edit-distance", diff="medium", entry="edit_distance",
  prompt="Write a Python function edit_distance(a, b) that returns the Levenshtein distance between strings "
         "a and b (insertions, deletions and substitutions each cost 1).",
  ref='''def edit_distance(a, b):
    prev = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        cur = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
        prev = cur
    return prev[len(b)]
''',
  brute='''def _sx_brute(a, b):
    if not a:
        return len(b)
    if not b:
        return len(a)
    if a[0] == b[0]:
        return _sx_brute(a[1:], b[1:])
    return 1 + min(_sx_brute(a[1:], b), _sx_brute(a, b[1:]), _sx_brute(a[1:], b[1:]))
''',
  gen='''def _sx_gen(rng):
    w = lambda: ''.join(rng.choice('abc') for _ in range(rng.randint(0, 6)))
    return (w(), w())
''',
  edges=[('', ''), ('', 'abc'), ('abc', ''), ('abc', 'abc'), ('kitten', 'sitting')],
  mutants=[("row-start", "cur = [i] + [0] * len(b)", "cur = [0] + [0] * len(b)"),
           ("subst-cost", "cost = 0 if a[i - 1] == b[j - 1] else 1", "cost = 0 if a[i - 1] == b[j - 1] else 2"),
           ("init-row", "prev = list(range(len(b) + 1))", "prev = [0] * (len(b) + 1)")])

T(id="lcs-length", diff="medium", entry="lcs_length",
  prompt="Write a Python function lcs_length(a, b) that returns the length of the longest common "
         "subsequence of the strings a and b.",
  ref='''def lcs_length(a, b):
    dp = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(len(a)):
        for j in range(len(b)):
            if a[i] == b[j]:
                dp[i + 1][j + 1] = dp[i][j] + 1
            else:
                dp[i + 1][j + 1] = max(dp[i][j + 1], dp[i + 1][j])
    return dp[len(a)][len(b)]
''',
  brute='''def _sx_brute(a, b):
    best = 0
    for mask in range(1 << len(a)):
        s = [a[i] for i in range(len(a)) if mask >> i & 1]
        it = iter(b)
        if all(c in it for c in s):
            best = max(best, len(s))
    return best
''',
  gen='''def _sx_gen(rng):
    w = lambda: ''.join(rng.choice('ab c') for _ in range(rng.randint(0, 8)))
    return (w(), w())
''',
  edges=[('', ''), ('a', ''), ('abc', 'abc'), ('abc', 'def'), ('abcbdab', 'bdcaba')],
  mutants=[("diag-on-mismatch", "dp[i + 1][j + 1] = max(dp[i][j + 1], dp[i + 1][j])",
            "dp[i + 1][j + 1] = max(dp[i][j], dp[i + 1][j])"),
           ("no-plus-one", "dp[i + 1][j + 1] = dp[i][j] + 1", "dp[i + 1][j + 1] = max(dp[i][j + 1], dp[i + 1][j]) + 0"),
           ("wrong-cell", "return dp[len(a)][len(b)]", "return dp[len(a) - 1][len(b)] if a else 0")])

T(id="coin-change-min", diff="medium", entry="min_coins",
  prompt="Write a Python function min_coins(coins, amount) that returns the fewest coins (each "
         "denomination in the list coins, all positive, usable any number of times) that sum to amount "
         "(>= 0), or -1 when it cannot be made.",
  ref='''def min_coins(coins, amount):
    inf = float('inf')
    dp = [0] + [inf] * amount
    for v in range(1, amount + 1):
        for c in coins:
            if c <= v and dp[v - c] + 1 < dp[v]:
                dp[v] = dp[v - c] + 1
    return dp[amount] if dp[amount] != inf else -1
''',
  brute='''def _sx_brute(coins, amount):
    frontier, seen, steps = {0}, {0}, 0
    while frontier:
        if amount in frontier:
            return steps
        nxt = set()
        for s in frontier:
            for c in coins:
                if s + c <= amount and s + c not in seen:
                    seen.add(s + c)
                    nxt.add(s + c)
        frontier, steps = nxt, steps + 1
    return -1
''',
  gen='''def _sx_gen(rng):
    return (sorted(set(rng.randint(1, 12) for _ in range(rng.randint(1, 4)))), rng.randint(0, 40))
''',
  edges=[([1], 0), ([2], 3), ([5, 3], 7), ([1, 3, 4], 6), ([7], 14)],
  mutants=[("strict-coin", "if c <= v and dp[v - c] + 1 < dp[v]:", "if c < v and dp[v - c] + 1 < dp[v]:"),
           ("zero-unreachable", "return dp[amount] if dp[amount] != inf else -1",
            "return dp[amount] if dp[amount] != inf else 0"),
           ("range-short", "for v in range(1, amount + 1):", "for v in range(1, amount):")])

T(id="coin-change-ways", diff="medium", entry="count_ways",
  prompt="Write a Python function count_ways(coins, amount) that returns the number of distinct multisets "
         "of coins (denominations from the list of distinct positive integers coins, each usable any number "
         "of times) that sum to amount (>= 0). The empty multiset makes 0.",
  ref='''def count_ways(coins, amount):
    ways = [1] + [0] * amount
    for c in coins:
        for v in range(c, amount + 1):
            ways[v] += ways[v - c]
    return ways[amount]
''',
  brute='''def _sx_brute(coins, amount):
    def go(i, rest):
        if rest == 0:
            return 1
        if i == len(coins):
            return 0
        return sum(go(i + 1, rest - k * coins[i]) for k in range(rest // coins[i] + 1))
    return go(0, amount)
''',
  gen='''def _sx_gen(rng):
    return (sorted(set(rng.randint(1, 9) for _ in range(rng.randint(1, 4)))), rng.randint(0, 25))
''',
  edges=[([1], 0), ([2], 3), ([1, 2, 5], 5), ([3], 9)],
  mutants=[("swapped-loops", "    for c in coins:\n        for v in range(c, amount + 1):",
            "    for v in range(1, amount + 1):\n        for c in [c for c in coins if c <= v]:"),
           ("zero-base", "ways = [1] + [0] * amount", "ways = [0] + [1] * amount if amount else [1]"),
           ("range-start", "for v in range(c, amount + 1):", "for v in range(c + 1, amount + 1):")])

T(id="knapsack", diff="medium", entry="knapsack",
  prompt="Write a Python function knapsack(weights, values, cap) that returns the largest total value of a "
         "subset of the items (item i has weights[i] > 0 and values[i] >= 0) whose total weight is at most "
         "cap (>= 0). Each item is used at most once.",
  ref='''def knapsack(weights, values, cap):
    best = [0] * (cap + 1)
    for w, v in zip(weights, values):
        for c in range(cap, w - 1, -1):
            best[c] = max(best[c], best[c - w] + v)
    return best[cap]
''',
  brute='''def _sx_brute(weights, values, cap):
    n, best = len(weights), 0
    for mask in range(1 << n):
        w = sum(weights[i] for i in range(n) if mask >> i & 1)
        if w <= cap:
            best = max(best, sum(values[i] for i in range(n) if mask >> i & 1))
    return best
''',
  gen='''def _sx_gen(rng):
    n = rng.randint(0, 8)
    return ([rng.randint(1, 9) for _ in range(n)], [rng.randint(0, 20) for _ in range(n)], rng.randint(0, 25))
''',
  edges=[([], [], 5), ([3], [10], 2), ([3], [10], 3), ([1, 1], [1, 1], 0)],
  mutants=[("forward-loop", "for c in range(cap, w - 1, -1):", "for c in range(w, cap + 1):"),
           ("boundary", "for c in range(cap, w - 1, -1):", "for c in range(cap, w, -1):"),
           ("strict-cap", "best = [0] * (cap + 1)", "best = [0] * max(cap, 1)")])

T(id="longest-palindrome", diff="medium", entry="longest_palindrome",
  prompt="Write a Python function longest_palindrome(s) that returns the length of the longest "
         "palindromic substring (contiguous) of the string s; 0 for the empty string.",
  ref='''def longest_palindrome(s):
    best = 0
    for c in range(len(s)):
        for lo, hi in ((c, c), (c, c + 1)):
            while lo >= 0 and hi < len(s) and s[lo] == s[hi]:
                lo -= 1
                hi += 1
            best = max(best, hi - lo - 1)
    return best
''',
  brute='''def _sx_brute(s):
    return max([j - i for i in range(len(s)) for j in range(i + 1, len(s) + 1) if s[i:j] == s[i:j][::-1]] or [0])
''',
  gen='''def _sx_gen(rng):
    return (''.join(rng.choice('ab') for _ in range(rng.randint(0, 10))),)
''',
  edges=[('',), ('a',), ('ab',), ('aa',), ('abba',), ('abcba',)],
  mutants=[("odd-only", "for lo, hi in ((c, c), (c, c + 1)):", "for lo, hi in ((c, c),):"),
           ("lo-bound", "while lo >= 0 and hi < len(s) and s[lo] == s[hi]:",
            "while lo > 0 and hi < len(s) and s[lo] == s[hi]:"),
           ("length", "best = max(best, hi - lo - 1)", "best = max(best, hi - lo - 2)")])

T(id="count-islands", diff="medium", entry="count_islands",
  prompt="Write a Python function count_islands(grid) that returns the number of islands in grid, a list "
         "of equal-length lists of 0 and 1: an island is a maximal group of 1 cells connected "
         "horizontally or vertically.",
  ref='''def count_islands(grid):
    rows = len(grid)
    cols = len(grid[0]) if rows else 0
    seen = set()
    n = 0
    for r in range(rows):
        for c in range(cols):
            if grid[r][c] == 1 and (r, c) not in seen:
                n += 1
                stack = [(r, c)]
                seen.add((r, c))
                while stack:
                    y, x = stack.pop()
                    for dy, dx in ((1, 0), (-1, 0), (0, 1), (0, -1)):
                        ny, nx = y + dy, x + dx
                        if 0 <= ny < rows and 0 <= nx < cols and grid[ny][nx] == 1 and (ny, nx) not in seen:
                            seen.add((ny, nx))
                            stack.append((ny, nx))
    return n
''',
  brute='''def _sx_brute(grid):
    cells = [(r, c) for r in range(len(grid)) for c in range(len(grid[r])) if grid[r][c] == 1]
    label = {p: i for i, p in enumerate(cells)}
    changed = True
    while changed:
        changed = False
        for (r, c) in cells:
            for q in ((r + 1, c), (r, c + 1)):
                if q in label and label[q] != label[(r, c)]:
                    m = min(label[q], label[(r, c)])
                    label[q] = label[(r, c)] = m
                    changed = True
    return len(set(label.values()))
''',
  gen='''def _sx_gen(rng):
    r, c = rng.randint(1, 5), rng.randint(1, 5)
    return ([[1 if rng.random() < 0.45 else 0 for _ in range(c)] for _ in range(r)],)
''',
  edges=[([],), ([[0]],), ([[1]],), ([[1, 0, 1]],), ([[1, 1], [1, 1]],), ([[1, 0], [0, 1]],)],
  mutants=[("row-bound", "if 0 <= ny < rows and 0 <= nx < cols", "if 0 <= ny < rows - 1 and 0 <= nx < cols"),
           ("diagonal", "for dy, dx in ((1, 0), (-1, 0), (0, 1), (0, -1)):", "for dy, dx in ((1, 1), (-1, 0), (0, 1), (0, -1)):"),
           ("count-cells", "                n += 1\n", "                n += 1 if r % 2 == 0 or c == 0 else 0\n")])

T(id="grid-shortest-path", diff="medium", entry="shortest_path",
  prompt="Write a Python function shortest_path(grid) where grid is a non-empty list of equal-length strings "
         "of '.' (free) and '#' (wall). Return the least number of moves (up, down, left, right) from the "
         "top-left cell to the bottom-right cell, or -1 when there is no path or either cell is a wall.",
  ref='''from collections import deque


def shortest_path(grid):
    rows, cols = len(grid), len(grid[0])
    if grid[0][0] == '#' or grid[rows - 1][cols - 1] == '#':
        return -1
    dist = {(0, 0): 0}
    q = deque([(0, 0)])
    while q:
        r, c = q.popleft()
        if (r, c) == (rows - 1, cols - 1):
            return dist[(r, c)]
        for nr, nc in ((r + 1, c), (r - 1, c), (r, c + 1), (r, c - 1)):
            if 0 <= nr < rows and 0 <= nc < cols and grid[nr][nc] == '.' and (nr, nc) not in dist:
                dist[(nr, nc)] = dist[(r, c)] + 1
                q.append((nr, nc))
    return -1
''',
  brute='''def _sx_brute(grid):
    rows, cols = len(grid), len(grid[0])
    inf = 10 ** 9
    d = [[inf] * cols for _ in range(rows)]
    if grid[0][0] == '#':
        return -1
    d[0][0] = 0
    for _ in range(rows * cols):
        for r in range(rows):
            for c in range(cols):
                if grid[r][c] == '#':
                    continue
                for nr, nc in ((r + 1, c), (r - 1, c), (r, c + 1), (r, c - 1)):
                    if 0 <= nr < rows and 0 <= nc < cols and d[nr][nc] + 1 < d[r][c]:
                        d[r][c] = d[nr][nc] + 1
    v = d[rows - 1][cols - 1]
    return -1 if v >= inf or grid[rows - 1][cols - 1] == '#' else v
''',
  gen='''def _sx_gen(rng):
    r, c = rng.randint(1, 5), rng.randint(1, 5)
    return ([''.join('#' if rng.random() < 0.3 else '.' for _ in range(c)) for _ in range(r)],)
''',
  edges=[(['.'],), (['#'],), (['..', '..'],), (['.#', '#.'],), (['...', '##.', '...'],)],
  mutants=[("no-start-check", "if grid[0][0] == '#' or grid[rows - 1][cols - 1] == '#':",
            "if grid[rows - 1][cols - 1] == '#':"),
           ("col-bound", "0 <= nc < cols and grid", "0 <= nc < cols - 1 and grid"),
           ("off-by-one", "dist[(nr, nc)] = dist[(r, c)] + 1", "dist[(nr, nc)] = dist[(r, c)] + (2 if r == 0 and c == 0 else 1)")])

T(id="directed-cycle", diff="medium", entry="has_cycle",
  prompt="Write a Python function has_cycle(n, edges) that returns True when the directed graph with "
         "vertices 0..n-1 and the list of edges [u, v] (u -> v) has a directed cycle (a self-loop counts), "
         "else False.",
  ref='''def has_cycle(n, edges):
    indeg = [0] * n
    out = [[] for _ in range(n)]
    for u, v in edges:
        out[u].append(v)
        indeg[v] += 1
    ready = [v for v in range(n) if indeg[v] == 0]
    done = 0
    while ready:
        u = ready.pop()
        done += 1
        for v in out[u]:
            indeg[v] -= 1
            if indeg[v] == 0:
                ready.append(v)
    return done < n
''',
  brute='''def _sx_brute(n, edges):
    reach = [[False] * n for _ in range(n)]
    for u, v in edges:
        reach[u][v] = True
    for k in range(n):
        for i in range(n):
            for j in range(n):
                if reach[i][k] and reach[k][j]:
                    reach[i][j] = True
    return any(reach[i][i] for i in range(n))
''',
  gen='''def _sx_gen(rng):
    n = rng.randint(1, 6)
    m = rng.randint(0, 7)
    return (n, [[rng.randrange(n), rng.randrange(n)] for _ in range(m)])
''',
  edges=[(1, []), (1, [[0, 0]]), (2, [[0, 1], [1, 0]]), (3, [[0, 1], [1, 2]]), (3, [[0, 1], [0, 1]])],
  mutants=[("wrong-compare", "return done < n", "return done < n - 1"),
           ("ready-test", "if indeg[v] == 0:", "if indeg[v] <= 1:"),
           ("reversed", "    return done < n", "    return done == n")])

T(id="kth-smallest", diff="easy", entry="kth_smallest",
  prompt="Write a Python function kth_smallest(a, k) that returns the k-th smallest element (k counted "
         "from 1, duplicates counted) of the non-empty list a, 1 <= k <= len(a), without sorting the whole "
         "list (quickselect or a heap).",
  ref='''import heapq


def kth_smallest(a, k):
    return heapq.nsmallest(k, a)[-1]
''',
  brute='''def _sx_brute(a, k):
    for x in a:
        less = sum(1 for y in a if y < x)
        leq = sum(1 for y in a if y <= x)
        if less < k <= leq:
            return x
''',
  gen='''def _sx_gen(rng):
    a = [rng.randint(-9, 9) for _ in range(rng.randint(1, 10))]
    return (a, rng.randint(1, len(a)))
''',
  edges=[([4], 1), ([2, 2, 2], 2), ([3, 1, 2], 3), ([3, 1, 2], 1)],
  mutants=[("largest", "return heapq.nsmallest(k, a)[-1]", "return heapq.nlargest(k, a)[-1]"),
           ("off-by-one", "return heapq.nsmallest(k, a)[-1]", "return heapq.nsmallest(k, a)[max(k - 2, 0)]")])

T(id="majority", diff="easy", entry="majority",
  prompt="Write a Python function majority(a) that returns the element that occurs more than len(a) // 2 "
         "times in the list a, or None when there is none, in O(n) time and O(1) extra space.",
  ref='''def majority(a):
    cand, count = None, 0
    for x in a:
        if count == 0:
            cand = x
        count += 1 if x == cand else -1
    if cand is not None and a.count(cand) > len(a) // 2:
        return cand
    return None
''',
  brute='''def _sx_brute(a):
    for x in a:
        if sum(1 for y in a if y == x) * 2 > len(a):
            return x
    return None
''',
  gen='''def _sx_gen(rng):
    n = rng.randint(0, 9)
    a = [rng.randint(0, 2) for _ in range(n)]
    if rng.random() < 0.5 and n:
        a = [1] * (n // 2 + 1) + a[: n - n // 2 - 1]
        rng.shuffle(a)
    return (a,)
''',
  edges=[([],), ([7],), ([1, 2],), ([1, 1, 2],), ([1, 2, 1, 2],)],
  mutants=[("no-verify", "if cand is not None and a.count(cand) > len(a) // 2:", "if cand is not None:"),
           ("half", "if cand is not None and a.count(cand) > len(a) // 2:",
            "if cand is not None and a.count(cand) >= len(a) // 2:")])

T(id="sliding-max", diff="medium", entry="sliding_max",
  prompt="Write a Python function sliding_max(a, k) that returns the list of maxima of every window of k "
         "consecutive elements of a (1 <= k <= len(a)), in O(n) time with a deque.",
  ref='''from collections import deque


def sliding_max(a, k):
    q, out = deque(), []
    for i, x in enumerate(a):
        while q and a[q[-1]] <= x:
            q.pop()
        q.append(i)
        if q[0] <= i - k:
            q.popleft()
        if i >= k - 1:
            out.append(a[q[0]])
    return out
''',
  brute='''def _sx_brute(a, k):
    return [max(a[i:i + k]) for i in range(len(a) - k + 1)]
''',
  gen='''def _sx_gen(rng):
    a = [rng.randint(0, 9) for _ in range(rng.randint(1, 10))]
    return (a, rng.randint(1, len(a)))
''',
  edges=[([5], 1), ([1, 2, 3], 3), ([3, 2, 1], 2), ([2, 2, 2], 1)],
  mutants=[("expire-late", "if q[0] <= i - k:", "if q[0] < i - k:"),
           ("emit-early", "if i >= k - 1:", "if i >= k:"),
           ("keep-smaller", "while q and a[q[-1]] <= x:", "while q and a[q[-1]] > x:")])

T(id="next-greater", diff="easy", entry="next_greater",
  prompt="Write a Python function next_greater(a) that returns a list where entry i is the first element "
         "to the right of a[i] that is strictly greater than a[i], or -1 when there is none. Use a stack.",
  ref='''def next_greater(a):
    out = [-1] * len(a)
    stack = []
    for i, x in enumerate(a):
        while stack and a[stack[-1]] < x:
            out[stack.pop()] = x
        stack.append(i)
    return out
''',
  brute='''def _sx_brute(a):
    out = []
    for i in range(len(a)):
        out.append(next((y for y in a[i + 1:] if y > a[i]), -1))
    return out
''',
  gen='''def _sx_gen(rng):
    return ([rng.randint(0, 9) for _ in range(rng.randint(0, 10))],)
''',
  edges=[([],), ([1],), ([2, 2],), ([1, 2, 3],), ([3, 2, 1],)],
  mutants=[("non-strict", "while stack and a[stack[-1]] < x:", "while stack and a[stack[-1]] <= x:"),
           ("index-not-value", "out[stack.pop()] = x", "out[stack.pop()] = i")])

T(id="largest-rectangle", diff="hard", entry="largest_rectangle",
  prompt="Write a Python function largest_rectangle(h) that returns the area of the largest rectangle "
         "inside the histogram whose bar heights (width 1 each) are the list of non-negative integers h, "
         "in O(n) time.",
  ref='''def largest_rectangle(h):
    stack, best = [], 0
    for i, x in enumerate(h + [0]):
        start = i
        while stack and stack[-1][1] >= x:
            j, y = stack.pop()
            best = max(best, y * (i - j))
            start = j
        stack.append((start, x))
    return best
''',
  brute='''def _sx_brute(h):
    return max([min(h[i:j]) * (j - i) for i in range(len(h)) for j in range(i + 1, len(h) + 1)] or [0])
''',
  gen='''def _sx_gen(rng):
    return ([rng.randint(0, 6) for _ in range(rng.randint(0, 10))],)
''',
  edges=[([],), ([0],), ([5],), ([2, 1, 5, 6, 2, 3],), ([3, 3, 3],)],
  mutants=[("no-sentinel", "for i, x in enumerate(h + [0]):", "for i, x in enumerate(h):"),
           ("no-extend", "            start = j\n", ""),
           ("width", "best = max(best, y * (i - j))", "best = max(best, y * (i - j - 1))")])

T(id="trap-water", diff="medium", entry="trap_water",
  prompt="Write a Python function trap_water(h) that returns how many units of rain water are trapped "
         "between the bars of the elevation map h (a list of non-negative integers), in O(n) time and O(1) "
         "extra space.",
  ref='''def trap_water(h):
    lo, hi = 0, len(h) - 1
    left = right = water = 0
    while lo < hi:
        if h[lo] < h[hi]:
            left = max(left, h[lo])
            water += left - h[lo]
            lo += 1
        else:
            right = max(right, h[hi])
            water += right - h[hi]
            hi -= 1
    return water
''',
  brute='''def _sx_brute(h):
    return sum(max(0, min(max(h[:i + 1]), max(h[i:])) - h[i]) for i in range(len(h)))
''',
  gen='''def _sx_gen(rng):
    return ([rng.randint(0, 5) for _ in range(rng.randint(0, 10))],)
''',
  edges=[([],), ([3],), ([3, 0, 3],), ([0, 1, 0, 2, 1, 0, 1, 3, 2, 1, 2, 1],), ([5, 4, 1, 2],)],
  mutants=[("wrong-side", "if h[lo] < h[hi]:", "if h[lo] > h[hi]:"),
           ("max-after", "            left = max(left, h[lo])\n            water += left - h[lo]\n",
            "            water += max(0, left - h[lo])\n            left = h[lo]\n")])

T(id="longest-unique-substring", diff="medium", entry="longest_unique",
  prompt="Write a Python function longest_unique(s) that returns the length of the longest substring of s "
         "with no repeated character, in O(n) time.",
  ref='''def longest_unique(s):
    last, start, best = {}, 0, 0
    for i, c in enumerate(s):
        if c in last and last[c] >= start:
            start = last[c] + 1
        last[c] = i
        best = max(best, i - start + 1)
    return best
''',
  brute='''def _sx_brute(s):
    return max([j - i for i in range(len(s)) for j in range(i + 1, len(s) + 1) if len(set(s[i:j])) == j - i] or [0])
''',
  gen='''def _sx_gen(rng):
    return (''.join(rng.choice('abcd') for _ in range(rng.randint(0, 10))),)
''',
  edges=[('',), ('a',), ('aaaa',), ('abcabcbb',), ('abba',)],
  mutants=[("no-start-check", "if c in last and last[c] >= start:", "if c in last:"),
           ("start-at-repeat", "start = last[c] + 1", "start = last[c]"),
           ("length", "best = max(best, i - start + 1)", "best = max(best, i - start)")])

T(id="subarray-sum-k", diff="medium", entry="count_subarrays",
  prompt="Write a Python function count_subarrays(a, k) that returns the number of non-empty contiguous "
         "subarrays of the integer list a whose sum is k, in O(n) time.",
  ref='''def count_subarrays(a, k):
    seen = {0: 1}
    s = n = 0
    for x in a:
        s += x
        n += seen.get(s - k, 0)
        seen[s] = seen.get(s, 0) + 1
    return n
''',
  brute='''def _sx_brute(a, k):
    return sum(1 for i in range(len(a)) for j in range(i + 1, len(a) + 1) if sum(a[i:j]) == k)
''',
  gen='''def _sx_gen(rng):
    return ([rng.randint(-3, 3) for _ in range(rng.randint(0, 10))], rng.randint(-3, 3))
''',
  edges=[([], 0), ([0], 0), ([0, 0, 0], 0), ([1, 1, 1], 2), ([1, -1, 1], 1)],
  mutants=[("no-empty-prefix", "seen = {0: 1}", "seen = {}"),
           ("wrong-direction", "n += seen.get(s - k, 0)", "n += seen.get(k - s, 0)"),
           ("update-first", "        n += seen.get(s - k, 0)\n        seen[s] = seen.get(s, 0) + 1",
            "        seen[s] = seen.get(s, 0) + 1\n        n += seen.get(s - k, 0)")])

T(id="max-product-subarray", diff="hard", entry="max_product",
  prompt="Write a Python function max_product(a) that returns the largest product of a non-empty "
         "contiguous subarray of the non-empty integer list a, in O(n) time.",
  ref='''def max_product(a):
    hi = lo = best = a[0]
    for x in a[1:]:
        cands = (x, hi * x, lo * x)
        hi, lo = max(cands), min(cands)
        best = max(best, hi)
    return best
''',
  brute='''def _sx_brute(a):
    best = None
    for i in range(len(a)):
        p = 1
        for j in range(i, len(a)):
            p *= a[j]
            best = p if best is None or p > best else best
    return best
''',
  gen='''def _sx_gen(rng):
    return ([rng.randint(-4, 4) for _ in range(rng.randint(1, 9))],)
''',
  edges=[([0],), ([-2],), ([-2, -3],), ([2, 3, -2, 4],), ([-2, 0, -1],)],
  mutants=[("no-min", "cands = (x, hi * x, lo * x)", "cands = (x, hi * x)"),
           ("no-restart", "cands = (x, hi * x, lo * x)", "cands = (hi * x, lo * x)"),
           ("zero-start", "hi = lo = best = a[0]", "hi = lo = a[0]\n    best = 0")])

T(id="min-jumps", diff="medium", entry="min_jumps",
  prompt="Write a Python function min_jumps(a) for a non-empty list of non-negative integers: from index i "
         "you may jump to any index i+1 .. i+a[i]. Return the fewest jumps from index 0 to the last index, "
         "or -1 when it cannot be reached. Use a greedy O(n) scan.",
  ref='''def min_jumps(a):
    jumps, end, far = 0, 0, 0
    for i in range(len(a) - 1):
        if i > far:
            return -1
        far = max(far, i + a[i])
        if i == end:
            jumps += 1
            end = far
    return jumps if end >= len(a) - 1 else -1
''',
  brute='''def _sx_brute(a):
    n = len(a)
    dist = [0] + [None] * (n - 1)
    for i in range(n):
        if dist[i] is None:
            continue
        for j in range(i + 1, min(n, i + a[i] + 1)):
            if dist[j] is None or dist[i] + 1 < dist[j]:
                dist[j] = dist[i] + 1
    return -1 if dist[-1] is None else dist[-1]
''',
  gen='''def _sx_gen(rng):
    return ([rng.randint(0, 3) for _ in range(rng.randint(1, 10))],)
''',
  edges=[([0],), ([5],), ([0, 1],), ([1, 0, 1],), ([2, 3, 1, 1, 4],)],
  mutants=[("final-check", "return jumps if end >= len(a) - 1 else -1", "return jumps"),
           ("loop-all", "for i in range(len(a) - 1):", "for i in range(len(a)):"),
           ("count-first", "jumps += 1", "jumps += 1 if i else 0")])

T(id="house-robber", diff="easy", entry="rob",
  prompt="Write a Python function rob(a) that returns the largest sum of elements of the list of "
         "non-negative integers a such that no two chosen elements are adjacent (0 for an empty list).",
  ref='''def rob(a):
    take = skip = 0
    for x in a:
        take, skip = skip + x, max(take, skip)
    return max(take, skip)
''',
  brute='''def _sx_brute(a):
    best = 0
    for mask in range(1 << len(a)):
        if mask & (mask >> 1) == 0:
            best = max(best, sum(a[i] for i in range(len(a)) if mask >> i & 1))
    return best
''',
  gen='''def _sx_gen(rng):
    return ([rng.randint(0, 9) for _ in range(rng.randint(0, 10))],)
''',
  edges=[([],), ([4],), ([1, 9],), ([2, 7, 9, 3, 1],)],
  mutants=[("take-adjacent", "take, skip = skip + x, max(take, skip)", "take, skip = max(take, skip) + x, max(take, skip)"),
           ("only-take", "return max(take, skip)", "return take")])

T(id="unique-paths-obstacles", diff="medium", entry="count_paths",
  prompt="Write a Python function count_paths(grid) for a non-empty grid (list of equal-length lists of 0 "
         "free / 1 blocked): return the number of paths from the top-left to the bottom-right cell moving "
         "only right or down through free cells (0 when either end is blocked).",
  ref='''def count_paths(grid):
    cols = len(grid[0])
    row = [0] * cols
    row[0] = 1
    for r in grid:
        for c in range(cols):
            if r[c] == 1:
                row[c] = 0
            elif c > 0:
                row[c] += row[c - 1]
    return row[cols - 1]
''',
  brute='''def _sx_brute(grid):
    R, C = len(grid), len(grid[0])
    def go(r, c):
        if r >= R or c >= C or grid[r][c] == 1:
            return 0
        if (r, c) == (R - 1, C - 1):
            return 1
        return go(r + 1, c) + go(r, c + 1)
    return go(0, 0)
''',
  gen='''def _sx_gen(rng):
    r, c = rng.randint(1, 5), rng.randint(1, 5)
    return ([[1 if rng.random() < 0.2 else 0 for _ in range(c)] for _ in range(r)],)
''',
  edges=[([[0]],), ([[1]],), ([[0, 0], [0, 0]],), ([[0, 1], [0, 0]],), ([[0, 0, 0], [0, 1, 0], [0, 0, 0]],)],
  mutants=[("ignore-block", "                row[c] = 0\n", "                pass\n"),
           ("first-col", "elif c > 0:", "elif c > 1:")])

T(id="decode-ways", diff="medium", entry="decode_ways",
  prompt="Write a Python function decode_ways(s) that returns in how many ways the digit string s can be "
         "split into numbers from 1 to 26 (no leading zeros: '06' is not a number). The empty string has "
         "one way.",
  ref='''def decode_ways(s):
    prev, cur = 1, 1
    for i in range(len(s)):
        nxt = 0
        if s[i] != '0':
            nxt += cur
        if i > 0 and s[i - 1] != '0' and 10 <= int(s[i - 1:i + 1]) <= 26:
            nxt += prev
        prev, cur = cur, nxt
    return cur
''',
  brute='''def _sx_brute(s):
    if not s:
        return 1
    n = 0
    for k in (1, 2):
        part = s[:k]
        if len(part) == k and part[0] != '0' and 1 <= int(part) <= 26:
            n += _sx_brute(s[k:])
    return n
''',
  gen='''def _sx_gen(rng):
    return (''.join(rng.choice('0112226789') for _ in range(rng.randint(0, 9))),)
''',
  edges=[('',), ('0',), ('10',), ('27',), ('226',), ('06',), ('100',)],
  mutants=[("upper-bound", "10 <= int(s[i - 1:i + 1]) <= 26", "10 <= int(s[i - 1:i + 1]) < 26"),
           ("zero-single", "if s[i] != '0':", "if True:"),
           ("shift", "prev, cur = cur, nxt", "prev, cur = nxt, nxt")])

T(id="word-break", diff="medium", entry="word_break",
  prompt="Write a Python function word_break(s, words) that returns True when the string s can be split "
         "into a sequence of one or more words from the list words (reuse allowed), else False. The empty "
         "string can be split (True).",
  ref='''def word_break(s, words):
    ok = [True] + [False] * len(s)
    ws = set(words)
    for i in range(1, len(s) + 1):
        for j in range(i):
            if ok[j] and s[j:i] in ws:
                ok[i] = True
                break
    return ok[len(s)]
''',
  brute='''def _sx_brute(s, words):
    if s == '':
        return True
    return any(w and s.startswith(w) and _sx_brute(s[len(w):], words) for w in words)
''',
  gen='''def _sx_gen(rng):
    words = [''.join(rng.choice('ab') for _ in range(rng.randint(1, 3))) for _ in range(rng.randint(1, 3))]
    return (''.join(rng.choice('ab') for _ in range(rng.randint(0, 8))), words)
''',
  edges=[('', ['a']), ('a', ['a']), ('ab', ['a']), ('aaab', ['a', 'aa']), ('abab', ['ab'])],
  mutants=[("last-cut", "for j in range(i):", "for j in range(1, i):"),
           ("off-by-one", "return ok[len(s)]", "return ok[len(s) - 1] if s else True")])

T(id="roman-to-int", diff="easy", entry="roman_to_int",
  prompt="Write a Python function roman_to_int(s) that converts a valid Roman numeral (1 to 3999, using "
         "the subtractive forms IV, IX, XL, XC, CD, CM) to an integer.",
  ref='''def roman_to_int(s):
    val = {'I': 1, 'V': 5, 'X': 10, 'L': 50, 'C': 100, 'D': 500, 'M': 1000}
    total = 0
    for i, c in enumerate(s):
        if i + 1 < len(s) and val[c] < val[s[i + 1]]:
            total -= val[c]
        else:
            total += val[c]
    return total
''',
  brute='''def _sx_roman(n):
    out = ''
    for v, r in ((1000, 'M'), (900, 'CM'), (500, 'D'), (400, 'CD'), (100, 'C'), (90, 'XC'), (50, 'L'),
                 (40, 'XL'), (10, 'X'), (9, 'IX'), (5, 'V'), (4, 'IV'), (1, 'I')):
        while n >= v:
            out += r
            n -= v
    return out


def _sx_brute(s):
    for n in range(1, 4000):
        if _sx_roman(n) == s:
            return n
''',
  gen='''def _sx_gen(rng):
    return (_sx_roman(rng.randint(1, 3999)),)
''',
  edges=[('I',), ('IV',), ('IX',), ('XL',), ('MCMXCIV',), ('MMMCMXCIX',)],
  mutants=[("non-strict", "val[c] < val[s[i + 1]]", "val[c] <= val[s[i + 1]]"),
           ("wrong-table", "'L': 50", "'L': 40"),
           ("ignore-subtract", "total -= val[c]", "total += val[c]")])

T(id="spiral-order", diff="medium", entry="spiral",
  prompt="Write a Python function spiral(m) that returns the elements of the matrix m (a list of "
         "equal-length lists, possibly empty) in clockwise spiral order starting at the top-left.",
  ref='''def spiral(m):
    out = []
    if not m:
        return out
    top, bottom, left, right = 0, len(m) - 1, 0, len(m[0]) - 1
    while top <= bottom and left <= right:
        for c in range(left, right + 1):
            out.append(m[top][c])
        for r in range(top + 1, bottom + 1):
            out.append(m[r][right])
        if top < bottom and left < right:
            for c in range(right - 1, left - 1, -1):
                out.append(m[bottom][c])
            for r in range(bottom - 1, top, -1):
                out.append(m[r][left])
        top, bottom, left, right = top + 1, bottom - 1, left + 1, right - 1
    return out
''',
  brute='''def _sx_brute(m):
    if not m or not m[0]:
        return []
    R, C = len(m), len(m[0])
    seen, out = set(), []
    r = c = d = 0
    dirs = ((0, 1), (1, 0), (0, -1), (-1, 0))
    for _ in range(R * C):
        out.append(m[r][c])
        seen.add((r, c))
        nr, nc = r + dirs[d][0], c + dirs[d][1]
        if not (0 <= nr < R and 0 <= nc < C) or (nr, nc) in seen:
            d = (d + 1) % 4
            nr, nc = r + dirs[d][0], c + dirs[d][1]
        r, c = nr, nc
    return out
''',
  gen='''def _sx_gen(rng):
    r, c = rng.randint(1, 5), rng.randint(1, 5)
    return ([[rng.randint(0, 9) for _ in range(c)] for _ in range(r)],)
''',
  edges=[([],), ([[1]],), ([[1, 2, 3]],), ([[1], [2], [3]],), ([[1, 2], [3, 4]],), ([[1, 2, 3], [4, 5, 6], [7, 8, 9]],)],
  mutants=[("no-guard", "if top < bottom and left < right:", "if True:"),
           ("guard-or", "if top < bottom and left < right:", "if top < bottom or left < right:"),
           ("left-col", "for r in range(bottom - 1, top, -1):", "for r in range(bottom - 1, top - 1, -1):")])

T(id="pascal-row", diff="easy", entry="pascal_row",
  prompt="Write a Python function pascal_row(n) that returns row n (n >= 0, row 0 is [1]) of Pascal's "
         "triangle as a list, computed iteratively.",
  ref='''def pascal_row(n):
    row = [1]
    for k in range(n):
        row.append(row[k] * (n - k) // (k + 1))
    return row
''',
  brute='''def _sx_brute(n):
    row = [1]
    for _ in range(n):
        row = [1] + [row[i] + row[i + 1] for i in range(len(row) - 1)] + [1]
    return row
''',
  gen='''def _sx_gen(rng):
    return (rng.randint(0, 30),)
''',
  edges=[(0,), (1,), (2,), (5,)],
  mutants=[("short", "for k in range(n):", "for k in range(n - 1):"),
           ("order", "row.append(row[k] * (n - k) // (k + 1))", "row.append(row[k] * (n - k) // (k + 2) * 1 if k else n)")])

T(id="fib-mod", diff="medium", entry="fib_mod",
  prompt="Write a Python function fib_mod(n, m) that returns F(n) mod m, where F(0) = 0, F(1) = 1, for "
         "0 <= n <= 10**18 and m >= 1, in O(log n) steps (fast doubling or matrix power).",
  ref='''def fib_mod(n, m):
    def go(k):
        if k == 0:
            return 0, 1
        a, b = go(k // 2)
        c = a * (2 * b - a) % m
        d = (a * a + b * b) % m
        return (d, (c + d) % m) if k % 2 else (c, d)
    return go(n)[0] % m
''',
  brute='''def _sx_brute(n, m):
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a % m
''',
  gen='''def _sx_gen(rng):
    return (rng.randint(0, 300), rng.randint(1, 1000))
''',
  edges=[(0, 1), (0, 7), (1, 7), (2, 7), (10, 1000), (90, 10 ** 9 + 7)],
  mutants=[("odd-even", "return (d, (c + d) % m) if k % 2 else (c, d)", "return (c, d) if k % 2 else (d, (c + d) % m)"),
           ("doubling", "c = a * (2 * b - a) % m", "c = a * (2 * b + a) % m"),
           ("base", "            return 0, 1", "            return 1, 1")])

T(id="group-anagrams", diff="easy", entry="count_anagram_groups",
  prompt="Write a Python function count_anagram_groups(words) that returns the number of groups when the "
         "list of lowercase words is split into classes of anagrams (two words are in the same class when "
         "one is a rearrangement of the other's letters).",
  ref='''def count_anagram_groups(words):
    return len({''.join(sorted(w)) for w in words})
''',
  brute='''from collections import Counter as _sx_Counter


def _sx_brute(words):
    reps = []
    for w in words:
        if not any(_sx_Counter(w) == _sx_Counter(r) for r in reps):
            reps.append(w)
    return len(reps)
''',
  gen='''def _sx_gen(rng):
    return ([''.join(rng.choice('abc') for _ in range(rng.randint(0, 3))) for _ in range(rng.randint(0, 8))],)
''',
  edges=[([],), ([''],), (['ab', 'ba'],), (['aab', 'abb'],), (['abc', 'cab', 'bca', 'x'],)],
  mutants=[("set-letters", "return len({''.join(sorted(w)) for w in words})", "return len({''.join(sorted(set(w))) for w in words})"),
           ("no-sort", "return len({''.join(sorted(w)) for w in words})", "return len({w for w in words})")])

T(id="meeting-rooms", diff="medium", entry="min_rooms",
  prompt="Write a Python function min_rooms(meetings) that returns the least number of rooms needed to "
         "hold the meetings, given as [start, end] pairs of integers (start < end); a meeting ending at "
         "time t frees its room for a meeting starting at t.",
  ref='''def min_rooms(meetings):
    events = []
    for s, e in meetings:
        events.append((s, 1))
        events.append((e, -1))
    events.sort()
    cur = best = 0
    for _, d in events:
        cur += d
        best = max(best, cur)
    return best
''',
  brute='''def _sx_brute(meetings):
    best = 0
    for s, _ in meetings:
        best = max(best, sum(1 for a, b in meetings if a <= s < b))
    return best
''',
  gen='''def _sx_gen(rng):
    out = []
    for _ in range(rng.randint(0, 7)):
        s = rng.randint(0, 10)
        out.append([s, s + rng.randint(1, 4)])
    return (out,)
''',
  edges=[([],), ([[1, 2]],), ([[1, 2], [2, 3]],), ([[1, 5], [2, 3], [4, 6]],)],
  mutants=[("end-after-start", "events.append((e, -1))", "events.append((e, -1 + 0 * 2))\n        events[-1] = (e + 0.5, -1)"),
           ("count-ends", "events.append((e, -1))", "events.append((e, 1))")])

T(id="count-bits", diff="easy", entry="count_bits",
  prompt="Write a Python function count_bits(n) that returns the list [popcount(0), popcount(1), ..., "
         "popcount(n)] for n >= 0 in O(n) time, using the counts already computed.",
  ref='''def count_bits(n):
    out = [0] * (n + 1)
    for i in range(1, n + 1):
        out[i] = out[i >> 1] + (i & 1)
    return out
''',
  brute='''def _sx_brute(n):
    return [bin(i).count('1') for i in range(n + 1)]
''',
  gen='''def _sx_gen(rng):
    return (rng.randint(0, 70),)
''',
  edges=[(0,), (1,), (2,), (8,)],
  mutants=[("short", "for i in range(1, n + 1):", "for i in range(1, n):"),
           ("lowbit", "out[i] = out[i >> 1] + (i & 1)", "out[i] = out[i >> 1] + 1")])

T(id="kth-of-two-sorted", diff="hard", entry="kth_of_two",
  prompt="Write a Python function kth_of_two(a, b, k) that returns the k-th smallest element (k from 1) "
         "of the union (with duplicates) of the sorted lists a and b, 1 <= k <= len(a) + len(b), in "
         "O(log(len(a) + len(b))) steps without merging the lists.",
  ref='''def kth_of_two(a, b, k):
    i = j = 0
    while True:
        if i == len(a):
            return b[j + k - 1]
        if j == len(b):
            return a[i + k - 1]
        if k == 1:
            return min(a[i], b[j])
        h = k // 2
        ni = min(i + h, len(a))
        nj = min(j + h, len(b))
        if a[ni - 1] <= b[nj - 1]:
            k -= ni - i
            i = ni
        else:
            k -= nj - j
            j = nj
''',
  brute='''def _sx_brute(a, b, k):
    return sorted(a + b)[k - 1]
''',
  gen='''def _sx_gen(rng):
    a = sorted(rng.randint(0, 20) for _ in range(rng.randint(0, 7)))
    b = sorted(rng.randint(0, 20) for _ in range(rng.randint(0 if a else 1, 7)))
    return (a, b, rng.randint(1, len(a) + len(b)))
''',
  edges=[([], [5], 1), ([1], [], 1), ([1, 2], [3, 4], 4), ([2, 2], [2], 2), ([1, 3], [2], 2)],
  mutants=[("k1-max", "return min(a[i], b[j])", "return max(a[i], b[j])"),
           ("exhausted", "return b[j + k - 1]", "return b[j + k - 2] if k > 1 else b[j]"),
           ("skip-too-far", "        if a[ni - 1] <= b[nj - 1]:\n            k -= ni - i",
            "        if a[ni - 1] <= b[nj - 1]:\n            ni = min(ni + 1, len(a))\n            k -= ni - i")])

T(id="longest-consecutive", diff="easy", entry="longest_consecutive",
  prompt="Write a Python function longest_consecutive(a) that returns the length of the longest run of "
         "consecutive integers (x, x+1, x+2, ...) whose values all occur in the list a, in O(n) time.",
  ref='''def longest_consecutive(a):
    s = set(a)
    best = 0
    for x in s:
        if x - 1 not in s:
            y = x
            while y + 1 in s:
                y += 1
            best = max(best, y - x + 1)
    return best
''',
  brute='''def _sx_brute(a):
    b = sorted(set(a))
    best = run = 0
    for i, x in enumerate(b):
        run = run + 1 if i and b[i - 1] == x - 1 else 1
        best = max(best, run)
    return best
''',
  gen='''def _sx_gen(rng):
    return ([rng.randint(0, 15) for _ in range(rng.randint(0, 10))],)
''',
  edges=[([],), ([5],), ([1, 1, 1],), ([100, 4, 200, 1, 3, 2],)],
  mutants=[("length", "best = max(best, y - x + 1)", "best = max(best, y - x)"),
           ("duplicates", "s = set(a)", "s = list(a)\n    s = s if len(set(s)) == len(s) else s[:-1]")])

T(id="partition-equal", diff="medium", entry="can_partition",
  prompt="Write a Python function can_partition(a) that returns True when the list of positive integers a "
         "can be split into two groups (every element in exactly one group, a group may be empty) with "
         "equal sums, else False.",
  ref='''def can_partition(a):
    total = sum(a)
    if total % 2:
        return False
    reach = {0}
    for x in a:
        reach |= {r + x for r in reach}
    return total // 2 in reach
''',
  brute='''def _sx_brute(a):
    n = len(a)
    return any(2 * sum(a[i] for i in range(n) if m >> i & 1) == sum(a) for m in range(1 << n))
''',
  gen='''def _sx_gen(rng):
    return ([rng.randint(1, 9) for _ in range(rng.randint(0, 9))],)
''',
  edges=[([],), ([2],), ([1, 1],), ([1, 5, 11, 5],), ([1, 2, 5],)],
  mutants=[("odd-ok", "    if total % 2:\n        return False\n", ""),
           ("no-accumulate", "reach |= {r + x for r in reach}", "reach = reach | {x}")])

T(id="distinct-subsequences", diff="hard", entry="num_distinct",
  prompt="Write a Python function num_distinct(s, t) that returns the number of ways to choose a "
         "subsequence of s (a set of positions) that spells t. num_distinct(s, '') is 1.",
  ref='''def num_distinct(s, t):
    dp = [1] + [0] * len(t)
    for c in s:
        for j in range(len(t), 0, -1):
            if t[j - 1] == c:
                dp[j] += dp[j - 1]
    return dp[len(t)]
''',
  brute='''import itertools as _sx_it


def _sx_brute(s, t):
    return sum(1 for idx in _sx_it.combinations(range(len(s)), len(t)) if ''.join(s[i] for i in idx) == t)
''',
  gen='''def _sx_gen(rng):
    return (''.join(rng.choice('ab') for _ in range(rng.randint(0, 9))),
            ''.join(rng.choice('ab') for _ in range(rng.randint(0, 3))))
''',
  edges=[('', ''), ('abc', ''), ('', 'a'), ('rabbbit', 'rabbit'), ('aaa', 'aa')],
  mutants=[("forward", "for j in range(len(t), 0, -1):", "for j in range(1, len(t) + 1):"),
           ("short-range", "for j in range(len(t), 0, -1):", "for j in range(len(t) - 1, 0, -1):")])

T(id="eval-rpn", diff="medium", entry="eval_rpn",
  prompt="Write a Python function eval_rpn(tokens) that evaluates an expression in reverse Polish notation "
         "given as a list of strings: integers (possibly negative, like '-3') and the operators + - *. "
         "Return the integer result.",
  ref='''def eval_rpn(tokens):
    st = []
    for tok in tokens:
        if tok in ('+', '-', '*'):
            b = st.pop()
            a = st.pop()
            st.append(a + b if tok == '+' else a - b if tok == '-' else a * b)
        else:
            st.append(int(tok))
    return st[-1]
''',
  brute='''def _sx_brute(tokens):
    def parse(i):
        tok = tokens[i]
        if tok not in ('+', '-', '*'):
            return '(' + tok + ')', i - 1
        right, j = parse(i - 1)
        left, k = parse(j)
        return '(' + left + tok + right + ')', k
    return eval(parse(len(tokens) - 1)[0])
''',
  gen='''def _sx_gen(rng):
    def build(d):
        if d == 0 or rng.random() < 0.3:
            return [str(rng.randint(-9, 9))]
        return build(d - 1) + build(d - 1) + [rng.choice('+-*')]
    return (build(3),)
''',
  edges=[(['5'],), (['-3'],), (['2', '3', '-'],), (['2', '3', '4', '*', '-'],)],
  mutants=[("operand-order", "            b = st.pop()\n            a = st.pop()", "            a = st.pop()\n            b = st.pop()"),
           ("negative-as-op", "if tok in ('+', '-', '*'):", "if tok in ('+', '-', '*') or tok.startswith('-') and len(tok) == 2 and tok[1] == '1':")])

T(id="gray-code", diff="easy", entry="gray_code",
  prompt="Write a Python function gray_code(n) that returns the 2**n integers of the reflected binary Gray "
         "code sequence of n bits (n >= 0), starting at 0: gray_code(2) == [0, 1, 3, 2].",
  ref='''def gray_code(n):
    return [i ^ (i >> 1) for i in range(1 << n)]
''',
  brute='''def _sx_brute(n):
    seq = ['']
    for _ in range(n):
        seq = ['0' + s for s in seq] + ['1' + s for s in reversed(seq)]
    return [int(s, 2) if s else 0 for s in seq]
''',
  gen='''def _sx_gen(rng):
    return (rng.randint(0, 8),)
''',
  edges=[(0,), (1,), (2,), (3,)],
  mutants=[("shift", "i ^ (i >> 1)", "i ^ (i << 1)"),
           ("short", "range(1 << n)", "range((1 << n) - 1)")])

T(id="dag-paths", diff="medium", entry="count_dag_paths",
  prompt="Write a Python function count_dag_paths(n, edges, s, t) that returns the number of distinct "
         "directed paths from vertex s to vertex t in the acyclic directed graph with vertices 0..n-1 and "
         "the list of edges [u, v] (u -> v; parallel edges are distinct). A path from s to s is one path.",
  ref='''from functools import lru_cache


def count_dag_paths(n, edges, s, t):
    out = [[] for _ in range(n)]
    for u, v in edges:
        out[u].append(v)

    @lru_cache(maxsize=None)
    def ways(u):
        if u == t:
            return 1
        return sum(ways(v) for v in out[u])
    return ways(s)
''',
  brute='''def _sx_brute(n, edges, s, t):
    count = 0
    stack = [s]
    while stack:
        u = stack.pop()
        if u == t:
            count += 1
            continue
        for a, b in edges:
            if a == u:
                stack.append(b)
    return count
''',
  gen='''def _sx_gen(rng):
    n = rng.randint(1, 6)
    edges = []
    for _ in range(rng.randint(0, 9)):
        u, v = rng.randrange(n), rng.randrange(n)
        if u != v:
            edges.append([min(u, v), max(u, v)])
    return (n, edges, rng.randrange(n), rng.randrange(n))
''',
  edges=[(1, [], 0, 0), (2, [], 0, 1), (2, [[0, 1], [0, 1]], 0, 1), (3, [[0, 1], [1, 2], [0, 2]], 0, 2)],
  mutants=[("set-edges", "out[u].append(v)", "out[u].append(v) if v not in out[u] else None"),
           ("target-zero", "            return 1\n", "            return 1 if u != s else 0\n")])

T(id="dijkstra", diff="hard", entry="shortest_distances",
  prompt="Write a Python function shortest_distances(n, edges, s) that returns the list of shortest "
         "distances from vertex s to every vertex 0..n-1 of the directed graph with edges [u, v, w] "
         "(w >= 0), with -1 for unreachable vertices. Use Dijkstra's algorithm with a heap.",
  ref='''import heapq


def shortest_distances(n, edges, s):
    adj = [[] for _ in range(n)]
    for u, v, w in edges:
        adj[u].append((v, w))
    dist = [None] * n
    heap = [(0, s)]
    while heap:
        d, u = heapq.heappop(heap)
        if dist[u] is not None:
            continue
        dist[u] = d
        for v, w in adj[u]:
            if dist[v] is None:
                heapq.heappush(heap, (d + w, v))
    return [-1 if d is None else d for d in dist]
''',
  brute='''def _sx_brute(n, edges, s):
    inf = float('inf')
    d = [inf] * n
    d[s] = 0
    for _ in range(n):
        for u, v, w in edges:
            if d[u] + w < d[v]:
                d[v] = d[u] + w
    return [-1 if x == inf else x for x in d]
''',
  gen='''def _sx_gen(rng):
    n = rng.randint(1, 6)
    return (n, [[rng.randrange(n), rng.randrange(n), rng.randint(0, 9)] for _ in range(rng.randint(0, 10))],
            rng.randrange(n))
''',
  edges=[(1, [], 0), (2, [], 1), (2, [[0, 1, 0]], 0), (3, [[0, 1, 5], [1, 2, 1], [0, 2, 9]], 0)],
  mutants=[("no-skip", "        if dist[u] is not None:\n            continue\n", ""),
           ("edge-only", "heapq.heappush(heap, (d + w, v))", "heapq.heappush(heap, (w, v))")])

T(id="mst-weight", diff="hard", entry="mst_weight",
  prompt="Write a Python function mst_weight(n, edges) that returns the total weight of a minimum "
         "spanning tree of the undirected graph with vertices 0..n-1 and edges [u, v, w], or -1 when the "
         "graph is not connected. Use Kruskal's algorithm with union-find.",
  ref='''def mst_weight(n, edges):
    parent = list(range(n))

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x
    total = used = 0
    for u, v, w in sorted(edges, key=lambda e: e[2]):
        ru, rv = find(u), find(v)
        if ru != rv:
            parent[ru] = rv
            total += w
            used += 1
    return total if used == n - 1 else -1
''',
  brute='''def _sx_brute(n, edges):
    inf = float('inf')
    inside = {0}
    total = 0
    while len(inside) < n:
        best = inf
        for u, v, w in edges:
            if (u in inside) != (v in inside) and w < best:
                best, pick = w, v if u in inside else u
        if best == inf:
            return -1
        inside.add(pick)
        total += best
    return total
''',
  gen='''def _sx_gen(rng):
    n = rng.randint(1, 6)
    return (n, [[rng.randrange(n), rng.randrange(n), rng.randint(1, 9)] for _ in range(rng.randint(0, 10))])
''',
  edges=[(1, []), (2, []), (2, [[0, 1, 4], [1, 0, 2]]), (3, [[0, 0, 1], [0, 1, 5], [1, 2, 3]])],
  mutants=[("unsorted", "for u, v, w in sorted(edges, key=lambda e: e[2]):", "for u, v, w in edges:"),
           ("no-cycle-check", "if ru != rv:", "if ru != rv or u != v:"),
           ("count", "return total if used == n - 1 else -1", "return total if used >= n - 2 else -1")])

T(id="bipartite", diff="medium", entry="is_bipartite",
  prompt="Write a Python function is_bipartite(n, edges) that returns True when the undirected graph with "
         "vertices 0..n-1 and edges [u, v] can be coloured with two colours so that every edge joins "
         "different colours (a self-loop makes that impossible), else False.",
  ref='''def is_bipartite(n, edges):
    adj = [[] for _ in range(n)]
    for u, v in edges:
        adj[u].append(v)
        adj[v].append(u)
    color = [None] * n
    for s in range(n):
        if color[s] is not None:
            continue
        color[s] = 0
        stack = [s]
        while stack:
            u = stack.pop()
            for v in adj[u]:
                if color[v] is None:
                    color[v] = 1 - color[u]
                    stack.append(v)
                elif color[v] == color[u]:
                    return False
    return True
''',
  brute='''def _sx_brute(n, edges):
    return any(all((m >> u & 1) != (m >> v & 1) for u, v in edges) for m in range(1 << n))
''',
  gen='''def _sx_gen(rng):
    n = rng.randint(1, 7)
    return (n, [[rng.randrange(n), rng.randrange(n)] for _ in range(rng.randint(0, 8))])
''',
  edges=[(1, []), (1, [[0, 0]]), (3, [[0, 1], [1, 2], [2, 0]]), (4, [[0, 1], [1, 2], [2, 3], [3, 0]])],
  mutants=[("one-component", "    for s in range(n):", "    for s in range(min(n, 1)):"),
           ("same-color", "color[v] = 1 - color[u]", "color[v] = color[u]")])

T(id="count-occurrences", diff="medium", entry="count_occurrences",
  prompt="Write a Python function count_occurrences(text, pat) that returns how many times the non-empty "
         "string pat occurs in text, overlapping occurrences included, in O(len(text) + len(pat)) time "
         "(KMP or Z-function).",
  ref='''def count_occurrences(text, pat):
    fail = [0] * len(pat)
    k = 0
    for i in range(1, len(pat)):
        while k and pat[i] != pat[k]:
            k = fail[k - 1]
        if pat[i] == pat[k]:
            k += 1
        fail[i] = k
    count = k = 0
    for c in text:
        while k and c != pat[k]:
            k = fail[k - 1]
        if c == pat[k]:
            k += 1
        if k == len(pat):
            count += 1
            k = fail[k - 1]
    return count
''',
  brute='''def _sx_brute(text, pat):
    return sum(1 for i in range(len(text) - len(pat) + 1) if text[i:i + len(pat)] == pat)
''',
  gen='''def _sx_gen(rng):
    return (''.join(rng.choice('ab') for _ in range(rng.randint(0, 12))),
            ''.join(rng.choice('ab') for _ in range(rng.randint(1, 3))))
''',
  edges=[('', 'a'), ('a', 'a'), ('aaaa', 'aa'), ('abab', 'aba'), ('ab', 'abc')],
  mutants=[("no-overlap", "            k = fail[k - 1]\n    return count", "            k = 0\n    return count"),
           ("fail-index", "            k = fail[k - 1]\n        if c == pat[k]:", "            k = fail[k - 1] - 1 if fail[k - 1] else 0\n        if c == pat[k]:")])

T(id="min-path-sum", diff="easy", entry="min_path_sum",
  prompt="Write a Python function min_path_sum(grid) for a non-empty grid of non-negative integers (list "
         "of equal-length lists): return the smallest sum of the cells on a path from the top-left to the "
         "bottom-right cell moving only right or down (both end cells included).",
  ref='''def min_path_sum(grid):
    cols = len(grid[0])
    row = [0] * cols
    for r, line in enumerate(grid):
        for c in range(cols):
            if r == 0 and c == 0:
                row[c] = line[c]
            elif r == 0:
                row[c] = row[c - 1] + line[c]
            elif c == 0:
                row[c] = row[c] + line[c]
            else:
                row[c] = min(row[c], row[c - 1]) + line[c]
    return row[cols - 1]
''',
  brute='''def _sx_brute(grid):
    R, C = len(grid), len(grid[0])
    def go(r, c):
        if r == R - 1 and c == C - 1:
            return grid[r][c]
        opts = []
        if r + 1 < R:
            opts.append(go(r + 1, c))
        if c + 1 < C:
            opts.append(go(r, c + 1))
        return grid[r][c] + min(opts)
    return go(0, 0)
''',
  gen='''def _sx_gen(rng):
    r, c = rng.randint(1, 5), rng.randint(1, 5)
    return ([[rng.randint(0, 9) for _ in range(c)] for _ in range(r)],)
''',
  edges=[([[7]],), ([[1, 2, 3]],), ([[1], [2], [3]],), ([[1, 3, 1], [1, 5, 1], [4, 2, 1]],)],
  mutants=[("max", "row[c] = min(row[c], row[c - 1]) + line[c]", "row[c] = max(row[c], row[c - 1]) + line[c]"),
           ("first-row", "row[c] = row[c - 1] + line[c]", "row[c] = line[c]")])

T(id="min-partition-diff", diff="medium", entry="min_difference",
  prompt="Write a Python function min_difference(a) that splits the list of non-negative integers a into "
         "two groups (every element in exactly one group) and returns the smallest possible absolute "
         "difference of the group sums. Use dynamic programming over reachable sums.",
  ref='''def min_difference(a):
    total = sum(a)
    reach = {0}
    for x in a:
        reach |= {r + x for r in reach}
    return min(abs(total - 2 * r) for r in reach)
''',
  brute='''def _sx_brute(a):
    n = len(a)
    return min(abs(sum(a) - 2 * sum(a[i] for i in range(n) if m >> i & 1)) for m in range(1 << n))
''',
  gen='''def _sx_gen(rng):
    return ([rng.randint(0, 20) for _ in range(rng.randint(0, 9))],)
''',
  edges=[([],), ([5],), ([3, 3],), ([1, 6, 11, 5],)],
  mutants=[("halved", "return min(abs(total - 2 * r) for r in reach)", "return min(abs(total // 2 - r) for r in reach)"),
           ("no-accumulate", "reach |= {r + x for r in reach}", "reach |= {x}")])

# ---- bug fixes: the prompt shows the first mutant --------------------------

T(id="fix-merge-sorted", diff="easy", entry="merge_sorted", bugfix=True,
  prompt="merge_sorted(a, b) should return one sorted list holding every element of the sorted lists a "
         "and b (duplicates kept).",
  ref='''def merge_sorted(a, b):
    out, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        if a[i] <= b[j]:
            out.append(a[i])
            i += 1
        else:
            out.append(b[j])
            j += 1
    out.extend(a[i:])
    out.extend(b[j:])
    return out
''',
  brute='''def _sx_brute(a, b):
    return sorted(a + b)
''',
  gen='''def _sx_gen(rng):
    return (sorted(rng.randint(0, 9) for _ in range(rng.randint(0, 6))),
            sorted(rng.randint(0, 9) for _ in range(rng.randint(0, 6))))
''',
  edges=[([], []), ([1], []), ([], [1]), ([1, 1], [1]), ([1, 3], [2, 4, 5])],
  mutants=[("drop-tail", "    out.extend(b[j:])\n", ""),
           ("or-loop", "while i < len(a) and j < len(b):", "while i < len(a) - 1 and j < len(b):")])

T(id="fix-leap-year", diff="easy", entry="is_leap", bugfix=True,
  prompt="is_leap(y) should return True for leap years of the Gregorian calendar (divisible by 4, except "
         "years divisible by 100 that are not divisible by 400).",
  ref='''def is_leap(y):
    return y % 4 == 0 and (y % 100 != 0 or y % 400 == 0)
''',
  brute='''def _sx_brute(y):
    if y % 400 == 0:
        return True
    if y % 100 == 0:
        return False
    return y % 4 == 0
''',
  gen='''def _sx_gen(rng):
    return (rng.choice([rng.randint(1, 3000), rng.randint(1, 30) * 100, rng.randint(1, 700) * 4]),)
''',
  edges=[(1900,), (2000,), (2004,), (2001,), (2100,), (2400,)],
  mutants=[("century", "(y % 100 != 0 or y % 400 == 0)", "(y % 100 != 0 and y % 400 == 0)"),
           ("no-400", "(y % 100 != 0 or y % 400 == 0)", "(y % 100 != 0)")])

T(id="fix-chunks", diff="easy", entry="chunks", bugfix=True,
  prompt="chunks(a, size) should split the list a into consecutive pieces of length size (size >= 1); "
         "the last piece may be shorter. chunks([1, 2, 3], 2) == [[1, 2], [3]].",
  ref='''def chunks(a, size):
    return [a[i:i + size] for i in range(0, len(a), size)]
''',
  brute='''def _sx_brute(a, size):
    out = []
    for x in a:
        if not out or len(out[-1]) == size:
            out.append([])
        out[-1].append(x)
    return out
''',
  gen='''def _sx_gen(rng):
    return (list(range(rng.randint(0, 10))), rng.randint(1, 4))
''',
  edges=[([], 3), ([1], 1), ([1, 2, 3], 2), ([1, 2, 3, 4], 2), ([1, 2], 5)],
  mutants=[("drop-partial", "for i in range(0, len(a), size)]", "for i in range(0, len(a) - size + 1, size)]"),
           ("overlap", "for i in range(0, len(a), size)]", "for i in range(0, len(a), max(size - 1, 1))]")])

T(id="fix-trailing-zeros", diff="easy", entry="trailing_zeros", bugfix=True,
  prompt="trailing_zeros(n) should return how many zeros n! (n >= 0) ends with in decimal, without "
         "computing n!.",
  ref='''def trailing_zeros(n):
    count = 0
    p = 5
    while p <= n:
        count += n // p
        p *= 5
    return count
''',
  brute='''def _sx_brute(n):
    f = 1
    for k in range(2, n + 1):
        f *= k
    s = str(f)
    return len(s) - len(s.rstrip('0'))
''',
  gen='''def _sx_gen(rng):
    return (rng.randint(0, 400),)
''',
  edges=[(0,), (4,), (5,), (24,), (25,), (125,)],
  mutants=[("strict", "while p <= n:", "while p < n:"),
           ("fives-only", "        p *= 5\n", "        p *= 5\n        break\n"),
           ("power", "p *= 5", "p += 5")])

T(id="fix-caesar", diff="easy", entry="caesar", bugfix=True,
  prompt="caesar(s, k) should shift every lowercase letter of s by k places in the alphabet, wrapping from "
         "z back to a (k may be negative or larger than 26), and leave every other character unchanged.",
  ref='''def caesar(s, k):
    out = []
    for c in s:
        if 'a' <= c <= 'z':
            out.append(chr((ord(c) - ord('a') + k) % 26 + ord('a')))
        else:
            out.append(c)
    return ''.join(out)
''',
  brute='''def _sx_brute(s, k):
    letters = 'abcdefghijklmnopqrstuvwxyz'
    out = ''
    for c in s:
        if c in letters:
            i = letters.index(c)
            steps = k % 26
            for _ in range(steps):
                i = i + 1 if i < 25 else 0
            c = letters[i]
        out += c
    return out
''',
  gen='''def _sx_gen(rng):
    return (''.join(rng.choice('abxyz AZ!') for _ in range(rng.randint(0, 10))), rng.randint(-60, 60))
''',
  edges=[('', 3), ('z', 1), ('a', -1), ('Hello, world', 13), ('abc', 52)],
  mutants=[("no-wrap", "chr((ord(c) - ord('a') + k) % 26 + ord('a'))", "chr(ord(c) + k) if ord(c) + k <= ord('z') else chr(ord(c) + k - 26)"),
           ("upper", "if 'a' <= c <= 'z':", "if 'a' <= c <= 'z' or 'A' <= c <= 'Z':"),
           ("range", "if 'a' <= c <= 'z':", "if 'a' <= c < 'z':")])

T(id="fix-transpose", diff="easy", entry="transpose", bugfix=True,
  prompt="transpose(m) should return the transpose of the matrix m (a non-empty list of equal-length "
         "non-empty lists), which need not be square.",
  ref='''def transpose(m):
    return [[m[r][c] for r in range(len(m))] for c in range(len(m[0]))]
''',
  brute='''def _sx_brute(m):
    return [list(col) for col in zip(*m)]
''',
  gen='''def _sx_gen(rng):
    r, c = rng.randint(1, 4), rng.randint(1, 4)
    return ([[rng.randint(0, 9) for _ in range(c)] for _ in range(r)],)
''',
  edges=[([[1]],), ([[1, 2, 3]],), ([[1], [2]],), ([[1, 2], [3, 4]],)],
  mutants=[("square", "for c in range(len(m[0]))]", "for c in range(len(m))]"),
           ("no-swap", "[[m[r][c] for r in range(len(m))] for c in range(len(m[0]))]",
            "[[m[c][r] for r in range(len(m[0]))] for c in range(len(m))]")])

T(id="fix-dedupe", diff="easy", entry="dedupe", bugfix=True,
  prompt="dedupe(a) should return the elements of the list a without repeats, each kept at the position of "
         "its first occurrence.",
  ref='''def dedupe(a):
    seen, out = set(), []
    for x in a:
        if x not in seen:
            seen.add(x)
            out.append(x)
    return out
''',
  brute='''def _sx_brute(a):
    return [x for i, x in enumerate(a) if x not in a[:i]]
''',
  gen='''def _sx_gen(rng):
    return ([rng.randint(0, 6) for _ in range(rng.randint(0, 10))],)
''',
  edges=[([],), ([1],), ([2, 1, 2],), ([3, 3, 3],)],
  mutants=[("unordered", "    seen, out = set(), []\n    for x in a:\n        if x not in seen:\n            seen.add(x)\n            out.append(x)\n    return out",
            "    return sorted(set(a))"),
           ("adjacent-only", "if x not in seen:", "if not out or out[-1] != x:")])

T(id="fix-flatten", diff="easy", entry="flatten", bugfix=True,
  prompt="flatten(x) should return a flat list of all integers inside the arbitrarily nested list x, in "
         "order. flatten([1, [2, [3, []]], 4]) == [1, 2, 3, 4].",
  ref='''def flatten(x):
    out = []
    for item in x:
        if isinstance(item, list):
            out.extend(flatten(item))
        else:
            out.append(item)
    return out
''',
  brute='''def _sx_brute(x):
    s = repr(x).replace('[', ' ').replace(']', ' ').replace(',', ' ')
    return [int(t) for t in s.split()]
''',
  gen='''def _sx_gen(rng):
    def build(d):
        return [build(d - 1) if d and rng.random() < 0.35 else rng.randint(-9, 9) for _ in range(rng.randint(0, 4))]
    return (build(3),)
''',
  edges=[([],), ([[]],), ([1, [2, [3, []]], 4],), ([[[[5]]]],)],
  mutants=[("one-level", "out.extend(flatten(item))", "out.extend(item)"),
           ("append-list", "out.extend(flatten(item))", "out.append(flatten(item)) if len(item) > 1 else out.extend(flatten(item))")])

T(id="fix-palindrome-number", diff="easy", entry="is_palindrome_number", bugfix=True,
  prompt="is_palindrome_number(n) should return True when the decimal digits of the integer n read the "
         "same backwards; negative numbers are never palindromes. It must not convert n to a string.",
  ref='''def is_palindrome_number(n):
    if n < 0:
        return False
    rev, m = 0, n
    while m > 0:
        rev = rev * 10 + m % 10
        m //= 10
    return rev == n
''',
  brute='''def _sx_brute(n):
    return str(n) == str(n)[::-1]
''',
  gen='''def _sx_gen(rng):
    k = rng.randint(0, 999)
    return (rng.choice([k, -k, int(str(k) + str(k)[::-1]), int(str(k) + str(k)[-2::-1])]),)
''',
  edges=[(0,), (7,), (-121,), (10,), (121,), (1221,)],
  mutants=[("trailing-zero", "return rev == n", "return rev == n or n % 10 == 0"),
           ("loop-bound", "while m > 0:", "while m > 9:")])

T(id="fix-running-sum", diff="easy", entry="running_sum", bugfix=True,
  prompt="running_sum(a) should return the list of prefix sums of a: entry i is a[0] + ... + a[i].",
  ref='''def running_sum(a):
    out = []
    total = 0
    for x in a:
        total += x
        out.append(total)
    return out
''',
  brute='''def _sx_brute(a):
    return [sum(a[:i + 1]) for i in range(len(a))]
''',
  gen='''def _sx_gen(rng):
    return ([rng.randint(-9, 9) for _ in range(rng.randint(0, 10))],)
''',
  edges=[([],), ([5],), ([1, 2, 3],), ([-1, 1],)],
  mutants=[("exclusive", "        total += x\n        out.append(total)", "        out.append(total)\n        total += x"),
           ("reset", "        total += x\n", "        total = x + (out[-1] if len(out) > 1 else 0)\n")])

T(id="fix-second-largest", diff="easy", entry="second_largest", bugfix=True,
  prompt="second_largest(a) should return the second largest distinct value in the list a, or None when a "
         "has fewer than two distinct values.",
  ref='''def second_largest(a):
    first = second = None
    for x in a:
        if first is None or x > first:
            first, second = x, first
        elif x != first and (second is None or x > second):
            second = x
    return second
''',
  brute='''def _sx_brute(a):
    s = sorted(set(a))
    return s[-2] if len(s) >= 2 else None
''',
  gen='''def _sx_gen(rng):
    return ([rng.randint(-5, 5) for _ in range(rng.randint(0, 8))],)
''',
  edges=[([],), ([1],), ([2, 2],), ([1, 2],), ([3, 3, 1],), ([1, 5, 5, 3],)],
  mutants=[("keep-old", "first, second = x, first", "first = x"),
           ("duplicates", "elif x != first and (second is None or x > second):", "elif second is None or x > second:")])

T(id="fix-binary-to-int", diff="easy", entry="binary_to_int", bugfix=True,
  prompt="binary_to_int(s) should return the integer value of the non-empty string of binary digits s "
         "(most significant first), computed digit by digit without int(s, 2).",
  ref='''def binary_to_int(s):
    v = 0
    for c in s:
        v = v * 2 + (c == '1')
    return v
''',
  brute='''def _sx_brute(s):
    return int(s, 2)
''',
  gen='''def _sx_gen(rng):
    return (''.join(rng.choice('01') for _ in range(rng.randint(1, 12))),)
''',
  edges=[('0',), ('1',), ('10',), ('0001',), ('1111',)],
  mutants=[("reversed", "for c in s:", "for c in reversed(s):"),
           ("add-first", "v = v * 2 + (c == '1')", "v = (v + (c == '1')) * 2")])

T(id="fix-rotate", diff="easy", entry="rotate_left", bugfix=True,
  prompt="rotate_left(a, k) should return a new list with the elements of a rotated k places to the left "
         "(k >= 0, possibly larger than len(a); an empty list stays empty).",
  ref='''def rotate_left(a, k):
    if not a:
        return []
    k %= len(a)
    return a[k:] + a[:k]
''',
  brute='''def _sx_brute(a, k):
    a = list(a)
    for _ in range(k):
        if a:
            a.append(a.pop(0))
    return a
''',
  gen='''def _sx_gen(rng):
    return (list(range(rng.randint(0, 7))), rng.randint(0, 20))
''',
  edges=[([], 3), ([1], 5), ([1, 2, 3], 0), ([1, 2, 3], 3), ([1, 2, 3], 4)],
  mutants=[("no-mod", "    k %= len(a)\n", ""),
           ("right", "return a[k:] + a[:k]", "return a[-k:] + a[:-k] if k else a[:]")])
