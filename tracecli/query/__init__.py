"""ask and trace: state-aware query processing with provenance."""
