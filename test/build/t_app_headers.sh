#!/usr/bin/env bash
# px-test: background (compiles and reads files; nothing waits on a clock)
# The two tiers of installed headers (docs/abi.md, "Two tiers of headers"):
# an application includes <plexus.h> alone, and what that pulls in is the
# application tier only (plexus.h, plexus_types.h, runtime/plexus*.h): no
# core/ or frameworks/ header, px_group_t an opaque handle. The other
# installed headers are the component authors' tier (core/, frameworks/);
# runtime-only headers (frameworks/btl/base/base_runtime.h, runtime/runtime.h)
# are not installed. The examples use the tier their reader would:
# applications (a main) <plexus.h> alone, components installed headers only.
. "$PX_SRC/test/lib/tap.sh"
. "$PX_SRC/test/lib/install.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
APP_TIER="plexus.h plexus_types.h runtime/plexus.h runtime/plexus_coll.h runtime/plexus_xfer.h runtime/plexus_name.h"
# Installed beside <plexus.h> for an application that wants the names API alone
# (<plexus/plexus_name.h>): it includes runtime/plexus_name.h only.
APP_EXTRA="plexus_name.h"

px_staged_install "$tmp/root" "$tmp/install.log"
check "make install into a staging root" test $? -eq 0
top=$(find "$tmp/root" -path '*/include/plexus/plexus.h' | head -1)
inc=${top%/plexus.h}
check "<plexus.h> is installed" test -f "$top"
lib=$(dirname "$(find "$tmp/root" -name 'libplexus.so' | head -1)")

missing=""
for h in $APP_TIER; do [ -f "$inc/$h" ] || missing="$missing $h"; done
check "every application-tier header is installed (missing:${missing:- none})" test -z "$missing"

# Everything an application gets from <plexus.h>, conditional includes too:
# the preprocessor's own list (-H), restricted to the installed folder.
cat >"$tmp/app.c" <<'APP'
#include <plexus.h>
#include <stdbool.h>
#include <stdio.h>
static size_t limit = 4096;
int main(int argc, char **argv)
{
    if (px_var_register("tierapp_limit", PX_VAR_SIZE, "a limit", "1", NULL, &limit) != PX_SUCCESS)
        return 3;
    if (px_init(&argc, &argv) != PX_SUCCESS)
        return 1;
    double v = 1.0, sum = 0.0;
    int rc = px_allreduce(&v, &sum, 1, PX_DOUBLE, PX_SUM, px_group_world());
    px_group_t *g = px_group_world();
    px_request_t *req = NULL;
    if (rc == PX_SUCCESS)
        rc = px_ibarrier(g, &req);
    if (rc == PX_SUCCESS)
        rc = px_wait(&req, NULL);
    px_xfer_region_t *r = NULL;
    if (rc == PX_SUCCESS)
        rc = px_xfer_alloc(4096, &r);
    if (r)
        px_xfer_free(&r);
    printf("tier app: %s, sum %g, group of %d, limit %zu\n", px_strerror(rc), sum,
           px_group_size(g), limit);
    return (px_finalize() != PX_SUCCESS) || rc != PX_SUCCESS;
}
APP
cc -std=c11 -Wall -Wextra -Wpedantic -Werror -H -fsyntax-only -I"$inc" "$tmp/app.c" 2>"$tmp/h.log"
check "a program including only <plexus.h> compiles with -std=c11 -Wall -Wextra -Wpedantic -Werror" \
    test $? -eq 0 || sed 's/^/#   /' "$tmp/h.log" | grep -v '^#   \.' | head -5
