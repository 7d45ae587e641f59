#!/usr/bin/env bash
# What a plugin author meets (issue 11): adding a plugin folder without
# losing the default path (mca_component_path_prepend), a component whose
# open fails listed by px_info --show-failed, a plugin missing from the path
# reported with the folders searched, --param at a level that hides every
# variable, refused plugins not offered as "here", and no "closed" message
# for a component that was never opened.
# Environment from test/run-tests.sh: PX_BUILD (build tree), PX_SRC (source tree).
set -u
. "${PX_SRC:?}/test/lib/tap.sh"
PX_INFO=$PX_BUILD/tools/px_info/px_info
tmp=$(mktemp -d)
trap 'chmod -R u+w "$tmp"; rm -rf "$tmp"' EXIT
export HOME=$tmp/home PX_SYSCONFDIR=$tmp/etc
mkdir -p "$HOME" "$PX_SYSCONFDIR" "$tmp/noplugins" "$tmp/mine"
while IFS= read -r v; do unset "$v"; done < <(env | sed -n 's/^\(PX_MCA_[^=]*\)=.*/\1/p')

run() {
    "$PX_INFO" "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    out=$(cat "$tmp/out")
    err=$(cat "$tmp/err")
    flat=$(tr -s ' \n' '  ' <"$tmp/out")
    eflat=$(tr -s ' \n' '  ' <"$tmp/err")
}
eq() { [ "$1" = "$2" ] || { echo "# expected \"$2\", got \"$1\"" >&2; return 1; }; }
lacks() { case "$1" in *"$2"*) echo "# did not expect: $2" >&2; return 1 ;; *) return 0 ;; esac; }

failopen=$PX_BUILD/test/runtime/.libs/plexus_btl_failopen.so
good=$PX_BUILD/test/mca/.libs/plexus_ptest_good.so
check "test plugins are built" test -f "$failopen" -a -f "$good"
plugindir=$(sed -n 's/^#define PX_PLUGIN_DIR "\(.*\)"/\1/p' "$PX_BUILD/config.h")
[ -n "$plugindir" ] || plugindir=$("$PX_INFO" --path pkglibdir | sed 's/.*: //')

