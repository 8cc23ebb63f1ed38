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
