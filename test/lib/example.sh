# shellcheck shell=bash
# example.sh: an installed example built the way its README says. Source it
# after tap.sh, with $tmp a temporary folder of the test.
#
#   example_build NAME PROG...
#       make install of $PX_BUILD into the staging root $tmp/root, then
#       copy share/doc/plexus/examples/NAME to $tmp/ex and build it there
#       with its own Makefile (pkg-config plexus, warnings as errors, the
#       sanitizers under PX_TEST_SANITIZER), checking each step; ends the
#       test when a PROG is not built. Sets dest (the staging root), libdir
#       (its lib folder; the caller puts it on LD_LIBRARY_PATH) and exports
#       PKG_CONFIG_PATH, PKG_CONFIG_SYSROOT_DIR.
#   example_secret
#       a fresh 0600 secret in $tmp/secret, exported as
#       PX_MCA_peer_secret_file (umask 077 from here on).

. "$PX_SRC/test/lib/install.sh"

example_build() {
    local name=$1 p ok=1
    shift
    dest=$tmp/root
    px_staged_install "$dest" "$tmp/install.log"
    check "make install into a staging root" test $? -eq 0
    local pc
    pc=$(find "$dest" -name plexus.pc | head -1)
    [ -n "$pc" ] || { not_ok "plexus.pc is installed"; tap_done; }
    export PKG_CONFIG_PATH=$(dirname "$pc") PKG_CONFIG_SYSROOT_DIR=$dest
    libdir=$(cd "$(dirname "$pc")/.." && pwd)
    local doc
    doc=$(find "$dest" -type d -path "*share/doc/plexus/examples/$name" | head -1)
    check "the example is installed in share/doc/plexus/examples/$name" test -n "$doc"
    [ -n "$doc" ] || doc=$PX_SRC/examples/$name
    cp -r "$doc" "$tmp/ex"
    local san=""
    [ -n "${PX_TEST_SANITIZER:-}" ] && san="-fsanitize=address,undefined"
    make -C "$tmp/ex" CFLAGS="-O2 -g -Wall -Wextra -Werror $san" >"$tmp/build.log" 2>&1
    for p in "$@"; do [ -x "$tmp/ex/$p" ] || ok=0; done
    check "the example builds out of tree with its Makefile, warnings as errors" test $ok = 1
    [ $ok = 1 ] || { sed 's/^/# /' "$tmp/build.log" | tail -10; tap_done; }
}

example_secret() {
    umask 077
    head -c 32 /dev/urandom | base64 >"$tmp/secret"
    chmod 600 "$tmp/secret"
    export PX_MCA_peer_secret_file=$tmp/secret
}
