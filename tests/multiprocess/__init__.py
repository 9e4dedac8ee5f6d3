"""Suites that start multi-process jobs on 127.0.0.1 (they need the CPU plugin)."""
