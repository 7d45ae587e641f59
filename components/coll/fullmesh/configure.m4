# components/coll/fullmesh: direct-exchange and recursive-doubling collectives; needs nothing, linked into libplexus.
PX_COMPONENT([coll], [fullmesh], [static], [], [320])
