"""The campaign file (YAML): what to run, where, in which environments, how many times.

Validated by pydantic; every error names the field and the line in the file:
``campaign.yaml:12: tests.0.params.threads: threads must be between 1 and 1024, or 'all'``.
The YAML itself (its problems, repeated keys, an error's line) is read with podtax.campaign_yaml.
"""

from __future__ import annotations

import itertools
import os
import re
import stat
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from podtax import campaign_limits, campaign_yaml, k8s_syntax, templates
from podtax.campaign_warnings import run_lengths
from podtax.campaign_warnings import warnings as warnings  # re-exported: campaign.warnings(c)
from podtax.config import NODE_PATTERN, capitals_problem
from podtax.template_params import length_problem

Env = Literal["host", "kubernetes", "nomad"]
DEVICE = Annotated[str, Field(pattern=r"^/dev/[A-Za-z0-9_-]+(/[A-Za-z0-9_-]+)*$")]
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)(s|m|h)$")
NAME_PATTERN = r"^[a-z0-9]([-a-z0-9]{0,48}[a-z0-9])?$"  # a campaign's name: a DNS label of at most 50
MAX_TIMEOUT_S = campaign_limits.MAX_TIMEOUT_S
MAX_SPACING_S = 7 * 86400  # a longer spacing is a typo (and past ~8,000 years, a date the runner cannot compute)
IMAGE_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._/:@-]{0,254}$"
STORED = {"stored": True}  # validation context of a spec read back from the runner's KV (see _new_rule)


class CampaignError(ValueError):
    """A campaign that must not be submitted; the message names the field and line."""


class ParamError(ValueError):
    """A test's parameter is invalid; `where` (params or matrix) and `field` place it in the file."""

    def __init__(self, message: str, where: str, field: str | int) -> None:
        super().__init__(message)
        self.where = where
        self.field = field


def _new_rule(info: ValidationInfo) -> bool:
    """Whether a check applies: all do at submission, but a spec stored before the check existed (validated
    with STORED) must still load, so the runner resumes (and the planner heals) a campaign it accepted."""
    return not (info.context or {}).get("stored")


class Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    @field_validator("*", mode="before")
    @classmethod
    def _not_a_bool(cls, value: object, info: ValidationInfo) -> object:
        return templates.no_bool_for_number(cls, value, info)


