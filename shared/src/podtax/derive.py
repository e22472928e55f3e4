"""Raw log -> result or failure: the one function the parser service and `podtax reparse` share.

Pure: no I/O. Event ids are derived from the run id, so deriving the same log twice gives the
same id, and JetStream de-duplication plus the analyzer's run-id keys keep one outcome per run.
"""

from __future__ import annotations

from pydantic import ValidationError

from podtax import events, provenance
from podtax.parsers import PARSER_VERSION, ParseFailure, parse_run

REFUSED = "podtax-bench: refused: "


def derive(log: events.RawLog, source: str = "podtax/parser") -> events.ResultV1 | events.RunFailedV1:
    stdout, out_phases = provenance.split(log.stdout)
    stderr, err_phases = provenance.split(log.stderr)
    phases = {**out_phases, **err_phases}
    outcome_id = log.run.event_id("outcome")

    def failed(reason: str, detail: str) -> events.RunFailedV1:
        failure = events.RunFailed(run=log.run, stage="parser", reason=reason, detail=detail,
                                   started_at=log.started_at, ended_at=log.ended_at)
        return events.run_failed(failure, source, event_id=outcome_id)

    prov = log.provenance
    if phases:
        try:
            found = provenance.to_model(phases)
        except ValueError as exc:  # pydantic's ValidationError too: NaN, a negative counter, a word
            first = exc.errors()[0] if isinstance(exc, ValidationError) else None
            what = f"{first['loc'][0]}: {first['msg']}" if first and first["loc"] else str(exc)
            return failed("bad-provenance", f"the #podtax provenance lines of the log are not valid ({what}); "
                                            f"they come from the podtax-bench wrapper, check what else prints them")
        prov = prov.model_copy(update={k: v for k, v in found.model_dump().items() if v is not None})
    recorded = log.tool_version or phases.get("before", {}).get("tool_version")

    refused = next((line for line in stderr.splitlines() if line.startswith(REFUSED)), None)
    if refused:  # the in-pod wrapper did not start the tool (benchwrap.fio_space_problem)
        return failed("insufficient-space", refused.removeprefix(REFUSED))
    if log.timed_out:
        return failed("timeout", f"{log.run.test} on {log.run.node} was killed after its timeout of "
                                 f"{log.run.timeout_s:g} s; raise the campaign's `timeout:` (seconds) or lighten the "
                                 "parameters")
    try:
        parsed = parse_run(log.run.test, stdout, stderr, log.exit_code, log.run.params, recorded)
    except ParseFailure as exc:
        return failed(exc.reason, exc.detail)
    flags = list(parsed.flags)
    if log.truncated:
        flags.append("TRUNCATED: the output exceeded the size cap and was cut; figures come from what was kept")
    result = events.Result(
        run=log.run, tool=parsed.tool, tool_version=parsed.tool_version, tool_build=parsed.tool_build,
        parser_version=PARSER_VERSION, metrics=list(parsed.metrics), echoed=dict(parsed.echoed), flags=flags,
        started_at=log.started_at, ended_at=log.ended_at, provenance=prov,
    )
    return events.result(result, source, event_id=outcome_id)
