"""API keys: who is calling, with which role, and which namespaces the key may see.

``scope.py`` holds the caller and the one scope rule; ``store.py`` the keys in memory (from
the environment and the table), refreshed on every replica; ``models.py``, ``repository.py``
and ``service.py`` the table the admin API (``/v1/keys``) manages.
"""
