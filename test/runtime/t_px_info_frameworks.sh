#!/usr/bin/env bash
# px_info shows the btl and boot frameworks, their built-in components, the
# module figures every btl registers (btl_<name>_<field>), btl/self's and
# boot/singleton's own variables, and the runtime's protocol thresholds; and
# --mca changes a figure's value and source.
. "$PX_SRC/test/lib/tap.sh"
info=$PX_BUILD/tools/px_info/px_info
need_built "$info"

out=$("$info" 2>&1)
check "px_info runs" test $? -eq 0
for c in "btl: self" "btl: shm" "boot: singleton" "boot: pxrun"; do
    check "lists MCA $c" contains "$out" "MCA $c ("
done

p=$("$info" --param btl all --level 9 --parsable 2>&1)
check "btl framework variables: btl, btl_base_verbose" \
    sh -c 'echo "$1" | grep -q "^mca:btl:base:param:btl:value:" && echo "$1" | grep -q "^mca:btl:base:param:btl_base_verbose:value:"' _ "$p"
for f in exclusivity latency bandwidth eager_limit max_send_size put_limit put_alignment \
    get_limit get_alignment flags; do
    for c in self shm; do
        check "btl_${c}_$f is a variable" contains "$p" "mca:btl:$c:param:btl_${c}_$f:value:"
    done
done
check "btl_self_exclusivity is 65536 (PX_BTL_EXCLUSIVITY_HIGH)" contains "$p" "mca:btl:self:param:btl_self_exclusivity:value:65536"
for v in free_list_num free_list_max free_list_inc; do
    check "btl_self_$v is a variable" contains "$p" "mca:btl:self:param:btl_self_$v:value:"
done

b=$("$info" --param boot all --level 9 --parsable 2>&1)
check "boot framework variables: boot, boot_base_verbose" \
    sh -c 'echo "$1" | grep -q "^mca:boot:base:param:boot:value:" && echo "$1" | grep -q "^mca:boot:base:param:boot_base_verbose:value:"' _ "$b"
check "boot_singleton_priority is a variable" contains "$b" "mca:boot:singleton:param:boot_singleton_priority:value:1"

a=$("$info" --param all all --level 9 --parsable 2>&1)
for v in tiny_limit eager_limit rndv_protocol wait_timeout; do
    check "runtime_$v is a variable" contains "$a" "param:runtime_$v:value:"
done

m=$("$info" --mca btl_self_eager_limit 64k --param btl self --level 9 --parsable 2>&1)
check "--mca btl_self_eager_limit 64k shows 65536" contains "$m" "mca:btl:self:param:btl_self_eager_limit:value:65536"
check "... with source command line" sh -c 'echo "$1" | grep -i "btl_self_eager_limit:source:" | grep -qi "command"' _ "$m"
tap_done
