# components/coll/sm: collectives through shared segments for groups on one host; needs nothing, linked into libplexus.
PX_COMPONENT([coll], [sm], [static], [], [340])