class TestSpec(Strict):
    test: str = Field(description="Template name, e.g. sysbench-cpu.")
    params: dict[str, Any] = Field(default_factory=dict, description="Fixed parameters.")
    matrix: dict[str, list[Any]] = Field(default_factory=dict, description="Parameters to vary: {threads: [1, all]}.")

    @model_validator(mode="after")
    def _known(self, info: ValidationInfo) -> TestSpec:
        template = templates.get(self.test)  # raises TemplateError (a ValueError) naming the known ones
        for key, values in self.matrix.items():  # an empty list would drop the parameter without a word
            if not values:
                raise ParamError(f"lists no values: give at least one, or drop {key} from the matrix", "matrix", key)
            if key in self.params and _new_rule(info):  # the matrix would override params without a word
                raise ParamError(f"{key} is also set in this test's params ({key}: {self.params[key]!r}); the matrix "
                                 f"would silently override it: keep {key} in params or in the matrix, not both",
                                 "matrix", key)
        keys = sorted(self.matrix)
        seen: dict[str, tuple[int, ...]] = {}
        for index in itertools.product(*(range(len(self.matrix[k])) for k in keys)):
            combo = {**self.params, **{k: self.matrix[k][i] for k, i in zip(keys, index)}}
            valid = self._validated(template, combo, info.context)
            if _new_rule(info) and (problem := template.params.new_campaign_problem(combo)):  # e.g. UDP's rate
                key, why = problem
                raise ParamError(why, "matrix" if key in self.matrix else "params", key)
            if (server := template.remote_server(valid)) is not None and _new_rule(info):
                raise ParamError(f"{server!r} is not 127.0.0.1 or ::1: podtax chooses where a network test's client "
                                 "connects (the host side to its own server on loopback, the pod side to the server "
                                 "pod the runner starts where `topology` says); drop server, or give 127.0.0.1 or ::1",
                                 "matrix" if "server" in self.matrix else "params", "server")
            cell = templates.params_key(valid)
            first = seen.setdefault(cell, index)
            if first != index and _new_rule(info):  # one cell twice: the planner builds the same run ids twice
                key, i, j = next((k, a, b) for k, a, b in zip(keys, first, index) if a != b)
                a, b = self.matrix[key][i], self.matrix[key][j]
                same = f"{a!r} twice" if repr(a) == repr(b) else f"{a!r} and {b!r}, the same value"
                raise ParamError(f"lists {same} (items {i} and {j}): list each value once", "matrix", key)
        return self

    def _validated(self, template: templates.Template, combo: dict[str, Any],
                   context: dict[str, Any] | None) -> dict[str, Any]:
        try:
            return template.validate(combo, context).model_dump()
        except templates.TemplateError as exc:
            if exc.field is None:
                raise
            message = exc.detail.removeprefix(f"{self.test}: ").removeprefix(f"{exc.field}: ")
            raise ParamError(message, "matrix" if exc.field in self.matrix else "params", exc.field) from None

    def combinations(self) -> list[dict[str, Any]]:
        keys = sorted(self.matrix)
        return [{**self.params, **dict(zip(keys, values))}
                for values in itertools.product(*(self.matrix[k] for k in keys))] or [dict(self.params)]


class Repetitions(Strict):
    min: int = Field(6, ge=1, le=10000, description="Runs per cell and environment, at least.")
    max: int = Field(20, ge=1, le=10000, description="Runs per cell and environment, at most.")
    target_ci_width: float | None = Field(None, gt=0, lt=1, description="Stop a cell early when the 95% CI "
                                          "of its pod/host ratio is narrower than this (0.02 = 2 points).")

    @model_validator(mode="after")
    def _order(self) -> Repetitions:
        if self.max < self.min:
            raise ValueError(f"max ({self.max}) must be >= min ({self.min})")
        return self


class PodSpec(Strict):
    image: str = Field("ghcr.io/podtax/bench:0.1.0", description="Benchmark image (deploy/bench-image).")
    requests: dict[str, str] = Field(default_factory=dict, description="e.g. {cpu: '1', memory: 512Mi}.")
    limits: dict[str, str] = Field(default_factory=dict, description="Equal to requests -> Guaranteed QoS.")
    namespace: str | None = Field(None, description="Overrides PODTAX_RUNNER_NAMESPACE.")
    privileged_devices: list[DEVICE] = Field(
        default_factory=list, max_length=8,
        description="Opt-in: host block devices a pod run may read (hdparm). A run that names one of "
                    "them gets a privileged container with exactly that device (a hostPath of type "
                    "BlockDevice) and nothing else; the runner refuses it unless the namespace's Pod "
                    "Security level is `privileged` (deploy/k8s/components/hdparm-privileged).")

    @field_validator("requests", "limits", mode="before")
    @classmethod
    def _quantities(cls, value: object) -> object:
        """`cpu: 1` and `cpu: 0.5` as Kubernetes reads them: the YAML number's text."""
        if isinstance(value, dict):
            return {k: v if isinstance(v, bool) or not isinstance(v, int | float) else str(v) for k, v in value.items()}
        return value

    @field_validator("image")
    @classmethod
    def _image(cls, v: str, info: ValidationInfo) -> str:
        if not re.match(IMAGE_PATTERN, v) and _new_rule(info):
            raise ValueError(f"{v[:70]!r} is not an image reference: name the benchmark image, e.g. "
                             f"ghcr.io/podtax/bench:0.1.0 (letters, digits and ._/:@-, no spaces, at most 255)")
        return v

    @field_validator("namespace")
    @classmethod
    def _namespace(cls, v: str | None, info: ValidationInfo) -> str | None:
        if v is not None and _new_rule(info) and (problem := k8s_syntax.namespace_problem(v)):
            raise ValueError(problem)
        return v

    @model_validator(mode="after")
    def _resources(self, info: ValidationInfo) -> PodSpec:
        if _new_rule(info) and (problem := k8s_syntax.resources_problem(self.requests, self.limits)):
            raise ParamError(*problem)
        return self


