#!/usr/bin/env bash
# px-test: source-only (reads the source tree, never the build under test)
# px-test: background (compiles and reads files; nothing waits on a clock)
# The dependency rule (docs/architecture.md, "Layers"): test/build/check_layers.sh
# finds no include that breaks it in the tree, and it does find each kind of
# violation planted in a scratch copy (so a checker that reports nothing
# cannot pass).
. "$PX_SRC/test/lib/tap.sh"
checker=$PX_SRC/test/build/check_layers.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

out=$(bash "$checker" "$PX_SRC" 2>&1)
rc=$?
check "the tree keeps the dependency rule${out:+ (found: $out)}" test "$rc" -eq 0 -a -z "$out"

# ---------------------------------------------------------------- scratch copy
src=$tmp/src
mkdir -p "$src"
(cd "$PX_SRC" && tar -cf - core frameworks components runtime tools) | tar -C "$src" -xf -
check "scratch copy of the layered folders" test -f "$src/core/util/proc.h"
bash "$checker" "$src" >/dev/null
check "the scratch copy is clean before planting" test $? -eq 0

# Plant every violation below at once (one checker run: it is a slow loop
# under load), then expect one report line for each and nothing else.
# plant FILE INCLUDE EXPECT [TARGET]: append `#include "INCLUDE"` to FILE
# (created when missing); the report line must start "FILE:" and say
# "includes TARGET: EXPECT" (TARGET: INCLUDE resolved, default INCLUDE).
expected=()
plant() {
    mkdir -p "$(dirname "$src/$1")"
    printf '#include "%s"\n' "$2" >>"$src/$1"
    expected+=("$1:|includes ${4:-$2}: $3")
}
plant core/util/proc.h core/class/list.h "layer util may not include layer class"
plant core/class/list.h core/mca/var.h "layer class may not include layer mca"
plant core/mca/var.c frameworks/btl/btl.h "layer mca may not include layer frameworks"
plant core/mca/framework.c runtime/runtime.h "layer mca may not include layer runtime"
plant core/util/output.c tools/px_info/px_info.h "layer util may not include layer tools"
plant frameworks/btl/base/btl_base_select.c components/btl/shm/shm.h \
    "layer frameworks may not include layer component"
plant frameworks/boot/base/planted.h runtime/plexus.h "layer frameworks may not include layer runtime"
plant components/btl/ofi/ofi_module.c components/btl/shm/shm.h \
    "a component includes no other component's headers (component:btl/ofi -> btl/shm)"
plant components/btl/self/self_module.c runtime/runtime.h "layer component may not include layer runtime"
plant components/boot/pmix/pmix_component.c tools/pxrun/pxrun.h \
    "layer component may not include layer tools"
plant runtime/pml/pml.c components/btl/self/self.h "layer runtime may not include layer component"
plant runtime/runtime.c tools/px_info/px_info.h "layer runtime may not include layer tools"
# The exception is tools/pxrun's alone, and for the protocol header alone.
plant tools/px_info/px_info.c components/boot/pxrun/pxrun_proto.h \
    "layer tools may not include layer component"
plant tools/pxrun/pxrun.c components/boot/pxrun/pxrun.h "layer tools may not include layer component"
plant tools/px_info/px_info_output.c core/mca/mca_internal.h "core/mca's internal header"
# The runtime's sub-layers: process table < messaging, transfer engine (side
# by side) < groups and collectives < px_init; and a sub-layer's internal
# header stays in its folder. Planted in files of their own, so they hold
# however the files of a sub-layer are named.
plant runtime/proc/planted.c runtime/pml/pml_request.h \
    "runtime sub-layer proc may not include runtime sub-layer pml"
plant runtime/proc/planted.h runtime/xfer/xfer.h "runtime sub-layer proc may not include runtime sub-layer xfer"
plant runtime/pml/planted.c runtime/xfer/xfer.h "runtime sub-layer pml may not include runtime sub-layer xfer"
plant runtime/xfer/planted.c runtime/pml/pml.h "runtime sub-layer xfer may not include runtime sub-layer pml"
plant runtime/xfer_planted.c runtime/pml/pml.h "runtime sub-layer xfer may not include runtime sub-layer pml"
plant runtime/pml/planted.h runtime/coll/coll_rt.h "runtime sub-layer pml may not include runtime sub-layer coll"
plant runtime/xfer/planted.h runtime/coll/coll_rt.h \
    "runtime sub-layer xfer may not include runtime sub-layer coll"
plant runtime/coll/planted.c runtime/runtime.h "runtime sub-layer coll may not include runtime sub-layer init"
plant runtime/proc/planted2.c runtime/runtime.h "runtime sub-layer proc may not include runtime sub-layer init"
plant runtime/coll/planted.h runtime/pml/pml_internal.h "runtime/pml's internal header"
plant runtime/planted.c runtime/coll/coll_internal.h "runtime/coll's internal header"
# A relative include is resolved next to the file.
plant components/btl/verbs/planted.c ../shm/shm.h \
    "a component includes no other component's headers (component:btl/verbs -> btl/shm)" \
    components/btl/shm/shm.h

o=$(bash "$checker" "$src" 2>&1)
rc=$?
check "planted violations make the checker fail" test "$rc" -eq 1
for e in "${expected[@]}"; do
    file=${e%%|*} says=${e#*|}
    line=$(printf '%s\n' "$o" | grep -F -- "$says" | grep -F -- "$file")
    check "planted: $file $says" test -n "$line"
done
nlines=$(printf '%s\n' "$o" | grep -c .)
check "one report line per planted violation (${#expected[@]}), got $nlines" \
    test "$nlines" -eq "${#expected[@]}"
# Undo: a fresh copy for the allowed cases.
rm -rf "$src" && mkdir -p "$src"
(cd "$PX_SRC" && tar -cf - core frameworks components runtime tools) | tar -C "$src" -xf -

# Allowed: its own layer and below, a component's own headers, the exception.
printf '#include "core/util/error.h"\n#include "frameworks/btl/btl.h"\n' >>"$src/runtime/pml/pml.c"
printf '#include "components/boot/pxrun/pxrun_proto.h"\n' >>"$src/tools/pxrun/pxrun.c"
printf '#include "shm.h"\n' >>"$src/components/btl/shm/shm_module.c"
# A runtime sub-layer includes its own and the ones below; px_init all exported headers.
printf '#include "runtime/pml/pml.h"\n#include "runtime/proc/proc.h"\n' >>"$src/runtime/coll/planted_ok.c"
mkdir -p "$src/runtime/xfer"
printf '#include "runtime/proc/proc.h"\n#include "runtime/plexus_xfer.h"\n' >>"$src/runtime/xfer/planted_ok.c"
printf '#include "runtime/proc/proc.h"\n#include "runtime/plexus.h"\n' >>"$src/runtime/pml/planted_ok.c"
printf '#include "runtime/coll/coll_rt.h"\n#include "runtime/pml/pml.h"\n#include "runtime/xfer/xfer.h"\n' >>"$src/runtime/planted_ok.c"
o=$(bash "$checker" "$src" 2>&1)
check "allowed includes pass${o:+ (found: $o)}" test $? -eq 0
tap_done
