# server_lib.sh — shell helpers shared by the sixi-server scripts (sourced, not run).
# GET a URL's body on stdout (Debian's python3, so no curl binary is needed); empty on error.
http_get() {
	/usr/bin/python3 -c "
import sys, urllib.request
try:
    sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode())
except Exception:
    pass" "$1"
}

# A scratch folder T (/tmp/PREFIX-XXXXXX) and the process id PID of one server, empty until
# the caller starts it: at exit the server is stopped by PID and T removed.
server_scratch() { # prefix
	T=$(mktemp -d "/tmp/$1-XXXXXX") || exit 1
	PID=""
	trap server_scratch_end EXIT
}
server_scratch_end() {
	[ -n "$PID" ] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null
	rm -rf "$T"
}
