# components/registry/pmix: names through the PMIx launcher's publish/lookup
# (Open MPI's mpirun and its ompi-server, PRRTE); a plugin, built when PMIx's
# development files are found (the same check as boot/pmix, made once).
PX_OPTIONAL([pmix], [pmix], [pmix.h], [pmix], [PMIx_Init], [boot/pmix (PMIx launchers: mpirun, srun)])
PX_COMPONENT([registry], [pmix], [plugin], [pmix], [440])
