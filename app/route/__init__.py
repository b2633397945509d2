"""Routing one agent step: the one entry point, and the executor that batches steps."""
