"""The extension seam, re-exported for the extensions written before it landed (issue 27)."""

from ..kernel.extension import EXTENSION_ID as EXTENSION_ID
from ..kernel.extension import Extension as Extension
from ..kernel.extension import MethodSpec as MethodSpec

__all__ = ["EXTENSION_ID", "Extension", "MethodSpec"]
