"""Settings are checked before anything starts; a bad one names itself and what is accepted."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import fields
from pathlib import Path

import pytest

from arena.errors import SettingsError
from arena.settings import ArenaSettings

#: A value each setting refuses, and words its message must hold.
BAD = {
    "NMMO_ARENA_HUB": ("huggingface.co", "http:// or https:// URL"),
    "NMMO_ARENA_DATA": (__file__, "a folder (this path is a file)"),
    "NMMO_ARENA_CACHE": (__file__, "a folder"),
    "NMMO_ARENA_TAG": ("no spaces please", "a Hub tag"),
    "NMMO_ARENA_MAX_MB": ("0", "a positive value"),
    "NMMO_ARENA_HISTORY_REPO": ("just-a-name", "OWNER/NAME"),
    "NMMO_ARENA_VALIDATION_TICKS": ("0", "from 1 to 1024"),
    "NMMO_ARENA_VALIDATION_TIMEOUT_S": ("-1", "a positive value"),
    "NMMO_ARENA_VALIDATION_WORKERS": ("0", "from 1 to 64"),
    "NMMO_ARENA_DOWNLOAD_ATTEMPTS": ("0", "at least 1"),
    "NMMO_ARENA_HORIZON": ("abc", "an integer"),
    "NMMO_ARENA_WORKERS": ("-3", "from 0 to 1024"),
    "NMMO_ARENA_RAY": ("not an address", "ray://HOST:PORT"),
    "NMMO_ARENA_PAIRING": ("bogus", "one of random, uncertainty"),
    "NMMO_ARENA_PVP_PER_ROUND": ("-1", "at least 0"),
    "NMMO_ARENA_PVE_PER_ROUND": ("1.5", "an integer"),
    "NMMO_ARENA_SYNC_S": ("0", "a positive value"),
    "NMMO_ARENA_VALIDATE_S": ("nan", "a finite number"),
    "NMMO_ARENA_PVE_S": ("soon", "a number"),
    "NMMO_ARENA_PVP_S": ("0", "a positive value"),
    "NMMO_ARENA_FLUSH_S": ("-5", "a positive value"),
    "NMMO_ARENA_PUSH_MINUTES": ("0", "a positive value"),
    "NMMO_ARENA_COMPACT_MINUTES": ("-1", "at least 0"),
    "NMMO_ARENA_PVE_MATCHES": ("0", "from 1 to 1000"),
    "NMMO_ARENA_NEXT_STAGE_TOP1": ("1.5", "from 0 to 1"),
    "NMMO_ARENA_QUALIFY": ("85", "from 0 to 84"),
    "NMMO_ARENA_ERROR_AFTER": ("0", "at least 1"),
    "NMMO_ARENA_MODEL_CARDS": ("sometimes", "one of 1, 0, true, false"),
    "NMMO_ARENA_VERDICT_DISCUSSIONS": ("often", "one of 1, 0, true, false"),
    "NMMO_ARENA_MODEL_CARDS_S": ("0", "a positive value"),
    "NMMO_ARENA_MODEL_CARDS_MINUTES": ("-1", "at least 0"),
    "NMMO_ARENA_AUDIT_MINUTES": ("-5", "at least 0"),
    "NMMO_ARENA_SEED_EXAMPLES": ("maybe", "one of 1, 0, true, false"),
    "NMMO_ARENA_SEED_OWNER": ("two/parts", "a Hub user or organisation name"),
    "NMMO_ARENA_OWNER_ACTIVE": ("-1", "a value of at least 0"),
    "NMMO_ARENA_OWNER_DAILY": ("-2", "a value of at least 0"),
    "NMMO_ARENA_OWNER_EXEMPT": ("alice, bad/name", "('bad/name' is not one)"),
    "NMMO_ARENA_ISOLATION": ("off", "one of strict, warn"),
    "NMMO_ARENA_LOG": ("LOUD", "one of DEBUG, INFO, WARNING, ERROR"),
    "NMMO_ARENA_LOCAL_HUB_PORT": ("70000", "from 0 to 65535"),
    "NMMO_ARENA_WEBHOOK_SECRET": ("short", "at least 8 printable ASCII characters"),
    "NMMO_ARENA_MAP_SECRET": ("too-short", "at least 16 printable ASCII characters"),
}

#: Settings whose value is never repeated in a message.
SECRETS = {"NMMO_ARENA_WEBHOOK_SECRET", "NMMO_ARENA_MAP_SECRET"}

#: Options retired because their own studies rejected them: a Space still started with one
#: must stop, told that it was retired and to unset it, never run on as if it were played.
RETIRED = {
    ("NMMO_ARENA_PVP_FORMAT", "duplicate"): "Unset NMMO_ARENA_PVP_FORMAT.",
    ("NMMO_ARENA_PVP_FORMAT", "single"): "Unset NMMO_ARENA_PVP_FORMAT.",  # the variable itself is gone
    ("NMMO_ARENA_PAIRING", "closest-rating"): "Unset NMMO_ARENA_PAIRING for the default (guarantee)",
}


def test_every_setting_has_a_variable_and_a_refused_value_here():
    variables = {f.metadata["env"] for f in fields(ArenaSettings)}
    assert variables == set(BAD)


@pytest.mark.parametrize("name", sorted(BAD))
def test_a_bad_value_names_the_variable_the_value_and_what_is_accepted(name):
    value, accepted = BAD[name]
    with pytest.raises(SettingsError) as info:
        ArenaSettings.from_env({name: value})
    message = str(info.value)
    shown = "(hidden: a secret)" if name in SECRETS else repr(value)
    assert f"{name}={shown} is not accepted" in message and accepted in message
    assert "unset it for the default" in message


@pytest.mark.parametrize("name, value", sorted(RETIRED))
def test_a_retired_option_stops_the_space_saying_it_was_retired(name, value):
    with pytest.raises(SettingsError) as info:
        ArenaSettings.from_env({name: value})
    [problem] = info.value.problems
    assert problem.startswith(f"{name}={value!r} is a retired ") and "retired on 2026-12-03: its study found" in problem
    assert RETIRED[name, value] in problem
    assert "is not a setting" not in problem and "Did you mean" not in problem  # not taken for a typo


def test_a_retired_value_is_refused_in_code_too_and_the_others_are_named():
    with pytest.raises(SettingsError) as info:
        ArenaSettings(pairing="closest-rating")
    assert "NMMO_ARENA_PAIRING='closest-rating' is a retired option" in str(info.value)
    assert "accepted: one of random, uncertainty" in str(info.value)
    assert not hasattr(ArenaSettings(), "pvp_format")


def test_a_secret_stays_out_of_messages_and_repr():
    with pytest.raises(SettingsError) as info:
        ArenaSettings.from_env({"NMMO_ARENA_WEBHOOK_SECRET": "has space in it"})
    assert "has space" not in str(info.value)
    settings = ArenaSettings.from_env({"NMMO_ARENA_WEBHOOK_SECRET": "s3cret-for-hooks"})
    assert settings.webhook_secret == "s3cret-for-hooks" and "s3cret" not in repr(settings)


def test_good_values_are_read():
    s = ArenaSettings.from_env({
        "NMMO_ARENA_HORIZON": "128", "NMMO_ARENA_PAIRING": "uncertainty", "NMMO_ARENA_SEED_EXAMPLES": "no",
        "NMMO_ARENA_MAX_MB": "12.5", "NMMO_ARENA_HUB": "https://huggingface.co", "NMMO_ARENA_RAY": "ray://head:10001",
        "NMMO_ARENA_LOG": "debug",
    })
    assert (s.match_horizon, s.pairing, s.seed_examples, s.max_submission_mb) == (128, "uncertainty", False, 12.5)
    assert s.hub_endpoint == "https://huggingface.co" and s.ray_address == "ray://head:10001" and s.log_level == "DEBUG"
    assert ArenaSettings.from_env({}) == ArenaSettings()


def test_every_problem_is_named_at_once_and_typos_are_caught():
    with pytest.raises(SettingsError) as info:
        ArenaSettings.from_env({"NMMO_ARENA_HORIZN": "64", "NMMO_ARENA_WORKERS": "-3", "NMMO_ARENA_PAIRING": "bogus"})
    problems = info.value.problems
    assert len(problems) == 3
    assert "NMMO_ARENA_HORIZN is not a setting of the Arena. Did you mean NMMO_ARENA_HORIZON?" in problems[0]
    assert str(info.value).startswith("The Arena cannot start: 3 settings are not accepted.")


def test_settings_built_in_code_are_checked_too():
    with pytest.raises(SettingsError, match="NMMO_ARENA_HORIZON=.0. is not accepted"):
        ArenaSettings(match_horizon=0)


def test_a_command_reads_one_setting_as_the_space_does_and_no_other():
    """The isolation doctor and the evaluation tool read `NMMO_ARENA_ISOLATION` alone: its
    check is the Space's, another variable's mistake is not theirs to refuse."""
    others = {"NMMO_ARENA_HORIZN": "64", "NMMO_ARENA_WORKERS": "-3"}
    assert ArenaSettings.read("isolation", {**others, "NMMO_ARENA_ISOLATION": "WARN"}) == "warn"
    assert ArenaSettings.read("isolation", others) == "strict"
    assert ArenaSettings.read("isolation", others, default="warn") == "warn"
    with pytest.raises(SettingsError) as info:
        ArenaSettings.read("isolation", {"NMMO_ARENA_ISOLATION": "off"}, default="warn")
    assert len(info.value.problems) == 1
    assert "NMMO_ARENA_ISOLATION='off' is not accepted" in info.value.problems[0]
    assert "one of strict, warn" in info.value.problems[0] and "the default (warn)" in info.value.problems[0]


def test_the_space_stops_before_starting_anything(tmp_path):
    """`python app.py` with a bad value: exit status 2, the message, and no Hub, data or seed."""
    root = Path(__file__).resolve().parent.parent
    env = {**os.environ, "NMMO_ARENA_DATA": str(tmp_path / "data"), "NMMO_ARENA_WORKERS": "-3", "NMMO_ARENA_HORIZON": "abc",
           "NMMO_ARENA_PVP_FORMAT": "duplicate"}
    done = subprocess.run([sys.executable, "app.py"], cwd=root, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "NMMO_ARENA_WORKERS='-3' is not accepted" in done.stderr and "NMMO_ARENA_HORIZON='abc' is not accepted" in done.stderr
    assert "NMMO_ARENA_PVP_FORMAT='duplicate' is a retired setting" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "data").exists()
