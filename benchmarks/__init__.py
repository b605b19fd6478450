"""Flask-MCP benchmarks: throughput, latency and memory against a bare-Flask floor and the official SDK.

Run ``python -m benchmarks --help``; ``benchmarks/README.md`` explains every benchmark.
"""
