"""The servers the benchmarks drive: Flask-MCP, the bare-Flask floor and the official SDK."""
