"""`python -m app.cli`: the same as `toolreach`."""

from app.cli.main import main

main()
