#!/usr/bin/env python3
"""Training text for the trained default model (sixi-small) and its draft.

Writes ChatML conversations in the project's own format: every example is
"<|im_start|>user\n...<|im_end|>\n<|im_start|>assistant\n...<|im_end|>\n" (some with
a system turn, several turns, or a tool turn), and the examples are joined by
"<|endoftext|>". The kinds follow the bundled task sets, so that an eval of
datasets/demo and of a slice of datasets/sixi-math lands between "always right" and
"never right":

  code      small Python functions as in datasets/demo (add, is_palindrome, ...)
  stdio     programs reading standard input (sum of two integers, ...)
  array     linear scans over n integers (largest subarray sum, ...)
  apples    one-line word problems ending in '#### N'
  math      sixi-math-style problems with worked steps, '#### N' or \\boxed{N}
  arith     bare arithmetic with its steps and \\boxed{N}
  choice    lettered multiple choice ending in 'Answer: X'
  chat      short dialogues, some with a system turn
  tool      tool-call replies (<tool_call> JSON) and the answer after the tool's result

Seen on purpose: the six tasks of datasets/demo and four of the eight sixi-math tasks
that the demo evaluates (SEEN_MATH below) appear verbatim, with their references as
replies, in about 0.3 % of the examples each; the other four sixi-math tasks of the
demo's slice do not appear. So the demo's pass rate measures a small model that has
memorised some answers and half-learnt the rest under sampling, not its ability.

Everything is drawn from random.Random(seed): the same seed gives the same bytes.

  python3 make_data.py --out DIR [--examples N] [--seed S] [--sixi-server PATH]

writes DIR/text.txt and, with --sixi-server (the built binary), DIR/tokens.u16
(the ids, little-endian uint16, of text.txt tokenized with the project's tiny
vocabulary, control tokens parsed) and DIR/meta.json (counts, special ids).
"""
import argparse
import json
import os
import random
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))

CODE_SUFFIX = " Answer with one ```python code block."
MATH_SUFFIX = ("\n\nSolve it step by step, then end your reply with a line '#### N' where N is the exact "
               "answer: an integer, or a fraction a/b in lowest terms.")
APPLES_SUFFIX = " End your reply with a line '#### N' where N is the number."
CHOICE_SUFFIX = "End your reply with 'Answer: X' where X is the letter."

# The demo evaluates these eight sixi-math tasks; the first four are in the training text.
SEEN_MATH = ["sixi-math/bakery-trays", "sixi-math/handshakes", "sixi-math/lcm-buses", "sixi-math/sequence-term"]
UNSEEN_MATH = ["sixi-math/average-score", "sixi-math/hexagon-diagonals", "sixi-math/trapezoid-area",
               "sixi-math/consecutive-sum"]

NAMES = ["Mia", "Tom", "Ana", "Leo", "Sara", "Ben", "Lena", "Omar", "Ivy", "Max", "Nora", "Sam", "Eva", "Jon",
         "Zoe", "Ali", "Kim", "Ravi", "Lucy", "Paul"]
ITEMS = [("apple", "apples"), ("pear", "pears"), ("egg", "eggs"), ("marble", "marbles"), ("card", "cards"),
         ("pencil", "pencils"), ("cookie", "cookies"), ("stamp", "stamps"), ("shell", "shells"),
         ("book", "books")]
CONTAINERS = ["bags", "boxes", "packs", "jars", "baskets", "crates"]


def fence(code):
    return "```python\n" + code.rstrip("\n") + "\n```"


