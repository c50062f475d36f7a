"""The bulk path lands exactly what the row rules land, or leaves the file to them.

``rollouts_fast`` only speeds clean JSON-lines files up; the rules live in
``RolloutBuilder``. Each file here is landed twice, once with the bulk path and
once with it switched off, and every column of every row must agree (JSON
columns as JSON values). Files the bulk path must refuse are checked to be
refused, so that the comparison is never between the row rules and themselves.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from obs.demo.rollouts import DemoSpec, write_demo_run
from obs.ingest import rollouts as rollouts_module
from obs.ingest import rollouts_fast
from obs.ingest.readers import finite_json
from obs.ingest.rollouts import ingest_rollouts
from obs.ingest.rollouts_fast import fast_rollouts

from tests.conftest import DATA, lake_rows

JSON_COLUMNS = ("extra", "ground_truth", "instruction_kwargs")


def _line(prompt: str, score: object = 1.0, **fields: object) -> str:
    return json.dumps({"input": prompt, "output": f"answer to {prompt}", "score": score, **fields})


CLEAN = {
    "ifeval": [
        _line(
            "p",
            0.5,
            V_i=1.0,
            S_i=0.25,
            alpha_threshold=0.5,
            reward_case="V_i > 0 and S_i > a (bonus)",
            prompt_strict_acc=1.0,
            inst_strict_acc=0.5,
            num_instructions=2,
            num_followed=1,
            format_score=1.0,
            gts={
                "instruction_id_list": ["a:b", "c:d"],
                "kwargs": [{"num_words": 300, "relation": None}, {}],
            },
            follow_instruction_list=[True, False],
            step=3,
        ),
        _line("q", 0.0, gts={"instruction_id_list": ["a:b"], "kwargs": [{"language": "es"}]}),
    ],
    "unknown-fields": [
        _line("p", 1, acc=True, pred="42", meta={"seed": 7, "tags": ["x", None], "m": {"n": None}}),
        _line("p", 0, acc=False, reward_extra=[1.5, 2.5], note=None, meta={"seed": 8}),
        _line("q", 1, deep=[{"a": [{"b": 1}]}, None, {}]),
    ],
    "table-vocabulary": [
        json.dumps({"prompt": "p", "response": "r", "reward": 1.5, "data_idx": 4, "sample_idx": 0}),
        json.dumps({"prompt": "p", "response": "r2", "reward": -2, "data_idx": 4}),
    ],
    "bare-ground-truth": [
        _line("p", 1, gts="42"),
        _line("p", 0, gts="4 2"),
        _line("q", 1),
    ],
    "unicode": [
        _line('caf\u00e9 \u2028 \U0001f600 "quoted" \\ back', 1, note="\u00fc\u00df"),
        _line("plain", 0, **{"cl\u00e9": 1}),
    ],
    # A prompt's rows usually share one ground truth (written once, taken for each);
    # here one row's differs, and every row's is written.
    "ground-truth-differs-within-a-prompt": [
        _line("p", 1, gts={"instruction_id_list": ["a:b"], "kwargs": [{"n": 1}]}),
        _line("p", 0, gts={"instruction_id_list": ["a:b"], "kwargs": [{"n": 1}]}),
        _line("p", 1, gts={"instruction_id_list": ["a:b"], "kwargs": [{"n": 2}]}),
        _line("q", 1, gts={"instruction_id_list": [], "kwargs": [None, {}]}),
    ],
    # Numbers Python writes with an exponent: their JSON text is DuckDB's to write.
    "tiny-numbers": [
        _line("p", 1, kl=1.5e-05, gts={"instruction_id_list": ["a:b"], "kwargs": [{"t": 2.5e-7}]}),
        _line("q", 0, kl=0.25),
    ],
    # verl's V1 dumps: the uid names the group (of several shapes, and a null).
    "verl-v1-uid": [
        _line("p", 1, gts="42", step=3, uid="4e1c9a0b-5d2f-4a7e-8c3b-0f9e8d7c6b5a_0_0"),
        _line("p", 0, gts="42", step=3, uid="4e1c9a0b-5d2f-4a7e-8c3b-0f9e8d7c6b5a_1_0"),
        _line("p", 0, gts="42", step=3, uid="4e1c9a0b-5d2f-4a7e-8c3b-0f9e8d7c6b5a_1_12"),
        _line("q", 1, step=3, uid="plain"),
        _line("q", 1, step=3, uid="a_b_1_2_3"),
        _line("q", 1, step=3, uid="caf\u00e9\n_1_2"),
        _line("q", 1, step=3, uid=None),
        _line("q", 1, step=3),
    ],
    # More than one parse block and more than one piece of the line screen.
    "large-file": [
        _line(f"p{i % 7}", i % 2, pad="x" * 1500, gts={"instruction_id_list": ["a:b"]})
        for i in range(1500)
    ],
}


def _land(folder: Path, lake: Path, *, bulk: bool, monkeypatch: pytest.MonkeyPatch) -> list[dict]:
    with monkeypatch.context() as patch:
        if not bulk:
            patch.setattr(rollouts_module, "fast_rollouts", lambda *a, **k: None)
        ingest_rollouts(folder, lake=lake, run_id="r", workers=1)
    rows = lake_rows(lake)
    for row in rows:
        row.pop("ingested_at")
        for name in JSON_COLUMNS:
            row[name] = json.loads(row[name]) if row[name] is not None else None
    return rows


def _write(folder: Path, lines: list[str]) -> Path:
    folder.mkdir(parents=True)
    path = folder / "3.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("name", sorted(CLEAN))
def test_fastpath_lands_what_the_rules_land(
    tmp_path: Path, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _write(tmp_path / "dumps", CLEAN[name])
    content = path.read_bytes()
    bulk = fast_rollouts(content, 0, len(content), 1, claimed=3, fixed=None, path=str(path))
    assert bulk is not None, "the bulk path refused a clean file: the comparison would be empty"
    fast = _land(tmp_path / "dumps", tmp_path / "fast", bulk=True, monkeypatch=monkeypatch)
    rules = _land(tmp_path / "dumps", tmp_path / "rules", bulk=False, monkeypatch=monkeypatch)
    assert fast == rules


def test_fastpath_agrees_on_a_synthetic_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = write_demo_run(tmp_path / "demo", DemoSpec(prompts=30, iterations=3, seed=5))
    content = run.files[0].read_bytes()
    assert fast_rollouts(content, 0, len(content), 1, claimed=0, fixed=None, path="x") is not None
    fast = _land(tmp_path / "demo", tmp_path / "fast", bulk=True, monkeypatch=monkeypatch)
    rules = _land(tmp_path / "demo", tmp_path / "rules", bulk=False, monkeypatch=monkeypatch)
    assert len(fast) == run.rollouts and fast == rules


def test_fastpath_agrees_on_the_fixture_dumps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fast = _land(DATA / "ifeval_small", tmp_path / "fast", bulk=True, monkeypatch=monkeypatch)
    rules = _land(DATA / "ifeval_small", tmp_path / "rules", bulk=False, monkeypatch=monkeypatch)
    assert fast == rules


@pytest.mark.parametrize(
    "lines",
    [
        pytest.param([_line("a"), "", _line("b")], id="blank-line"),
        pytest.param([_line("a"), "  " + _line("b")], id="indented-line"),
        pytest.param([_line("a") + _line("b"), "   "], id="two-objects-and-a-blank"),
        pytest.param([_line("a", float("nan"))], id="nan-score"),
        pytest.param([_line("a", 1, kl=float("inf"))], id="infinity-in-unknown"),
        pytest.param([_line("a", 1e200)], id="score-out-of-range"),
        pytest.param([_line("a", "0.5")], id="numeric-text"),
        pytest.param([_line("a", 1, follow_instruction_list=[1, 0])], id="flags-as-numbers"),
        pytest.param([_line("a", 1, num_followed=2.0)], id="whole-float"),
        pytest.param([_line("a", 1, step=5)], id="step-disagrees-with-name"),
        pytest.param([_line("a", 1, reward=0.5)], id="score-and-reward"),
        pytest.param([_line("a", 1, V_i=1.0, v_i=0.5)], id="two-spellings"),
        pytest.param([_line("a", 1, ground_truth="4")], id="ground-truth-field"),
        pytest.param([_line("a", 1, rewards={"f": 1.0})], id="rewards-map"),
        pytest.param([_line("a", 1, when="2024-01-01 00:00:00")], id="timestamp-like-text"),
        pytest.param([_line("a", 1, x=1), _line("b", 1, x="one")], id="mixed-types"),
        pytest.param([_line("a", 1, gts="4"), _line("b", 1, gts=["4"])], id="mixed-gts"),
        pytest.param(['{"input": "a", "input": "b", "output": "o", "score": 1}'], id="dup-key"),
        pytest.param(['{"input": "\\ud800", "output": "o", "score": 1}'], id="lone-surrogate"),
        pytest.param(['{"output": "o", "score": 1}'], id="no-prompt"),
        pytest.param(['["not", "an", "object"]'], id="array-line"),
        pytest.param(
            [_line("a", pad="x" * 1000)] * 1200 + ["", _line("b")], id="blank-line-past-1mb"
        ),
        pytest.param([_line("a", 1, t="\ud83d")], id="lone-high-surrogate"),
    ],
)
def test_fastpath_leaves_what_needs_the_rules(tmp_path: Path, lines: list[str]) -> None:
    path = _write(tmp_path / "dumps", lines)
    content = path.read_bytes()
    assert fast_rollouts(content, 0, len(content), 1, claimed=3, fixed=None, path=str(path)) is None


# --------------------------------------------------------------------------- JSON text in bulk

_TEXTS = [
    'quote " back \\ slash / tab \t nl \n cr \r bs \b ff \f bell \x07 esc \x1b del \x7f',
    "caf\u00e9 \u2028 \U0001f600",
    "",
    None,
]
TEXT_ARRAYS = {
    "texts": pa.array(_TEXTS),
    "numbers": pa.array([0.5, -12.25, 123456.789, 0.0001234, None, 1 / 3]),
    "integers": pa.array([0, -5, 2**62, None]),
    "flags": pa.array([True, False, None]),
    "nothing": pa.array([None, None], pa.null()),
    "lists-of-texts": pa.array([["a", 'b"c'], [], None, ["\n"]], pa.list_(pa.string())),
    "lists-with-null-items": pa.array([["a", None], [None], []], pa.list_(pa.string())),
    "nested-lists": pa.array([[[1, 2], [], None], None, [[None]]], pa.list_(pa.list_(pa.int64()))),
    "objects": pa.array(
        [
            {"n": 1, "s": "x", "l": [1.5], "o": {"a": None, "b": True}},
            {"n": None, "s": None, "l": None, "o": None},
            None,
            {"n": 2, "s": 'q"', "l": [], "o": {"a": "z", "b": None}},
        ]
    ),
    "objects-in-lists": pa.array(
        [[{"num_words": 300, "relation": None}, {}], [{"language": "es"}], [None], None, []]
    ),
    "sliced": pa.array([["skip"], ["a", "b"], [], ["c"]], pa.list_(pa.string())).slice(1, 3),
}


@pytest.mark.parametrize("name", sorted(TEXT_ARRAYS))
def test_bulk_json_text_is_the_rules_text(name: str) -> None:
    """pyarrow's kernels write each value's JSON exactly as the rules do.

    DuckDB, which writes what the kernels cannot, writes the same values (its
    escapes of control characters are upper case: ``\u001b``).
    """
    array = TEXT_ARRAYS[name]
    text = rollouts_fast._json_text(array)
    assert text is not None, "the kernels refused a value they can write"
    rules = [None if v is None else finite_json(v) for v in array.to_pylist()]
    assert text.to_pylist() == rules
    con = duckdb.connect()
    source = pa.table({"v": array})
    sql = f"select ({rollouts_fast._json_sql('v', array.type)})::VARCHAR as t from source"
    duck = con.from_arrow(source.__arrow_c_stream__()).query("source", sql).to_arrow_table()
    parsed = [None if t is None else json.loads(t) for t in duck.column("t").to_pylist()]
    assert parsed == [None if t is None else json.loads(t) for t in rules]


@pytest.mark.parametrize(
    "values",
    [
        pytest.param([1.5e-05, 0.5], id="exponent-small"),
        pytest.param([1.0e-4 / 3], id="just-under-1e-4"),
        pytest.param([2.5e15 + 0.5], id="exponent-large"),
    ],
)
def test_bulk_json_text_leaves_numbers_python_writes_with_an_exponent(values: list[float]) -> None:
    assert rollouts_fast._json_text(pa.array(values)) is None


def test_bulk_json_text_numbers_agree_with_python_over_a_range() -> None:
    rng = np.random.default_rng(5)
    values = np.concatenate([rng.random(5000), 10.0 ** rng.uniform(-4, 16, 20000)])
    values = values[values != np.floor(values)]
    for sign in (1, -1):
        array = pa.array(sign * values)
        text = rollouts_fast._number_text(array)
        if text is None:  # some value pyarrow writes otherwise: check them one by one
            kept = [
                v for v in (sign * values).tolist() if rollouts_fast._number_text(pa.array([v]))
            ]
            assert len(kept) > len(values) / 2
            array, text = pa.array(kept), rollouts_fast._number_text(pa.array(kept))
        assert text is not None
        assert text.to_pylist() == [repr(v) for v in array.to_pylist()]


# --------------------------------------------------------------------------- the line screen


@pytest.mark.parametrize(
    ("content", "lines"),
    [
        (b"{}\n", 1),
        (b'{"a": 1}\r\n{"a": 2}\r\n', 2),
        (b"\xef\xbb\xbf{}\n{}\n", 2),
        (b"{}\n\n{}\n", None),
        (b"{}\n {}\n", None),
        (b"{}\n\t{}\n", None),
        (b" {}\n", None),
        (b"{}", None),
        (b"", None),
        (b"{}\n{}\n\n", None),
    ],
)
@pytest.mark.parametrize("piece", [1, 2, 3, 1 << 20])
def test_line_screen_at_every_piece_boundary(
    content: bytes, lines: int | None, piece: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(rollouts_fast, "SCREEN_PIECE", piece)
    assert rollouts_fast._lines(memoryview(content)) == lines


def test_line_screen_of_a_chunk_mid_file() -> None:
    content = b'{"a": 1}\n{"a": 2}\n{"a": 3}\n'
    start = content.index(b"\n") + 1
    assert rollouts_fast._lines(memoryview(content)[start:]) == 2


# --------------------------------------------------------------------------- no pandas


def test_bulk_path_and_landing_never_import_pandas(tmp_path: Path) -> None:
    """pyarrow imports pandas (0.3 s a process) on its first conversion of a Python value.

    Landing clean dumps makes none, in this process or in a worker: arrays are
    built from buffers. A test, so that a stray ``pa.array`` shows up here.
    """
    run = write_demo_run(tmp_path / "demo", DemoSpec(prompts=20, iterations=2, seed=3))
    script = (
        "import sys; from pathlib import Path\n"
        "from obs.ingest.rollouts import ingest_rollouts\n"
        "from obs.ingest import appended\n"
        f"ingest_rollouts(Path({str(run.path)!r}), lake=Path({str(tmp_path / 'lake')!r}), "
        "run_id='r', workers=1)\n"
        "print(sorted(m for m in ('pandas', 'pyarrow.dataset') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
    assert len(lake_rows(tmp_path / "lake")) == run.rollouts


# --------------------------------------------------------------------------- one text a prompt


def _maybe(rng: np.random.Generator, value: object) -> object:
    return None if rng.integers(0, 3) == 0 else value


def _value(rng: np.random.Generator) -> object:
    """A random ground truth of one shape (rows share one arrow type), nulls anywhere."""
    if rng.integers(0, 8) == 0:
        return None
    return {
        "ids": [str(rng.integers(0, 3)) for _ in range(rng.integers(0, 3))],
        "kwargs": [
            None
            if rng.integers(0, 6) == 0
            else {
                "n": _maybe(rng, int(rng.integers(0, 3))),
                "s": _maybe(rng, ["x", "y"][int(rng.integers(0, 2))]),
                "f": _maybe(rng, [0.5, 0.25][int(rng.integers(0, 2))]),
                "b": _maybe(rng, bool(rng.integers(0, 2))),
                "l": _maybe(rng, [int(rng.integers(0, 2))] * int(rng.integers(0, 3))),
                "z": None,
            }
            for _ in range(rng.integers(0, 3))
        ],
    }


@pytest.mark.parametrize("seed", range(40))
def test_same_value_check_is_value_equality(seed: int) -> None:
    """``_same`` (rows against rows of equal values, one row against any) is value equality."""
    rng = np.random.default_rng(seed)
    distinct = [_value(rng) for _ in range(4)]
    picks = [int(rng.integers(0, 4)) for _ in range(32)]
    offset = int(rng.integers(0, 3))
    array = pa.array([distinct[p] for p in picks]).slice(offset)
    values, picks = array.to_pylist(), picks[offset:]
    others = np.array([int(rng.choice([j for j, q in enumerate(picks) if q == p])) for p in picks])
    if seed % 2:  # one row against any other row
        others[int(rng.integers(0, len(picks)))] = int(rng.integers(0, len(picks)))
    rows = np.arange(len(values))
    expected = all(values[r] == values[o] for r, o in zip(rows, others, strict=True))
    assert rollouts_fast._same(array, rows, others) == expected


@pytest.mark.parametrize("seed", range(10))
def test_texts_written_once_a_prompt_are_every_rows_texts(seed: int) -> None:
    rng = np.random.default_rng(seed)
    distinct = [_value(rng) for _ in range(3)]
    by_prompt = [int(rng.integers(0, 3)) for _ in range(40)]
    gts = [distinct[p] for p in by_prompt]
    if seed % 2:  # a row whose ground truth is not its prompt's first row's
        gts[-1] = _value(np.random.default_rng(seed + 100))
    array = pa.array(gts)
    codes = pc.dictionary_encode(pa.array([str(p) for p in by_prompt])).indices
    once = rollouts_fast._truth_texts(array, codes)
    every = rollouts_fast._truth_texts_of_every_row(array)
    assert once is not None and every is not None
    assert [t.to_pylist() for t in once] == [t.to_pylist() for t in every]
