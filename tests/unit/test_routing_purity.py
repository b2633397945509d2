"""The ranking core is pure: importing it pulls in no web framework, ORM or model library."""

from __future__ import annotations

import subprocess
import sys

FORBIDDEN = {
    "fastapi",
    "starlette",
    "sqlalchemy",
    "alembic",
    "pydantic",
    "psycopg",
    "torch",
    "sentence_transformers",
    "onnxruntime",
    "registry",
}


def test_app_routing_imports_no_framework_orm_or_model() -> None:
    code = "import sys, app.routing;print(' '.join(sorted({m.split('.')[0] for m in sys.modules})))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert not FORBIDDEN & set(out.stdout.split())
