#!/bin/sh
# test_docs_examples.sh MODE — the documentation cannot drift from the programs.
#   examples  README.md's blocks marked `<!-- checked -->` run in order, each as one
#             sh -e script, in a scratch folder laid out like the source tree (its
#             datasets/, protocols/, tests/ and harness/ linked in), with the built
#             programs first on PATH. The block marked `<!-- checked: server -->` is the
#             server they talk to: it is started first with its `--port 8080` replaced
#             by a free port on 127.0.0.1 (port and PID files), and stopped by PID at
#             the end; http://127.0.0.1:8080 in the other blocks becomes its URL. Any
#             block that exits non-zero fails the test.
#   options   every option a man page names in bold (\fB\-\-name\fR: this program's
#             options; other programs' flags are set in italics) is in one of its
#             program's --help texts, and every option of those texts is named in bold
#             in the page. sixi.7 may name any program's options. A few options that
#             the programs accept but whose --help does not list them yet are listed
#             below (HELP_GAPS); each is shown to be accepted by running it before
#             --help, which exits 0 only when every option before it parsed. Within each
#             section of a page the options of its .TP entries are in alphabetical order.
#   render    groff renders every page with all warnings on (-ww) and prints nothing
#             (skipped, exit 77, without groff).
# Bounded by timeout(1) per command as a hang guard only; no verdict depends on time.
set -u
MODE=${1:?usage: test_docs_examples.sh examples|options|render}
SRC="${SIXI_SOURCE_ROOT:-.}"
B="${SIXI_BUILD_ROOT:-build}"
MAN="$SRC/src/man"
PAGES="sixi-bench.1 sixi-eval.1 sixi-report.1 sixi-server.1 sixi.7"
for p in $PAGES; do
	[ -f "$MAN/$p" ] || { echo "FAIL: $MAN/$p is missing"; exit 1; }
done

# ---- render ------------------------------------------------------------------------
if [ "$MODE" = render ]; then
	command -v groff >/dev/null 2>&1 || { echo "SKIP: groff is not installed (Debian: groff-base)"; exit 77; }
	fail=0
	for p in $PAGES; do
		w=$(groff -man -Tutf8 -ww -z "$MAN/$p" 2>&1)
		if [ -n "$w" ]; then
			echo "FAIL: $p renders with warnings:"
			echo "$w"
			fail=1
		else
			echo "ok: $p renders without warnings"
		fi
	done
	exit $fail
fi

for prog in sixi-bench sixi-eval sixi-report sixi-server; do
	[ -x "$B/src/$prog" ] || { echo "SKIP: $B/src/$prog is not built"; exit 77; }
