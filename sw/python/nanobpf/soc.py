"""The SoC definitions generated from hw/defs/soc.toml (see docs/memory-map.md)."""
try:
    from nanobpf_soc import *  # noqa: F401,F403
    from nanobpf_soc import REGIONS, REGS, reg_addr, reg_offset  # noqa: F401
except ImportError as e:  # pragma: no cover - only without `make defs`
    raise ImportError("nanobpf_soc is not generated yet: run `make defs`") from e
