"""The document checked by openapi-spec-validator, on the documents already loaded: the
validator resolves ``$ref``s from memory and never reaches the network or the disk."""

from __future__ import annotations

from typing import Any

from openapi_spec_validator import (
    OpenAPIV2SpecValidator,
    OpenAPIV30SpecValidator,
    OpenAPIV31SpecValidator,
)
from openapi_spec_validator.validation.validators import SpecValidator

from app.sources.documents import Documents, display

MAX_PROBLEMS = 20


def _validator_class(version: str) -> type[SpecValidator]:
    if version == "2.0":
        return OpenAPIV2SpecValidator
    return OpenAPIV30SpecValidator if version.startswith("3.0") else OpenAPIV31SpecValidator


def problems(documents: Documents, version: str) -> list[str]:
    """What the validator finds wrong with the document (the first ``MAX_PROBLEMS``)."""

    def loaded(uri: str) -> Any:
        document = documents.by_uri.get(uri.partition("#")[0])
        if document is None:
            raise LookupError(f"{display(uri)} was not loaded")
        return document

    handlers = {scheme: loaded for scheme in ("<all_urls>", "http", "https", "file")}
    base = _validator_class(version)
    checker = type("LoadedDocuments", (base,), {"resolver_handlers": handlers})
    found: list[str] = []
    try:
        for error in checker(documents.document, base_uri=documents.root).iter_errors():
            where = "/".join(str(p) for p in getattr(error, "absolute_path", ()))
            found.append(f"{where or '(document)'}: {str(error.message)[:300]}")
            if len(found) >= MAX_PROBLEMS:
                found.append("... (more problems not listed)")
                break
    except Exception as exc:  # a validator crash is a problem of the document, reported
        found.append(f"the validator stopped: {type(exc).__name__}: {str(exc)[:300]}")
    return found
