"""Rate limits per client and per key, counted in memory and shared through the database."""