done
T=$(mktemp -d /tmp/sixi-docs-XXXXXX)
SPID=""
cleanup() {
	if [ -n "$SPID" ]; then
		kill "$SPID" 2>/dev/null
		wait "$SPID" 2>/dev/null
	fi
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# ---- options -----------------------------------------------------------------------
# Options accepted by the programs but not yet in their --help: "page option command..."
# (the command, with --help appended, must exit 0).
# None now: every option a page names is in its program's --help.
HELP_GAPS=''

if [ "$MODE" = options ]; then
	command -v groff >/dev/null 2>&1 || { echo "SKIP: groff is not installed (Debian: groff-base)"; exit 77; }
	PY=/usr/bin/python3
	[ -x "$PY" ] || PY=$(command -v python3) || { echo "SKIP: python3 is absent"; exit 77; }
	P="$B/src"
	# every help text of each program (usage printed on errors counts: some commands
	# have no --help of their own)
	{ "$P/sixi-bench" --help; "$P/sixi-bench" plan --help; } >"$T/sixi-bench.1.help" 2>&1
	{ "$P/sixi-eval" --help; "$P/sixi-eval" template render --help; "$P/sixi-eval" dataset --help
	  "$P/sixi-eval" gate --help; "$P/sixi-eval" import; "$P/sixi-eval" kl --help; } >"$T/sixi-eval.1.help" 2>&1
	{ "$P/sixi-report" --help; "$P/sixi-report" stats --help; "$P/sixi-report" export --help
	  "$P/sixi-report" kl --help; } >"$T/sixi-report.1.help" 2>&1
	{ "$P/sixi-server" --help; "$P/sixi-server" --tokenize; } >"$T/sixi-server.1.help" 2>&1
	cat "$T"/sixi-*.1.help >"$T/sixi.7.help"
	fail=0
	# the gaps really are accepted options, and the probe can tell an unknown one
	echo "$HELP_GAPS" | while read -r page opt cmd; do
		[ -n "$page" ] || continue
		# shellcheck disable=SC2086
		if timeout 60 "$P/"$cmd --help >/dev/null 2>&1; then
			echo "$page $opt"
		else
			echo "FAIL: '$cmd --help' did not exit 0: $opt is not accepted as documented" >&2
			echo "$page BROKEN"
		fi
	done >"$T/gaps"
	if timeout 60 "$P/sixi-bench" prefill --no-such-option 2 --help >/dev/null 2>&1; then
		echo "FAIL: the acceptance probe cannot tell an unknown option"
		fail=1
	fi
	grep -q BROKEN "$T/gaps" && fail=1
	# stats reads its options from an option table: an option of another test gets the
	# common wording of core/args and exit 2, nothing on stdout
	st=0
	"$P/sixi-report" stats welch --a 1,2 --b 1,2 --c 3 >"$T/stats.out" 2>"$T/stats.err" || st=$?
	if [ "$st" != 2 ] || [ -s "$T/stats.out" ] ||
		! grep -qF "unknown option '--c' for 'welch' (see sixi-report stats --help)" "$T/stats.err"; then
		echo "FAIL: 'sixi-report stats welch ... --c 3' gave exit $st and '$(cat "$T/stats.err")'"
		fail=1
	fi
	for p in $PAGES; do
		# bold runs in grotty's overstrike output are "c\bc" sequences
		groff -man -Tascii -P-c -rLL=2000n -rHY=0 "$MAN/$p" 2>/dev/null >"$T/$p.txt"
		"$PY" - "$T/$p.txt" "$T/$p.help" "$T/gaps" "$p" "$MAN/$p" <<'PY' || fail=1
import re, sys
txt, helptxt, gaps, page = sys.argv[1:5]
raw = open(txt, encoding="ascii", errors="replace").read()
bold, run = set(), []
i = 0
out = []
# keep bold characters, replace everything else by a space, so bold runs stand apart
while i < len(raw):
    if i + 2 < len(raw) and raw[i + 1] == "\b":
        out.append(raw[i + 2] if raw[i] == raw[i + 2] else " ")
        i += 3
        while i + 1 < len(raw) and raw[i] == "\b":  # repeated overstrikes
            i += 2
    else:
        out.append(" ")
        i += 1
bold = set(re.findall(r"(?<![\w-])--[a-z0-9][a-z0-9-]*", "".join(out)))
plain = re.sub(r".\b", "", raw)
helps = set(re.findall(r"(?<![\w-])--[a-z0-9][a-z0-9-]*", open(helptxt).read())) - {"--help"}
gap = {l.split()[1] for l in open(gaps) if l.split()[0] == page}
ok = True
if not bold:
    print(f"FAIL: {page}: no bold option found (is the page's markup intact?)")
    ok = False
for o in sorted(bold - helps - gap - {"--help"}):
    print(f"FAIL: {page} names {o}, which no --help of its program lists")
    ok = False
if page != "sixi.7":
    for o in sorted(helps - bold):
        print(f"FAIL: {page} does not document {o}, which --help lists")
        ok = False
# the structure others extend: within a section (.SH, .SS, or a paragraph break .PP)
# the options of consecutive .TP entries are in alphabetical order
src = open(sys.argv[5]).read().splitlines()
run, where = [], ""
for k, line in enumerate(src):
    if line.startswith((".SH", ".SS", ".PP")):
        run, where = [], line
        continue
    if line == ".TP" and k + 1 < len(src):
        m = re.match(r"\.(?:B|BI) \\-\\-([a-z0-9\\-]+)", src[k + 1])
        if m:
            name = m.group(1).replace("\\-", "-")
            if run and name < run[-1]:
                print(f"FAIL: {page}, {where}: --{name} comes after --{run[-1]}; keep options in alphabetical order")
                ok = False
            run.append(name)
print(f"{page}: {len(bold)} options named, {len(helps)} in --help: {'ok' if ok else 'drift'}")
sys.exit(0 if ok else 1)
PY
	done
	exit $fail
fi

# ---- examples ----------------------------------------------------------------------
[ "$MODE" = examples ] || { echo "unknown mode '$MODE' (examples, options, render)"; exit 2; }
README="$SRC/README.md"
# blocks as files: T/block.N (N in README order) and T/server (the server's command line)
awk -v dir="$T" '
	/^<!-- checked(: server)? -->$/ { mark = ($0 ~ /server/) ? "server" : "block"; next }
	mark != "" && /^```sh$/ { inblock = 1; n++; file = (mark == "server") ? dir "/server" : sprintf("%s/block.%02d", dir, n); next }
	inblock && /^```$/ { inblock = 0; mark = ""; next }
	inblock { print > file; next }
	{ if (!inblock && $0 !~ /^$/) mark = "" }
' "$README"
[ -s "$T/server" ] || { echo "FAIL: README.md has no block marked '<!-- checked: server -->'"; exit 1; }
ls "$T"/block.* >/dev/null 2>&1 || { echo "FAIL: README.md has no block marked '<!-- checked -->'"; exit 1; }
[ "$(grep -c . "$T/server")" = 1 ] || { echo "FAIL: the server block must be one command line"; exit 1; }
grep -q -- '--port 8080' "$T/server" || { echo "FAIL: the server block must say --port 8080"; exit 1; }

W="$T/work"
mkdir -p "$W"
for d in datasets protocols tests harness; do ln -s "$(cd "$SRC" && pwd)/$d" "$W/$d"; done
PATH="$(cd "$B/src" && pwd):$PATH"
export PATH
cd "$W" || exit 1
SERVER_CMD=$(sed "s|--port 8080|--host 127.0.0.1 --port 0 --port-file $T/port --pid-file $T/pid|" "$T/server")
echo "server: $SERVER_CMD"
eval "set -- $SERVER_CMD"
case "$1" in sixi-server) ;; *) echo "FAIL: the server block does not start sixi-server"; exit 1 ;; esac
"$@" 2>"$T/server.log" &
SPID=$!
i=0
while [ ! -s "$T/port" ] && [ $i -lt 600 ] && kill -0 "$SPID" 2>/dev/null; do sleep 0.1; i=$((i + 1)); done
[ -s "$T/port" ] || { echo "FAIL: the README's server did not start"; cat "$T/server.log"; exit 1; }
URL="http://127.0.0.1:$(cat "$T/port")"
fail=0
n=0
for f in "$T"/block.*; do
	n=$((n + 1))
	sed "s|http://127.0.0.1:8080|$URL|g" "$f" >"$f.sh"
	if grep -q 8080 "$f.sh"; then
		echo "FAIL: block $n names port 8080 other than as http://127.0.0.1:8080"
		fail=1
		continue
	fi
	echo "---- block $n:"
	cat "$f.sh"
	if timeout 600 sh -e "$f.sh" >"$f.out" 2>&1; then
		echo "ok: block $n"
	else
		echo "FAIL: block $n exited non-zero; its output:"
		cat "$f.out"
		fail=1
	fi
done
kill -0 "$SPID" 2>/dev/null || { echo "FAIL: the server died during the examples"; cat "$T/server.log"; fail=1; }
echo "$n checked blocks run, $([ $fail = 0 ] && echo all passed || echo some failed)"
exit $fail
