"""Event models: envelope, discriminated union, unknown fields, subjects, generated reference."""

from __future__ import annotations

import json

import pytest
from podtax import events, subjects
from pydantic import ValidationError


def run(**kw: object) -> events.RunSpec:
    base = {"run_id": "r1", "campaign": "c", "node": "node-1.example.com", "env": "host",
            "test": "sysbench-cpu", "params": {"threads": 1}}
    return events.RunSpec(**{**base, **kw})


def test_round_trip_each_type_through_the_union() -> None:
    e = events.run_requested(run(), "test")
    back = events.decode(events.encode(e))
    assert isinstance(back, events.RunRequestedV1)
    assert back == e


def test_subject_escapes_dots_in_node_names_and_payload_keeps_the_real_name() -> None:
    e = events.run_requested(run(), "test")
    assert e.subject == "podtax.run.requested.host.node-1~2Eexample~2Ecom"
    assert e.subject.count(".") == 4
    assert e.data.run.node == "node-1.example.com"
    assert subjects.unescape("node-1~2Eexample~2Ecom") == "node-1.example.com"


@pytest.mark.parametrize("name", ["a.b", "x*y", "a>b", "til~de", "sp ace", "~2E"])
def test_escape_is_reversible_and_yields_one_token(name: str) -> None:
    token = subjects.escape(name)
    assert "." not in token and "*" not in token and ">" not in token and " " not in token
    assert subjects.unescape(token) == name


def test_producers_forbid_extra_fields() -> None:
    with pytest.raises(ValidationError, match="Extra inputs"):
        run(surprise=1)


def test_consumers_ignore_unknown_fields() -> None:
    doc = json.loads(events.encode(events.run_requested(run(), "t")))
    doc["new_field"] = 1
    doc["data"]["run"]["added_later"] = "x"
    back = events.decode(json.dumps(doc))
    assert back.data.run.run_id == "r1"


def test_unknown_type_is_rejected() -> None:
    doc = json.loads(events.encode(events.run_requested(run(), "t")))
    doc["type"] = "podtax.run.requested.v9"
    with pytest.raises(ValidationError):
        events.decode(json.dumps(doc))


def test_models_are_frozen() -> None:
    r = run()
    with pytest.raises(ValidationError):
        r.node = "other"  # type: ignore[misc]


def test_env_is_checked() -> None:
    with pytest.raises(ValidationError):
        run(env="docker")


def test_reference_lists_every_type() -> None:
    text = events.reference_markdown()
    for cls in events.EVENT_TYPES:
        assert f"`{cls.model_fields['type'].default}`" in text


def test_score_key_is_stable_and_escaped() -> None:
    k1 = subjects.score_key("c1", "kubernetes", "n.1", "sysbench-cpu", "events_per_second", "threads=1")
    k2 = subjects.score_key("c1", "kubernetes", "n.1", "sysbench-cpu", "events_per_second", "threads=2")
    assert k1 != k2 and k1.startswith("c1.kubernetes.n=2E1.sysbench-cpu.events_per_second.")


def test_kv_tokens_are_valid_jetstream_keys() -> None:
    import re

    for name in ["ghcr.io/podtax/bench:0.1.0", "node-1.example.com", "ünïcode", "a=b", "x y"]:
        token = subjects.kv_token(name)
        assert re.fullmatch(r"[-_=A-Za-z0-9]+", token), token
    assert subjects.kv_token("a.b") != subjects.kv_token("a=b")
