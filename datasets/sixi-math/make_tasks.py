#!/usr/bin/python3
# make_tasks.py — writes datasets/sixi-math/tasks.jsonl from the problems below
# (all written for sixi).
#
#   /usr/bin/python3 datasets/sixi-math/make_tasks.py
#
# Each problem: id, difficulty, question, worked solution and the answer as a
# Python expression over Fraction (F), evaluated here, independently of the
# solution text; the solution's stated result must equal it. The answer is an
# integer or a fraction in lowest terms; the numeric grader reads "#### 7/3"
# as 7 divided by 3 and compares exactly (tolerance 0).
import json
import os
import re
from fractions import Fraction as F
from math import comb, factorial, gcd  # noqa: F401 - used by answer expressions

HERE = os.path.dirname(os.path.abspath(__file__))

SUFFIX = ("\n\nSolve it step by step, then end your reply with a line '#### N' where N is the exact "
          "answer: an integer, or a fraction a/b in lowest terms.")

P = [
 ("bakery-trays", "easy", "A bakery bakes 14 trays of rolls with 24 rolls on each tray. It sells 289 rolls and gives "
  "away 17. How many rolls are left?",
  "14 * 24 = 336 rolls. 336 - 289 - 17 = 30.", "14*24 - 289 - 17"),
 ("train-distance", "easy", "A train travels at 84 km per hour for 2.5 hours and then at 60 km per hour for 45 "
  "minutes. How many kilometres does it travel in total?",
  "84 * 2.5 = 210 km; 60 * 0.75 = 45 km; 210 + 45 = 255.", "84*F(5,2) + 60*F(3,4)"),
 ("discount-price", "easy", "A jacket costs 80 euros. It is discounted by 25 %, and then a further 10 % is taken off "
  "the discounted price. What is the final price in euros?",
  "80 * 0.75 = 60; 60 * 0.9 = 54.", "80*F(3,4)*F(9,10)"),
 ("book-pages", "easy", "Lena reads 18 pages on Monday, twice as many on Tuesday, and 7 fewer than Tuesday on "
  "Wednesday. Her book has 150 pages. How many pages are left?",
  "Tuesday 36, Wednesday 29; read 18 + 36 + 29 = 83; left 150 - 83 = 67.", "150 - (18 + 36 + 29)"),
 ("pizza-fraction", "easy", "Tom eats 1/3 of a pizza and Ana eats 1/4 of the same pizza. What fraction of the pizza "
  "is left?",
  "1/3 + 1/4 = 7/12 eaten; 1 - 7/12 = 5/12.", "1 - F(1,3) - F(1,4)"),
 ("garden-fence", "easy", "A rectangular garden is 24 m long and 18 m wide. Fence posts stand at every corner and "
  "every 2 m along the sides. How many posts are there?",
  "The perimeter is 2 * (24 + 18) = 84 m; on a closed loop there is one post per 2 m: 84 / 2 = 42.", "84 // 2"),
 ("savings-weeks", "easy", "Maya has 45 dollars and saves 12 dollars each week. How many weeks until she first has "
  "at least 200 dollars?",
  "She needs 155 more; 12 weeks give 45 + 144 = 189, too little, and 45 + 156 = 201 is enough: 13.", "13"),
 ("paint-cans", "easy", "One can of paint covers 9 square metres. A wall is 6 m wide and 2.5 m high, with a door of "
  "2 m by 1 m. How many cans must be bought to paint the wall twice?",
  "Area 6 * 2.5 - 2 = 13 m^2; twice: 26 m^2; 26 / 9 = 2.9, so 3 cans.", "3"),
 ("average-score", "easy", "The average of five test scores is 82. Four of them are 75, 90, 88 and 79. What is the "
  "fifth score?",
  "The total is 5 * 82 = 410; 410 - (75 + 90 + 88 + 79) = 410 - 332 = 78.", "5*82 - (75+90+88+79)"),
 ("ages-sum", "easy", "A mother is 4 times as old as her son. In 20 years she will be twice as old as he will be. How "
  "old is the son now?",
  "4s + 20 = 2(s + 20), so 4s + 20 = 2s + 40 and s = 10.", "10"),
 ("work-rate", "medium", "A pipe fills a tank in 6 hours and a second pipe fills it in 9 hours. A drain empties the "
  "full tank in 12 hours. With both pipes and the drain open, how many hours does it take to fill the empty tank?",
  "Rate 1/6 + 1/9 - 1/12 = 6/36 + 4/36 - 3/36 = 7/36 tank per hour; time 36/7 hours.",
  "1 / (F(1,6) + F(1,9) - F(1,12))"),
 ("two-dice-sum", "medium", "Two fair six-sided dice are rolled. What is the probability that the sum is 8?",
  "Pairs (2,6), (3,5), (4,4), (5,3), (6,2): 5 of the 36 outcomes, 5/36.", "F(5,36)"),
 ("coin-heads", "medium", "A fair coin is tossed 6 times. What is the probability of exactly 2 heads?",
  "C(6,2) = 15 outcomes of 64: 15/64.", "F(comb(6,2), 64)"),
 ("committee", "medium", "A club of 7 women and 5 men chooses a committee of 4 with at least one man. How many "
  "committees are possible?",
  "All committees C(12,4) = 495, minus all-women C(7,4) = 35: 460.", "comb(12,4) - comb(7,4)"),
 ("handshakes", "easy", "At a meeting, each of 18 people shakes hands once with every other person. How many "
  "handshakes are there?",
  "C(18,2) = 18 * 17 / 2 = 153.", "comb(18,2)"),
 ("mixture-salt", "medium", "How many litres of a 30 % salt solution must be added to 20 litres of a 10 % salt "
  "solution to get a 25 % solution?",
  "0.3x + 2 = 0.25(x + 20) = 0.25x + 5, so 0.05x = 3 and x = 60.", "60"),
 ("consecutive-sum", "easy", "The sum of three consecutive even integers is 138. What is the largest of them?",
  "n + (n + 2) + (n + 4) = 3n + 6 = 138, n = 44; the largest is 48.", "48"),
 ("gcd-tiles", "medium", "A floor of 360 cm by 264 cm is covered with equal square tiles, as large as possible, with "
  "no cutting. How many tiles are needed?",
  "The side is gcd(360, 264) = 24 cm; 15 * 11 = 165 tiles.", "(360//gcd(360,264)) * (264//gcd(360,264))"),
 ("lcm-buses", "easy", "Bus A leaves the station every 12 minutes and bus B every 18 minutes. Both leave at 8:00. "
  "How many minutes after 8:00 do they next leave together?",
  "lcm(12, 18) = 36.", "36"),
 ("digits-count", "medium", "How many digits are used to write all the page numbers of a book from 1 to 250?",
  "9 one-digit + 90 * 2 + 151 * 3 = 9 + 180 + 453 = 642.", "9 + 90*2 + 151*3"),
 ("speed-round-trip", "medium", "A cyclist rides 30 km to a town at 15 km/h and returns the same way at 10 km/h. What "
  "is the average speed for the whole trip in km/h?",
  "Times 2 h and 3 h; 60 km in 5 h: 12 km/h.", "F(60, 5)"),
 ("interest-simple", "easy", "A deposit of 2400 dollars earns simple interest of 3.5 % a year. How many dollars of "
  "interest does it earn in 4 years?",
  "2400 * 0.035 * 4 = 336.", "2400 * F(35,1000) * 4"),
 ("compound-interest", "medium", "A deposit of 10000 dollars earns 10 % interest, compounded yearly. What is it worth "
  "after 3 years, in dollars?",
  "10000 * 1.1^3 = 13310.", "10000 * F(11,10)**3"),
 ("triangle-area", "easy", "A right triangle has legs of 9 cm and 12 cm. What is its perimeter in cm?",
  "The hypotenuse is sqrt(81 + 144) = 15; perimeter 9 + 12 + 15 = 36.", "9 + 12 + 15"),
 ("circle-chords", "medium", "Ten points lie on a circle. How many triangles have all three corners among these "
  "points?",
  "C(10,3) = 120.", "comb(10,3)"),
 ("marbles-prob", "medium", "A bag holds 4 red and 6 blue marbles. Two are drawn without replacement. What is the "
  "probability that both are red?",
  "4/10 * 3/9 = 12/90 = 2/15.", "F(4,10)*F(3,9)"),
 ("arith-series", "easy", "What is the sum of all multiples of 7 between 1 and 300?",
  "7 * (1 + ... + 42) = 7 * 903 = 6321.", "sum(range(7, 301, 7))"),
 ("geometric-bounce", "medium", "A ball is dropped from 16 m and after each bounce rises to half of the height it "
  "fell from. How many metres has it travelled when it hits the ground for the fourth time?",
  "Down 16, up and down 8 + 8, 4 + 4, 2 + 2: 16 + 16 + 8 + 4 = 44.", "16 + 2*(8+4+2)"),
 ("clock-angle", "medium", "What is the smaller angle, in degrees, between the hour and minute hands of a clock at "
  "3:40?",
  "Minute hand 240 degrees; hour hand 90 + 40 * 0.5 = 110; difference 130.", "abs(240 - (90 + F(40,2)))"),
 ("workers-days", "medium", "6 workers build a wall in 10 days. After 4 days, 3 more workers join. How many days does "
  "the whole job take?",
  "The job is 60 worker-days; after 4 days 24 are done, 36 remain for 9 workers: 4 days; total 8.", "4 + F(60-24, 9)"),
 ("recipe-scale", "easy", "A recipe for 4 people uses 3/4 cup of sugar. How many cups of sugar are needed for 10 "
  "people?",
  "3/4 * 10/4 = 30/16 = 15/8.", "F(3,4)*F(10,4)"),
 ("profit-percent", "medium", "A shop buys a lamp for 60 dollars and marks it up by 50 %. It then sells it at a 20 % "
  "discount off the marked price. What is the profit as a percentage of the cost?",
  "Marked 90, sold 72, profit 12 of 60: 20 %.", "F(60*F(3,2)*F(4,5) - 60, 60) * 100"),
 ("remainder-power", "hard", "What is the remainder when 7^2024 is divided by 10?",
  "Last digits of powers of 7 cycle 7, 9, 3, 1 with period 4; 2024 is divisible by 4, so the digit is 1.",
  "pow(7, 2024, 10)"),
 ("divisors-count", "medium", "How many positive divisors does 720 have?",
  "720 = 2^4 * 3^2 * 5; (4+1)(2+1)(1+1) = 30.", "sum(1 for d in range(1, 721) if 720 % d == 0)"),
 ("trailing-zeros", "medium", "How many zeros are at the end of 125! (125 factorial)?",
  "125/5 + 125/25 + 125/125 = 25 + 5 + 1 = 31.", "31"),
 ("stairs-ways", "medium", "A child climbs a staircase of 10 steps, taking 1 or 2 steps at a time. In how many "
  "different ways can the child reach the top?",
  "Ways follow the Fibonacci numbers: 1, 2, 3, 5, 8, 13, 21, 34, 55, 89 for 1..10 steps: 89.", "89"),
 ("grid-paths", "medium", "How many shortest paths along grid lines lead from one corner of a 5 by 3 grid of unit "
  "squares to the opposite corner?",
  "8 moves, 5 of them one way: C(8,3) = 56.", "comb(8,3)"),
 ("arrangements-letters", "medium", "How many different arrangements of the letters of the word BANANA are there?",
  "6! / (3! * 2!) = 720 / 12 = 60.", "factorial(6) // (factorial(3)*factorial(2))"),
 ("expected-die", "medium", "A fair die is rolled; you win the number shown in dollars if it is even and lose 2 "
  "dollars if it is odd. What is the expected gain in dollars?",
  "(2 + 4 + 6)/6 - 3 * 2/6 = 2 - 1 = 1.", "F(2+4+6, 6) - F(3*2, 6)"),
 ("harmonic-mean", "medium", "What is 1/2 + 1/3 + 1/4 + 1/5 + 1/6?",
  "Over 60: 30 + 20 + 15 + 12 + 10 = 87/60 = 29/20.", "sum(F(1,k) for k in range(2,7))"),
 ("telescoping", "hard", "What is the sum 1/(1*2) + 1/(2*3) + ... + 1/(19*20)?",
  "Each term is 1/k - 1/(k+1); the sum telescopes to 1 - 1/20 = 19/20.", "sum(F(1, k*(k+1)) for k in range(1, 20))"),
 ("sum-squares", "medium", "What is 1^2 + 2^2 + ... + 20^2?",
  "n(n+1)(2n+1)/6 = 20 * 21 * 41 / 6 = 2870.", "sum(k*k for k in range(1,21))"),
 ("inclusion-exclusion", "medium", "How many integers from 1 to 1000 are divisible by 3 or 5 but not by 7?",
  "Divisible by 3 or 5: 333 + 200 - 66 = 467. Of those divisible by 7 too: by 21: 47, by 35: 28, by 105: 9; "
  "47 + 28 - 9 = 66. 467 - 66 = 401.", "sum(1 for k in range(1,1001) if (k%3==0 or k%5==0) and k%7)"),
 ("chickens-cows", "easy", "A farm has chickens and cows, 50 heads and 140 legs in all. How many cows are there?",
  "c + h = 50, 4c + 2h = 140; 2c = 40, c = 20.", "20"),
 ("ratio-split", "easy", "240 euros are shared among three friends in the ratio 3 : 4 : 5. How many euros does the "
  "largest share hold?",
  "12 parts of 20; 5 * 20 = 100.", "240 * F(5,12)"),
 ("unit-conversion", "easy", "A car uses 6.5 litres of fuel per 100 km. How many litres does it use on a trip of "
  "340 km?",
  "340 / 100 * 6.5 = 22.1.", "F(340,100) * F(13,2)"),
 ("cube-paint", "hard", "A 5 x 5 x 5 cube is painted on the outside and cut into 125 unit cubes. How many unit cubes "
  "have exactly two painted faces?",
  "Along each of the 12 edges, 5 - 2 = 3 cubes: 36.", "12*3"),
 ("prob-at-least-one", "medium", "Three independent events happen with probabilities 1/2, 1/3 and 1/4. What is the "
  "probability that at least one happens?",
  "None happens: 1/2 * 2/3 * 3/4 = 1/4; at least one: 3/4.", "1 - F(1,2)*F(2,3)*F(3,4)"),
 ("birthday-small", "hard", "Four people each pick a day of the week at random, independently. What is the "
  "probability that all four pick different days?",
  "7 * 6 * 5 * 4 / 7^4 = 840 / 2401 = 120/343.", "F(7*6*5*4, 7**4)"),
 ("quadratic-roots", "medium", "The equation x^2 - 7x + k = 0 has one root equal to 3. What is the other root times "
  "k?",
  "The roots sum to 7, so the other is 4, and k = 3 * 4 = 12; 4 * 12 = 48.", "4*12"),
 ("linear-system", "medium", "If 3x + 2y = 19 and x - y = -2, what is x * y?",
  "x = y - 2; 3y - 6 + 2y = 19, y = 5, x = 3; x * y = 15.", "15"),
 ("percent-change", "medium", "A price rises by 20 % and then falls by 20 %. The final price is what fraction of the "
  "original price?",
  "1.2 * 0.8 = 0.96 = 24/25.", "F(6,5)*F(4,5)"),
 ("sequence-term", "easy", "An arithmetic sequence starts 7, 11, 15, ... What is its 50th term?",
  "7 + 49 * 4 = 203.", "7 + 49*4"),
 ("cards-prob", "hard", "Two cards are drawn without replacement from a standard 52-card deck. What is the "
  "probability that they are of the same suit?",
  "Whatever the first, 12 of the remaining 51 match its suit: 12/51 = 4/17.", "F(12,51)"),
 ("modular-day", "medium", "Today is Wednesday. What day of the week is it 1000 days from now? Answer with the number "
  "of the day, Monday = 1 through Sunday = 7.",
  "1000 = 142 * 7 + 6; six days after Wednesday is Tuesday: 2.", "(3 - 1 + 1000) % 7 + 1"),
 ("shares-tax", "medium", "Anna earns 3600 euros a month. She pays 22 % tax on the part above 1000 euros and none "
  "below. How many euros does she keep each month?",
  "Tax 0.22 * 2600 = 572; 3600 - 572 = 3028.", "3600 - F(22,100)*2600"),
 ("tank-leak", "medium", "A tank holds 500 litres and is full. Water leaks out at 3 litres per minute while a tap "
  "adds 1.25 litres per minute. After how many minutes is it 3/5 full?",
  "It must lose 200 litres at 1.75 litres per minute: 200 / 1.75 = 800/7 minutes.", "F(200) / F(7,4)"),
 ("lattice-points", "hard", "How many points with integer coordinates (x, y) satisfy x^2 + y^2 <= 10?",
  "Count by x: x = 0: y from -3 to 3, 7; x = +-1: 7 each; x = +-2: y^2 <= 6, 5 each; x = +-3: y^2 <= 1, 3 each. "
  "7 + 14 + 10 + 6 = 37.", "sum(1 for x in range(-4,5) for y in range(-4,5) if x*x+y*y <= 10)"),
 ("sum-digits", "medium", "What is the sum of the digits of all the integers from 1 to 99?",
  "Each digit 0-9 appears 10 times in the units place and 10 times in the tens place (tens 1-9): "
  "45 * 10 + 45 * 10 = 900.", "sum(sum(map(int, str(k))) for k in range(1,100))"),
 ("dice-max", "hard", "Two fair dice are rolled. What is the expected value of the larger of the two numbers?",
  "P(max = k) = (2k - 1)/36; sum k(2k - 1)/36 = (1 + 6 + 15 + 28 + 45 + 66)/36 = 161/36.",
  "F(sum(k*(2*k-1) for k in range(1,7)), 36)"),
 ("fraction-of-remaining", "easy", "Sam spends 2/5 of his money on a game and then 1/3 of what remains on a book. "
  "He has 24 dollars left. How many dollars did he have at first?",
  "After both: x * 3/5 * 2/3 = 2x/5 = 24, so x = 60.", "24 / (F(3,5)*F(2,3))"),
 ("hexagon-diagonals", "easy", "How many diagonals does a convex polygon with 15 sides have?",
  "15 * (15 - 3) / 2 = 90.", "15*12//2"),
 ("trapezoid-area", "easy", "A trapezoid has parallel sides of 7 cm and 13 cm and a height of 5 cm. What is its "
  "area in square cm?",
  "(7 + 13) / 2 * 5 = 50.", "F(7+13, 2)*5"),
]


