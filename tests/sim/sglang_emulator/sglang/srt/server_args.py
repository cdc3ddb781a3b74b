"""``sglang.srt.server_args`` of the emulator: SGLang's server parser, built from the option list of a real release.

The options come from ``<SIM_SGLANG_OPTIONS_DIR>/<build>.json`` (default ``/usr/share/sim-sglang/builds``), made
by the collection's ``plugins/plugin_utils/sglang_build.py`` from the list generated with real SGLang's parser
(``plugins/plugin_utils/sglang_builds/``), plus the build's own flags. The build is ``SIM_SGLANG_BUILD``, else the
first line of ``/etc/sim-sglang/build`` (the simulated host's installed SGLang), else ``sglang-0.5.23``.

So the emulator refuses exactly what that build refuses: an unknown flag ends the process with SGLang's usage line
and ``error: unrecognized arguments: ...`` on stderr and exit status 2; abbreviations and aliases are accepted, as
SGLang's argparse parser accepts them.
"""

from __future__ import annotations

import argparse
import json
import os
from typing import List, Optional

DEFAULT_BUILD = "sglang-0.5.23"
BUILD_FILE = "/etc/sim-sglang/build"
OPTIONS_DIR = "/usr/share/sim-sglang/builds"
_TYPES = {"int": int, "float": float, "json": json.loads}


def build_name() -> str:
    name = os.environ.get("SIM_SGLANG_BUILD", "").strip()
    if name:
        return name
    try:
        with open(BUILD_FILE, encoding="utf-8") as handle:
            return handle.readline().strip() or DEFAULT_BUILD
    except OSError:
        return DEFAULT_BUILD


def load_options(build: Optional[str] = None) -> dict:
    build = build or build_name()
    path = os.path.join(os.environ.get("SIM_SGLANG_OPTIONS_DIR", OPTIONS_DIR), build + ".json")
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError) as exc:
        raise SystemExit("sglang emulator: no option list for build %s (%s): %s" % (build, path, exc))


def _add(parser: argparse.ArgumentParser, option: dict) -> None:
    action = option.get("action", "store")
    flags = list(option["flags"])
    kwargs = {"dest": option["dest"]}
    if action == "help":
        return  # the parser has its own -h/--help
    if action == "boolean_optional":
        # argparse makes the --no- form of each flag itself
        flags = [flag for flag in flags if not flag.startswith("--no-")]
        kwargs.update(action=argparse.BooleanOptionalAction, default=option.get("default"))
    elif action in ("store_true", "store_false"):
        kwargs.update(action=action, default=option.get("default", action == "store_false"))
    elif action == "store_const":
        kwargs.update(action="store_const", const=option.get("const"), default=option.get("default"))
    elif action == "count":
        kwargs.update(action="count", default=option.get("default"))
    else:
        if action == "append":
            kwargs["action"] = "append"
        kwargs["type"] = _TYPES.get(option.get("type"), str)
        kwargs["default"] = option.get("default")
        if option.get("nargs") is not None:
            kwargs["nargs"] = option["nargs"]
        if option.get("choices") is not None:
            kwargs["choices"] = option["choices"]
        if option.get("required"):
            kwargs["required"] = True
    parser.add_argument(*flags, **kwargs)


class ServerArgs:
    """Only what a client of the parser uses: ``ServerArgs.add_cli_args(parser)``, as in SGLang."""

    @staticmethod
    def add_cli_args(parser: argparse.ArgumentParser, build: Optional[str] = None) -> None:
        for option in load_options(build)["options"]:
            _add(parser, option)


def make_parser(build: Optional[str] = None) -> argparse.ArgumentParser:
    """The parser as SGLang 0.5.23's prepare_server_args builds it."""
    parser = argparse.ArgumentParser(prog="sglang serve")
    ServerArgs.add_cli_args(parser, build)
    return parser


def prepare_server_args(argv: List[str]) -> argparse.Namespace:
    """Parse as SGLang does (exit status 2 and argparse's message on a refusal); the namespace, not a ServerArgs."""
    return make_parser().parse_args(argv)
