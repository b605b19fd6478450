"""pydantic models as tool parameters and results.

Imported only when a handler's annotations name a pydantic model, so pydantic is
already loaded; nothing here imports it for the rest of the package.

- As a parameter, the property's schema is the model's validation JSON Schema
  (nested models under the tool schema's ``$defs``); the argument is checked
  against it, then validated by the model, and the tool receives an instance.
- As a result, the output schema is the model's serialization JSON Schema and
  ``structuredContent`` is ``model_dump(mode="json", by_alias=True)``.
"""

from __future__ import annotations

import sys
import typing as t

from .validation import ConversionError
from .validation import _Convert

if t.TYPE_CHECKING:
    import pydantic


def model_schema(model: type[pydantic.BaseModel], output: bool) -> dict[str, t.Any]:
    """The JSON Schema of ``model``, for validation or (``output``) for serialization.

    A recursive model's schema is a ``$ref`` into ``$defs``; it gets ``"type":
    "object"`` beside it when the model is an object, as MCP asks of output schemas.

    :raises TypeError: pydantic cannot describe the model in JSON Schema.
    """
    try:
        schema = model.model_json_schema(mode="serialization" if output else "validation")
    except (TypeError, ValueError) as e:
        raise TypeError(f"Cannot describe {model.__qualname__} in JSON Schema: {e}") from None
    ref = schema.get("$ref")
    if "type" not in schema and isinstance(ref, str) and ref.startswith("#/$defs/"):
        target = schema.get("$defs", {}).get(ref.removeprefix("#/$defs/"), {})
        if isinstance(target, dict) and target.get("type") == "object":
            schema = {"type": "object", **schema}
    return schema


def model_validator(model: type[pydantic.BaseModel]) -> _Convert:
    """A function validating JSON data with ``model``; errors name the failing fields."""
    error_class: type[Exception] = sys.modules["pydantic_core"].ValidationError

    def validate(value: t.Any) -> pydantic.BaseModel:
        try:
            return model.model_validate(value)
        except error_class as exc:
            errors = exc.errors(include_url=False)  # type: ignore[attr-defined]
            raise ConversionError(
                [(tuple(error.get("loc", ())), str(error.get("msg", ""))) for error in errors]
            ) from None

    return validate


__all__ = [
    "model_schema",
    "model_validator",
]
