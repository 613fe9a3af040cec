"""Run a command as if on a weaker host: no Landlock, no namespaces, perhaps not root.

A Space's container gets whatever its host allows. Many container runtimes' default seccomp
profiles refuse `unshare`, `setns` and `mount`, and kernels before 5.13 have no Landlock.
This launcher makes this machine such a host for one command and everything it starts: it
installs a seccomp filter answering ENOSYS to the `landlock_*` calls and EPERM to
`unshare`, `setns` and `mount`, optionally becomes an ordinary user, then execs the
command. The isolation tests run the Arena under it; an operator can too.

Usage::

    python -m matchmaking.sandbox.weak_kernel [--keep-landlock] [--keep-namespaces]
                                              [--user UID] -- COMMAND [ARG ...]
"""

from __future__ import annotations

import argparse
import errno
import os
import sys
from collections.abc import Sequence

from matchmaking.sandbox.seccomp import Filter


def weak_filter(*, landlock: bool, namespaces: bool) -> Filter:
    """The filter of such a host: Landlock's calls unknown, namespaces and mounts refused."""
    f = Filter()
    if not landlock:
        f.deny("landlock_create_ruleset", "landlock_add_rule", "landlock_restrict_self", errno=errno.ENOSYS)
    if not namespaces:
        f.deny("unshare", "setns", "mount", errno=errno.EPERM)
    return f


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m matchmaking.sandbox.weak_kernel", description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep-landlock", action="store_true", help="leave Landlock available (a container without namespaces)")
    parser.add_argument("--keep-namespaces", action="store_true", help="leave namespaces available (a kernel without Landlock)")
    parser.add_argument("--user", type=int, default=None, help="become this user and group id (as root) before the command")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the command, after --")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the command to run after --")
    if args.user is not None:
        os.setgroups([])
        os.setresgid(args.user, args.user, args.user)
        os.setresuid(args.user, args.user, args.user)
    error = weak_filter(landlock=args.keep_landlock, namespaces=args.keep_namespaces).install()
    if error:
        print(f"error: cannot simulate a weak kernel: {error}", file=sys.stderr)
        return 2
    os.execvp(command[0], command)
    return 127  # not reached


if __name__ == "__main__":
    sys.exit(main())
