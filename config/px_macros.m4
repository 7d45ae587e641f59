# px_macros.m4: the macros component fragments (components/<fw>/<name>/configure.m4)
# call, and the ones configure.ac uses to turn what the fragments decided into
# the component lists, core/mca/static_components.c and configure's summary.
# autogen.sh writes config/px_components.m4, which includes every fragment
# between PX_FRAGMENT_BEGIN and PX_FRAGMENT_END; see docs/writing-a-component.md.

# PX_OPTIONAL(name, pkg-config-module, header, library, function, what-it-enables)
# Honours --with-name[=DIR] / --without-name; sets px_have_<name> (yes/no),
# NAME_CFLAGS, NAME_LIBS, the PX_HAVE_<NAME> define and automake conditional,
# and px_why_<name> (the reason when it is not found). Each fragment that uses
# a library checks for it itself: the first call for a name does the check,
# later calls for the same name (another fragment's) expand to nothing, since
# the result is already known by then.
AC_DEFUN([PX_OPTIONAL], [m4_ifdef([PX_OPTIONAL_DONE_$1], [], [m4_define([PX_OPTIONAL_DONE_$1], [1])
  AC_ARG_WITH([$1], [AS_HELP_STRING([--with-$1@<:@=DIR@:>@], [$6 (default: auto-detect)])],
    [], [with_$1=auto])
  px_have_$1=no
  px_why_$1=""
  AS_IF([test "x$with_$1" = xno], [px_why_$1="disabled by --without-$1"], [
    px_save_CPPFLAGS=$CPPFLAGS; px_save_LIBS=$LIBS; px_save_LDFLAGS=$LDFLAGS
    AS_IF([test "x$with_$1" != xyes && test "x$with_$1" != xauto],
      [m4_toupper($1)_CFLAGS="-I$with_$1/include"
       m4_toupper($1)_LIBS="-L$with_$1/lib -L$with_$1/lib64 -l$4"],
      [PKG_CHECK_MODULES(m4_toupper($1), [$2], [], [m4_toupper($1)_LIBS="-l$4"])])
    CPPFLAGS="$CPPFLAGS $m4_toupper($1)_CFLAGS"
    LIBS="$m4_toupper($1)_LIBS $LIBS"
    AC_CHECK_HEADER([$3],
      [AC_MSG_CHECKING([for $5 in $4])
       AC_LINK_IFELSE([AC_LANG_CALL([], [$5])],
         [px_have_$1=yes; AC_MSG_RESULT([yes])],
         [AC_MSG_RESULT([no]); px_why_$1="$4 found but $5 does not link"])],
      [px_why_$1="$3 not found (install the $2 development package or use --with-$1=DIR)"])
    CPPFLAGS=$px_save_CPPFLAGS; LIBS=$px_save_LIBS; LDFLAGS=$px_save_LDFLAGS
    AS_IF([test "x$px_have_$1" = xno && test "x$with_$1" != xauto],
      [AC_MSG_ERROR([--with-$1 was given but $px_why_$1])])
  ])
  AS_IF([test "x$px_have_$1" = xyes],
    [AC_DEFINE(m4_toupper(PX_HAVE_$1), [1], [$6])],
    [m4_toupper($1)_CFLAGS=""; m4_toupper($1)_LIBS=""])
  AC_SUBST(m4_toupper($1)_CFLAGS)
  AC_SUBST(m4_toupper($1)_LIBS)
  AM_CONDITIONAL(m4_toupper(PX_HAVE_$1), [test "x$px_have_$1" = xyes])
])])

# PX_FRAGMENT_BEGIN(framework, name) / PX_FRAGMENT_END(framework, name):
# around each m4_include of components/<fw>/<name>/configure.m4 in
# config/px_components.m4 (autogen.sh writes them); the end checks that the
# fragment declared exactly its own component with PX_COMPONENT.
AC_DEFUN([PX_FRAGMENT_BEGIN], [m4_define([PX_FRAGMENT_EXPECTED], [$1/$2])])
AC_DEFUN([PX_FRAGMENT_END], [
  m4_ifdef([PX_COMPONENT_DECLARED_$1_$2], [],
    [m4_fatal([components/$1/$2/configure.m4 declares no component: it must call PX_COMPONENT with [$1], [$2]])])
  m4_undefine([PX_FRAGMENT_EXPECTED])
])

