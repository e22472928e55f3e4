"""What the CLI commands share: where NATS and the API are, a console, error exits."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import stat
import subprocess
import sys
import urllib.parse
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar

import typer
from rich.console import Console
from rich.markup import escape

from podtax import templates
from podtax.campaign import NAME_PATTERN
from podtax.config import (
    CLUSTER_PATTERN,
    DEFAULT_NATS_URL,
    NODE_PATTERN,
    Common,
    ConfigError,
    capitals_problem,
    is_duckdb_file,
    load,
)
from podtax.localauth import loopback
from podtax.oneline_args import one_line

console = Console()
if not console.is_terminal:  # logs and pipes keep whole lines: rich wrapped them at 80 columns mid-phrase
    console = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)  # one error, one line: never wrapped mid-message
NON_TTY_WIDTH = 140
C = TypeVar("C", bound=Common)


def wide_console() -> Console:
    """The terminal's console; off a terminal (pipes, make) a NON_TTY_WIDTH-column one (COLUMNS overrides)."""
    if console.is_terminal:
        return console
    columns = os.environ.get("COLUMNS", "")
    return Console(width=int(columns) if columns.isdigit() and int(columns) > 0 else NON_TTY_WIDTH)
DATA_DIR = Path(os.environ.get("PODTAX_DATA_DIR", ".podtax"))
UP_FILE = "up.json"


JSON_KINDS = {list: "a JSON array", str: "a JSON string", bool: "a JSON boolean", int: "a JSON number",
              float: "a JSON number", type(None): "JSON null"}  # what json.loads gives, in JSON's words


def _read_up() -> tuple[dict[str, str], str | None]:
    """The running `podtax up`'s record ({} when none runs there), and why it is not the JSON object up writes
    (atomically), or None."""
    try:
        info = json.loads((DATA_DIR / UP_FILE).read_text())
    except OSError:
        return {}, None
    except ValueError as exc:  # not JSON, not UTF-8
        return {}, " ".join(str(exc).split())
    if not isinstance(info, dict):
        return {}, f"{JSON_KINDS.get(type(info), 'not JSON')}, not an object"
    return info, None


def up_record() -> dict[str, str]:
    """The running `podtax up`'s record (its up.json under PODTAX_DATA_DIR): {} when none runs there, and {} too
    when the file cannot be read or is not the JSON object up writes. Never fails: for callers to which a damaged
    record is moot (a command that reads it for its defaults refuses it through _up_info)."""
    return _read_up()[0]


def _up_info() -> dict[str, str]:
    """The running `podtax up`'s record, {} when none runs there. One that is not the JSON object up writes
    is refused in one line: a list ended every command in an AttributeError traceback, broken JSON was ignored for
    the defaults, so the CLI looked for NATS at 127.0.0.1:4222 and advised setting PODTAX_DATA_DIR (audit hD)."""
    info, why = _read_up()
    if why:
        raise fail(f"{DATA_DIR / UP_FILE} is not the record podtax up writes ({why}): remove it, or start podtax up "
                   f"again", 2)
    return info


def from_up(key: str) -> str | None:
    """What the running `podtax up` (of PODTAX_DATA_DIR) recorded in its up.json under `key` (kubeconfig,
    nomad_addr, ...); None when none runs there or it started no such thing."""
    value = _up_info().get(key)
    return str(value) if value else None


def nats_url() -> str:
    """PODTAX_NATS_URL, else the server `podtax up` started (its up.json), else the default. The PODTAX_*
    settings a NATS connection reads are checked first: a bad one is one line and exit 2."""
    check_settings()
    if os.environ.get("PODTAX_NATS_URL"):
        return os.environ["PODTAX_NATS_URL"]
    info = _up_info()
    if info.get("nats_url"):  # with the CLI's own NATS user when `podtax up` generated users
        from podtax.localauth import cli_nats_url

        return cli_nats_url(info["nats_url"], info.get("nats_users_file"))
    return DEFAULT_NATS_URL


def campaign_name(value: str | None) -> str | None:
    """A campaign name as campaign files allow it (also what NATS takes in a key), else a usage error (exit 2):
    an empty or mistyped name is not sent to NATS or the analyzer. None (an option not given) passes."""
    if value is not None and not re.match(NAME_PATTERN, value):
        raise typer.BadParameter(f"{value!r} is not a campaign name (lowercase letters, digits and '-', "
                                 f"at most 50, as in the campaign file's `name`)")
    return value