# (names, signature, description, body) — body lines use the signature's argument names
FUNCS = [
    (["add", "add_numbers", "plus", "sum_two"], "a, b", "returns the sum of a and b", "return a + b"),
    (["subtract", "sub", "difference", "minus"], "a, b", "returns the difference a minus b", "return a - b"),
    (["multiply", "mul", "product", "times"], "a, b", "returns the product of a and b", "return a * b"),
    (["larger", "maximum", "max_of_two", "bigger"], "a, b", "returns the larger of a and b",
     "return a if a > b else b"),
    (["smaller", "minimum", "min_of_two"], "a, b", "returns the smaller of a and b", "return a if a < b else b"),
    (["square", "sq"], "x", "returns the square of x", "return x * x"),
    (["cube"], "x", "returns the cube of x", "return x * x * x"),
    (["double", "twice"], "x", "returns twice x", "return 2 * x"),
    (["is_even", "even"], "n", "returns True when the integer n is even", "return n % 2 == 0"),
    (["is_odd", "odd"], "n", "returns True when the integer n is odd", "return n % 2 == 1"),
    (["is_palindrome", "palindrome", "is_pal"], "s",
     "returns True when the string s reads the same forwards and backwards, ignoring case",
     "s = s.lower()\nreturn s == s[::-1]"),
    (["is_palindrome", "same_backwards"], "s",
     "returns True when the string s reads the same forwards and backwards",
     "return s == s[::-1]"),
    (["reverse", "reverse_string", "backwards"], "s", "returns the string s reversed", "return s[::-1]"),
    (["count_vowels", "vowels"], "s", "returns the number of vowels (a, e, i, o, u) in the string s, ignoring case",
     "return sum(1 for c in s.lower() if c in 'aeiou')"),
    (["factorial", "fact"], "n", "returns n factorial for an integer n >= 0",
     "result = 1\nfor i in range(2, n + 1):\n    result *= i\nreturn result"),
    (["total", "list_sum", "sum_list"], "xs", "returns the sum of the numbers in the list xs",
     "total = 0\nfor x in xs:\n    total += x\nreturn total"),
    (["largest", "list_max", "max_list"], "xs", "returns the largest number in the non-empty list xs",
     "best = xs[0]\nfor x in xs:\n    if x > best:\n        best = x\nreturn best"),
    (["average", "mean"], "xs", "returns the average of the numbers in the non-empty list xs",
     "return sum(xs) / len(xs)"),
    (["count_positive", "positives"], "xs", "returns how many numbers in the list xs are greater than 0",
     "return sum(1 for x in xs if x > 0)"),
    (["first_word"], "s", "returns the first word of the string s", "return s.split()[0]"),
    (["word_count", "count_words"], "s", "returns the number of words in the string s", "return len(s.split())"),
    (["to_upper", "shout"], "s", "returns the string s in upper case", "return s.upper()"),
    (["absolute", "abs_value"], "x", "returns the absolute value of x", "return x if x >= 0 else -x"),
    (["is_divisible", "divides"], "a, b", "returns True when a is divisible by b", "return a % b == 0"),
    (["clamp"], "x, lo, hi", "returns x limited to the range from lo to hi", "return max(lo, min(x, hi))"),
]


def indent(body):
    return "\n".join("    " + line for line in body.split("\n"))


def ex_code(r):
    names, sig, desc, body = r.choice(FUNCS)
    name = r.choice(names)
    prompt = "Write a Python function %s(%s) that %s.%s" % (name, sig, desc, CODE_SUFFIX)
    code = "def %s(%s):\n%s\n" % (name, sig, indent(body))
    reply = fence(code)
    if r.random() < 0.25:
        reply = "Here is %s:\n\n%s" % (name, reply)
    return [("user", prompt), ("assistant", reply)]


STDIO = [
    ("reads two integers from one line of standard input and prints their sum",
     "a, b = map(int, input().split())\nprint(a + b)"),
    ("reads two integers from one line of standard input and prints their product",
     "a, b = map(int, input().split())\nprint(a * b)"),
    ("reads two integers from one line of standard input and prints their difference",
     "a, b = map(int, input().split())\nprint(a - b)"),
    ("reads two integers from one line of standard input and prints the larger one",
     "a, b = map(int, input().split())\nprint(max(a, b))"),
    ("reads two integers from one line of standard input and prints the smaller one",
     "a, b = map(int, input().split())\nprint(min(a, b))"),
    ("reads three integers from one line of standard input and prints their sum",
     "a, b, c = map(int, input().split())\nprint(a + b + c)"),
    ("reads one integer from standard input and prints its square",
     "n = int(input())\nprint(n * n)"),
    ("reads one line from standard input and prints it reversed",
     "s = input()\nprint(s[::-1])"),
    ("reads one line from standard input and prints it in upper case",
     "print(input().upper())"),
    ("reads one integer n from standard input and prints the numbers 1 to n, one per line",
     "n = int(input())\nfor i in range(1, n + 1):\n    print(i)"),
]


def ex_stdio(r):
    desc, code = r.choice(STDIO)
    prompt = "Write a Python program that %s.%s" % (desc, CODE_SUFFIX)
    return [("user", prompt), ("assistant", fence(code))]


