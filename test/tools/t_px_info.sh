#!/usr/bin/env bash
# t_px_info.sh: px_info with good and bad input: output, exit codes, sources
# of values, the 80-column limit, --parsable, --json, refused plugins.
# Environment from test/run-tests.sh: PX_BUILD (build tree), PX_SRC (source tree).
set -u
. "${PX_SRC:?}/test/lib/tap.sh"
PX_INFO=$PX_BUILD/tools/px_info/px_info
tmp=$(mktemp -d)
trap 'chmod -R u+w "$tmp"; rm -rf "$tmp"' EXIT
# Only what a test sets: no user files, no system files, an empty plugin path.
export HOME=$tmp/home PX_SYSCONFDIR=$tmp/etc PX_MCA_mca_component_path=$tmp/noplugins
mkdir -p "$HOME" "$PX_SYSCONFDIR" "$tmp/noplugins"
while IFS= read -r v; do unset "$v"; done < <(env | sed -n 's/^\(PX_MCA_[^=]*\)=.*/\1/p' |
    grep -v '^PX_MCA_mca_component_path$')

# run ARGS...: sets $out (stdout), $err (stderr), $rc
run() {
    "$PX_INFO" "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    out=$(cat "$tmp/out")
    err=$(cat "$tmp/err")
    # the text with wrapped lines joined, to look for phrases a wrap may cut
    flat=$(tr -s ' \n' '  ' <"$tmp/out")
    dense=$(tr -d ' \n' <"$tmp/out")
}
# has_dense NEEDLE: NEEDLE is in the output, ignoring every blank and line break
# (a long path may be split anywhere by the 80-column wrap)
has_dense() { contains "$dense" "$(printf '%s' "$1" | tr -d ' ')"; }
width_ok() { ! awk 'length > 80 { print "# too wide (" length "): " $0; bad = 1 } END { exit !bad }' "$tmp/out" >&2; }
eq() { [ "$1" = "$2" ] || { echo "# expected \"$2\", got \"$1\"" >&2; return 1; }; }

version=$(sed -n 's/.*AC_INIT(\[plexus\], \[\([^]]*\)\].*/\1/p' "$PX_SRC/configure.ac")

# --- default listing
run
check "no option: exit 0" eq "$rc" 0
check "no option: version" contains "$out" "Plexus: $version"
check "no option: configure line" contains "$out" "Configure command line:"
check "no option: btl/self listed with versions" contains "$out" "MCA btl: self (MCA ABI 2, API 3.5.1, component"
check "no option: boot/singleton listed" contains "$out" "MCA boot: singleton (MCA ABI 2"
check "no option: paths" contains "$out" "Override file: $tmp/etc/plexus-mca-params-override.conf"
check "no option: fits 80 columns" width_ok
check "no option: nothing on stderr" eq "$err" ""
# Thread support (BTL API 3.4, docs/threads.md): a line under each BTL; no
# in-tree transport is thread-safe, so each is serialized at MULTIPLE.
threads_after() { awk -v c="MCA btl: $1 (" 'index($0, c) { getline; print; exit }' "$tmp/out"; }
check "no option: btl/self's thread support on the line after it" \
    contains "$(threads_after self)" "threads: serialized at PX_THREAD_MULTIPLE"
check "no option: btl/shm's thread support on the line after it" \
    contains "$(threads_after shm)" "threads: serialized at PX_THREAD_MULTIPLE"
check "no option: every loaded BTL has a threads line" \
    eq "$(grep -c '^ *threads: ' "$tmp/out")" "$(grep -cE 'MCA btl: [a-z0-9_]+ \(MCA ABI' "$tmp/out")"
check "no option: no threads line under another framework" \
    eq "$(awk '/MCA boot: /{getline; print}' "$tmp/out" | grep -c 'threads:')" 0

run --version
check "--version: one line" eq "$out" "px_info (Plexus) $version"
run -h
check "-h: exit 0" eq "$rc" 0
check "-h: usage" contains "$out" "Usage: px_info [options]"
check "-h: documents --json" contains "$out" "--json"

