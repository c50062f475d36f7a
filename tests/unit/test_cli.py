"""The obs command surface: help, versions, ingest output and one-line errors (no dbt)."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
from obs.cli.main import cli

from tests.conftest import Invoke, lake_rows, run_cli


def _commands(group: click.Group, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found = []
    context = click.Context(group)
    for name in group.list_commands(context):
        command = group.get_command(context, name)
        assert command is not None, name
        found.append((*prefix, name))
        if isinstance(command, click.Group):
            found += _commands(command, (*prefix, name))
    return found


@pytest.mark.parametrize("path", _commands(cli), ids=" ".join)
def test_cli_every_command_has_help_with_example(invoke: Invoke, path: tuple[str, ...]) -> None:
    result = invoke([*path, "--help"])
    assert "Example:" in result.stdout
    assert result.stdout.splitlines()[0].startswith("Usage: ")


def test_cli_version(invoke: Invoke) -> None:
    assert "version 0.1.0" in invoke(["--version"]).stdout


def test_cli_ingest_prints_counts_on_stdout(invoke: Invoke, data_dir: Path, lake: Path) -> None:
    result = invoke(["ingest", "rollouts", data_dir / "ifeval_small", "--run", "s"])
    assert result.stdout == (
        f"run s: 16 rows landed, 2 rejected, from 3 files (0 already ingested) -> {lake}\n"
    )
    again = invoke(["ingest", "rollouts", data_dir / "ifeval_small", "--run", "s", "--json"])
    payload = json.loads(again.stdout)
    assert (payload["rows_landed"], payload["files_skipped"]) == (0, 3)


def test_cli_ingest_reports_reject_reasons_on_stderr(invoke: Invoke, data_dir: Path) -> None:
    result = invoke(["ingest", "rollouts", data_dir / "ifeval_small", "--run", "s"])
    assert "rejected 1: malformed JSON" in result.stderr
    assert "rejected 1: missing required field 'score' (or 'reward')" in result.stderr


def test_cli_ingest_strict_lands_nothing_when_a_row_is_bad(
    invoke: Invoke, data_dir: Path, lake: Path
) -> None:
    path = data_dir / "ifeval_small"
    result = invoke(["ingest", "rollouts", path, "--run", "s", "--strict", "-q"], exit_code=1)
    # quiet prints no summary, but the rejects the error points at are listed above it
    assert result.stdout == ""
    assert "  rejected 1: malformed JSON" in result.stderr
    assert result.stderr.endswith(
        f"Error: {path}: 2 rows rejected and 1 file with problems (--strict): nothing "
        "landed; fix them (rejects are listed above) or ingest without --strict\n"
    )
    assert not list((lake / "rollouts").rglob("*.parquet"))
    # Without --strict the same files land: nothing was recorded as done.
    landed = invoke(["ingest", "rollouts", path, "--run", "s"])
    assert "16 rows landed, 2 rejected" in landed.stdout


def test_cli_ingest_nothing_readable_fails(invoke: Invoke, tmp_path: Path) -> None:
    dumps = tmp_path / "dumps"
    dumps.mkdir()
    (dumps / "0.jsonl").write_text("not json\n{also not\n")
    result = invoke(["ingest", "rollouts", dumps, "-q"], exit_code=1)
    assert result.stderr.startswith(f"Error: {dumps}: no row could be read (2 rows rejected)")


def test_cli_ingest_empty_folder_is_one_line(invoke: Invoke, tmp_path: Path) -> None:
    result = invoke(["ingest", "rollouts", tmp_path], exit_code=1)
    assert result.stderr == (
        f"Error: {tmp_path}: no rollout files here ({{N}}.jsonl dumps, val_{{N}}.jsonl, "
        "train_data_step{N}.jsonl, completions_{N}.parquet, "
        "rollouts/step_{N}/train/all/traces.jsonl); point at a dump folder or a run folder, "
        "or pass one rollout table file\n"
    )


def test_cli_ingest_bad_option_is_usage_error(invoke: Invoke, tmp_path: Path) -> None:
    result = invoke(["ingest", "rollouts", tmp_path, "--iteration", "x"], exit_code=2)
    assert "Invalid value for '--iteration'" in result.stderr


WHERE_WAREHOUSE = (
    "(the default, warehouse/obs.duckdb, is relative to the current folder; --warehouse FILE"
    " or OBS_WAREHOUSE points elsewhere)"
)
WHERE_LAKE = (
    "(the default, lake/, is relative to the current folder; --lake DIR or OBS_LAKE points"
    " elsewhere)"
)


def test_cli_summary_without_warehouse(invoke: Invoke, warehouse: Path) -> None:
    result = invoke(["summary"], exit_code=1)
    assert result.stderr == (
        f"Error: {warehouse}: no warehouse yet {WHERE_WAREHOUSE}; run `obs ingest rollouts ...`"
        " then `obs build`\n"
    )


@pytest.mark.parametrize(
    ("args", "looked_at", "then"),
    [
        (["summary"], "warehouse/obs.duckdb", "run `obs ingest rollouts ...` then `obs build`"),
        (["analyze", "run-a"], "warehouse/obs.duckdb",
         "run `obs ingest rollouts ...` then `obs build`"),
        (["sql"], "warehouse/obs.duckdb", "run `obs build` first"),
        (["build"], "lake", "run `obs ingest rollouts PATH` or `obs ingest metrics PATH` first"),
    ],
)  # fmt: skip
def test_cli_a_default_path_not_there_is_named_in_full_with_how_to_point_elsewhere(
    args: list[str], looked_at: str, then: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Run from another folder than the one built in: the error names the absolute path
    it looked at, says the default is relative to the current folder and how to point
    elsewhere."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("OBS_WAREHOUSE", raising=False)
    monkeypatch.delenv("OBS_LAKE", raising=False)
    result = run_cli(args, exit_code=1)
    if looked_at == "lake":
        expected = f"{tmp_path / 'lake'}: nothing landed in this lake yet {WHERE_LAKE}"
    else:
        expected = f"{tmp_path / looked_at}: no warehouse yet {WHERE_WAREHOUSE}"
    assert result.stderr == f"Error: {expected}; {then}\n"


def test_cli_ingest_iterations_take_several_values(
    invoke: Invoke, data_dir: Path, lake: Path
) -> None:
    invoke(["ingest", "rollouts", data_dir / "ifeval_small", "--iterations", "0", "2", "-q"])
    assert sorted({r["iteration"] for r in lake_rows(lake)}) == [0, 2]


def test_cli_ingest_two_paths_is_usage_error(invoke: Invoke, tmp_path: Path) -> None:
    result = invoke(["ingest", "rollouts", tmp_path / "a", tmp_path / "b"], exit_code=2)
    assert "got 2 paths" in result.stderr


def test_build_state_tells_a_selection_from_other_dbt_arguments() -> None:
    from obs.runner import build_state

    args = ["--vars", "{a: 1}", "--select", "fct_x+", "fct_y", "--threads", "4", "-s=z"]
    assert build_state.selects(args)
    assert not build_state.selects(["--vars", "{a: 1}", "--full-refresh"])
    assert build_state.full_refresh(["-f"]) and not build_state.full_refresh(["--fail-fast"])
    # Arguments that change nothing built leave the fingerprint alone; vars do not.
    plain = build_state.project_fingerprint([])
    assert build_state.project_fingerprint(["--quiet", "--full-refresh"]) == plain
    assert build_state.project_fingerprint(["--log-level-file", "info"]) == plain
    assert build_state.project_fingerprint(["--vars", "{a: 1}"]) != plain


def test_dbt_interrupted_without_a_message_is_one_line(tmp_path: Path) -> None:
    """A second Ctrl-C or SIGTERM reaches dbt as an exception with no text."""
    from types import SimpleNamespace

    from obs.runner.dbt import Dbt
    from obs.runner.errors import DbtError

    dbt = Dbt(tmp_path / "w.duckdb", tmp_path / "lake")
    interrupted = SimpleNamespace(result=None, exception=KeyboardInterrupt(), success=False)
    # (a library error: a Python caller gets it as it is, the command line prints it)
    with pytest.raises(DbtError, match=r"^dbt build failed: KeyboardInterrupt$"):
        dbt._summarise("build", interrupted)


def test_a_kept_parse_is_dropped_when_the_project_changes(tmp_path: Path) -> None:
    from obs.runner.dbt import Dbt

    dbt = Dbt(tmp_path / "w.duckdb", tmp_path / "lake", keep_manifest=True)
    dbt.parsed_under("a")
    dbt._manifest = object()
    dbt.parsed_under("a")
    assert dbt._manifest is not None
    dbt.parsed_under("b")
    assert dbt._manifest is None


def test_the_parse_cache_of_one_checkout_is_never_used_by_another(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """dbt's saved parse names the files of the checkout that made it."""
    from obs.runner import dbt as obs_dbt

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    warehouse, lake = tmp_path / "w" / "obs.duckdb", tmp_path / "lake"
    mine, seed = obs_dbt._parse_cache(warehouse, lake)
    assert seed is None
    mine.parent.mkdir(parents=True)
    mine.write_bytes(b"parse")
    assert obs_dbt._parse_cache(warehouse, lake) == (mine, mine)
    # The same checkout on another lake seeds from it ...
    assert obs_dbt._parse_cache(warehouse, tmp_path / "lake2")[1] == mine
    # ... another checkout (a CI clone beside this one) never does.
    monkeypatch.setattr(obs_dbt, "project_dir", lambda: tmp_path / "other-checkout")
    theirs, seed = obs_dbt._parse_cache(warehouse, lake)
    assert theirs != mine
    assert seed is None


