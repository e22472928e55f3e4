"""The template registry: only registered templates, bounded parameters, argv never a shell string."""

from __future__ import annotations

import pytest
from podtax import templates


@pytest.mark.parametrize(
    ("test", "params", "reason"),
    [
        ("rm", {}, "unknown-template"),
        ("sysbench-cpu", {"threads": 0}, "invalid-params"),
        ("sysbench-cpu", {"threads": 5000}, "invalid-params"),
        ("sysbench-cpu", {"max_prime": -1}, "invalid-params"),
        ("sysbench-cpu", {"cmd": "rm -rf /"}, "invalid-params"),
        ("sysbench-memory", {"block_size": "1K; rm -rf /"}, "invalid-params"),
        ("stress-ng-cpu", {"method": "--exec"}, "invalid-params"),
        ("hdparm", {"device": "/dev/../etc/passwd"}, "invalid-params"),
        ("hdparm", {"device": "/etc/passwd"}, "invalid-params"),
        ("fio", {"rw": "trim"}, "invalid-params"),
        ("sysbench-cpu", {"threads": "all"}, "unresolved-threads"),
        ("volume-churn", {}, "not-host-executable"),
    ],
)
def test_refusals_have_a_reason(test: str, params: dict, reason: str) -> None:
    with pytest.raises(templates.TemplateError) as info:
        templates.get(test).build_argv(params, "/tmp")
    assert info.value.reason == reason
    assert info.value.detail


def test_stress_ng_cpu_method_is_one_stress_ng_knows() -> None:
    """A method stress-ng does not have is refused when validated, naming the field and the valid ones,
    not on the host at run time ("cpu-method must be one of: ...")."""
    template = templates.get("stress-ng-cpu")
    with pytest.raises(templates.TemplateError) as info:
        template.validate({"method": "bogus"})
    assert (info.value.reason, info.value.field) == ("invalid-params", "method")
    assert info.value.detail.startswith("stress-ng-cpu: method: ")
    assert all(f"'{m}'" in info.value.detail for m in ("all", "matrixprod", "int8", "zeta"))
    for method in ("all", "matrixprod", "int128decimal128", "zeta"):
        assert template.build_argv({"method": method, "threads": 1})[4] == method


def test_unknown_template_lists_the_registered_ones() -> None:
    with pytest.raises(templates.TemplateError, match="sysbench-cpu"):
        templates.get("nope")


@pytest.mark.parametrize(
    ("test", "params", "argv"),
    [
        ("sysbench-cpu", {"threads": 2, "max_prime": 100000, "events": 10000, "time": 0},
         ["sysbench", "cpu", "--cpu-max-prime=100000", "--events=10000", "--time=0", "--threads=2", "run"]),
        ("sysbench-memory", {"operation": "write", "block_size": "1M", "total_size": "10G", "time": 5},
         ["sysbench", "memory", "--memory-oper=write", "--memory-block-size=1M", "--memory-total-size=10G",
          "--time=5", "--threads=1", "run"]),
        ("stress-ng-cpu", {"threads": 4, "method": "matrixprod", "timeout": 3},
         ["stress-ng", "--cpu", "4", "--cpu-method", "matrixprod", "--timeout", "3s", "--metrics-brief"]),
        ("hdparm", {"mode": "disk", "device": "/dev/nvme0n1"}, ["hdparm", "-t", "/dev/nvme0n1"]),
    ],
)
def test_argv(test: str, params: dict, argv: list[str]) -> None:
    assert templates.get(test).build_argv(params, "/tmp") == argv


def test_argv_is_a_list_of_plain_strings() -> None:
    for t in templates.REGISTRY.values():
        if t.host_executable:
            argv = t.build_argv({}, "/tmp/work")
            assert isinstance(argv, list) and all(isinstance(a, str) for a in argv)


def test_resolve_threads_all() -> None:
    assert templates.resolve_threads({"threads": "all", "events": 5}, 8) == {"threads": 8, "events": 5}
    assert templates.resolve_threads({"threads": 2}, 8) == {"threads": 2}


def test_params_key_is_order_independent() -> None:
    assert templates.params_key({"b": 1, "a": True}) == templates.params_key({"a": True, "b": 1}) == "a=true b=1"
    # cached, yet True, 1 and 1.0 (equal as cache keys) keep their own text; an unhashable value works
    assert [templates.params_key({"a": v}) for v in (True, 1, 1.0, "1")] == ["a=true", "a=1", "a=1.0", "a=1"]
    assert templates.params_key({"a": [1, 2]}) == "a=[1, 2]"


def test_parse_params() -> None:
    assert templates.parse_params("threads=1 max_prime=100000") == {"threads": 1, "max_prime": 100000}
    with pytest.raises(ValueError, match="key=value"):
        templates.parse_params("threads")
