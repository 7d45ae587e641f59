#!/usr/bin/env bash
# What `make install` gives a user besides the library: the documentation and
# the examples under share/doc/plexus, man pages of px_info, pxrun, px_perf
# and pxcc that man renders, and the compiler wrapper pxcc, which builds the
# example application so that it runs without LD_LIBRARY_PATH.
. "$PX_SRC/test/lib/tap.sh"
. "$PX_SRC/test/lib/install.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
dest=$tmp/root

px_staged_install "$dest" "$tmp/install.log"
rc=$?
check "make install into a staging root (exit $rc)" test $rc -eq 0
[ $rc -eq 0 ] || tail -5 "$tmp/install.log" | sed 's/^/# /'
pxcc=$(find "$dest" -path '*/bin/pxcc' | head -1)
check "pxcc is installed in bin/" test -n "$pxcc" -a -x "$pxcc"
prefix=$(cd "$(dirname "$pxcc")/.." && pwd)
doc=$prefix/share/doc/plexus

missing=""
for f in README.md api.md btl.md coll.md writing-a-component.md variables.md pxrun.md \
    examples/app/api_example.c examples/app/Makefile \
    examples/btl_example/example.c examples/btl_example/Makefile \
    examples/coll_example/chain.c examples/coll_example/Makefile; do
    [ -f "$doc/$f" ] || missing="$missing $f"
done
check "docs and examples are in share/doc/plexus (missing:${missing:- none})" test -z "$missing"
ndocs=$(ls "$PX_SRC"/docs/*.md | wc -l)
check "every page of docs/ is installed ($ndocs)" \
    test "$(ls "$doc"/*.md | grep -vc '/README.md$')" -ge $((ndocs - 1))
nmeas=$(ls "$PX_SRC"/docs/measurements/*.md | wc -l)
check "every page of docs/measurements/ is installed beside the pages linking to it ($nmeas)" \
    test "$(ls "$doc"/measurements/*.md 2>/dev/null | wc -l)" -eq "$nmeas"

if grep -q '^HELP2MAN = .*help2man' "$PX_BUILD/Makefile"; then
    for t in px_info:--param pxrun:--timeout px_perf:--memcpy pxcc:--showme px_btl_check:--timeout \
        px_coll_check:--quick; do
        opt=${t#*:}
        t=${t%%:*}
        page=$prefix/share/man/man1/$t.1
        check "man page $t.1 is installed" test -f "$page"
        out=$(MANWIDTH=80 man -l "$page" 2>&1 | col -b 2>/dev/null)
        check "man -l $t.1 renders its NAME section" contains "$out" "$t - "
        check "man -l $t.1 shows the options from its --help ($opt)" contains "$out" "$opt"
    done
else
    not_ok "help2man is installed (scripts/deps.sh): configure found none, so no man pages were made"
fi

# pxcc: what it adds, then the example application built with it.
show=$("$pxcc" --showme -O2 -o app app.c)
check "pxcc --showme prints the include folder of this install" contains "$show" "-I$prefix/include/plexus"
check "... the library, -lplexus and an rpath to it" \
    contains "$show" "-L$prefix/lib -Wl,-rpath,$prefix/lib -lplexus"
check "... around the arguments given" contains "$show" " -O2 -o app app.c "
show=$("$pxcc" --showme -c app.c)
check "pxcc -c adds no link flags" test "${show#*-lplexus}" = "$show"
"$pxcc" --showme:bad >/dev/null 2>"$tmp/bad.err"
rc=$?
check "an unknown --showme: option is refused (exit $rc) naming what is accepted" \
    contains "$(cat "$tmp/bad.err")" "accepted: --showme, --showme:compile, --showme:link"

cp -r "$doc/examples/app" "$tmp/app"
# In the sanitizer build the library needs the sanitizer runtime linked in.
san=""
[ -n "${PX_TEST_SANITIZER:-}" ] && san="-fsanitize=address,undefined"
make -C "$tmp/app" PXCC="$pxcc" CFLAGS="-O2 -Wall -Werror $san" >"$tmp/app.log" 2>&1
check "the installed example application builds with pxcc" test -x "$tmp/app/api_example"
[ -x "$tmp/app/api_example" ] || sed 's/^/# /' "$tmp/app.log" | tail -5
out=$(env -u LD_LIBRARY_PATH "$tmp/app/api_example" 2>&1)
check "it runs without LD_LIBRARY_PATH against the installed library" \
    contains "$out" "rank 0 got token 0 from rank 0 (via self)"
lib=$(env -u LD_LIBRARY_PATH ldd "$tmp/app/api_example" | awk '/libplexus/ { print $3 }')
check "it loads libplexus.so.0 from the install ($lib)" test "$lib" = "$prefix/lib/libplexus.so.0"
out=$(env -u LD_LIBRARY_PATH timeout 60 "$PX_BUILD/tools/pxrun/pxrun" -n 2 "$tmp/app/api_example" </dev/null 2>&1)
check "pxrun -n 2 runs it: rank 1 gets rank 0's token over shm" \
    contains "$out" "rank 1 got token 0 from rank 0 (via shm)"
tap_done