DEVICES_NEEDED = {"hdparm": "device"}  # template -> the parameter naming the block device it reads


def devices_needed(campaign: Campaign) -> list[tuple[int, str]]:
    """(test index, device) of every pod run that reads a host block device."""
    if "kubernetes" not in campaign.environments:
        return []
    return sorted({(i, str(combo[DEVICES_NEEDED[spec.test]]))
                   for i, spec in enumerate(campaign.tests) if spec.test in DEVICES_NEEDED
                   for combo in [dict(templates.get(spec.test).validate(c)) for c in spec.combinations()]})


class NodeSelector(Strict):
    selector: str = Field(description="Label selector, e.g. kubernetes.io/arch=arm64.")

    @field_validator("selector")
    @classmethod
    def _selector(cls, v: str, info: ValidationInfo) -> str:
        if _new_rule(info) and (problem := k8s_syntax.selector_problem(v)):
            raise ValueError(problem)
        return v


class Campaign(Strict):
    name: str = Field(pattern=NAME_PATTERN, description="DNS-label style name.")
    nodes: Annotated[Annotated[list[str], Tag("node-names")] | Annotated[NodeSelector, Tag("node-selector")],
                     Discriminator(lambda v: "node-selector" if isinstance(v, dict | NodeSelector) else "node-names")
                     ] = Field(description="Node names (lowercase, as Kubernetes writes them), or {selector: ...}.")
    environments: list[Env] = Field(default_factory=lambda: ["host", "kubernetes"], min_length=1)
    tests: list[TestSpec] = Field(min_length=1)
    repetitions: Repetitions = Field(default_factory=Repetitions)
    spacing: str = Field("back-to-back",
                         description="`back-to-back` or a period between runs on a node: 10m (at most 168h).")
    pod: PodSpec = Field(default_factory=PodSpec)
    timeout: float = Field(600, gt=0, le=MAX_TIMEOUT_S, description="Seconds before a run is killed.")
    seed: int | None = Field(None, description="Seed of the randomized run order (random when unset).")

    @field_validator("timeout", mode="before")
    @classmethod
    def _timeout_in_seconds(cls, v: Any) -> Any:
        if isinstance(v, str) and _DURATION.match(v.strip()):
            raise ValueError(f"{v!r}: the timeout is a number of seconds: write {_seconds(v.strip()):g}")
        return v

    @field_validator("nodes")
    @classmethod
    def _nodes(cls, v: list[str] | NodeSelector) -> list[str] | NodeSelector:
        if isinstance(v, list):
            if not v:
                raise ValueError("name at least one node, or use {selector: ...}")
            if len(set(v)) != len(v):
                raise ValueError("a node is listed twice")
            if problem := next(filter(None, map(capitals_problem, v)), None):
                raise ValueError(problem)
            if (bad := next((n for n in v if not re.fullmatch(NODE_PATTERN, n)), None)) is not None:
                raise ValueError(f"{bad!r} is not a node name (letters, digits, '-', '_' and '.', a letter or digit "
                                 "first and last, at most 253): write it as `kubectl get nodes` or the host agent's "
                                 "node shows it")
        return v

    @field_validator("environments")
    @classmethod
    def _envs(cls, v: list[Env]) -> list[Env]:
        if len(set(v)) != len(v):
            raise ValueError("an environment is listed twice")
        return v

    @field_validator("tests")
    @classmethod
    def _tests_fit_environments(cls, v: list[TestSpec], info: ValidationInfo) -> list[TestSpec]:
        """Each test runs in every environment of the campaign (docs/control-plane.md, "Sides")."""
        envs = info.data.get("environments") or []
        for i, spec in enumerate(v):
            template = templates.get(spec.test)
            wrong = [e for e in envs if e not in template.environments]
            if wrong:
                kind = "a control-plane benchmark" if template.control_plane else "a host-process benchmark"
                raise ValueError(f"tests.{i}: {spec.test} is {kind}; it runs in environments "
                                 f"{', '.join(template.environments)}, not {', '.join(wrong)}")
            if "nomad" in envs and "plugin_id" in template.params.model_fields:
                for combo in spec.combinations():
                    if not combo.get("plugin_id"):
                        raise ValueError(f"tests.{i}.params.plugin_id: required for the nomad backend "
                                         f"(the CSI plugin that creates the volumes)")
        return v

    @field_validator("spacing")
    @classmethod
    def _spacing(cls, v: str) -> str:
        if v != "back-to-back" and not _DURATION.match(v):
            raise ValueError("spacing must be `back-to-back` or a duration like 30s, 10m, 1h")
        if v != "back-to-back" and _seconds(v) > MAX_SPACING_S:
            raise ValueError(f"{v} is above the cap of {MAX_SPACING_S // 3600}h (7 days) between runs "
                             f"on a node")
        return v

    @model_validator(mode="after")
    def _cells_once(self, info: ValidationInfo) -> Campaign:
        """Two tests that plan the same cell would give its runs the same ids (as a value listed twice would)."""
        first: dict[str, int] = {}
        tests = [spec.test for spec in self.tests]
        for i, spec in enumerate(self.tests):
            for combo in spec.combinations() if tests.count(spec.test) > 1 and _new_rule(info) else []:
                cell = templates.params_key(templates.get(spec.test).validate(combo).model_dump())
                if (j := first.setdefault(cell, i)) != i:
                    raise ParamError(f"{spec.test} with {cell} is already planned by tests.{j}: the same runs "
                                     f"twice; drop one, or change a parameter", "tests", i)
        return self

    @model_validator(mode="after")
    def _runs_end_before_timeout(self, info: ValidationInfo) -> Campaign:
        """A run as long as its timeout or longer is killed every time: its parameter and the timeout (one that
        only leaves no room for start-up is a warning: see `warnings`)."""
        for i, spec in enumerate(self.tests if _new_rule(info) else []):
            for name, seconds, _ in run_lengths(spec):
                if seconds >= self.timeout:
                    raise ParamError(length_problem(spec.test, name, seconds, self.timeout, MAX_TIMEOUT_S) or "",
                                     "tests", i)
        return self

    @model_validator(mode="after")
    def _devices_opted_in(self) -> Campaign:
        for i, device in devices_needed(self):
            if device not in self.pod.privileged_devices:
                raise ParamError(f"{self.tests[i].test} reads {device} in a pod: add it to "
                                 f"pod.privileged_devices (a privileged pod with exactly that device; the "
                                 f"namespace must allow privileged pods), or run it on the host only", "tests", i)
        return self

    def spacing_s(self) -> float:
        return _seconds(self.spacing)


