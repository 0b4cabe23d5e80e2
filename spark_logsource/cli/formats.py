"""Which format a command line means, and the flags the formats bring to it.

The command line names no format: :mod:`spark_logsource.registry` lists them, and each
:class:`~spark_logsource.logformat.LogFormat` declares its own part (``cli_title``, ``cli_flags``, ``text_options``,
``json_text_columns``, ``uri_schemes``, ``can_follow``, ``sniff``). A format is picked by ``--source``, else by the
URI scheme of a live target, else by ``sniff`` on the first files found under the paths.
"""

from __future__ import annotations

import argparse
import getpass
import logging
import os
import posixpath
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from spark_logsource.errors import LogSourceError, OptionError
from spark_logsource.io.fs import display_name, list_files, open_input
from spark_logsource.logformat import CliFlag, LogFormat
from spark_logsource.registry import FORMATS, format_class, format_names

log = logging.getLogger(__name__)

#: Bytes of each file's start given to ``LogFormat.sniff``.
SNIFF_BYTES = 16
#: Files looked at under the paths before giving up on sniffing (a directory may hold other files first).
SNIFF_MAX_FILES = 50
#: The environment variable holding a live server's password (unlike ``--option password=``, not shown by ``ps``).
PASSWORD_ENV = "SPARK_LOGSOURCE_PASSWORD"


def registered_formats() -> list[type[LogFormat]]:
    """Every registered format class, in registry order (the order sniffing and URI schemes are tried in)."""
    return [format_class(name) for name in FORMATS]


# --- flags ------------------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class FormatFlag:
    """One option string of a subcommand, shared by every format that declares it for that subcommand."""

    flag: CliFlag
    dest: str
    formats: tuple[str, ...]  # names of the formats that accept it for this subcommand


def _same_meaning(a: CliFlag, b: CliFlag) -> bool:
    return (a.option, a.type, a.repeatable, a.choices, a.metavar) == (b.option, b.type, b.repeatable, b.choices,
                                                                      b.metavar)


def _metavar(flag: str) -> str:
    return flag.lstrip("-").upper().replace("-", "_")


def _dest(flag: str) -> str:
    return "format_flag:" + flag.lstrip("-")


def add_format_flags(parser: argparse.ArgumentParser, command: str,
                     formats: Iterable[type[LogFormat]] | None = None) -> list[FormatFlag]:
    """Add each format's flags for ``command`` to ``parser``, one argument group per format.

    A flag declared by several formats is added once, in the group of the first; the others' groups list it in
    their description. Formats declaring one flag with different meanings are a programming error (TypeError).
    """
    formats = registered_formats() if formats is None else list(formats)
    owners: dict[str, CliFlag] = {}
    accepted: dict[str, list[str]] = {}
    plan: list[tuple[type[LogFormat], list[CliFlag], list[str]]] = []
    for cls in formats:
        own, shared = [], []
        for flag in cls.cli_flags:
            if command not in flag.commands:
                continue
            first = owners.get(flag.flag)
            if first is None:
                owners[flag.flag] = flag
                own.append(flag)
            elif not _same_meaning(first, flag):
                raise TypeError(f"{cls.name} declares {flag.flag} as option {flag.option!r}, another format as "
                                f"{first.option!r}: formats sharing a flag must give it one meaning")
            else:
                shared.append(flag.flag)
            accepted.setdefault(flag.flag, []).append(cls.name)
        if own or shared:
            plan.append((cls, own, shared))
    for cls, own, shared in plan:
        description = f"also: {', '.join(shared)}" if shared else None
        group = parser.add_argument_group(cls.cli_title or cls.name, description)
        for flag in own:
            kwargs: dict[str, Any] = {"dest": _dest(flag.flag), "type": flag.type, "help": flag.help or None,
                                      "default": None, "metavar": flag.metavar}
            if flag.choices is not None:
                kwargs["choices"] = flag.choices  # shown as {a,b} unless a metavar is given
            elif flag.metavar is None:
                kwargs["metavar"] = _metavar(flag.flag)
            group.add_argument(flag.flag, action="append" if flag.repeatable else "store", **kwargs)
    return [FormatFlag(owners[name], _dest(name), tuple(accepted[name])) for name in owners]


def flag_options(args: argparse.Namespace, flags: Sequence[FormatFlag], cls: type[LogFormat],
                 command: str) -> dict[str, str]:
    """The reader options of the format flags given on the command line; a flag ``cls`` does not take is an error."""
    options: dict[str, str] = {}
    for spec in flags:
        value = getattr(args, spec.dest, None)
        if value is None:
            continue
        if cls.name not in spec.formats:
            takes = sorted(f.flag for f in cls.cli_flags if command in f.commands)
            raise OptionError(spec.flag.option, f"{spec.flag.flag} does not apply to {cls.name} "
                                                f"({command} takes {', '.join(takes) or 'no format flags'} for it;"
                                                " any option: --option NAME=VALUE)")
        options[spec.flag.option] = ",".join(str(v) for v in value) if spec.flag.repeatable else str(value)
    return options


def option_pairs(pairs: Sequence[str]) -> dict[str, str]:
    """``--option NAME=VALUE`` arguments as a dict."""
    options: dict[str, str] = {}
    for kv in pairs:
        name, sep, value = kv.partition("=")
        if not sep or not name:
            raise OptionError("--option", f"expected NAME=VALUE, got {kv!r}")
        if name.lower() == "password":
            warn_password_on_command_line()
        options[name] = value
    return options


