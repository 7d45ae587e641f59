# components/boot/pmix: a PMIx client (mpirun, srun --mpi=pmix, PRRTE); a plugin,
# so a machine without PMIx still runs the rest.
PX_OPTIONAL([pmix], [pmix], [pmix.h], [pmix], [PMIx_Init], [boot/pmix (PMIx launchers: mpirun, srun)])
PX_COMPONENT([boot], [pmix], [plugin], [pmix], [230])