def _seconds(duration: str) -> float:
    m = _DURATION.match(duration)
    if not m:
        return 0.0
    return float(m.group(1)) * {"s": 1, "m": 60, "h": 3600}[m.group(2)]


_NOT_FIELDS = ("list[", "function-", "node-")  # parts of an error's location that name a type or a union's tag


def parse(text: str, filename: str = "campaign.yaml") -> Campaign:
    if problem := campaign_limits.size_problem(len(text.encode()), filename):
        raise CampaignError(problem)
    try:
        tree = yaml.compose(text, Loader=campaign_yaml.LOADER)
        data = yaml.load(text, Loader=campaign_yaml.LOADER)  # noqa: S506 - a safe loader
    except yaml.YAMLError as exc:
        raise CampaignError(campaign_yaml.yaml_problem(exc, text, filename)) from None
    except ValueError as exc:  # an int() past 4,300 digits (its words named a Python setting) or a date like 2024-13-01
        raise CampaignError(f"{filename}{campaign_yaml.value_problem(exc, text)}") from None
    if problem := campaign_yaml.duplicate_key(tree):
        raise CampaignError(f"{filename}:{problem}")
    if not isinstance(data, dict):
        raise CampaignError(f"{filename}: a campaign is a YAML mapping with name, nodes, tests ...")
    if problem := campaign_limits.plan_problem(data, filename, MAX_RUNS):  # before building any combination
        raise CampaignError(problem)
    try:
        return Campaign.model_validate(data, context=templates.NO_QUOTED_NUMBERS)  # a file: 120, not '120'
    except ValidationError as exc:
        lines = []
        for err in exc.errors():
            loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and p.startswith(_NOT_FIELDS)))
            cause = (err.get("ctx") or {}).get("error")
            if isinstance(cause, ParamError):  # point at the parameter's own line, not the test's
                loc = (*loc, cause.where, cause.field)
            field = ".".join(map(str, loc)) or "campaign"
            msg = templates.pydantic_msg(err["msg"])
            lines.append(f"{filename}:{campaign_yaml.line_of(tree, loc)}: {field}: {msg}")
        raise CampaignError("\n".join(lines)) from None


