"""How much work one process takes at once: a few slots per kind of expensive request
(``slots.py``), and the limits on the server's connections (``connections.py``)."""