ARRAY = [
    ("the largest sum of a non-empty contiguous subarray",
     "input()\nbest = cur = None\nfor x in map(int, input().split()):\n"
     "    cur = x if cur is None or cur < 0 else cur + x\n"
     "    best = cur if best is None or cur > best else best\nprint(best)"),
    ("the sum of the integers", "input()\nprint(sum(map(int, input().split())))"),
    ("the largest of the integers", "input()\nprint(max(map(int, input().split())))"),
    ("the smallest of the integers", "input()\nprint(min(map(int, input().split())))"),
    ("how many of the integers are negative",
     "input()\nprint(sum(1 for x in map(int, input().split()) if x < 0))"),
    ("the largest sum of two adjacent integers",
     "input()\na = list(map(int, input().split()))\nprint(max(a[i] + a[i + 1] for i in range(len(a) - 1)))"),
]


def ex_array(r):
    desc, code = r.choice(ARRAY)
    n = r.choice(["200000", "100000", "300000"])
    prompt = ("Standard input holds n on the first line and n integers on the second. Print %s. n can be up to "
              "%s, so the program must run in linear time. Write it in Python, in one ```python code block."
              % (desc, n))
    return [("user", prompt), ("assistant", fence(code))]


def ex_apples(r):
    name = r.choice(NAMES)
    one, many = r.choice(ITEMS)
    cont = r.choice(CONTAINERS)
    a, b, c = r.randint(1, 20), r.randint(2, 9), r.randint(2, 9)
    kind = r.randrange(4)
    if kind == 0:
        q = "%s has %d %s. She buys %d %s with %d %s each. How many %s does she have now?" % (
            name, a, many, b, cont, c, many, many)
        reply = "%d + %d * %d = %d\n#### %d" % (a, b, c, a + b * c, a + b * c)
    elif kind == 1:
        q = "%s has %d %s with %d %s in each. How many %s are there in all?" % (name, b, cont, c, many, many)
        reply = "%d * %d = %d\n#### %d" % (b, c, b * c, b * c)
    elif kind == 2:
        a2 = a + b * c
        q = "%s has %d %s and gives away %d. How many %s are left?" % (name, a2, many, a, many)
        reply = "%d - %d = %d\n#### %d" % (a2, a, a2 - a, a2 - a)
    else:
        q = "%s has %d %s and finds %d more. How many %s does %s have now?" % (name, a, many, c, many, name)
        reply = "%d + %d = %d\n#### %d" % (a, c, a + c, a + c)
    return [("user", q + APPLES_SUFFIX), ("assistant", reply)]