# --- passwords ----------------------------------------------------------------------------------------------------
_warned_about_password: list[bool] = []


def warn_password_on_command_line() -> None:
    """Warn, once per run, that a password given as an argument is visible to other users of the machine."""
    if not _warned_about_password:
        _warned_about_password.append(True)
        log.warning("a password given with --option is visible to other users (ps, shell history): use "
                    "--password-stdin or the %s environment variable", PASSWORD_ENV)


def add_password_flags(parser: argparse.ArgumentParser) -> None:
    """``--password-stdin`` (the other way, ``SPARK_LOGSOURCE_PASSWORD``, needs no flag)."""
    parser.add_argument("--password-stdin", action="store_true",
                        help=f"read the live server's password from the first line of stdin (or set {PASSWORD_ENV})")


def given_password(args: argparse.Namespace) -> str | None:
    """The password of ``--password-stdin`` (read once), else of ``SPARK_LOGSOURCE_PASSWORD``, else None."""
    if getattr(args, "password_stdin", False):
        if not hasattr(args, "_stdin_password"):
            # typed at a terminal: not echoed (getpass); piped: the first line, as docker login --password-stdin
            line = getpass.getpass("password: ") + "\n" if sys.stdin.isatty() else sys.stdin.readline()
            if not line:
                raise OptionError("--password-stdin", "stdin is empty: expected the password on its first line")
            args._stdin_password = line.rstrip("\r\n")
        return str(args._stdin_password)
    return os.environ.get(PASSWORD_ENV)


def takes_password(uri: str) -> bool:
    """Whether the server URI names a user whose password is not in it (``scheme://cdc@db1:3306``)."""
    _, sep, rest = uri.partition("://")
    userinfo, at, _ = rest.partition("/")[0].rpartition("@")
    return bool(sep and at and userinfo and ":" not in userinfo)


def add_password(options: dict[str, Any], uri: str, args: argparse.Namespace) -> None:
    """Give the live server ``uri`` the password of ``--password-stdin`` or ``SPARK_LOGSOURCE_PASSWORD``, unless
    ``options`` has one (``--option password=``)."""
    if any(name.lower() == "password" for name in options):
        return
    stdin = getattr(args, "password_stdin", False)
    if not takes_password(uri):
        if stdin:
            raise OptionError("--password-stdin", "the server URI names no user (scheme://user@host:port) or "
                                                  "already holds a password")
        return
    password = given_password(args)
    if password is not None:
        options["password"] = password


# --- picking a format ---------------------------------------------------------------------------------------------
def uri_scheme(target: str) -> str | None:
    """The lower-case scheme of ``target`` when it is a URI (``Scheme://host:port`` → ``scheme``)."""
    scheme, sep, _ = target.partition("://")
    return scheme.lower() if sep and scheme.isidentifier() else None


def live_format(target: str, command: str) -> type[LogFormat] | None:
    """The format reading the live server ``target`` names by its URI scheme (for ``follow``: one that can follow)."""
    scheme = uri_scheme(target)
    if scheme is None:
        return None
    for cls in registered_formats():
        if scheme in cls.uri_schemes and (command != "follow" or cls.can_follow):
            return cls
    return None


def sniff_format(paths: Sequence[str]) -> type[LogFormat]:
    """The first format whose ``sniff`` recognises a file found under ``paths`` (name and first bytes)."""
    formats = registered_formats()
    for path in paths:
        for entry in list_files([path], recursive=True)[:SNIFF_MAX_FILES]:
            name = posixpath.basename(display_name(entry.uri))
            with open_input(entry.uri) as f:
                head = f.read(SNIFF_BYTES)
            for cls in formats:
                if cls.sniff(name, head):
                    log.info("%s looks like %s", display_name(entry.uri), cls.name)
                    return cls
    raise LogSourceError(f"cannot tell the log format of {', '.join(paths)}: use --source "
                         f"({', '.join(format_names())})")


def pick_format(source: str | None, targets: Sequence[str], command: str) -> type[LogFormat]:
    """``--source`` when given, else the format of a live URI's scheme, else the sniffed format of the files."""
    if source:
        return format_class(source)
    for target in targets:
        cls = live_format(target, command)
        if cls is not None:
            return cls
    return sniff_format(targets)


def reader_options(cls: type[LogFormat], targets: Sequence[str], args: argparse.Namespace,
                   flags: Sequence[FormatFlag], command: str) -> dict[str, Any]:
    """The options ``cls`` is built with: its text options, then ``--option`` pairs, then its flags, then where
    to read (a live server's URI as ``uri``, files as ``paths``)."""
    options: dict[str, Any] = dict(cls.text_options)
    options.update(option_pairs(args.option))
    options.update(flag_options(args, flags, cls, command))
    live = [t for t in targets if uri_scheme(t) in cls.uri_schemes]
    if live:
        if len(targets) > 1:
            raise OptionError("uri", f"a live server is read alone, got {len(targets)} targets")
        options["uri"] = live[0]
        add_password(options, live[0], args)
    else:
        if getattr(args, "password_stdin", False):
            raise OptionError("--password-stdin", "applies to a live server (scheme://user@host:port), not to files")
        options["paths"] = list(targets)
    return options
