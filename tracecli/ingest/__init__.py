"""Ingest: input formats → conversations; notes, embeddings, FTS."""

from tracecli.ingest.formats import FORMATS, parse_file
from tracecli.ingest.pipeline import IngestResult, ingest_parsed, parse_inputs

__all__ = ["FORMATS", "parse_file", "IngestResult", "ingest_parsed", "parse_inputs"]
