"""The `toolreach` command line."""

from app.cli.main import main

__all__ = ["main"]