def node_name(value: str | None) -> str | None:
    """A node name as the host agent and Kubernetes take it (PODTAX_AGENT_NODE), else a usage error (exit 2): an
    empty or mistyped name asked the analyzer and got "no results yet". None (an option not given) passes."""
    if value is not None and not re.fullmatch(NODE_PATTERN, value):
        raise typer.BadParameter(f"{value!r} is not a node name (letters, digits and '-_.', starting and ending "
                                 f"with a letter or digit, as `podtax up --node` takes them (Kubernetes itself "
                                 f"takes no '_'))")
    if value is not None and (problem := capitals_problem(value)):
        raise typer.BadParameter(problem)
    return value


def cluster_name(value: str | None) -> str | None:
    """A cluster name as PODTAX_CLUSTER takes it, else a usage error (exit 2). None passes."""
    if value is not None and not re.fullmatch(CLUSTER_PATTERN, value):
        raise typer.BadParameter(f"{value!r} is not a cluster name (letters, digits, '-' and '_', at most 63, as "
                                 f"PODTAX_CLUSTER)")
    return value


def test_name(value: str | None) -> str | None:
    """A registered benchmark template's name, else a usage error naming them (exit 2). None passes."""
    if value is not None:
        try:
            templates.get(value)
        except templates.TemplateError as exc:
            raise typer.BadParameter(str(exc)) from None
    return value


def check_data_dir() -> None:
    """PODTAX_DATA_DIR set but empty (an unset shell variable) was Path(""), the current folder: podtax commands
    read a podtax up's record there and `podtax up` put JetStream, DuckDB and logs in it. One line, exit 2."""
    given = os.environ.get("PODTAX_DATA_DIR")
    if given is not None and not given.strip():
        raise fail("PODTAX_DATA_DIR is empty: set it to the --data-dir of a podtax up, or unset it (default .podtax)",
                   2)


def check_settings(cls: type[C] = Common) -> C:  # type: ignore[assignment]
    """The PODTAX_* settings every service reads (Common), or those of `cls`: a bad one is one line naming it, and
    exit 2 (`Settings()` itself was pydantic's traceback, exit 1)."""
    try:
        return load(cls)
    except ConfigError as exc:
        raise fail(exc.line, 2) from None


def api_option(value: str | None) -> str | None:
    """--api as typed (typer's `callback=`): an empty one (`--api "$URL"` with URL unset) was taken as not given, so
    the command asked PODTAX_API_URL's or the default analyzer without a word; it is a usage mistake (exit 2)."""
    if value is not None and not value.strip():
        raise typer.BadParameter("the URL is empty (an unset shell variable?): give the analyzer's address, such as "
                                 "http://127.0.0.1:8700, or drop --api")
    return value


API_HELP = "Analyzer API URL (default: PODTAX_API_URL)."


def api_url(option: str | None = None) -> str:
    """The analyzer's address: `option` (--api), else PODTAX_API_URL, else the one `podtax up` started, else
    the default. One line and exit 2 when the one given is not an http(s) URL with a host and a valid port."""
    for name, value in (("--api", option), ("PODTAX_API_URL", os.environ.get("PODTAX_API_URL"))):
        if value:
            return _http_url(name, value)
    return _up_info().get("api_url") or "http://127.0.0.1:8700"


def _http_url(name: str, value: str) -> str:
    try:
        parts = urllib.parse.urlsplit(value)
        ok = parts.scheme in ("http", "https") and bool(parts.hostname) and parts.port != 0
    except ValueError:  # a port out of range or not a number, a broken [IPv6] address
        ok = False
    if not ok:
        raise fail(f"{name} {value!r} is not an http(s) URL with a valid port; set it to the analyzer's address, "
                   f"such as http://127.0.0.1:8700", 2)
    return value


