#!/usr/bin/env bash
# check_layers.sh SRC: check the dependency rule of docs/architecture.md on the
# `#include "..."` lines of SRC's core/, frameworks/, components/, runtime/ and
# tools/ (.c and .h). Prints one line per include that breaks the rule
# ("file:line: includes X: reason") and exits 1 if there is any, else 0.
#
# The layers, lowest first; a file may include its own layer and the ones below:
#   core/util   (util)
#   core/class  (class: util)
#   core/...    (mca: util, class; core/mca and anything else under core/)
#   frameworks/ (frameworks: core)
#   components/<fw>/<name>/ (a component: core, frameworks, and itself only)
#   runtime/    (runtime: core, frameworks)
#   tools/      (tools: core, frameworks, runtime; no component)
# Generated configuration headers (config.h, core/px_config.h) and the
# application API's types header (plexus_types.h: return codes and datatypes,
# defined once for every layer) are below all.
# core/mca/mca_internal.h belongs to core/mca alone.
#
# Inside runtime/, the sub-layers, lowest first (docs/architecture.md, "The
# runtime's sub-layers"); a file may include its own sub-layer and the ones
# below, and messaging and the transfer engine, side by side, not each other:
#   runtime/plexus*.h              (api: the installed API headers, below all)
#   runtime/proc/                  (proc: the process table, API lock, notices)
#   runtime/peer/                  (peer: the connection exchange; beside proc, uses core only)
#   runtime/pml/                   (pml: messaging)
#   runtime/xfer/, runtime/xfer*   (xfer: the transfer engine)
#   runtime/coll/                  (coll: groups and collectives)
#   runtime/name/                  (name: named segments, above messaging and the transfer engine)
#   runtime/*.c, runtime/runtime.h (init: px_init, px_finalize)
# runtime/<sub>/*_internal.h belongs to runtime/<sub>/ alone.
set -u
src=${1:?usage: check_layers.sh SRC}

# Allowed exceptions: "including-path-prefix included-path reason".
exceptions=(
    "tools/pxrun/ components/boot/pxrun/pxrun_proto.h the launcher/component wire protocol: pxrun (the launcher) and boot/pxrun (its client in each process) speak it, and a wire format has one definition (docs/architecture.md)"
)

layer_of() { # path relative to SRC -> its layer's name in $layer
    case $1 in
    config.h | core/px_config.h | plexus_types.h) layer=config ;;
    core/util/*) layer=util ;;
    core/class/*) layer=class ;;
    core/*) layer=mca ;;
    frameworks/*) layer=frameworks ;;
    components/*/*/*)
        local rest=${1#components/}
        local fw=${rest%%/*}
        rest=${rest#*/}
        layer="component:$fw/${rest%%/*}"
        ;;
    components/*) layer=components ;;
    runtime/*) layer=runtime ;;
    tools/*) layer=tools ;;
    *) layer=other ;;
    esac
}

# The runtime sub-layer of a path under runtime/ in $sub, its rank in $subrank.
rt_sub_of() {
    case $1 in
    runtime/plexus*.h) sub=api subrank=0 ;;
    runtime/proc/*) sub=proc subrank=1 ;;
    runtime/peer/*) sub=peer subrank=1 ;;
    runtime/pml/*) sub=pml subrank=2 ;;
    runtime/xfer/* | runtime/xfer*) sub=xfer subrank=2 ;;
    runtime/coll/*) sub=coll subrank=3 ;;
    runtime/name/*) sub=name subrank=3 ;;
    *) sub=init subrank=4 ;;
    esac
}

# rt_allowed FROM TO (paths under runtime/): the sub-layer rule; sets $why.
rt_allowed() {
    local fsub frank
    rt_sub_of "$1"
    fsub=$sub frank=$subrank
    rt_sub_of "$2"
    case $2 in
    runtime/*/*_internal.h)
        local home=${2%/*}
        if [ "${1#"$home"/}" = "$1" ]; then
            why="runtime/${home#runtime/}'s internal header, for runtime/${home#runtime/}/ only (the layers above include its exported header)"
            return 1
        fi
        ;;
    esac
    [ "$fsub" = "$sub" ] && return 0
    if [ "$subrank" -lt "$frank" ]; then
        return 0
    fi
    why="runtime sub-layer $fsub may not include runtime sub-layer $sub"
    return 1
}

# allowed FROM TO: may a file of layer FROM include one of layer TO?
allowed() {
    local from=$1 to=$2
    [ "$to" = config ] && return 0
    case $from in
    util) [ "$to" = util ] ;;
    class) case $to in util | class) return 0 ;; *) return 1 ;; esac ;;
    mca) case $to in util | class | mca) return 0 ;; *) return 1 ;; esac ;;
    frameworks) case $to in util | class | mca | frameworks) return 0 ;; *) return 1 ;; esac ;;
    component:*) case $to in util | class | mca | frameworks | "$from") return 0 ;; *) return 1 ;; esac ;;
    runtime) case $to in util | class | mca | frameworks | runtime) return 0 ;; *) return 1 ;; esac ;;
    tools) case $to in util | class | mca | frameworks | runtime | tools) return 0 ;; *) return 1 ;; esac ;;
    *) return 0 ;;
    esac
}

excepted() { # FILE TARGET -> 0 when listed
    local e prefix target
    for e in "${exceptions[@]}"; do
        read -r prefix target _ <<<"$e"
        case $1 in "$prefix"*) [ "$2" = "$target" ] && return 0 ;; esac
    done
    return 1
}

bad=0
cd "$src" || exit 2
while IFS= read -r -d '' f; do
    f=${f#./}
    layer_of "$f"
    from=$layer
    dir=${f%/*}
    n=0
    while IFS= read -r line; do
        n=$((n + 1))
        [[ $line =~ ^[[:space:]]*#[[:space:]]*include[[:space:]]*\"([^\"]+)\" ]] || continue
        inc=${BASH_REMATCH[1]}
        # A quoted include is found next to the file first, then from the top.
        if [ -f "$dir/$inc" ]; then
            target=$dir/$inc
        else
            target=$inc
        fi
        case $target in
        *./*) target=$(realpath -m --relative-to=. "$target") ;;
        esac
        layer_of "$target"
        to=$layer
        why=
        if [ "$target" = core/mca/mca_internal.h ] && [ "${f#core/mca/}" = "$f" ]; then
            why="core/mca's internal header, for core/mca only (tools use core/mca/mca_tools.h)"
        elif ! allowed "$from" "$to"; then
            case $from:$to in
            component:*:component:*) why="a component includes no other component's headers ($from -> ${to#component:})" ;;
            *) why="layer ${from%%:*} may not include layer ${to%%:*}" ;;
            esac
        elif [ "$from:$to" = runtime:runtime ]; then
            rt_allowed "$f" "$target" || true
        fi
        if [ -n "$why" ] && ! excepted "$f" "$target"; then
            echo "$f:$n: includes $target: $why"
            bad=1
        fi
    done <"$f"
done < <(find core frameworks components runtime tools \( -name '*.c' -o -name '*.h' \) -print0 2>/dev/null | sort -z)
exit $bad
