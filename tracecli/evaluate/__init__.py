"""eval: benchmark loaders, scoring and reports.

Modules, one job each: `metrics` (pure scoring functions), `pipeline` (the
shared ingest → build-graph → compile-wiki → ask run and its cost),
`baselines` (flat dense / BM25 / RRF retrieval), `judge` (LLM judges),
`locomo`, `updates`, `longmemeval` (one benchmark each), `results` (the report
shape) and `report` (tables and markdown).
"""