def api_headers(base: str) -> dict[str, str]:
    """The bearer token for the analyzer at `base`: PODTAX_API_TOKEN, else the one `podtax up` generated (its
    token file) when `base` is that podtax up's analyzer: never another server's (`--api http://another-host`)."""
    token = os.environ.get("PODTAX_API_TOKEN", "")
    if token:
        return {"Authorization": f"Bearer {token}"}
    info = up_record()  # a damaged record: api_url() refused it when `base` came from it, else it is moot
    path = info.get("api_token_file")
    if path and same_analyzer(base, str(info.get("api_url", ""))):
        try:
            token = Path(path).read_text().strip()
        except OSError:
            token = ""
    return {"Authorization": f"Bearer {token}"} if token else {}


def same_analyzer(base: str, up_api: str) -> bool:
    """Whether `base` names the analyzer at `up_api`: the same URL (a trailing slash aside), or both on this
    machine's loopback (localhost, 127.0.0.1, [::1]) with the same scheme and port."""
    if base.rstrip("/") == up_api.rstrip("/"):
        return True
    try:
        a, b = urllib.parse.urlsplit(base), urllib.parse.urlsplit(up_api)
        return (a.scheme, a.port) == (b.scheme, b.port) and loopback(a.hostname) and loopback(b.hostname)
    except ValueError:  # a port out of range, a broken [IPv6]
        return False


def api_json(resp: Any, base: str) -> Any:
    """The JSON of an answer from the analyzer at `base`; one line and exit 1 when the server there sent
    something else (PODTAX_API_URL or --api naming another web server, a proxy's error page), or JSON that does
    not end: a streamed answer (/api/runs, /api/results, phases) says 200 before its rows, so an error while they
    are read leaves the array cut short; none of it is used."""
    try:
        return resp.json()
    except ValueError:
        if resp.content.lstrip()[:1] in (b"[", b"{"):  # JSON that began and did not end (a page would not)
            raise fail(f"the analyzer at {base} cut its answer short ({len(resp.content):,} bytes of JSON that is "
                       f"not whole): it failed while sending it (its log says why); nothing of it is shown: "
                       f"run the command again") from None
        raise fail(f"the server at {base} answered HTTP {resp.status_code} without JSON; is it the analyzer? "
                   f"(set PODTAX_API_URL or --api to the analyzer's address)") from None


DROPPED = ("RemoteProtocolError", "ReadError", "WriteError")  # httpx: the connection closed before the answer
AGAIN = "run the command again once it answers"


def unreachable(base: str, exc: Exception, hint: str = "start it with `podtax up` or set PODTAX_API_URL",
                again: str = AGAIN) -> typer.Exit:
    """The one line for an analyzer that cannot be asked: not answering, an address that is not a URL, or one that
    stopped answering mid-request (`again`: what to do then; it was told to start the analyzer, which ran: audit)."""
    if type(exc).__name__ == "InvalidURL":  # httpx.InvalidURL is not an httpx.HTTPError
        return fail(f"{base!r} is not a valid analyzer URL ({exc}); set PODTAX_API_URL or --api to one such as "
                    f"http://127.0.0.1:8700", 2)
    if type(exc).__name__ in DROPPED:
        return fail(f"the analyzer at {base} stopped answering mid-request ({exc}): it may have stopped or restarted "
                    f"(see its log), or the connection to it stalled or was too slow (it then ends the answer and "
                    f"its log says so); {again}")
    return fail(f"cannot reach the analyzer at {base} ({exc}); {hint}")


def say(message: str, label: str = "error", style: str = "red") -> None:
    """Print `label: message` on stderr, the label in colour, on one line (one_line). The message is text, never
    Rich markup: a file named `[draft]q.yaml` or a pattern such as `^[a-z0-9]` keeps its brackets."""
    err.print(f"[{style}]{label}:[/{style}] {escape(one_line(message))}", highlight=False)


def warn(message: str) -> None:
    say(message, "warning", "yellow")


def refused(problems: Sequence[str], nothing: str, shown: int) -> None:
    """Why nothing was done (`nothing`: 'nothing was submitted'): one problem is ONE line ending with it, as every
    usage mistake (it was a second line); several are a line each (the first `shown`), then their count and it."""
    if len(problems) == 1:
        say(f"{problems[0]}; {nothing}")
        return
    for problem in problems[:shown]:
        say(problem)
    more = f" (the first {shown} shown)" if len(problems) > shown else ""
    err.print(f"{len(problems)} problem(s){more}; {nothing}", highlight=False)


def fail(message: str, code: int = 1) -> typer.Exit:
    """Print an error in red and return an Exit to raise."""
    say(message)
    return typer.Exit(code)


