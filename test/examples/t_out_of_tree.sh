#!/usr/bin/env bash
# A component author's path: install Plexus, build examples/btl_example out of
# tree with nothing but the installed headers and plexus.pc, and check that
# the repository loads it (px_info shows it and its variable) and that it
# works as a transport: the messaging layer runs over btl=self,example.
. "$PX_SRC/test/lib/tap.sh"
. "$PX_SRC/test/lib/install.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
dest=$tmp/root

px_staged_install "$dest" "$tmp/install.log"
check "make install into a staging root" test $? -eq 0
pc=$(find "$dest" -name plexus.pc | head -1)
check "plexus.pc is installed" test -n "$pc"
export PKG_CONFIG_PATH=$(dirname "$pc") PKG_CONFIG_SYSROOT_DIR=$dest
cflags=$(pkg-config --cflags plexus)
check "pkg-config --cflags plexus points into the installed include dir" \
    contains "$cflags" "$dest"

# Every installed header compiles on its own (nothing missing from the install).
bad=""
while IFS= read -r h; do
    rel=${h#*/include/plexus/}
    printf '#include <%s>\nint px_dummy;\n' "$rel" >"$tmp/h.c"
    cc -std=gnu11 -Wall -Wextra -Werror -fsyntax-only $cflags "$tmp/h.c" 2>>"$tmp/headers.log" || bad="$bad $rel"
done < <(find "$dest" -path '*include/plexus/*' -name '*.h')
check "every installed header compiles alone (failed:${bad:- none})" test -z "$bad"

# An application builds and links against the install with pkg-config alone.
cat >"$tmp/app.c" <<'APP'
#include <plexus.h>
#include <stdio.h>
int main(int argc, char **argv)
{
    if (px_init(&argc, &argv) != PX_SUCCESS) return 1;
    int v = 42, r = 0;
    px_send(&v, sizeof v, px_rank(), 7);
    px_recv(&r, sizeof r, PX_ANY_SOURCE, 7, NULL);
    printf("rank %d of %d got %d\n", px_rank(), px_size(), r);
    return px_finalize() != PX_SUCCESS;
}
APP
# In the sanitizer build the library needs the sanitizer runtime linked first.
san=""
[ -n "${PX_TEST_SANITIZER:-}" ] && san="-fsanitize=address,undefined"
cc -std=gnu11 -Wall -Werror $san -o "$tmp/app" "$tmp/app.c" $(pkg-config --cflags --libs plexus) 2>"$tmp/app.log"
check "an application compiles and links with pkg-config --cflags --libs plexus" test -x "$tmp/app"
# plexus.pc sits in <libdir>/pkgconfig (pkgconf prefixes the sysroot to
# --variable values, so derive the staged libdir from the file instead).
libdir=$(cd "$(dirname "$pc")/.." && pwd)
out=$(LD_LIBRARY_PATH=$libdir "$tmp/app" 2>&1)
check "the installed library runs it: a message to itself arrives" contains "$out" "rank 0 of 1 got 42"

# <plexus.h> alone gives the transfer engine too (runtime/plexus_xfer.h): a
# program including nothing else uses px_xfer_* calls, warnings as errors.
cat >"$tmp/xfer.c" <<'APP'
#include <plexus.h>
#include <stdio.h>
int main(int argc, char **argv)
{
    if (px_init(&argc, &argv) != PX_SUCCESS) return 1;
    px_xfer_region_t *r = NULL;
    unsigned char key[PX_XFER_KEY_MAX];
    size_t klen = 0;
    int rc = px_xfer_alloc(4096, &r);
    if (rc == PX_SUCCESS) rc = px_xfer_key_export(r, key, sizeof key, &klen);
    if (r) px_xfer_free(&r);
    printf("xfer through <plexus.h>: %s, key of %zu bytes\n", px_strerror(rc), klen);
    return (px_finalize() != PX_SUCCESS) || rc != PX_SUCCESS;
}
APP
cc -std=gnu11 -Wall -Wextra -Werror $san -o "$tmp/xfer" "$tmp/xfer.c" $(pkg-config --cflags --libs plexus) 2>"$tmp/xfer.log"
check "a program including only <plexus.h> compiles px_xfer_* calls against the install" \
    test -x "$tmp/xfer" || sed 's/^/#   /' "$tmp/xfer.log" | head -5
out=$(LD_LIBRARY_PATH=$libdir "$tmp/xfer" 2>&1)
check "... and runs: a region allocated and its key exported" contains "$out" "xfer through <plexus.h>: success"

# The example Makefiles: the documented form (PKG_CONFIG_PATH in make's
# environment) and `make PKG_CONFIG_PATH=...`, which GNU make 4.3 does not
# pass to $(shell pkg-config) by itself; without either, a clear error.
for form in env cmdline none; do
    rm -rf "$tmp/mk" && cp -r "$PX_SRC/examples/btl_example" "$tmp/mk"
    case $form in
    env) env PKG_CONFIG_PATH="$PKG_CONFIG_PATH" make -C "$tmp/mk" >"$tmp/mk.log" 2>&1 ;;
    cmdline) env -u PKG_CONFIG_PATH make -C "$tmp/mk" PKG_CONFIG_PATH="$PKG_CONFIG_PATH" >"$tmp/mk.log" 2>&1 ;;
    none) env -u PKG_CONFIG_PATH make -C "$tmp/mk" >"$tmp/mk.log" 2>&1 ;;
    esac
    if [ $form = none ]; then
        check "examples/btl_example/Makefile without PKG_CONFIG_PATH: fails saying what to set" \
            contains "$(cat "$tmp/mk.log")" "run PKG_CONFIG_PATH=<prefix>/lib/pkgconfig make"
    else
        check "examples/btl_example/Makefile, PKG_CONFIG_PATH given ($form): builds with the installed headers" \
            test -f "$tmp/mk/plexus_btl_example.so" || sed 's/^/#   /' "$tmp/mk.log" | tail -3
    fi
