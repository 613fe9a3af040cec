"""Errors of the Arena, named after what went wrong, each saying what to do next.

They subclass the nearest builtin so callers can catch them broadly (`ValueError`,
`LookupError`, `RuntimeError`) or precisely.
"""

from __future__ import annotations


class ArenaError(Exception):
    """Base class of every error this project raises on purpose."""


class PolicyNotFoundError(ArenaError, LookupError):
    """A policy reference names nothing: no such folder, built-in or `policy.py`."""


class ImportNotAllowedError(ArenaError, ModuleNotFoundError):
    """A policy's own file imports a module the contract does not provide to policies. A
    `ModuleNotFoundError`, so that a policy's `except ImportError:` fallback still works."""


class PolicyLoadError(ArenaError, ImportError):
    """A policy's `policy.py` failed to import or does not define the contract's `Team`."""


class InvalidPolicySpecError(ArenaError, ValueError):
    """A policy reference string is malformed (neither `builtin:NAME` nor a folder)."""


class MatchSetupError(ArenaError, ValueError):
    """A match cannot start as asked: wrong number of teams, a bad seed, ..."""


class MatchFailedError(ArenaError, RuntimeError):
    """The game engine itself failed during a match (never a policy's fault: those are
    recorded as faults and the match plays on)."""


class SettingsError(ArenaError, ValueError):
    """One or more settings of the Space are not accepted; the message names each one.

    Raised before anything starts (no Hub contacted, nothing seeded, no match played).
    """

    def __init__(self, problems: list[str]):
        self.problems = list(problems)
        head = "The Arena cannot start: " + ("a setting is" if len(self.problems) == 1 else f"{len(self.problems)} settings are") + " not accepted."
        super().__init__("\n".join([head, *(f"- {p}" for p in self.problems)]))


class TransitionError(ArenaError, ValueError):
    """A revision was asked to change status in a way its lifecycle does not allow
    (`arena.lifecycle.TRANSITIONS`): a bug in the caller, never a user's doing."""


class DamagedFileError(ArenaError, ValueError):
    """A file of the Space's state (a history shard, a replay) cannot be read. The Space
    moves it aside (quarantine) and goes on with everything else; restore it from the
    Hub dataset or a backup if it matters."""


class ProtocolError(ArenaError):
    """A team's process broke the sandbox protocol: closed its pipe, sent too much, too
    deeply nested or malformed data, or a message of the wrong shape or at the wrong time.
    Always the team's fault, recorded as such; never an error of the match."""


class PipeClosedError(ProtocolError):
    """A team's process closed its end of the pipe: nearly always because it ended, which
    the sandbox learns a moment later (then the fault is its CRASH, not a bad message)."""


class CardMetadataError(ArenaError, ValueError):
    """A submission's model card has metadata the Arena cannot read (broken YAML front
    matter, or a `model-index` that does not parse): its results cannot be added to it
    until the owner fixes the card."""


class SubmissionCheckError(ArenaError, ValueError):
    """A folder cannot be submitted as it is (no `policy.py` at its root, over the size
    limit, a `policy.py` that does not parse or defines no `Team`, a model card that does
    not parse, a repo id that is not OWNER/NAME); the message says what to change.
    Found before anything is pushed."""


class NoHubError(ArenaError, ConnectionError):
    """There is no Hub to push to: none is configured and no embedded Hub is running, or
    the one found does not answer. The message names where it looked and how to point
    the command at a Hub."""


class HubAuthError(ArenaError, PermissionError):
    """The Hub refused the token (none, a wrong one, or one that may not write to that
    owner); the message says which token was used and how to give the right one."""


class NotEnoughMatchesError(ArenaError, ValueError):
    """Too few matches with spawn points recorded to say how much of a result is luck
    (`arena.luck`); the message says how many there are and how many are needed."""


class MatchNotFoundError(ArenaError, LookupError):
    """A match id names no match of the history folder read (neither its shards nor its
    write-ahead log); the message says which folder was read."""


class VersionMismatchError(ArenaError, RuntimeError):
    """A recorded match was played with another version of nmmo or of the Arena than the
    one installed, so replaying it here would not test what was recorded; the message
    names both versions and what to install."""


class NotReproducibleError(ArenaError, ValueError):
    """A recorded match cannot be replayed from its record alone: a `local:` policy (a
    folder on the machine that played it, never on the Hub), a held-out map without the
    Space's secret, or a record that does not name everything its match depended on."""


class NotPortableError(ArenaError, ValueError):
    """A match cannot be sent to another machine: one of its policies is a folder of this
    one (`local:`), which no node can fetch; the message says to push it to the Hub."""


class SubmissionIntegrityError(ArenaError, RuntimeError):
    """What a node fetched is not the commit the Hub lists for that revision (a file
    missing, of another size or content); the message names the file, and the node's copy
    is removed so that the next match fetches it again."""


class InvalidArgumentError(ArenaError, ValueError):
    """A value given to one of the Arena's functions, classes or commands is outside what it
    accepts (a count below 1, an unknown name, a missing companion argument); the message
    names the value and what is accepted. A bug in the caller, or a bad command line."""


class UnsupportedGradioError(ArenaError, RuntimeError):
    """The installed Gradio lacks something the pages set on purpose (a setting Gradio does
    not expose, reached by its attribute); the message names it, the version, and the code
    to update."""


class CheckpointOrderError(ArenaError, ValueError):
    """Ratings were asked to extend a checkpoint with a match that is not after its last one
    (the history was rewritten or restored in another order): recompute from scratch."""


class NotInMatchError(ArenaError, KeyError):
    """A policy was looked up in a match it did not play."""


class MissingFieldError(ArenaError, KeyError):
    """A record read from a file or a message (`arena.records.from_dict`) lacks a key its
    record cannot do without: the line or file is damaged, or was not written by the Arena.
    Readers of the logs skip it and say so."""

    def __str__(self) -> str:  # KeyError's own quotes the message
        return str(self.args[0]) if self.args else ""


class VanishedFileError(ArenaError, FileNotFoundError):
    """A file of the history disappeared while it was read (compacted or flushed away
    meanwhile); the reader lists the folder again, so callers rarely see it."""


class SandboxError(ArenaError, RuntimeError):
    """The sandbox itself failed, not a team: its zygote did not start a team's process, or the
    isolation self-test's own process failed. The team's match goes on without it (a fault);
    the log says why."""


class ConfinementError(ArenaError, OSError):
    """The kernel refused one of the sandbox's mechanisms (Landlock, no_new_privs) while a
    team's process was being confined; the team does not run. `errno` is the kernel's answer."""


class SandboxViolation(ArenaError, PermissionError):
    """Code in a sandboxed team tried what the sandbox forbids (opening a network connection)."""


class NotSendableError(ArenaError, TypeError):
    """A team's answer holds a value that cannot cross the sandbox's boundary as JSON (an
    object, a key that is not a string, nesting too deep): the team's fault for that tick."""


class ComputationError(ArenaError, RuntimeError):
    """A numerical routine of the ratings did not converge or failed (the message names it);
    the table that needed it is left as it was."""


class HubAnswerError(ArenaError, RuntimeError):
    """The Hub answered a request without doing what it asked (a pull request asked for and
    not opened); retried on the next round."""


class HubStartError(ArenaError, RuntimeError):
    """The embedded Hub (`localhub`) did not start or answer in time: its port is taken, or
    its process died (its log says why). Choose another port with NMMO_ARENA_LOCAL_HUB_PORT."""