pulled=$(sed -n 's/^\.\+ //p' "$tmp/h.log" | while read -r f; do
    case $f in "$inc"/*) echo "${f#"$inc"/}" ;; esac
done | sort -u)
outside=""
for f in $pulled; do
    case " $APP_TIER " in *" $f "*) ;; *) outside="$outside $f" ;; esac
done
check "<plexus.h> pulls in application-tier headers only (outside the tier:${outside:- none})" \
    test -z "$outside"
check "... and all of them ($(echo $pulled))" test "$(echo $pulled)" = "$(echo $APP_TIER | tr ' ' '\n' | sort | tr '\n' ' ' | sed 's/ $//')"
# The tier's own #include lines: nothing but each other and the C library.
bad=""
for h in $APP_TIER; do
    while read -r f; do
        case " $APP_TIER " in *" $f "*) continue ;; esac
        [ -f "$inc/$f" ] && bad="$bad $h:$f"
        case $f in core/* | frameworks/* | components/* | runtime/*) bad="$bad $h:$f" ;; esac
    done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]\([^">]*\)[">].*/\1/p' "$inc/$h")
done
check "the application-tier headers include nothing of Plexus beyond the tier (found:${bad:- none})" test -z "$bad"
if command -v c++ >/dev/null; then
    printf '#include <plexus.h>\nint main() { return px_strerror(PX_SUCCESS) == 0; }\n' >"$tmp/app.cc"
    c++ -Wall -Wextra -Werror -fsyntax-only -I"$inc" "$tmp/app.cc" 2>"$tmp/cxx.log"
    check "<plexus.h> compiles as C++ too" test $? -eq 0 || sed 's/^/#   /' "$tmp/cxx.log" | head -5
else
    skip "<plexus.h> compiles as C++ too" "no c++ compiler on this machine"
fi

# The program links and runs against the installed library alone.
san=""
[ -n "${PX_TEST_SANITIZER:-}" ] && san="-fsanitize=address,undefined"
cc -std=c11 -Wall -Werror $san -I"$inc" -o "$tmp/app" "$tmp/app.c" -L"$lib" -lplexus 2>"$tmp/link.log"
check "... links with -lplexus" test -x "$tmp/app" || sed 's/^/#   /' "$tmp/link.log" | head -5
out=$(LD_LIBRARY_PATH=$lib PX_MCA_tierapp_limit=64k PX_MCA_mca_component_path=$PX_BUILD/.libs \
    "$tmp/app" 2>&1)
check "... and runs: collectives, the transfer engine and its own setting (PX_MCA_tierapp_limit=64k)" \
    contains "$out" "tier app: success, sum 1, group of 1, limit 65536"

# px_var_register's wrong input: each refused with a message saying why.
cat >"$tmp/vars.c" <<'APP'
#include <plexus.h>
#include <stdbool.h>
#include <stdio.h>
int main(int argc, char **argv)
{
    size_t limit = 4096;
    int verbose = 0;
    bool flag = false;
    printf("bad name: %d\n", px_var_register("9lives", PX_VAR_INT, "", NULL, NULL, &verbose));
    printf("range on a bool: %d\n", px_var_register("tierapp_flag", PX_VAR_BOOL, "", "1", NULL, &flag));
    printf("refused value: %d limit %zu\n",
           px_var_register("tierapp_limit", PX_VAR_SIZE, "", "1", NULL, &limit), limit);
    if (px_init(&argc, &argv) != PX_SUCCESS)
        return 1;
    printf("plexus's own: %d\n", px_var_register("btl_base_verbose", PX_VAR_INT, "", NULL, NULL, &verbose));
    return px_finalize() != PX_SUCCESS;
}
APP
cc -std=c11 -Wall -Werror $san -I"$inc" -o "$tmp/vars" "$tmp/vars.c" -L"$lib" -lplexus 2>"$tmp/vars.log"
out=$(LD_LIBRARY_PATH=$lib PX_MCA_tierapp_limit=-1 PX_MCA_mca_component_path=$PX_BUILD/.libs \
    "$tmp/vars" 2>&1)
check "px_var_register: a name not starting with a letter is refused (PX_ERR_BAD_PARAM)" \
    contains "$out" "bad name: -4"
check "... saying what is accepted" contains "$out" "the name \"9lives\" is not accepted: a letter, then"
check "px_var_register: a range on a PX_VAR_BOOL is refused" contains "$out" "range on a bool: -4"
check "px_var_register: a value out of range is refused, the default kept" \
    contains "$out" "refused value: -4 limit 4096"
check "... saying which value, from where" \
    contains "$out" 'invalid value "-1" for variable tierapp_limit (size) from environment variable PX_MCA_tierapp_limit'
check "px_var_register: a name of Plexus's own variables is refused (PX_ERR_EXISTS)" \
    contains "$out" "plexus's own: -11"

# px_group_t is opaque to applications: its body is not in the tier.
for probe in 'return (int)sizeof(px_group_t);' 'return px_group_world()->size;'; do
    printf '#include <plexus.h>\nint main(void) { %s }\n' "$probe" >"$tmp/opaque.c"
    cc -std=c11 -fsyntax-only -I"$inc" "$tmp/opaque.c" 2>"$tmp/opaque.log"
    rc=$?
    check "an application cannot look inside px_group_t ($probe: refused)" \
        test $rc -ne 0 -a -n "$(grep -i 'incomplete' "$tmp/opaque.log")"
done

# The component authors' tier: everything else installed is under core/ or
# frameworks/, and the runtime-only headers stay in the source tree.
other=""
while IFS= read -r h; do
    rel=${h#"$inc"/}
    case " $APP_TIER $APP_EXTRA " in *" $rel "*) continue ;; esac
    case $rel in core/* | frameworks/*) ;; *) other="$other $rel" ;; esac
done < <(find "$inc" -name '*.h')
check "every other installed header is a core/ or frameworks/ one (others:${other:- none})" test -z "$other"
for h in frameworks/btl/base/base_runtime.h runtime/runtime.h runtime/pml.h runtime/xfer.h \
    core/mca/mca_tools.h; do
    check "runtime-only $h is not installed" test ! -e "$inc/$h"
done
check "frameworks/btl/base/base.h (installed) declares no runtime-only call (px_btl_base_add_procs)" \
    test -z "$(grep -w 'px_btl_base_add_procs\|px_btl_base_select\|px_btl_base_peer_t' "$inc/frameworks/btl/base/base.h")"

# The examples: a program (it has a main) includes <plexus.h> and the C
# library only; a component includes installed headers only.
for ex in "$PX_SRC"/examples/*/; do
    name=$(basename "$ex")
    srcs=$(find "$ex" -name '*.c' -o -name '*.h')
    [ -n "$srcs" ] || continue
    app=0
    grep -q '^int main(' $srcs && app=1
    bad=""
    while IFS=: read -r file inc_name; do
        local_h="$(dirname "$file")/$inc_name"
        [ -f "$local_h" ] && continue # the example's own header
        if [ $app = 1 ]; then
            case " $APP_TIER " in *" $inc_name "*) continue ;; esac
            case $inc_name in
            core/* | frameworks/* | runtime/* | components/*) bad="$bad $inc_name" ;;
            *) [ -f "$inc/$inc_name" ] && bad="$bad $inc_name" ;;
            esac
        else
            case $inc_name in
            core/* | frameworks/* | runtime/* | components/* | plexus*.h)
                [ -f "$inc/$inc_name" ] || bad="$bad $inc_name"
                ;;
            esac
        fi
    done < <(grep -H -o '^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"][^">]*' $srcs |
        sed 's/:[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]/:/')
    tier=$([ $app = 1 ] && echo "application tier: <plexus.h>" || echo "installed headers")
    check "examples/$name uses the $tier only (outside:${bad:- none})" test -z "$bad"
done
tap_done
