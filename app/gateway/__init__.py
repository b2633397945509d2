"""Calls through the router: validate, forward to the tool's source, answer with its result
or a structured error; every forwarded call is a report on its route."""
