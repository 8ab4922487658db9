"""The ``DROVER_*`` environment variables: named in `drover --help`, and a
misspelt one warned about instead of silently ignored.

Known are the variables of every option of the command tree (explicit
``envvar``\\ s, and the ``DROVER_<COMMAND>_<OPTION>`` names click derives
with ``auto_envvar_prefix``), those read directly (:data:`READ_DIRECTLY`)
and those of the repo's own scripts and tests (:data:`OF_THE_TOOLS`). Any
other ``DROVER_*`` variable gets one warning on stderr naming the closest
known one (``DROVER_ADDRESS``: did you mean ``DROVER_ADDR``?); nothing
fails because of it.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Mapping

import click

__all__ = ["CLIENT_VARIABLES", "help_epilog", "known_variables", "unknown_warnings"]

PREFIX = "DROVER_"

#: The client variables every command reads, as `drover --help` lists them.
CLIENT_VARIABLES: tuple[tuple[str, str], ...] = (
    ("DROVER_ADDR", "drover server(s), comma-separated (default 127.0.0.1:7100)"),
    ("DROVER_TOKEN", "ACL token secret id (sent as authorization: Bearer)"),
    ("DROVER_TLS_CA", "CA of the server's certificate (enables TLS)"),
    ("DROVER_TLS_CERT", "client certificate (mTLS)"),
    ("DROVER_TLS_KEY", "client key (mTLS)"),
)
#: Read with os.environ, not through an option.
READ_DIRECTLY = frozenset({"DROVER_ETCD_ORDER"})
#: Read by scripts/smoke.sh, tests/node and the test harness, not the CLI:
#: set around it, they are not misspellings.
OF_THE_TOOLS = frozenset({
    "DROVER_PROXY", "DROVER_STATE", "DROVER_BROKER", "DROVER_DEPLOYMENTS",
    "DROVER_STATE_ADDR", "DROVER_IMAGE", "DROVER_IMAGE_CACHE", "DROVER_IMAGE_TEST",
    "DROVER_NODE_OUT", "DROVER_NODE_RUN", "DROVER_CHAOS_SECONDS", "DROVER_CHAOS_SEED",
})


def help_epilog() -> str:
    """The environment section of `drover --help` (``\\b``: click keeps the
    lines as they are instead of re-flowing them)."""
    lines = ["\b", "Environment (a flag beats its variable):"]
    lines += [f"  {name:<16} {text}" for name, text in CLIENT_VARIABLES]
    lines += ["", "`drover serve --help` and `drover dev --help` name their own variables "
                  "(DROVER_ETCD, DROVER_ACL, ...); an unknown DROVER_* variable is warned "
                  "about."]
    return "\n".join(lines)


def _walk(command: click.Command, path: tuple[str, ...]) -> Iterator[str]:
    for param in command.params:
        if not isinstance(param, click.Option):
            continue
        envvar = param.envvar
        if isinstance(envvar, str):
            yield envvar
        elif envvar:
            yield from envvar
        elif param.allow_from_autoenv and param.name and path:
            yield "_".join((PREFIX.rstrip("_"), *path, param.name)).upper()
    if isinstance(command, click.Group):
        for name, sub in command.commands.items():
            yield from _walk(sub, (*path, name.replace("-", "_")))


def known_variables(root: click.Command) -> frozenset[str]:
    """Every ``DROVER_*`` variable something in the tree reads."""
    return frozenset(_walk(root, ())) | READ_DIRECTLY | OF_THE_TOOLS


def unknown_warnings(environ: Mapping[str, str], known: frozenset[str]) -> list[str]:
    """One line per ``DROVER_*`` variable set that nothing reads."""
    out = []
    for name in sorted(environ):
        if not name.startswith(PREFIX) or name in known:
            continue
        close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.6)
        hint = f"; did you mean {close[0]}?" if close else ""
        out.append(f"warning: {name} is not a drover variable and is ignored{hint}")
    return out
