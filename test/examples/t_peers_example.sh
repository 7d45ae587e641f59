#!/usr/bin/env bash
# examples/peers (README.md there): install Plexus into a staging root, build
# the example's server and client out of tree with its Makefile (the
# installed headers and plexus.pc only), start them separately (no
# launcher), kill the server in the middle of the client's rounds, start it
# again, and check the client saw the failure naming the server, retried the
# contact until the new server answered, and carried on to the end with
# every checksum good. One-sided too: each round the client reads the
# server's region (a batch of reads) and checks it against the server's
# checksum, writes a block back and notifies, and the server checks the
# block; after the kill the client's one-sided requests fail naming the
# server, and it imports the restarted server's key and carries on.
. "$PX_SRC/test/lib/tap.sh"
. "$PX_SRC/test/lib/example.sh"
tmp=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done; rm -rf "$tmp"' EXIT
# absent TEXT FILE...: no FILE holds TEXT
absent() { ! grep -qF -- "$1" "${@:2}"; }

example_build peers peer_server peer_client
example_secret
export LD_LIBRARY_PATH=$libdir
if timeout 60 "$PX_BUILD/test/peer/dyn_app" contact 2>&1 | grep -q "built without libsodium"; then
    skip "the example" "built without libsodium (install libsodium-dev, configure again)"
    tap_done
fi
c=$tmp/contact
# no timeout(1) wrappers: $! must be the program's pid (the test kills the
# server and looks for its pid); the client gives up by itself after 60 s
# without a server, the restarted server after one session
"$tmp/ex/peer_server" "$c" 0 >"$tmp/s1.out" 2>"$tmp/s1.err" </dev/null &
s1=$!
pids+=("$s1")
"$tmp/ex/peer_client" "$c" 600 2 >"$tmp/c.out" 2>"$tmp/c.err" </dev/null &
cl=$!
pids+=("$cl")
for _ in $(seq 1 1200); do
    grep -q "client: round 200" "$tmp/c.out" 2>/dev/null && break
    sleep 0.05
done
check "the client connected and exchanged 200 rounds with the first server" \
    grep -q "client: round 200" "$tmp/c.out"
kill -9 "$s1"
wait "$s1" 2>/dev/null
for _ in $(seq 1 200); do
    grep -q "lost the server" "$tmp/c.out" && break
    sleep 0.05
done
sleep 0.5
"$tmp/ex/peer_server" "$c" 1 >"$tmp/s2.out" 2>"$tmp/s2.err" </dev/null &
s2=$!
pids+=("$s2")
wait "$cl"
rc=$?
wait "$s2"
src=$?
check "the client finished (exit $rc) and the restarted server ended cleanly (exit $src)" \
    test "$rc" -eq 0 -a "$src" -eq 0
check "the client saw the server fail, naming it (pid $s1)" \
    contains "$(cat "$tmp/c.out")" "lost the server (pid $s1"
check "... and the library's message names it too" contains "$(cat "$tmp/c.err")" "pid $s1"
grep -h "pid $s1" "$tmp/c.err" | head -1 | cut -c1-300 | sed 's/^/# /'
check "the client retried until the restarted server (pid $s2) answered" \
    contains "$(cat "$tmp/c.out")" "connected to the server, pid $s2"
check "... and carried on: 600 rounds, every checksum good, one reconnect, every round's one-sided part checked" \
    contains "$(cat "$tmp/c.out")" "client: done: 600 rounds, 0 checksum errors, 1 reconnects; one-sided: 600 rounds checked"
# one-sided after the kill: a read that failed (when the kill came during one)
# or the flush the client makes when the messages noticed first: either way
# PX_ERR_PEER_FAILED's text and the server's pid
osf=$(grep -E "client: (round [0-9]+: one-sided .* failed|one-sided requests to the server fail too)" "$tmp/c.out")
printf '%s\n' "$osf" | head -2 | cut -c1-300 | sed 's/^/# /'
check "the client's one-sided requests to the killed server failed, naming it (pid $s1)" \
    contains "$osf" "pid $s1"
check "... with PX_ERR_PEER_FAILED's text" \
    grep -Eq "client: (round [0-9]+: one-sided .* failed|one-sided requests to the server fail too): peer process failed or disconnected" "$tmp/c.out"
check "the client released the dead server's remote (px_xfer_remote_release after px_disconnect)" \
    absent "px_xfer_remote_release:" "$tmp/c.out"
check "the restarted server served the rest of the session" \
    contains "$(cat "$tmp/s2.out")" "the client said bye"
check "... and checked every block the client wrote to its region, 0 errors" \
    grep -Eq "the client said bye after [1-9][0-9]* messages; one-sided: [1-9][0-9]* blocks checked, 0 errors" "$tmp/s2.out"
check "neither server saw a block that differs from what the client said it wrote" \
    absent "the client's block has checksum" "$tmp/s1.out" "$tmp/s2.out"
[ "$rc" = 0 ] || sed 's/^/# /' "$tmp/c.out" "$tmp/c.err" "$tmp/s2.out" "$tmp/s2.err" | tail -20
tap_done