done
rm -rf "$tmp/mk" && cp -r "$PX_SRC/examples/coll_example" "$tmp/mk"
env -u PKG_CONFIG_PATH make -C "$tmp/mk" PKG_CONFIG_PATH="$PKG_CONFIG_PATH" >"$tmp/mk.log" 2>&1
check "examples/coll_example/Makefile with make PKG_CONFIG_PATH=...: builds" test -f "$tmp/mk/plexus_coll_chain.so"

cp -r "$PX_SRC/examples/btl_example" "$tmp/src"
make -C "$tmp/src" CFLAGS="-O2 -g -Wall -Wextra -Werror" >"$tmp/build.log" 2>&1
check "the example component builds out of tree against plexus.pc" test -f "$tmp/src/plexus_btl_example.so"
[ -f "$tmp/src/plexus_btl_example.so" ] || cat "$tmp/build.log" >&2

# The same component declaring an older major of the BTL API is refused, with
# both versions (docs/writing-a-component.md, "Compatibility").
mkdir -p "$tmp/old"
sed 's|^#include <frameworks/btl/btl.h>$|&\n#undef PX_BTL_API_MAJOR\n#define PX_BTL_API_MAJOR 2|' \
    "$PX_SRC/examples/btl_example/example.c" >"$tmp/old/example.c"
cp "$PX_SRC/examples/btl_example/Makefile" "$tmp/old/"
make -C "$tmp/old" CFLAGS="-O2 -g -Wall -Wextra -Werror" >"$tmp/old.log" 2>&1
check "a copy declaring BTL API 2 builds" test -f "$tmp/old/plexus_btl_example.so"
out=$(PX_MCA_mca_component_path=$tmp/old "$PX_BUILD/tools/px_info/px_info" --show-failed --parsable 2>&1)
check "a plugin built for BTL API 2 is refused, naming both versions" \
    contains "$out" "framework API version mismatch: built for btl API 2."
check "... and this library's" contains "$out" ", this library has 3."

out=$(PX_MCA_mca_component_path=$tmp/src "$PX_BUILD/tools/px_info/px_info" --param btl example --level 9 2>&1)
check "px_info lists the plugin's variable" contains "$out" "btl_example_greeting"
out=$(PX_MCA_mca_component_path=$tmp/src "$PX_BUILD/tools/px_info/px_info" --param btl example --level 9 --parsable 2>&1)
check "px_info shows the variable's default value" \
    contains "$out" "mca:btl:example:param:btl_example_greeting:value:hello from an out-of-tree component"
out=$(PX_MCA_mca_component_path=$tmp/src "$PX_BUILD/tools/px_info/px_info" 2>&1)
check "px_info lists the plugin with its version" contains "$out" "1.2.3"

# The example is a working transport: with it alone, a singleton reaches
# itself through its own socket; under pxrun it carries rank 1 <-> rank 0.
out=$(PX_MCA_mca_component_path=$tmp/src PX_MCA_btl=example "$PX_BUILD/test/runtime/init_probe" 2>&1)
check "PX_MCA_btl=example alone: px_init succeeds, rank 0 reaches itself through the plugin" \
    contains "$out" "transport to 0: example"
PXRUN=$PX_BUILD/tools/pxrun/pxrun
out=$(PX_MCA_mca_component_path=$tmp/src PX_MCA_btl=self,example timeout -s KILL 120 \
    "$PXRUN" -n 2 "$PX_BUILD/test/runtime/init_probe" 2>&1)
check "pxrun -n 2 with btl=self,example: rank 0 is served by self" contains "$out" "transport to 0: self"
check "... and rank 1 by the example plugin" contains "$out" "transport to 1: example"

