"""build-graph: TRACE's temporal evidence graph (extract, link, hierarchy, validity)."""
