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
tap_done
