"""The arguments a view declares with webargs ``use_args``/``use_kwargs``, for its tool schema.

webargs keeps no public record of a decorator's schema: it lives in the closure
of the wrapper it returns (``argmap`` and ``location``, plus the parser's default
location). This module reads it from there, through :func:`inspect.getclosurevars`,
and gives up quietly (the view is then described as a plain view) when a webargs
release stores it differently.
"""

from __future__ import annotations

import inspect
import typing as t

from ..schema.from_marshmallow import marshmallow_object_schema
from ..schema.from_marshmallow import marshmallow_schema

#: webargs locations and where their arguments go in the tool's input.
PLACES = {"query": "query", "querystring": "query", "json": "body", "json_or_form": "body"}


def declared_arguments(view: t.Any) -> list[tuple[str, dict[str, t.Any]]]:
    """Return the (webargs location, JSON Schema) of each ``use_args`` on ``view``'s chain."""
    found: list[tuple[str, dict[str, t.Any]]] = []
    seen: set[int] = set()
    current = view
    while callable(current) and id(current) not in seen:
        seen.add(id(current))
        try:
            names = inspect.getclosurevars(current).nonlocals
        except (TypeError, ValueError):
            names = {}
        if "argmap" in names and "location" in names:
            parser = names.get("self")
            location = names["location"] or getattr(parser, "location", "json")
            schema = marshmallow_schema(names["argmap"])
            if schema is not None and location in PLACES:
                found.append((location, marshmallow_object_schema(schema, load=True)))
        current = getattr(current, "__wrapped__", None)
    return found


def add_declared_arguments(view: t.Any, schema: dict[str, t.Any], places: dict[str, str]) -> bool:
    """Add the webargs arguments of ``view`` to a plain view's schema; tell whether any were found.

    Query arguments become top-level arguments (the free-form ``query`` object
    goes); a JSON body schema replaces the free-form ``body``.
    """
    declared = declared_arguments(view)
    properties = schema["properties"]
    required: list[str] = list(schema.get("required", []))
    for location, declared_schema in declared:
        if PLACES[location] == "query":
            properties.pop("query", None)
            places.pop("query", None)
            for name, value in declared_schema.get("properties", {}).items():
                properties[name], places[name] = value, "query"
            required += declared_schema.get("required", [])
        else:
            properties["body"], places["body"] = declared_schema, "body"
            if declared_schema.get("required"):
                required.append("body")
    if required:
        schema["required"] = list(dict.fromkeys(required))
    return bool(declared)


__all__ = ["add_declared_arguments", "declared_arguments"]
