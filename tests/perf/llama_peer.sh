# llama_peer.sh — the setup that server_vs_llama.sh and agents_vs_llama.sh share; sourced
# after they set B (the build folder) and WHICH (tiny, 100m or a GGUF file). Skips (77) without
# LLAMA_SERVER or the project's programs; makes the temporary folder T, removed at exit with
# the server whose process id is in PID; puts the model at MODEL: the embedded tiny model
# (sixi-server --write-tiny), a link to the given file, or the ~100M-parameter random model
# (perf_model --write-100m).
[ -n "${LLAMA_SERVER:-}" ] && [ -x "$LLAMA_SERVER" ] || { echo "SKIP: set LLAMA_SERVER to a llama-server binary"; exit 77; }
for p in "$B/src/sixi-server" "$B/src/sixi-bench" "$B/tests/perf_model"; do
	[ -x "$p" ] || { echo "SKIP: $p not built"; exit 77; }
done
PY=/usr/bin/python3
. "$(dirname "$0")/../integration/server_lib.sh"
server_scratch sixi-vs-llama
MODEL="$T/model.gguf"
if [ "$WHICH" = tiny ]; then
	"$B/src/sixi-server" --write-tiny "$MODEL" 2>/dev/null
elif [ -f "$WHICH" ]; then
	ln -s "$(realpath "$WHICH")" "$MODEL"
else
	"$B/tests/perf_model" --write-100m "$MODEL" >/dev/null
fi
[ -s "$MODEL" ] || { echo "could not write the $WHICH model"; exit 1; }