# --- variables
run --param btl self --level 9
check "--param btl self: exit 0" eq "$rc" 0
check "--param btl self: eager limit shown" contains "$out" 'parameter "btl_self_eager_limit"'
check "--param btl self: source default" contains "$out" "source: default"
check "--param btl self: level and type" contains "$out" "level: 4 tuner/basic"
check "--param btl self: no boot variables" bash -c '! grep -q boot_ "$0"' "$tmp/out"
check "--param btl self: fits 80 columns" width_ok
n9=$(wc -l <"$tmp/out")
run --param btl self --level 1
check "--level 1 shows fewer lines than --level 9" test "$(wc -l <"$tmp/out")" -lt "$n9"

run --mca btl_self_eager_limit 8k --var btl_self_eager_limit
check "--mca: value applied" contains "$out" 'current value: "8192"'
check "--mca: source command line" contains "$out" "source: command line (--mca)"

PX_MCA_btl_self_eager_limit=2048 run --var btl_self_eager_limit
check "environment: value" contains "$out" 'current value: "2048"'
check "environment: source names the variable" contains "$flat" "environment (PX_MCA_btl_self_eager_limit)"

mkdir -p "$HOME/.plexus"
printf '# mine\nbtl_self_eager_limit = 1k\n' >"$HOME/.plexus/mca-params.conf"
run --var btl_self_eager_limit
check "file: value" contains "$out" 'current value: "1024"'
check "file: source file:line" has_dense "file ($HOME/.plexus/mca-params.conf:2)"
PX_MCA_btl_self_eager_limit=2048 run --var btl_self_eager_limit
check "environment beats file" contains "$out" 'current value: "2048"'
rm "$HOME/.plexus/mca-params.conf"

printf 'btl_self_eager_limit = 3k\n' >"$PX_SYSCONFDIR/plexus-mca-params-override.conf"
run --mca btl_self_eager_limit 8k --var btl_self_eager_limit
check "override: wins over --mca" contains "$out" 'current value: "3072"'
check "override: source names the file" has_dense "override file ($PX_SYSCONFDIR/plexus-mca-params-override.conf:1)"
check "override: the ignored --mca is reported" contains "$err" "btl_self_eager_limit is fixed to \"3k\" by the override file $PX_SYSCONFDIR/plexus-mca-params-override.conf:1; the value \"8k\" from command line (--mca) is ignored"
rm "$PX_SYSCONFDIR/plexus-mca-params-override.conf"

run --mca btl_self_eager_limit lots --var btl_self_eager_limit
check "bad value: exit 1" eq "$rc" 1
check "bad value: error names value, variable, source and forms" contains "$err" 'invalid value "lots" for variable btl_self_eager_limit (size) from command line (--mca); accepted: a byte count'
check "bad value: default kept" contains "$out" 'source: default'

# --- unknown names
run --param btx all
check "unknown framework: exit 1" eq "$rc" 1
check "unknown framework: nearest" contains "$err" 'unknown framework "btx"; nearest: btl'
run --param btl slef
check "unknown component: exit 1" eq "$rc" 1
check "unknown component: nearest" contains "$err" 'unknown btl component "slef"; nearest: self'
run --mca btl_self_eagr_limit 4
check "unknown --mca variable: exit 1" eq "$rc" 1
check "unknown --mca variable: nearest" contains "$err" 'unknown variable "btl_self_eagr_limit" given with --mca; nearest: btl_self_eager_limit'
run --var btl_slef_eager_limit
check "unknown --var: exit 1" eq "$rc" 1
check "unknown --var: nearest" contains "$err" "nearest: btl_self_eager_limit"
run --path lbdir
check "unknown path: exit 1" eq "$rc" 1
check "unknown path: nearest" contains "$err" 'unknown path "lbdir"; nearest: libdir'
PX_MCA_btl_self_eagr_limit=4 run
check "unknown environment name: warning with nearest" contains "$err" 'unknown variable "btl_self_eagr_limit" in environment variable PX_MCA_btl_self_eagr_limit; nearest registered names: btl_self_eager_limit'
check "unknown environment name: still exit 0" eq "$rc" 0
PX_MCA_mca_base_strict=1 PX_MCA_btl_self_eagr_limit=4 run
check "strict: unknown name is an error" contains "$err" "plexus: error: unknown variable"
check "strict: exit 1" eq "$rc" 1

# --- usage errors
run --level 10
check "--level 10: exit 2" eq "$rc" 2
check "--level 10: says what is accepted" contains "$err" "from 1 to 9"
run --param btl
check "--param with one argument: exit 2" eq "$rc" 2
run --mca btl
check "--mca with one argument: exit 2" eq "$rc" 2
run --bogus
check "unknown option: exit 2" eq "$rc" 2
check "unknown option: named" contains "$err" 'unknown option "--bogus"'