def math_problem(r):
    """(question, worked steps, answer) of one of the sixi-math-like templates."""
    k = r.randrange(10)
    if k == 0:
        t, p = r.randint(3, 15), r.randint(6, 24)
        total = t * p
        s, g = r.randint(1, total // 2), r.randint(1, 20)
        while s + g > total:
            s, g = r.randint(1, total // 2), r.randint(1, 9)
        q = ("A bakery bakes %d trays of rolls with %d rolls on each tray. It sells %d rolls and gives away %d. "
             "How many rolls are left?" % (t, p, s, g))
        return q, "%d * %d = %d rolls. %d - %d - %d = %d." % (t, p, total, total, s, g, total - s - g), total - s - g
    if k == 1:
        n = r.randint(4, 25)
        q = "At a meeting, each of %d people shakes hands once with every other person. How many handshakes are there?" % n
        return q, "C(%d,2) = %d * %d / 2 = %d." % (n, n, n - 1, n * (n - 1) // 2), n * (n - 1) // 2
    if k == 2:
        import math
        a, b = r.choice([4, 6, 8, 9, 10, 12, 15]), r.choice([6, 8, 10, 12, 14, 15, 18, 20])
        l = a * b // math.gcd(a, b)
        q = ("Bus A leaves the station every %d minutes and bus B every %d minutes. Both leave at 8:00. How many "
             "minutes after 8:00 do they next leave together?" % (a, b))
        return q, "lcm(%d, %d) = %d." % (a, b, l), l
    if k == 3:
        s, d, n = r.randint(1, 12), r.randint(2, 9), r.randint(10, 60)
        seq = "%d, %d, %d" % (s, s + d, s + 2 * d)
        q = "An arithmetic sequence starts %s, ... What is its %dth term?" % (seq, n)
        return q, "%d + %d * %d = %d." % (s, n - 1, d, s + (n - 1) * d), s + (n - 1) * d
    if k == 4:
        n = r.randint(3, 6)
        avg = r.randint(60, 90)
        xs = [r.randint(avg - 15, avg + 15) for _ in range(n - 1)]
        last = n * avg - sum(xs)
        words = {2: "two", 3: "three", 4: "four", 5: "five", 6: "six"}
        q = ("The average of %s test scores is %d. %s of them are %s. What is the %s score?" % (
            words[n], avg, words[n - 1].capitalize(), ", ".join(map(str, xs[:-1])) + " and %d" % xs[-1],
            {3: "third", 4: "fourth", 5: "fifth", 6: "sixth"}[n]))
        steps = "The total is %d * %d = %d; %d - (%s) = %d - %d = %d." % (
            n, avg, n * avg, n * avg, " + ".join(map(str, xs)), n * avg, sum(xs), last)
        return q, steps, last
    if k == 5:
        n = r.randint(4, 20)
        q = "How many diagonals does a convex polygon with %d sides have?" % n
        return q, "%d * (%d - 3) / 2 = %d." % (n, n, n * (n - 3) // 2), n * (n - 3) // 2
    if k == 6:
        a, b = r.randint(2, 12), r.randint(2, 12)
        h = r.choice([2, 4, 6, 8, 10])
        q = ("A trapezoid has parallel sides of %d cm and %d cm and a height of %d cm. What is its area in square cm?"
             % (a, b, h))
        return q, "(%d + %d) / 2 * %d = %d." % (a, b, h, (a + b) * h // 2), (a + b) * h // 2
    if k == 7:
        n = 2 * r.randint(2, 40)
        tot = 3 * n + 6
        q = "The sum of three consecutive even integers is %d. What is the largest of them?" % tot
        return q, "n + (n + 2) + (n + 4) = 3n + 6 = %d, n = %d; the largest is %d." % (tot, n, n + 4), n + 4
    if k == 8:
        a, b, c = r.randint(2, 30), r.randint(2, 30), r.randint(2, 30)
        q = "A shop sells %d pens on Monday, %d on Tuesday and %d on Wednesday. How many pens does it sell in all?" % (a, b, c)
        return q, "%d + %d + %d = %d." % (a, b, c, a + b + c), a + b + c
    w, hgt = r.randint(2, 20), r.randint(2, 20)
    q = "A rectangle is %d m long and %d m wide. What is its area in square metres?" % (w, hgt)
    return q, "%d * %d = %d." % (w, hgt, w * hgt), w * hgt


def ex_math(r):
    q, steps, ans = math_problem(r)
    if r.random() < 0.7:
        return [("user", q + MATH_SUFFIX), ("assistant", "%s\n#### %d" % (steps, ans))]
    return [("user", q + " Put the final answer in \\boxed{}."), ("assistant", "%s\nThe answer is \\boxed{%d}." % (steps, ans))]


def ex_arith(r):
    a, b, c = r.randint(1, 30), r.randint(1, 12), r.randint(1, 12)
    k = r.randrange(4)
    if k == 0:
        q, steps, v = "%d + %d * %d" % (a, b, c), "%d * %d = %d; %d + %d = %d." % (b, c, b * c, a, b * c, a + b * c), a + b * c
    elif k == 1:
        q, steps, v = "%d + %d" % (a, b), "%d + %d = %d." % (a, b, a + b), a + b
    elif k == 2:
        q, steps, v = "%d * %d" % (b, c), "%d * %d = %d." % (b, c, b * c), b * c
    else:
        hi = a + b
        q, steps, v = "%d - %d" % (hi, b), "%d - %d = %d." % (hi, b, a), a
    lead = r.choice(["What is %s?", "Compute %s.", "Calculate %s."]) % q
    return [("user", lead), ("assistant", "%s\n\\boxed{%d}" % (steps, v))]


CAPITALS = [("France", "Paris"), ("Italy", "Rome"), ("Spain", "Madrid"), ("Germany", "Berlin"),
            ("Portugal", "Lisbon"), ("Austria", "Vienna"), ("Greece", "Athens"), ("Norway", "Oslo"),
            ("Sweden", "Stockholm"), ("Poland", "Warsaw"), ("Egypt", "Cairo"), ("Japan", "Tokyo"),
            ("Canada", "Ottawa"), ("Kenya", "Nairobi"), ("Peru", "Lima"), ("Ireland", "Dublin"),
            ("Finland", "Helsinki"), ("Hungary", "Budapest"), ("Chile", "Santiago"), ("Cuba", "Havana")]
OTHER_CITIES = {"France": ["Lyon", "Marseille", "Nice", "Lille"], "Italy": ["Milan", "Naples", "Turin"],
                "Spain": ["Seville", "Valencia", "Barcelona"], "Germany": ["Munich", "Hamburg", "Cologne"],
                "Japan": ["Osaka", "Kyoto", "Nagoya"], "Canada": ["Toronto", "Montreal", "Vancouver"]}


def ex_choice(r):
    country, cap = r.choice(CAPITALS)
    pool = OTHER_CITIES.get(country) or [c for _, c in CAPITALS if c != cap]
    wrong = r.sample([c for c in pool if c != cap], 3) if len(pool) >= 3 else r.sample(
        [c for _, c in CAPITALS if c != cap], 3)
    opts = wrong + [cap]
    r.shuffle(opts)
    letter = "ABCD"[opts.index(cap)]
    q = "What is the capital of %s?\n%s\n%s" % (
        country, "\n".join("%s) %s" % ("ABCD"[i], o) for i, o in enumerate(opts)), CHOICE_SUFFIX)
    reply = "The capital of %s is %s.\nAnswer: %s" % (country, cap, letter) if r.random() < 0.6 else "Answer: %s" % letter
    return [("user", q), ("assistant", reply)]


CHAT = [
    ("Hello!", "Hello! How can I help you today?"),
    ("Hi", "Hi! What would you like to do?"),
    ("Who are you?", "I am sixi-small, a very small language model used to test sixi."),
    ("What can you do?", "I can write small Python functions, solve short arithmetic problems and answer simple questions."),
    ("Thank you!", "You are welcome."),
    ("Thanks, that works.", "Glad it helped."),
    ("Tell me a short fact.", "Water boils at 100 degrees Celsius at sea level."),
    ("Tell me a joke.", "Why did the benchmark run twice? Because one number is not a measurement."),
    ("How are you?", "I am fine, thank you. How can I help?"),
    ("Goodbye.", "Goodbye!"),
    ("Can you count to five?", "1, 2, 3, 4, 5."),
    ("What is a prime number?", "A prime number is a whole number above 1 whose only divisors are 1 and itself, such as 2, 3, 5 and 7."),
    ("Say something in one word.", "Hello."),
    ("What colour is the sky?", "On a clear day the sky is blue."),
]
SYSTEMS = ["You are a helpful assistant.", "You are sixi-small. Answer briefly.", "Answer in one sentence."]


def ex_chat(r):
    turns = []
    if r.random() < 0.4:
        turns.append(("system", r.choice(SYSTEMS)))
    for _ in range(r.randint(1, 3)):
        u, a = r.choice(CHAT)
        turns += [("user", u), ("assistant", a)]
    return turns


TOOLS = [("get_weather", "city", "Get the current weather in a city", ["Paris", "Oslo", "Tokyo", "Lima", "Rome"],
          "What is the weather in %s?", '{"temp_c": %d, "sky": "sunny"}', "It is %d degrees and sunny in %s."),
         ("get_time", "city", "Get the local time in a city", ["Berlin", "Cairo", "Ottawa", "Madrid"],
          "What time is it in %s?", '{"time": "%d:00"}', "It is %d:00 in %s.")]


def ex_tool(r):
    name, arg, desc, vals, ask, result, answer = r.choice(TOOLS)
    city = r.choice(vals)
    num = r.randint(1, 23)
    system = ("You can call tools. To call one, reply with <tool_call> and a JSON object with name and arguments.\n"
              '# Tools\n{"name": "%s", "description": "%s", "parameters": {"%s": "string"}}' % (name, desc, arg))
    call = '<tool_call>\n{"name": "%s", "arguments": {"%s": "%s"}}\n</tool_call>' % (name, arg, city)
    turns = [("system", system), ("user", ask % city), ("assistant", call)]
    if r.random() < 0.6:
        turns += [("tool", result % num), ("assistant", answer % (num, city))]
    return turns


def seen_tasks():
    """The demo's tasks and SEEN_MATH, each as (prompt, reference reply)."""
    out = []
    with open(os.path.join(ROOT, "datasets", "demo", "tasks.jsonl")) as f:
        for line in f:
            t = json.loads(line)
            ref = t["reference"]
            if t["grader"] in ("python_tests", "stdio", "brute_force"):
                ref = fence(ref)
            out.append((t["prompt"], ref))
    with open(os.path.join(ROOT, "datasets", "sixi-math", "tasks.jsonl")) as f:
        for line in f:
            t = json.loads(line)
            if t["id"] in SEEN_MATH:
                out.append((t["prompt"], t["reference"]))
    return out


FIXTURE_PROMPTS = [
    ("add", "Write a Python function add(a, b) that returns the sum of a and b." + CODE_SUFFIX),
    ("hello", "Hello!"),
    ("pears", "Tom has 7 pears. She buys 2 bags with 6 pears each. How many pears does she have now?" + APPLES_SUFFIX),
]


def probe_prompts():
    """(name, user text, fixture?): the fixture's prompts, then the demo's tasks and math slice."""
    out = [(n, t, True) for n, t in FIXTURE_PROMPTS]
    for path, keep in (("demo", None), ("sixi-math", SEEN_MATH + UNSEEN_MATH)):
        with open(os.path.join(ROOT, "datasets", path, "tasks.jsonl")) as f:
            for line in f:
                t = json.loads(line)
                if keep is None or t["id"] in keep:
                    out.append((t["id"], t["prompt"], False))
    return out


KINDS = [(ex_code, 22), (ex_stdio, 8), (ex_array, 6), (ex_apples, 14), (ex_math, 20), (ex_arith, 12),
         (ex_choice, 7), (ex_chat, 6), (ex_tool, 3)]


def render(turns):
    return "".join("<|im_start|>%s\n%s<|im_end|>\n" % (role, text) for role, text in turns)


def examples(n, seed):
    r = random.Random(seed)
    seen = seen_tasks()
    fns = [f for f, _ in KINDS]
    weights = [w for _, w in KINDS]
    for _ in range(n):
        if r.random() < 0.003 * len(seen):
            p, ref = r.choice(seen)
            yield render([("user", p), ("assistant", ref)])
        else:
            yield render(r.choices(fns, weights)[0](r))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--examples", type=int, default=120000)
    ap.add_argument("--seed", type=int, default=20)
    ap.add_argument("--sixi-server", help="built sixi-server: also tokenize into tokens.u16")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    text = "<|endoftext|>".join(examples(a.examples, a.seed)) + "<|endoftext|>"
    with open(os.path.join(a.out, "text.txt"), "w") as f:
        f.write(text)
    if not a.sixi_server:
        return
    with tempfile.TemporaryDirectory() as tmp:
        vocab = os.path.join(tmp, "vocab.gguf")
        subprocess.run([a.sixi_server, "--write-tiny", vocab], check=True, stdout=subprocess.DEVNULL)
        ids = subprocess.run([a.sixi_server, "--tokenize", vocab, "-", "--parse-special"], input=text.encode(),
                             check=True, stdout=subprocess.PIPE).stdout.split()
        hdr = subprocess.run([a.sixi_server, "--tokenize", vocab, "<|im_start|>assistant\n", "--parse-special"],
                             check=True, stdout=subprocess.PIPE).stdout.split()
    ids = [int(x) for x in ids]
    prompts = []
    for name, text, fixture in probe_prompts():
        chat = render([("user", text)]) + "<|im_start|>assistant\n"
        with tempfile.TemporaryDirectory() as tmp:
            vocab = os.path.join(tmp, "vocab.gguf")
            subprocess.run([a.sixi_server, "--write-tiny", vocab], check=True, stdout=subprocess.DEVNULL)
            p_ids = subprocess.run([a.sixi_server, "--tokenize", vocab, "-", "--parse-special"], input=chat.encode(),
                                   check=True, stdout=subprocess.PIPE).stdout.split()
        prompts.append({"name": name, "text": chat, "ids": [int(x) for x in p_ids], "fixture": fixture})
    with open(os.path.join(a.out, "prompts.json"), "w") as f:
        json.dump(prompts, f, indent=1)
    with open(os.path.join(a.out, "tokens.u16"), "wb") as f:
        f.write(struct.pack("<%dH" % len(ids), *ids))
    meta = {"examples": a.examples, "seed": a.seed, "tokens": len(ids), "vocab": 512, "endoftext": 509,
            "im_start": 510, "im_end": 511, "assistant_header": [int(x) for x in hdr]}
    with open(os.path.join(a.out, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
    print(json.dumps(meta), file=sys.stderr)


if __name__ == "__main__":
    main()
