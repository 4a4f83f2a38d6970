"""Ingestion: loaders per format, chunking, and the pipeline that writes catalog and store."""
