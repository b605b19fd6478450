"""The extension seam, re-exported for the Apps extension written before it landed (issue 27)."""

from ...kernel.extension import Extension as Extension

__all__ = ["Extension"]