# --- selection lists
run --mca btl selff
check "include list misspelling: exit 1" eq "$rc" 1
check "include list misspelling: reason" contains "$err" 'selff: probably a misspelling of "self"'
run --mca btl 'self,^shm'
check "mixed selection list: exit 1" eq "$rc" 1
check "mixed selection list: error" contains "$err" "mixes including and excluding"
run --mca btl self
check "include list: shm shown as excluded" contains "$out" "shm (MCA ABI 2, API 3.5.1, component"
check "include list: shm marked excluded" contains "$flat" "built-in, excluded)"
run --mca btl self --selected-only
check "--selected-only: shm hidden" bash -c '! grep -q "MCA btl: shm" "$0"' "$tmp/out"
check "--selected-only: self shown" contains "$out" "MCA btl: self"

# --- plugins: refused ones are reported by --show-failed
plug=$PX_BUILD/test/mca/.libs/plexus_ptest_good.so
mkdir -p "$tmp/plugins"
cp "$plug" "$tmp/plugins/plexus_btl_fake.so"
cp "$plug" "$tmp/plugins/plexus_btl_open.so"
chmod 0755 "$tmp/plugins"/*.so
chmod o+w "$tmp/plugins/plexus_btl_open.so"
export PX_MCA_mca_component_path=$tmp/plugins
run --show-failed
check "--show-failed: exit 0" eq "$rc" 0
check "--show-failed: wrong symbol" contains "$out" "does not export the symbol px_btl_fake_component"
check "--show-failed: world-writable file" contains "$flat" "is world-writable (mode 0757)"
check "--show-failed: names the file" contains "$out" "file: $tmp/plugins/plexus_btl_open.so"
check "--show-failed: fits 80 columns" width_ok
run --mca btl fake
check "include list naming a refused plugin: exit 1" eq "$rc" 1
check "include list naming a refused plugin: reason" contains "$err" "fake: refused: does not export the symbol"
run --mca btl '^fake,open' --show-failed
check "excluded plugins are not loaded (nothing failed)" contains "$out" "Failed components: none"
run --mca btl '^fake,open'
check "excluded plugin listed as not loaded" contains "$flat" 'fake (plugin, not loaded: excluded by btl="^fake,open")'
run --mca btl '^fake' --param btl fake
check "--param on an excluded plugin: exit 0" eq "$rc" 0
check "--param on an excluded plugin: says why nothing shows" contains "$err" "btl component fake is excluded by the selection list btl=\"^fake\", so its plugin was not loaded"
# a folder named on the path that does not exist: one warning, and listed
export PX_MCA_mca_component_path=$tmp/plugins:$tmp/missing-folder
run --show-failed
check "missing named plugin folder: warned" contains "$err" "plugin folder $tmp/missing-folder (in mca_component_path, set by environment PX_MCA_mca_component_path) does not exist"
check "missing named plugin folder: warned once" eq "$(grep -c 'missing-folder' "$tmp/err")" 1
check "missing named plugin folder: --show-failed lists it" has_dense "Failed mca component_path: plugin folder $tmp/missing-folder named in mca_component_path"
unset PX_MCA_mca_component_path
run --show-failed
check "default plugin path with missing folders: no warning" eq "$err" ""
export PX_MCA_mca_component_path=$tmp/noplugins

# --- everything
run --all
check "--all: exit 0" eq "$rc" 0
check "--all: variables of every framework" contains "$out" 'parameter "boot_singleton_priority"'
check "--all: runtime variables" contains "$out" 'parameter "runtime_eager_limit"'
check "--all: failed section" contains "$out" "Failed components:"
check "--all: fits 80 columns" width_ok

run --path libdir
check "--path libdir: one line" eq "$(wc -l <"$tmp/out")" 1
check "--path libdir: label" contains "$out" "Libdir: "
run --config
check "--config: compiler" contains "$out" "C compiler: "
check "--config: no components" bash -c '! grep -q "MCA btl" "$0"' "$tmp/out"

# --- machine-readable forms
run --parsable --param btl self --level 9
check "--parsable: value line" contains "$out" "mca:btl:self:param:btl_self_eager_limit:value:"
check "--parsable: source line" contains "$out" "mca:btl:self:param:btl_self_eager_limit:source:default"
check "--parsable: every line is key:value" bash -c '! grep -vE "^[a-z_]+:[^:]*:" "$0"' "$tmp/out"
run --parsable
check "--parsable default: component versions" contains "$out" "mca:btl:self:version:api:3.5.1"
check "--parsable default: package" contains "$out" "package:Plexus $version"
check "--parsable default: btl/self's thread support" contains "$out" "mca:btl:self:threads:serialized"
check "--parsable default: btl/shm's thread support" contains "$out" "mca:btl:shm:threads:serialized"
check "--parsable default: no thread support for other frameworks" \
    bash -c '! grep -qE "^mca:(boot|coll|registry):[^:]*:threads:" "$0"' "$tmp/out"

run --json --all
check "--json: exit 0" eq "$rc" 0
check "--json: valid JSON with the documented keys, a BTL's threads" perl -MJSON::PP -e '
    local $/; open my $f, "<", $ARGV[0] or die; my $d = decode_json(<$f>);
    die "schema" unless $d->{schema} eq "plexus.px_info/1";
    for my $k (qw(version mca_abi_version config paths frameworks variables failed)) { die "no $k" unless exists $d->{$k} }
    my ($v) = grep { $_->{name} eq "btl_self_eager_limit" } @{$d->{variables}};
    die "no variable" unless $v;
    for my $k (qw(name framework component value default source source_where probe_pending level type scope flags enum_values synonyms help)) { die "no var key $k" unless exists $v->{$k} }
    my ($btl) = grep { $_->{name} eq "btl" } @{$d->{frameworks}};
    die "no btl" unless $btl && grep { $_->{name} eq "self" && $_->{origin} eq "built-in" } @{$btl->{components}};
    my ($self) = grep { $_->{name} eq "self" } @{$btl->{components}};
    die "self threads: " . ($self->{threads} // "null") unless ($self->{threads} // "") eq "serialized";
    my ($boot) = grep { $_->{name} eq "boot" } @{$d->{frameworks}};
    for my $c (@{$boot->{components}}) { die "boot threads key" unless exists $c->{threads} && !defined $c->{threads} }
' "$tmp/out"
PX_MCA_btl_self_eager_limit=2k run --json --var btl_self_eager_limit
check "--json: environment source recorded" perl -MJSON::PP -e '
    local $/; open my $f, "<", $ARGV[0] or die; my $d = decode_json(<$f>);
    my $v = $d->{variables}[0];
    die "value $v->{value}" unless $v->{value} eq "2048" && $v->{source} eq "environment" && $v->{source_where} eq "PX_MCA_btl_self_eager_limit";
' "$tmp/out"

# Scopes (docs/px_info.md, "Scopes"): a priority is read when its framework
# opens and is set like any variable; px_info must not call it read-only.
out=$("$PX_INFO" --param coll basic --level 9 2>&1)
check "coll_basic_priority's scope is shown as startup" contains "$out" "scope: startup"
check "... not as read-only" eval '! grep -q "read-only" <<<"$out"'
out=$("$PX_INFO" --param coll basic --level 9 --parsable 2>&1)
check "--parsable: coll_basic_priority scope:startup, status:writeable" \
    sh -c 'echo "$1" | grep -qx "mca:coll:basic:param:coll_basic_priority:scope:startup" &&
           echo "$1" | grep -qx "mca:coll:basic:param:coll_basic_priority:status:writeable"' _ "$out"
out=$("$PX_INFO" --mca coll_basic_priority 42 --var coll_basic_priority --parsable 2>&1)
check "... and --mca sets it (value 42, source command line)" \
    sh -c 'echo "$1" | grep -qx "mca:coll:basic:param:coll_basic_priority:value:42" &&
           echo "$1" | grep -q "^mca:coll:basic:param:coll_basic_priority:source:command line"' _ "$out"
out=$("$PX_INFO" --all --level 9 --parsable 2>&1)
check "no variable's scope is printed as read-only (read-only is a flag, not a scope)" \
    eval '! grep -q ":scope:read-only$" <<<"$out"'
check "... the startup scope is there (mca_component_path)" \
    grep -qx "mca:mca:base:param:mca_component_path:scope:startup" <<<"$out"

tap_done