# PX_COMPONENT(framework, name, kind, [requires], [order])
#   kind      static (linked into libplexus) or plugin (plexus_<fw>_<name>.la,
#             loaded with libltdl)
#   requires  space-separated names whose px_have_<x> must be "yes" for the
#             component to be built (PX_OPTIONAL sets them; a fragment's own
#             shell check may set px_have_<x> and px_why_<x> too); empty: none
#   order     a number placing the component in the lists px_info prints and in
#             configure's summary (lower first, ties by framework:name); default 500
# Records the decision for PX_COMPONENTS_OUTPUT and defines the automake
# conditional PX_BUILD_<FW>_<NAME> (true when the component is built). A
# fragment may set px_note_<fw>_<name> to add a note to its summary line.
AC_DEFUN([PX_COMPONENT], [
  m4_bmatch([$1:$2], [^[a-z][a-z0-9_]*:[a-z][a-z0-9_]*$], [],
    [m4_fatal([PX_COMPONENT($1, $2): framework and name must be lower-case identifiers])])
  m4_ifdef([PX_FRAGMENT_EXPECTED],
    [m4_if(PX_FRAGMENT_EXPECTED, [$1/$2], [],
      [m4_fatal([components/]PX_FRAGMENT_EXPECTED[/configure.m4 declares PX_COMPONENT($1, $2): ]dnl
[a fragment declares the component of its own folder])])])
  m4_ifdef([PX_COMPONENT_DECLARED_$1_$2],
    [m4_fatal([PX_COMPONENT($1, $2) is declared twice])])
  m4_define([PX_COMPONENT_DECLARED_$1_$2], [1])
  m4_case([$3], [static], [], [plugin], [],
    [m4_fatal([PX_COMPONENT($1, $2): kind "$3" is neither static nor plugin])])
  m4_bmatch([$5], [^[0-9]*$], [],
    [m4_fatal([PX_COMPONENT($1, $2): order "$5" is not a number])])
  px_comp_ok=yes
  px_comp_why=""
  m4_foreach_w([px_req], [$4], [
  AS_IF([test -z "$px_have_]px_req["],
    [AC_MSG_ERROR([component $1/$2 requires "]px_req[" but nothing set px_have_]px_req[ (declare it in components/$1/$2/configure.m4 with PX@&t@_OPTIONAL(]px_req[, ...) before PX@&t@_COMPONENT)])])
  AS_IF([test "x$px_comp_ok" = xyes && test "x$px_have_]px_req[" != xyes],
    [px_comp_ok=no; px_comp_why=$px_why_]px_req)])
  px_comp_order=m4_default([$5], [500])
  AS_IF([test "x$px_comp_ok" = xyes],
    [m4_if([$3], [static],
      [px_comp_static="$px_comp_static $px_comp_order:$1:$2"; px_comp_state="built-in"],
      [px_comp_plugins="$px_comp_plugins $px_comp_order:$1:$2"; px_comp_state="plugin"])],
    [px_comp_not_built="$px_comp_not_built $px_comp_order:$1:$2"
     px_comp_state="not built: $px_comp_why"])
  AS_IF([test -n "$px_note_$1_$2"], [px_comp_state="$px_comp_state; $px_note_$1_$2"])
  px_comp_summary="$px_comp_summary
$px_comp_order:$1:$2:$px_comp_state"
  AM_CONDITIONAL(m4_toupper([PX_BUILD_$1_$2]), [test "x$px_comp_ok" = xyes])
])

# PX_COMPONENTS: read config/px_components.m4 (written by autogen.sh: an
# m4_include of each components/<fw>/<name>/configure.m4), then sort what
# the fragments decided by order and framework:name and define
# PX_STATIC_COMPONENTS_STR, PX_PLUGIN_COMPONENTS_STR and
# PX_NOT_BUILT_COMPONENTS_STR ("fw:name fw:name ..."), the generation of
# core/mca/static_components.c, and px_components_summary (one line each, for
# configure's summary).
AC_DEFUN([PX_COMPONENTS], [
  px_comp_static=""; px_comp_plugins=""; px_comp_not_built=""; px_comp_summary=""
  m4_sinclude([config/px_components.m4])
  m4_ifdef([PX_COMPONENTS_SCANNED], [],
    [m4_fatal([config/px_components.m4 is missing: run ./autogen.sh, which scans components/*/*/configure.m4 and writes it])])
  # "order:fw:name ..." -> "fw:name fw:name" in order
  px_comp_sorted() {
    for px_c in $[]1; do echo "$px_c"; done | sort -t: -k1,1n -k2,2 -k3,3 | cut -d: -f2- | tr '\n' ' ' | sed 's/ $//'
  }
  px_static=`px_comp_sorted "$px_comp_static"`
  px_plugins=`px_comp_sorted "$px_comp_plugins"`
  px_not_built=`px_comp_sorted "$px_comp_not_built"`
  AS_IF([test -z "$px_static"],
    [AC_MSG_ERROR([no built-in component: config/px_components.m4 lists none (run ./autogen.sh, which scans components/*/*/configure.m4)])])
  AC_DEFINE_UNQUOTED([PX_STATIC_COMPONENTS_STR], ["$px_static"], [built-in components])
  AC_DEFINE_UNQUOTED([PX_PLUGIN_COMPONENTS_STR], ["$px_plugins"], [plugin components built])
  AC_DEFINE_UNQUOTED([PX_NOT_BUILT_COMPONENTS_STR], ["$px_not_built"], [components configure skipped])
  # One summary line per component, "  fw/name ....... state", in order.
  px_components_summary=`echo "$px_comp_summary" | sed '/^$/d' | sort -t: -k1,1n -k2,2 -k3,3 |
    while IFS=: read px_o px_f px_n px_s; do
      px_l="$px_f/$px_n ......................"
      printf '  %.22s %s\n' "$px_l" "$px_s"
    done`
  AC_CONFIG_COMMANDS([static-components], [
    out=core/mca/static_components.c
    # (a build folder without dependency tracking has no core/mca/ yet)
    AS_MKDIR_P([core/mca])
    {
      echo "/* Generated by configure from the components' configure.m4 fragments:"
      echo " * the components linked into libplexus. */"
      echo "#include \"core/mca/component.h\""
      echo "#include <stddef.h>"
      for c in $px_static; do
        echo "extern const px_mca_component_t px_${c%%:*}_${c##*:}_component;"
      done
      echo "const px_mca_component_t *const px_mca_static_components[[]] = {"
      for c in $px_static; do
        echo "    &px_${c%%:*}_${c##*:}_component,"
      done
      echo "    NULL,"
      echo "};"
    } > $out.tmp
    if cmp -s $out.tmp $out; then rm -f $out.tmp; else mv $out.tmp $out; fi
  ], [px_static="$px_static"])
])
