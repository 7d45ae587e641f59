#!/usr/bin/env bash
# Advice the docs and examples give a new user, checked against what works:
# - a command line in a page or an example that sets PKG_CONFIG_PATH puts it
#   before make (GNU make 4.3 does not pass `make PKG_CONFIG_PATH=...` to
#   $(shell pkg-config)); test/examples/t_out_of_tree.sh runs both forms;
# - examples and the component author's pages add a plugin folder with
#   mca_component_path_prepend, never by setting mca_component_path (which hides
#   the installed plugins: boot/pmix, btl/ofi, btl/verbs);
# - the btl_shm_flags value transfer.md and shm.md give to force the staged
#   path is taken without a warning, and px_perf --xfer reports the staged path
#   with it, for allocated and for registered memory.
. "$PX_SRC/test/lib/tap.sh"
B=$PX_BUILD
cd "$PX_SRC" || exit 1

bad=$(grep -nE '(^|[[:space:]:*#])make\b[^`]*PKG_CONFIG_PATH=' docs/*.md examples/*/* 2>/dev/null)
check "no page or example tells to run make PKG_CONFIG_PATH=... (${bad:-none})" test -z "$bad"

bad=$(grep -nE 'PX_MCA_mca_component_path=|--mca mca_component_path [^_]|-x PX_MCA_mca_component_path( |$)' \
    examples/*/* docs/writing-a-component.md docs/coll.md docs/px_btl_check.md docs/px_coll_check.md 2>/dev/null)
check "examples and the component author's pages use mca_component_path_prepend (${bad:-none})" test -z "$bad"

t=$(sed -n 's/.*`btl_shm_flags=\(0x[0-9a-fA-F]*\)`.*/\1/p' docs/transfer.md | head -1)
s=$(sed -n 's/.*`btl_shm_flags` can take either away: `\(0x[0-9a-fA-F]*\)`.*/\1/p' docs/shm.md | head -1)
check "transfer.md gives a btl_shm_flags value that forces staging (${t:-none found})" test -n "$t"
check "shm.md gives the same value (${s:-none found})" test -n "$t" -a "$s" = "$t"
for mem in alloc reg; do
    out=$(PX_MCA_btl_shm_flags=$t timeout -s KILL 120 "$B/tools/pxrun/pxrun" -n 2 \
        "$B/tools/px_perf/px_perf" --xfer --xfer-mem $mem --sizes 8 --iters 10 2>&1)
    check "btl_shm_flags=$t, $mem memory: px_perf --xfer takes the staged path" \
        contains "$out" "path stage:shm" || echo "$out" | head -3 | sed 's/^/#   /'
    check "... and no warning is printed" eval '! grep -q "warning" <<<"$out"' ||
        grep warning <<<"$out" | head -1 | sed 's/^/#   /'
done
# transfer.md, "The key's bytes": the header fields and the checksum as the
# page gives them, computed here from a key the library exported.
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cat >"$T/key.c" <<'APP'
#include <plexus.h>
#include <stdio.h>
int main(int argc, char **argv)
{
    if (px_init(&argc, &argv) != PX_SUCCESS) return 1;
    px_xfer_region_t *r = NULL;
    unsigned char key[PX_XFER_KEY_MAX];
    size_t len = 0;
    if (px_xfer_alloc(4096, &r) != PX_SUCCESS || px_xfer_key_export(r, key, sizeof key, &len) != PX_SUCCESS) return 1;
    fwrite(key, 1, len, stdout);
    px_xfer_free(&r);
    return px_finalize() != PX_SUCCESS;
}
APP
san=""
[ -n "${PX_TEST_SANITIZER:-}" ] && san="-fsanitize=address,undefined"
cc -std=gnu11 -Wall -Werror $san -I"$PX_SRC" -I"$B" -o "$T/key" "$T/key.c" -L"$B/.libs" -lplexus \
    -Wl,-rpath,"$B/.libs" 2>"$T/cc.log"
check "a program exporting a key builds" test -x "$T/key" || sed 's/^/#   /' "$T/cc.log"
"$T/key" >"$T/key.bin" 2>"$T/key.err"
basis=$(sed -n 's/.*starting from \([0-9]*\) .*/\1/p' docs/transfer.md | head -1)
out=$(python3 - "$T/key.bin" "${basis:-0}" <<'PY'
import struct, sys
k = open(sys.argv[1], "rb").read()
magic, ver, n, total, flags, cks, job, owner, zero, rid, addr, length = struct.unpack_from("<4sHHIIQQiIQQQ", k, 0)
h = int(sys.argv[2])
for b in k[:16] + bytes(8) + k[24:]:
    h = ((h ^ b) * 1099511628211) % (1 << 64)
print("magic=%s version=%d total_ok=%d owner=%d reserved=%d length=%d checksum_ok=%d" %
      (magic.decode(), ver, total == len(k), owner, zero, length, h == cks))
PY
)
check "the exported key reads as transfer.md says (offset basis ${basis:-not found})" \
    contains "$out" "magic=PXK1 version=1 total_ok=1 owner=0 reserved=0 length=4096 checksum_ok=1"
# api.md, coll.md and transfer.md on zero lengths, NULL buffers and the largest
# collective count: what the pages say, run on 2 ranks.
cat >"$T/zero.c" <<'APP'
#include <plexus.h>
#include <stdint.h>
#include <stdio.h>
int main(int argc, char **argv)
{
    if (px_init(&argc, &argv) != PX_SUCCESS) return 1;
    int me = px_rank(), n = px_size();
    px_group_t *w = px_group_world();
    px_request_t *rq = NULL;
    px_status_t st;
    int a = px_irecv(NULL, 0, (me + n - 1) % n, 5, &rq);
    int b = px_send(NULL, 0, (me + 1) % n, 5);
    int c = px_wait(&rq, &st);
    printf("rank %d: p2p NULL 0: %d %d %d length %zu\n", me, a, b, c, st.length);
    a = px_allreduce(NULL, NULL, 0, PX_DOUBLE, PX_SUM, w);
    b = px_alltoall(NULL, NULL, 0, PX_INT32, w);
    c = px_bcast(NULL, 0, PX_INT8, 0, w);
    printf("rank %d: coll count 0 NULL: %d %d %d\n", me, a, b, c);
    printf("rank %d: count 0, band on double: %s\n", me,
           px_allreduce(NULL, NULL, 0, PX_DOUBLE, PX_BAND, w) == PX_SUCCESS ? "accepted" : "refused");
    printf("rank %d: NULL, count 1: %s\n", me,
           px_allreduce(NULL, NULL, 1, PX_DOUBLE, PX_SUM, w) == PX_SUCCESS ? "accepted" : "refused");
    double d = 0;
    size_t big = SIZE_MAX / 8 / (size_t)n + 1;
    printf("rank %d: count SIZE_MAX/8/size + 1: %s\n", me,
           px_allreduce(&d, &d, big, PX_DOUBLE, PX_SUM, w) == PX_SUCCESS ? "accepted" : "refused");
    px_xfer_region_t *r = NULL;
    px_xfer_remote_t *rm = NULL;
    px_xfer_batch_t *bt = NULL;
    unsigned char key[PX_XFER_KEY_MAX];
    size_t kl = 0;
    px_xfer_alloc(4096, &r);
    px_xfer_key_export(r, key, sizeof key, &kl);
    px_xfer_key_import(me, key, kl, &rm);
    px_xfer_batch_alloc(2, &bt);
    px_xfer_request_t q[2] = {{PX_XFER_WRITE, r, 4096, rm, 4096, 0, "nosuch"},
                              {PX_XFER_READ, r, 0, rm, 4097, 0, NULL}};
    a = px_xfer_batch_submit(bt, q, 2, NULL);
    b = px_xfer_batch_submit(bt, NULL, 0, NULL);
    px_xfer_status_t s0, s1;
    px_xfer_batch_test(bt, 0, &s0);
    px_xfer_batch_test(bt, 1, &s1);
    printf("rank %d: xfer length 0: submit %d %d, at the end: %d transport \"%s\", past the end: %s\n", me,
           a, b, s0.error, s0.transport ? s0.transport : "?", s1.error == PX_ERR_VALUE_OUT_OF_BOUNDS ? "refused" : "accepted");
    printf("rank %d: notify NULL 0: %d\n", me, px_xfer_notify(me, NULL, 0));
    px_xfer_batch_free(&bt);
    px_xfer_remote_release(&rm);
    px_xfer_free(&r);
    return px_finalize() != PX_SUCCESS;
}
APP
cc -std=gnu11 -Wall -Werror $san -I"$PX_SRC" -I"$B" -o "$T/zero" "$T/zero.c" -L"$B/.libs" -lplexus \
    -Wl,-rpath,"$B/.libs" 2>"$T/cc.log"
check "the zero-length program builds" test -x "$T/zero" || sed 's/^/#   /' "$T/cc.log"
out=$(timeout -s KILL 120 "$B/tools/pxrun/pxrun" -n 2 "$T/zero" 2>&1)
for r in 0 1; do
    check "rank $r: px_send/px_irecv of 0 bytes with NULL buffers (api.md)" contains "$out" "rank $r: p2p NULL 0: 0 0 0 length 0"
    check "rank $r: collectives of count 0 with NULL buffers succeed (coll.md)" contains "$out" "rank $r: coll count 0 NULL: 0 0 0"
    check "rank $r: count 0 still checks the reduction" contains "$out" "rank $r: count 0, band on double: refused"
    check "rank $r: a NULL buffer with count 1 is refused" contains "$out" "rank $r: NULL, count 1: refused"
    check "rank $r: count x 8 x size beyond SIZE_MAX is refused" contains "$out" "rank $r: count SIZE_MAX/8/size + 1: refused"
    check "rank $r: a 0-byte transfer at the region's end succeeds at once, no transport (transfer.md)" \
        contains "$out" "rank $r: xfer length 0: submit 0 0, at the end: 0 transport \"none\", past the end: refused"
    check "rank $r: an empty notification is sent" contains "$out" "rank $r: notify NULL 0: 0"
done
check "the refusals say why" contains "$out" "count 1152921504606846976 of double is too large"
tap_done