# The messaging layer over self,example: a ring of px_send/px_recv, eager and
# pipelined sizes (no put/get: large messages go as fragments), data checked.
cat >"$tmp/ring.c" <<'APP'
#include <plexus.h>
#include <stdio.h>
#include <stdlib.h>
static unsigned char pat(int src, size_t len, size_t i) { return (unsigned char)(src * 31 + len + i * 7); }
int main(int argc, char **argv)
{
    if (px_init(&argc, &argv) != PX_SUCCESS) return 1;
    int me = px_rank(), n = px_size(), bad = 0;
    const size_t sizes[] = {0, 1, 8, 4000, 32 * 1024, 65536 + 3, 1 << 20, (4 << 20) + 5};
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        size_t len = sizes[k];
        unsigned char *out = malloc(len + 1), *in = malloc(len + 1);
        for (size_t i = 0; i < len; i++) out[i] = pat(me, len, i);
        int from = (me + n - 1) % n;
        px_request_t *rq = NULL;
        if (px_irecv(in, len, from, (int)k, &rq) != PX_SUCCESS ||
            px_send(out, len, (me + 1) % n, (int)k) != PX_SUCCESS || px_wait(&rq, NULL) != PX_SUCCESS)
            bad++;
        for (size_t i = 0; i < len; i++)
            if (in[i] != pat(from, len, i)) { printf("rank %d: %zu bytes: byte %zu wrong\n", me, len, i); bad++; break; }
        free(out);
        free(in);
    }
    printf("rank %d: ring done, %d errors\n", me, bad);
    return (px_finalize() != PX_SUCCESS) || bad;
}
APP
cc -std=gnu11 -Wall -Werror $san -o "$tmp/ring" "$tmp/ring.c" $(pkg-config --cflags --libs plexus) 2>"$tmp/ring.log"
check "the ring application builds against the install" test -x "$tmp/ring" || cat "$tmp/ring.log" >&2
for n in 2 3; do
    out=$(LD_LIBRARY_PATH=$libdir PX_MCA_mca_component_path=$tmp/src PX_MCA_btl=self,example \
        timeout -s KILL 200 "$PXRUN" -n $n "$tmp/ring" 2>&1)
    rc=$?
    check "pxrun -n $n ring over btl=self,example: exit status 0 (got $rc)" test "$rc" -eq 0 || echo "$out" | head -20 >&2
    check "... every rank checked every size (0 B to 4 MiB + 5)" \
        test "$(grep -c 'ring done, 0 errors' <<<"$out")" -eq $n
done

# The plugin defines a class and keeps fragments in a free list of it; it is
# unloaded at px_finalize. The class registry must not keep pointing into it:
# px_class_finalize (which px_finalize itself calls in debug builds) used to
# crash here.
cat >"$tmp/classes.c" <<'APP'
#include <plexus.h>
#include <stdio.h>
#include <core/class/object.h>
int main(int argc, char **argv)
{
    if (px_init(&argc, &argv) != PX_SUCCESS) return 1;
    if (px_finalize() != PX_SUCCESS) return 2;
    int alive = px_class_finalize();
    printf("after unload: %d objects alive, class registry walked\n", alive);
    return alive != 0;
}
APP
cc -std=gnu11 -Wall -Werror $san -o "$tmp/classes" "$tmp/classes.c" $(pkg-config --cflags --libs plexus) 2>"$tmp/classes.log"
out=$(LD_LIBRARY_PATH=$libdir PX_MCA_mca_component_path=$tmp/src PX_MCA_btl=self,example "$tmp/classes" 2>&1)
rc=$?
check "a plugin with its own class and free list is unloaded cleanly (exit $rc)" test "$rc" -eq 0
check "px_class_finalize after the unload walks the registry" contains "$out" "after unload: 0 objects alive"

# The example coll component (examples/coll_example): built out of tree, listed,
# and chosen by a rules file for every bcast; coll_probe checks the results
# (every type, in place and not, blocking and not, groups of 1-4).
cp -r "$PX_SRC/examples/coll_example" "$tmp/coll"
make -C "$tmp/coll" CFLAGS="-O2 -g -Wall -Wextra -Werror" >"$tmp/coll.log" 2>&1
check "the example coll component builds out of tree against plexus.pc" \
    test -f "$tmp/coll/plexus_coll_chain.so" || cat "$tmp/coll.log" >&2
out=$(PX_MCA_mca_component_path=$tmp/coll "$PX_BUILD/tools/px_info/px_info" 2>&1)
check "px_info lists coll/chain" contains "$out" "MCA coll: chain"
echo 'bcast * * chain' >"$tmp/coll/rules"
out=$(PX_MCA_mca_component_path=$tmp/coll PX_MCA_coll_base_rules_file=$tmp/coll/rules \
    PX_MCA_coll_base_verbose=20 timeout -s KILL 200 "$PXRUN" -n 4 \
    "$PX_BUILD/test/coll/coll_probe" matrix --quick 2>&1)
check "coll_probe with every bcast through coll/chain: 4 ranks, 0 errors" \
    test "$(grep -c ', 0 errors$' <<<"$out")" -eq 4 || echo "$out" | grep -v "coll: " | head -20 >&2
check "... and chain served them" contains "$out" "coll: bcast of 8 bytes on 4 ranks: chain"
tap_done
