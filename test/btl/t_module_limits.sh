#!/usr/bin/env bash
# A BTL module's limits, seen through the out-of-tree example plugin
# (examples/btl_example), built against the source tree:
# - a module without put/get registers no put/get limits, so it starts without
#   the "default outside its own range" error about btl_<c>_put_limit/get_limit;
#   a module WITH put and a put limit of 0 still gets it;
# - px_perf --btl over a module whose btl_sendi takes messages only up to its
#   eager limit (32 KiB) and refuses larger ones for ever (allowed: docs/btl.md)
#   measures the sizes between the eager limit and btl_max_send_size (64 KiB)
#   through btl_alloc + btl_send instead of spinning.
. "$PX_SRC/test/lib/tap.sh"
B=$PX_BUILD
PXRUN=$B/tools/pxrun/pxrun
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
san=""
[ -n "${PX_TEST_SANITIZER:-}" ] && san="-fsanitize=address,undefined"
build() { # build DIR: the plugin from DIR/example.c
    cc -shared -fPIC -std=gnu11 -Wall -Wextra -Werror $san -I"$PX_SRC" -I"$B" \
        -o "$1/plexus_btl_example.so" "$1/example.c" -L"$B/.libs" -lplexus 2>"$1/cc.log"
}

mkdir -p "$T/plain"
cp "$PX_SRC/examples/btl_example/example.c" "$T/plain/"
build "$T/plain"
check "the example plugin builds" test -f "$T/plain/plexus_btl_example.so" || sed 's/^/# /' "$T/plain/cc.log"
check "the example leaves its put/get limits 0 (no put/get: nothing to set)" \
    eval '! grep -q "btl_put_limit\|btl_get_limit" "$T/plain/example.c"'
out=$(PX_MCA_mca_component_path_prepend=$T/plain "$B/tools/px_info/px_info" --param btl example --level 9 --parsable 2>&1)
check "px_info loads it (btl_example_eager_limit listed)" contains "$out" "btl_example_eager_limit:value:"
check "no error about its put/get limits (it has no put/get)" \
    eval '! grep -q "programming error\|btl_example_put_limit\|btl_example_get_limit" <<<"$out"'
out=$(PX_MCA_mca_component_path_prepend=$T/plain PX_MCA_btl=self,example timeout -s KILL 120 \
    "$PXRUN" -n 2 "$B/test/runtime/init_probe" 2>&1)
check "pxrun -n 2 with btl=self,example starts, rank 1 served by the example" \
    contains "$out" "transport to 1: example"
check "... and prints no error at start" eval '! grep -q "plexus: error" <<<"$out"'

# The same module offering put (flags send|put) with its put limit left 0.
mkdir -p "$T/put"
sed 's/btl_flags = PX_BTL_FLAGS_SEND;/btl_flags = PX_BTL_FLAGS_SEND | PX_BTL_FLAGS_PUT;/' \
    "$PX_SRC/examples/btl_example/example.c" >"$T/put/example.c"
check "a copy offering put is made (the sed matched)" \
    grep -q "PX_BTL_FLAGS_SEND | PX_BTL_FLAGS_PUT;" "$T/put/example.c"
build "$T/put"
out=$(PX_MCA_mca_component_path_prepend=$T/put "$B/tools/px_info/px_info" --param btl example --level 9 2>&1)
check "with put and a put limit of 0: the programming error names btl_example_put_limit" \
    contains "$out" "of variable btl_example_put_limit is outside its own range 4k.."
check "... and no get limit is asked for (no get)" eval '! grep -q "btl_example_get_limit" <<<"$out"'

# btl_sendi only up to the eager limit (32 KiB): larger sizes must go through
# btl_alloc + btl_send in px_perf --btl.
mkdir -p "$T/eager"
sed 's/header_size + payload_size > px_btl_example.frag_size)/header_size + payload_size > btl->btl_eager_limit)/' \
    "$PX_SRC/examples/btl_example/example.c" >"$T/eager/example.c"
check "a copy whose sendi stops at the eager limit is made (the sed matched)" \
    grep -q "payload_size > btl->btl_eager_limit)" "$T/eager/example.c"
build "$T/eager"
out=$(PX_MCA_mca_component_path_prepend=$T/eager PX_MCA_btl=self,example timeout -s KILL 120 \
    "$PXRUN" -n 2 --timeout 100 "$B/tools/px_perf/px_perf" --btl --sizes 8,32768,40000,65536,70000 --iters 200 2>&1)
rc=$?
check "px_perf --btl 8 B..70000 B over it ends (exit $rc; 124/137: it spun)" test "$rc" -eq 0 ||
    echo "$out" | sed 's/^/#   /' | tail -8
check "... times 8 B (sendi)" grep -qE '^ +8 +[0-9.]+$' <<<"$out"
check "... times 40000 B, above the eager limit (alloc + send)" grep -qE '^ +40000 +[0-9.]+$' <<<"$out"
check "... times 65536 B, btl_max_send_size" grep -qE '^ +65536 +[0-9.]+$' <<<"$out"
check "... skips 70000 B, above btl_max_send_size, saying so" \
    contains "$out" "# 70000 bytes skipped: above"
tap_done