def main():
    out = []
    ids = set()
    bad = False
    for pid, diff, q, sol, expr in P:
        ans = F(eval(expr))
        text = str(ans.numerator) if ans.denominator == 1 else "%d/%d" % (ans.numerator, ans.denominator)
        # the worked solution must state the answer (as a/b, an integer or an exact decimal)
        tail = re.findall(r"-?\d+(?:\.\d+)?(?:/\d+)?", sol)
        stated = F(tail[-1]) if tail else None
        if stated != ans:
            print("%s: the solution ends with %s but the answer is %s" % (pid, tail[-1:], text)); bad = True
        tid = "sixi-math/" + pid
        if tid in ids:
            raise SystemExit("duplicate id " + tid)
        ids.add(tid)
        out.append({"id": tid, "grader": "numeric", "answer": float(ans), "tolerance": 0,
                    "prompt": q + SUFFIX, "reference": sol + "\n#### " + text,
                    "metadata": {"difficulty": diff, "answer_exact": text, "source": "sixi"}})
    if bad:
        raise SystemExit("worked solutions disagree with the answers")
    with open(os.path.join(HERE, "tasks.jsonl"), "w") as f:
        for t in out:
            f.write(json.dumps(t, sort_keys=True) + "\n")
    n = {}
    for _, d, *_ in P:
        n[d] = n.get(d, 0) + 1
    print("%d problems (%s), %d with a fractional answer" % (
        len(out), ", ".join("%s %d" % kv for kv in sorted(n.items())),
        sum(1 for t in out if "/" in t["metadata"]["answer_exact"])))


main()
