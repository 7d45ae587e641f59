# components/coll/basic: linear and binomial collectives, the fallback; needs nothing, linked into libplexus.
PX_COMPONENT([coll], [basic], [static], [], [310])
