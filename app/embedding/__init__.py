"""Sentence encoders, batching of model calls, and the cosine products."""