def load(path: Path) -> Campaign:
    """Read and validate a campaign file; the size cap is checked on the bytes read, before parsing."""
    try:
        with path.open("rb") as f:
            raw = f.read(campaign_limits.MAX_FILE_BYTES + 1)
            regular = stat.S_ISREG(os.fstat(f.fileno()).st_mode)
            size = max(len(raw), os.fstat(f.fileno()).st_size) if regular else len(raw)
    except OSError as exc:
        raise CampaignError(f"cannot read campaign file {path}: {exc.strerror}") from None
    if problem := campaign_limits.size_problem(size, str(path), exact=regular):
        raise CampaignError(problem)
    try:
        text = campaign_yaml.decode(raw)
    except UnicodeDecodeError as exc:
        raise CampaignError(campaign_yaml.encoding_problem(raw, exc, str(path))) from None
    return parse(text, str(path))


# What the runner can take (the CLI refuses more before submitting; the runner refuses it too).
MAX_RUNS = 250_000  # runs a campaign may reach (repetitions.max with a target): ~1.5 KB of runner memory each
MAX_HEADER_BYTES = 512 * 1024  # the campaign's header document in KV: its spec and one line per node


def planned_runs(c: Campaign, n_nodes: int, extended: bool = True) -> int:
    """Runs `c` plans on `n_nodes` nodes; with `extended`, at most, once cells are extended to the maximum."""
    reps = c.repetitions
    per_cell = reps.max if extended and reps.target_ci_width is not None else reps.min
    return sum(len(t.combinations()) for t in c.tests) * n_nodes * per_cell * len(c.environments)


def refusal(c: Campaign, n_nodes: int) -> str | None:
    """Why the runner cannot carry out `c` on `n_nodes` nodes (a sentence that says what to change), or None."""
    n = planned_runs(c, n_nodes)
    if n > MAX_RUNS:
        return (f"campaign {c.name} would plan up to {n:,} runs on {n_nodes} node(s), above the runner's limit of "
                f"{MAX_RUNS:,}; split it into several campaigns, or lower repetitions, nodes or the matrix")
    size = len(c.model_dump_json()) + 200 * n_nodes
    if size > MAX_HEADER_BYTES:
        return (f"campaign {c.name}'s document would take about {size:,} bytes, above {MAX_HEADER_BYTES:,}; "
                f"use fewer nodes or a smaller matrix")
    return None
