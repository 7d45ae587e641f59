#!/usr/bin/env bash
# Replays the committed fuzz corpus (test/fuzz/corpus/<harness>/: seeds and
# regression inputs of fixed findings) through each harness as built by the
# normal build (test/fuzz/fuzz_<harness>, linked with replay_main.c instead
# of libFuzzer). In the sanitizer build a memory error, undefined behaviour
# or leak fails the check. Coverage-guided fuzzing: test/fuzz/run-fuzz.sh.
. "$PX_SRC/test/lib/tap.sh"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
for h in var_file var_value selection pxrun_client pxrun_server runtime_am xfer_key xfer_am xfer_map \
    shm_fbox shm_queue shm_modex ofi_modex ofi_recv verbs_modex verbs_recv peer_contact peer_accept \
    btl_dyn name_entry; do
    bin=$PX_BUILD/test/fuzz/fuzz_$h
    dir=$PX_SRC/test/fuzz/corpus/$h
    n=$(find "$dir" -type f | wc -l)
    # btl/ofi's and btl/verbs's harnesses are built where their library's headers are.
    case $h in ofi_*) need="PX_HAVE_OFI libfabric" ;; verbs_*) need="PX_HAVE_VERBS libibverbs" ;; *) need="" ;; esac
    if [ -n "$need" ] && [ ! -x "$bin" ] && ! grep -q "^#define ${need% *} 1" "$PX_BUILD/config.h"; then
        skip "$h corpus" "not built: configure found no ${need#* } headers"
        continue
    fi
    if [ ! -x "$bin" ]; then
        not_ok "$h: $bin is not built (make check builds it)"
        continue
    fi
    timeout -s KILL 120 "$bin" "$dir" >"$T/$h.out" 2>"$T/$h.err" </dev/null
    rc=$?
    ran=$(grep -c '^replay: .* bytes)$' "$T/$h.out")
    if [ "$rc" -eq 0 ] && [ "$ran" -eq "$n" ] && [ "$n" -gt 0 ] &&
        ! grep -qE 'ERROR: (Address|Leak|Undefined)Sanitizer|runtime error:' "$T/$h.err"; then
        ok "$h: $n corpus inputs replayed cleanly"
    else
        not_ok "$h: replay of $dir failed (exit $rc, $ran of $n inputs ran)"
        grep -E 'replay: ' "$T/$h.out" | tail -1 | sed 's/^/# last: /'
        grep -E -A8 'ERROR: |runtime error:' "$T/$h.err" | head -30 | sed 's/^/# /'
    fi
done
# The regression inputs are there and reach the fixed code.
check "the regression input of the short MATCH header is in the corpus" \
    [ -f "$PX_SRC/test/fuzz/corpus/runtime_am/regress-match-short-header" ]
"$PX_BUILD/test/fuzz/fuzz_runtime_am" "$PX_SRC/test/fuzz/corpus/runtime_am/regress-match-short-header" \
    >/dev/null 2>"$T/short.err"
check "a MATCH message shorter than its header is dropped, saying so" \
    contains "$(cat "$T/short.err")" "less than its 16-byte header"
# The rank-side harness survives the end of the launcher's stream: the
# launcher watch of boot/pxrun must not exit the harness (it did in about
# 2 replays of 5 when its thread ran before finalize stopped it).
died=0
for i in 1 2 3 4 5 6 7 8 9 10; do
    timeout -s KILL 60 "$PX_BUILD/test/fuzz/fuzz_pxrun_client" "$PX_SRC/test/fuzz/corpus/pxrun_client" \
        >"$T/client.out" 2>"$T/client.err" </dev/null || died=$((died + 1))
    grep -q 'the launcher pxrun' "$T/client.err" && died=$((died + 1))
done
check "pxrun_client: 10 replays of its corpus, none ended by the launcher watch ($died did)" \
    [ "$died" -eq 0 ]
tap_done
