"""Describe and check the JSON data that MCP tools take and return.

A tool publishes an ``inputSchema`` and may publish an ``outputSchema``. The schemas
come from the handler's type hints, from a marshmallow schema, or from a JSON Schema
given as is. An :class:`InputSpec` checks call arguments against its schema and returns
the values to call the handler with; an :class:`OutputSpec` turns the handler's return
value into ``structuredContent``.

How type hints map to JSON Schema is described in :mod:`flask_mcp.schema.types`.
"""

from __future__ import annotations

from .inputs import input_spec
from .inputs import input_spec_from_function
from .inputs import input_spec_from_json_schema
from .inputs import input_spec_from_marshmallow
from .output import OutputError
from .output import OutputSpec
from .output import output_spec_from_function
from .output import output_spec_from_schema
from .types import param_docs
from .validation import ArgumentError
from .validation import ConversionError
from .validation import InputSpec
from .validation import argument_error
from .validation import compile_validator
from .validation import validate_arguments

__all__ = [
    "ArgumentError",
    "ConversionError",
    "InputSpec",
    "OutputError",
    "OutputSpec",
    "argument_error",
    "compile_validator",
    "input_spec",
    "input_spec_from_function",
    "input_spec_from_json_schema",
    "input_spec_from_marshmallow",
    "output_spec_from_function",
    "output_spec_from_schema",
    "param_docs",
    "validate_arguments",
]
