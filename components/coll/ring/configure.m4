# components/coll/ring: pipelined ring collectives for large messages; needs nothing, linked into libplexus.
PX_COMPONENT([coll], [ring], [static], [], [330])
