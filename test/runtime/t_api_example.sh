#!/usr/bin/env bash
# The example program of docs/api.md: alone (boot/singleton, btl/self) and
# under pxrun with 3 ranks (boot/pxrun, btl/shm between ranks).
. "$PX_SRC/test/lib/tap.sh"
ex=$PX_BUILD/test/runtime/api_example
pxrun=$PX_BUILD/tools/pxrun/pxrun

out=$("$ex" 2>&1); rc=$?
check "singleton: exits 0" test "$rc" -eq 0
check "singleton: the ring token comes back through self" contains "$out" "rank 0 got token 0 from rank 0 (via self)"
check "singleton: the wildcard receive reports source, tag and length" contains "$out" '"hello from rank 0" (source 0, tag 100, 18 bytes)'
check "singleton: truncation is reported and keeps 4 bytes" contains "$out" "truncated receive: message truncated: receive buffer too small, 4 bytes kept"

if [ -x "$pxrun" ]; then
    out=$(timeout 60 "$pxrun" -n 3 "$ex" </dev/null 2>&1); rc=$?
    check "pxrun -n 3: exits 0" test "$rc" -eq 0
    check "pxrun -n 3: rank 1 gets rank 0's token over shm" contains "$out" "rank 1 got token 0 from rank 0 (via shm)"
    check "pxrun -n 3: rank 0 gets rank 2's token" contains "$out" "rank 0 got token 2 from rank 2"
    for r in 0 1 2; do
        check "pxrun -n 3: rank 0 collected rank $r's message" contains "$out" "\"hello from rank $r\" (source $r, tag 10$r, 18 bytes)"
    done
    n=$(echo "$out" | grep -c "truncated receive: message truncated")
    check "pxrun -n 3: every rank saw its truncation" test "$n" -eq 3
else
    not_ok "pxrun not built at $pxrun"
fi
tap_done