def not_a_file(path: Path) -> str | None:
    """Why `path`, given to be read, is no file to read ("no such file", "is a folder", "is empty", not a regular
    file, "cannot be read (Permission denied)"), else None."""
    try:
        mode = path.stat().st_mode
        if stat.S_ISREG(mode):
            with path.open("rb") as f:  # a file of another user (mode 0600) or in a folder not ours: a traceback
                if not f.read(1):
                    return "is empty"
            return None
    except (FileNotFoundError, NotADirectoryError):
        return "no such file"
    except OSError as exc:
        return cannot_be_read(exc)
    if stat.S_ISDIR(mode):
        return "is a folder"
    return "is a device, FIFO or socket, not a regular file"  # /dev/null, a FIFO: it said "no such file" before


def cannot_be_read(exc: OSError) -> str:
    """An OSError of reading a file in a few words: "cannot be read (Permission denied)"."""
    return f"cannot be read ({exc.strerror or type(exc).__name__})"


def a_path(value: str) -> Path:
    """A path option's or argument's value as typed (typer's `parser=`): typer made an empty one Path("."), the
    current folder, which `podtax export --csv ""` (an unset shell variable) filled; it is a usage mistake (exit 2)."""
    if not value:
        raise typer.BadParameter("the path is empty (an unset shell variable?): give a path")
    if "\0" in str(value):  # os calls raised ValueError 'embedded null byte', a traceback (main(argv); no shell
        # passes one); str(): typer passes a default such as Path("kubesim.kubeconfig") through the parser too
        raise typer.BadParameter(f"{str(value)!r} holds a NUL character, which no path can: give a path")
    return Path(value)


THRESHOLD_HELP = "Practical threshold as a fraction from 0 to below 1 (0.01 = 1%), as the analyzer's API takes it."


def practical_threshold(value: float) -> float:
    """--threshold as the analyzer's API (and `podtax-analyzer report`) takes it, 0 <= t < 1, else a usage mistake
    naming the option (exit 2): nan, inf, -0.1 or 1.5 were refused by each command after parsing, in a line that
    named no option."""
    if not 0 <= value < 1:
        raise typer.BadParameter(f"{value:g} is no practical threshold: give a fraction from 0 to below 1 "
                                 "(0.01 = 1%)")
    return value


def not_a_database(path: Path) -> str | None:
    """Why `path`, given as --db, is no DuckDB file to read (not_a_file's reasons, or another kind of file), else None:
    another file made DuckDB's error, with advice about a running analyzer holding it, and exit 1."""
    problem = not_a_file(path)
    if problem is None:
        try:
            return None if is_duckdb_file(path) else ("is not a DuckDB database file: give the analyzer's "
                                                      "(PODTAX_ANALYZER_DB)")
        except OSError as exc:  # gone or made unreadable since
            problem = cannot_be_read(exc)
    if problem.startswith("cannot be read"):  # the analyzer's file, mode 0600 of its service user
        return f"{problem}: run as the analyzer's user, or use its HTTP API with --api (podtax report --api URL)"
    return f"{problem} (no database file)"


def offline_report(db: Path, campaign: str, threshold: float, correction: str, phases: bool = False) -> dict:
    """A campaign's comparison (or phase table) from a DuckDB file, computed by the analyzer's own
    command in a separate process: the statistics live in the analyzer, and the library imports no
    service."""
    if importlib.util.find_spec("podtax_analyzer") is None:
        raise fail("--db needs the analyzer package: pip install -e services/analyzer "
                   "(or drop --db to ask the analyzer's HTTP API)")
    if problem := not_a_database(db):  # a usage mistake, as a missing file anywhere else: exit 2
        raise fail(f"--db {db}: {problem}", 2)
    proc = subprocess.run([sys.executable, "-m", "podtax_analyzer", "report", "--db", str(db), campaign,
                           "--threshold", str(threshold), "--correction", correction,
                           *(["--phases"] if phases else [])], capture_output=True, text=True)
    if proc.returncode != 0:
        raise fail(proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else f"exit {proc.returncode}",
                   2 if proc.returncode == 2 else 1)  # 2: a usage mistake (a --db file not the analyzer's)
    return json.loads(proc.stdout)
