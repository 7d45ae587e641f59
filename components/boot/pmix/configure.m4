# components/boot/pmix: a PMIx client (mpirun, srun --mpi=pmix, PRRTE); a plugin,
# so a machine without PMIx still runs the rest.
PX_OPTIONAL([pmix], [pmix], [pmix.h], [pmix], [PMIx_Init], [boot/pmix (PMIx launchers: mpirun, srun)])
PX_COMPONENT([boot], [pmix], [plugin], [pmix], [230])
# Where libpmix lives (Debian: a private folder, .../pmix2/lib, not searched by
# the loader): boot/pmix dlopen()s libpmix.so.2 from there when the loader's
# own search does not find it.
px_pmix_libdir=""
AS_IF([test "x$px_have_pmix" = xyes],
  [AS_IF([test "x$with_pmix" != xyes && test "x$with_pmix" != xauto],
     [AS_IF([test -e "$with_pmix/lib64/libpmix.so.2"], [px_pmix_libdir="$with_pmix/lib64"],
        [px_pmix_libdir="$with_pmix/lib"])],
     [px_pmix_libdir=`$PKG_CONFIG --variable=libdir pmix 2>/dev/null`])])
AC_SUBST([PX_PMIX_LIBDIR], [$px_pmix_libdir])