# --- 1. mca_component_path_prepend adds folders and keeps the default path
mkdir -p "$HOME/.plexus/components"
cp "$failopen" "$HOME/.plexus/components/plexus_btl_failopen.so"
cp "$good" "$tmp/mine/plexus_ptest_good.so" # any plugin file: listed by name
cp "$failopen" "$tmp/mine/plexus_btl_failopen2.so"
chmod 0755 "$tmp/mine" "$tmp/mine"/*.so "$HOME/.plexus/components"/*.so
PX_MCA_mca_component_path_prepend=$tmp/mine run --path component_path --parsable
check "prepend: exit 0" eq "$rc" 0
check "prepend: not an unknown variable" lacks "$err" "unknown variable"
check "prepend: searched first, then the default path" \
    eq "$out" "path:component_path:$tmp/mine:$plugindir:$HOME/.plexus/components"
PX_MCA_mca_component_path_prepend=$tmp/mine run --show-failed
check "prepend: a plugin of a default folder is still found (~/.plexus/components)" \
    contains "$flat" "Failed btl failopen: open failed:"
check "prepend: a plugin of the prepended folder is found too" \
    contains "$flat" "Failed btl failopen2: does not export the symbol px_btl_failopen2_component"
PX_MCA_mca_component_path_prepend=$tmp/nowhere run
check "prepend: a folder that does not exist is warned about, naming the variable" \
    contains "$eflat" "plugin folder $tmp/nowhere (in mca_component_path_prepend, set by environment PX_MCA_mca_component_path_prepend) does not exist"
rm -f "$HOME/.plexus/components"/*.so "$tmp/mine"/*.so

# --- 2. a component whose open fails: px_info --show-failed lists it
export PX_MCA_mca_component_path=$tmp/mine
cp "$failopen" "$tmp/mine/"
chmod 0755 "$tmp/mine/plexus_btl_failopen.so"
run --show-failed
check "failed open: exit 0" eq "$rc" 0
check "failed open: listed with the reason" contains "$flat" "Failed btl failopen: open failed: "
check "failed open: with its file" contains "$flat" "file: $tmp/mine/plexus_btl_failopen.so"
run --all
check "failed open: --all's listing says so" contains "$flat" "failopen (plugin, open failed: see px_info --show-failed)"
run --all --parsable
check "failed open: --parsable" contains "$out" "failed:btl:failopen:reason:open failed: "
check "failed open: --parsable state" contains "$out" "mca:btl:failopen:state:failed"
run --json
check "failed open: --json lists it under failed" perl -MJSON::PP -e '
    local $/; open my $f, "<", $ARGV[0] or die; my $d = decode_json(<$f>);
    die "not failed" unless grep { $_->{component} eq "failopen" && $_->{reason} =~ /^open failed/ } @{$d->{failed}};
    my ($btl) = grep { $_->{name} eq "btl" } @{$d->{frameworks}};
    die "state" unless grep { $_->{name} eq "failopen" && $_->{state} eq "failed" } @{$btl->{components}};
' "$tmp/out"
run
check "the default listing does not open components" contains "$flat" "failopen (MCA ABI"
check "... nor say anything is wrong" eq "$err" ""

# --- 5b. a component never opened is not said to be closed
PX_MCA_btl_base_verbose=10 run
check "verbose 10 without opening: nothing 'closed'" lacks "$err" "component self closed"
check "verbose 10 without opening: released, never opened" \
    contains "$err" "component self released (it was registered, never opened)"
PX_MCA_btl_base_verbose=10 run --show-failed
check "verbose 10 with --show-failed: opened, then closed" contains "$err" "component self closed"
rm -f "$tmp/mine"/*.so

# --- 3. a plugin missing from the path: the file and the folders searched
export PX_MCA_mca_component_path=$tmp/noplugins:$tmp/gone
run --mca btl example
check "missing plugin: exit 1" eq "$rc" 1
check "missing plugin: no 'not built' claim" lacks "$err" "not built"
check "missing plugin: names the file looked for" \
    contains "$err" "example: not found: no built-in component of that name, and no file plexus_btl_example.so in the plugin folders searched"
check "missing plugin: lists the folders searched" \
    contains "$err" "plugin folders searched, mca_component_path_prepend then mca_component_path: $tmp/noplugins, $tmp/gone (does not exist))"

# --- 5a. a refused plugin is not offered among the components here
cp "$good" "$tmp/mine/plexus_btl_fake.so"
chmod 0755 "$tmp/mine/plexus_btl_fake.so"
export PX_MCA_mca_component_path=$tmp/mine
run --mca btl self,fake,tcp
check "refused plugin: exit 1" eq "$rc" 1
check "refused plugin: components here are the usable ones" contains "$err" "(btl components here: self, shm;"
check "refused plugin: not among them" sh -c '! grep "components here" "$1" | grep -q fake' _ "$tmp/err"
run --mca btl fake
check "a refused plugin named in the list still says why" contains "$err" "fake: refused: does not export the symbol"
rm -f "$tmp/mine"/*.so
export PX_MCA_mca_component_path=$tmp/noplugins

# --- 4. --param at a level that hides every variable
run --param boot singleton
check "hidden variables: exit 0" eq "$rc" 0
check "hidden variables: nothing on stdout" eq "$out" ""
check "hidden variables: says how many and the exact option" \
    contains "$err" "px_info: note: no boot singleton variable is at info level 1 or below; 1 is at levels up to 9: px_info --param boot singleton --level 9 shows it"
run --param boot singleton --level 9
check "... and that option shows it" contains "$out" 'parameter "boot_singleton_priority"'
check "... with no note" eq "$err" ""
run --param btl all --level 2
check "some variables hidden: the one at level 2 is shown" contains "$out" 'parameter "btl"'
check "some variables hidden: the note counts the rest" \
    contains "$err" "more btl variables are at info levels above 2: px_info --param btl all --level 8 shows all"
tap_done
