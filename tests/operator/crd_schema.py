"""Offline validation of odradek resources against the CRDs' ``openAPIV3Schema`` (shared by
the CRD tests and the Helm chart tests).

A real OpenAPI 3.0 validator (openapi-schema-validator); Kubernetes' extensions are translated
to their OpenAPI meaning first (``x-kubernetes-int-or-string`` → integer or string). CEL rules
(``x-kubernetes-validations``) need an API server: ``test_api_server.py`` covers them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from openapi_schema_validator import OAS30Validator, oas30_format_checker

REPO = Path(__file__).resolve().parents[2]
CRDS: dict[str, dict[str, Any]] = {
    doc["spec"]["names"]["kind"]: doc
    for path in sorted((REPO / "crds").glob("*.yaml"))
    for doc in [yaml.safe_load(path.read_text())]}


#: The version the API server stores; the operator and the examples use it.
STORAGE_VERSION = "v1beta1"


def version_of(kind: str, version: str = STORAGE_VERSION) -> dict[str, Any]:
    """The ``spec.versions`` entry named ``version`` of the CRD of ``kind``."""
    (entry,) = [v for v in CRDS[kind]["spec"]["versions"] if v["name"] == version]
    return dict(entry)


def schema_of(kind: str, version: str = STORAGE_VERSION) -> dict[str, Any]:
    schema: dict[str, Any] = version_of(kind, version)["schema"]["openAPIV3Schema"]
    return schema


def openapi(schema: Any) -> Any:
    if isinstance(schema, dict):
        out = {k: openapi(v) for k, v in schema.items()
               if not k.startswith("x-kubernetes-")}
        if schema.get("x-kubernetes-int-or-string"):
            out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
        return out
    if isinstance(schema, list):
        return [openapi(v) for v in schema]
    return schema


def errors(kind: str, obj: dict[str, Any]) -> list[str]:
    """Schema violations of ``obj`` (an odradek resource of ``kind``), sorted; [] when valid."""
    validator = OAS30Validator(openapi(schema_of(kind)), format_checker=oas30_format_checker)
    return sorted(e.message for e in validator.iter_errors(obj))
