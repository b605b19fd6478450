"""Flask-MCP benchmarks: throughput, latency and memory, next to a bare-Flask floor and the SDK.

Run ``python -m benchmarks --help``; ``benchmarks/README.md`` explains every benchmark.
"""