def test_an_unknown_command_names_the_closest_one(invoke: Invoke) -> None:
    typo = invoke(["summery"], exit_code=2)
    assert (
        typo.stderr.splitlines()[-1] == "Error: no command 'summery'; did you mean `obs summary`?"
    )
    far = invoke(["zzz"], exit_code=2)
    assert far.stderr.splitlines()[-1] == "Error: no command 'zzz'; see `obs --help`"


def test_the_wrong_ingest_command_names_the_right_one(invoke: Invoke, tmp_path: Path) -> None:
    """A TRL output folder: trainer_state.json is a run history, completions/ are rollouts;
    each ingest command given the other's files says which command lands them, and
    lands nothing (no rejects)."""
    state = tmp_path / "trl" / "trainer_state.json"
    state.parent.mkdir()
    state.write_text('{\n  "log_history": [{"step": 1, "loss": 0.5}],\n  "global_step": 1\n}\n')
    completions = tmp_path / "trl" / "completions"
    completions.mkdir()
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = {"step": [0], "prompt": ["p"], "completion": ["c"], "reward": [1.0]}
    pq.write_table(pa.table(table), completions / "completions_00000.parquet")
    wrong = invoke(["ingest", "rollouts", state], exit_code=1)
    assert wrong.stderr == (
        f"Error: {state}: one JSON document, not JSON lines (a rollout per line); it is a "
        f"run history (trl): land it with `obs ingest metrics {state}`\n"
    )
    other = invoke(["ingest", "metrics", completions], exit_code=1)
    assert other.stderr == (
        f"Error: {completions}: found no source here (`obs ingest metrics --help` lists what "
        f"it reads); it holds rollouts (1 file(s)): land them with `obs ingest rollouts "
        f"{completions}`\n"
    )
    assert not (tmp_path / "lake" / "_rejects").exists()
