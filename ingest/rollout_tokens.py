"""A rollout's per-token arrays: what the trainer trained on, for the ``rollout_tokens`` table.

NeMo-RL's ``train_data_step{N}.jsonl`` (``Logger.log_batched_dict_as_jsonl``
over the step's training batch, one sample a line) holds, besides the
conversation and reward, the batch's token tensors of the sample, each a
one-element list (the sample's row of the batch) around one value per token
of the sequence, prompt included, right-padded to the batch's longest:

* ``token_ids``: the token ids (padding: the tokenizer's pad id);
* ``token_loss_mask``: 1 on the tokens the rollout engine generated (the
  trained tokens), 0 on the prompt, tool output and padding;
* ``generation_logprobs``: the rollout engine's logprob of each generated
  token, 0 elsewhere;
* ``prev_logprobs``: the trainer's logprob of each token under the policy
  before the update (0 at the first position, which has no context);
* ``advantages``: the advantage of each token (GRPO: the sample's, repeated);

and two numbers: ``input_lengths`` (the sequence's tokens before padding)
and ``sample_loss_mask`` (the sample's loss weight; 0 drops it, as
overlong filtering does). Position i of every array is token i.

``token_row`` checks them and gives the table's columns: the padding after
``input_lengths`` is dropped, the mask becomes booleans. A row whose arrays
cannot be aligned is rejected with the reason, its rollout still lands.
Nothing here computes analytics.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
from obs.ingest.readers import RowError
from obs.ingest.rollout_values import NUMBER_LIMIT, as_double, as_int, kind_of
from obs.ingest.schema import ROLLOUT_TOKEN_TABLE

# Source field -> column, in the table's order.
TOKEN_ARRAYS = {
    "token_ids": "token_ids",
    "token_loss_mask": "loss_mask",
    "generation_logprobs": "rollout_logprobs",
    "prev_logprobs": "trainer_logprobs",
    "advantages": "advantages",
}
TOKEN_NUMBERS = ("input_lengths", "sample_loss_mask")


def take_arrays(row: dict[str, Any]) -> dict[str, Any]:
    """Remove the token arrays from a (NeMo-RL, unwrapped) row: they never go to ``extra``."""
    return {name: row.pop(name) for name in TOKEN_ARRAYS if name in row}


def number_array(name: str, value: object) -> np.ndarray:
    """A list of finite numbers within +-1e100 as a numpy array (the loss mask may
    hold true/false too); else RowError."""
    if not isinstance(value, list):
        raise RowError(
            f"field {name!r} must be a list of numbers (one per token), got {kind_of(value)}"
        )
    try:
        array = np.array(value)
    except (ValueError, OverflowError):
        array = np.array(value, dtype=object)
    kinds = "iufb" if name == "token_loss_mask" else "iuf"
    if array.ndim != 1 or (array.size and array.dtype.kind not in kinds):
        odd = [v for v in value if isinstance(v, bool) or not isinstance(v, int | float)]
        if odd:
            what = "a nested list" if isinstance(odd[0], list) else kind_of(odd[0])
            raise RowError(
                f"field {name!r} must be a list of numbers (one per token), holds {what}"
            )
        raise RowError(f"field {name!r} holds a number out of range for a 64-bit integer")
    if array.dtype.kind == "f" and array.size:
        finite = np.isfinite(array)
        if not finite.all():
            at = int(np.argmin(finite))
            raise RowError(
                f"field {name!r} holds a non-finite number ({array[at]}) at token {at + 1}"
            )
        if float(np.abs(array).max()) > NUMBER_LIMIT:
            raise RowError(f"field {name!r} holds a number out of range (at most 1e100 in size)")
    if array.dtype.kind == "u" and array.size and int(array.max()) > 2**63 - 1:
        raise RowError(f"field {name!r} holds a number out of range for a 64-bit integer")
    return array


def token_row(arrays: dict[str, Any], row: dict[str, Any]) -> dict[str, Any] | None:
    """The ``rollout_tokens`` columns of a rollout (identities aside), or None when it
    carries no token array; RowError when its arrays cannot land."""
    given = {name: value for name, value in arrays.items() if value is not None}
    if not given:
        return None
    checked = {name: number_array(name, value) for name, value in given.items()}
    lengths = {name: len(array) for name, array in checked.items()}
    if len(set(lengths.values())) > 1:
        shown = ", ".join(f"{name} {count}" for name, count in lengths.items())
        raise RowError(
            f"token arrays of unequal lengths: {shown} (one value per token in each); "
            "the rollout landed without them (fix the line and ingest the file under a "
            "new --run to land them)"
        )
    width = next(iter(lengths.values()))
    length = as_int("input_lengths", row.get("input_lengths"))
    if length is None:
        length = width
    elif not 0 <= length <= width:
        raise RowError(
            f"field 'input_lengths' ({length}) is not between 0 and the {width} tokens "
            "its token arrays hold"
        )
    out: dict[str, Any] = {}
    for name, column in TOKEN_ARRAYS.items():
        array = checked.get(name)
        if array is None:
            out[column] = None
            continue
        if name == "token_loss_mask":
            if array.size and not np.isin(array, (0, 1)).all():
                raise RowError("field 'token_loss_mask' must hold 0 or 1 per token")
            if array[length:].any():
                raise RowError(
                    "field 'token_loss_mask' marks tokens past 'input_lengths' "
                    f"({length}), in the padding"
                )
            out[column] = array[:length].astype(bool)
        elif name == "token_ids":
            if array.dtype.kind == "f" and not (array == np.floor(array)).all():
                raise RowError("field 'token_ids' must hold whole numbers")
            out[column] = array[:length].astype(np.int64)
        else:
            out[column] = array[:length].astype(np.float64)
    out["sample_loss_mask"] = as_double("sample_loss_mask", row.get("sample_loss_mask"))
    out["sequence_tokens"] = length
    return out  # NeMo-RL logs no reference logprobs and no policy version: null


def to_table(rows: list[dict[str, Any]]) -> pa.Table:
    """``rollout_tokens`` rows (dicts of columns; a column left out is null) as one arrow table."""
    schema = ROLLOUT_TOKEN_TABLE.schema
    if not rows:
        return schema.empty_table()
    arrays = []
    for field in schema:
        values = [row.get(field.name) for row in rows]
        if pa.types.is_list(field.type):
            arrays.append(_list_array(values, field.type))
        else:
            arrays.append(pa.array(values, type=field.type))
    return pa.Table.from_arrays(arrays, schema=schema)


def _list_array(values: list[np.ndarray | None], kind: pa.ListType) -> pa.Array:
    """A list column from numpy arrays (None: null), built from one flat buffer."""
    sizes = np.array([0 if v is None else len(v) for v in values], dtype=np.int32)
    offsets = np.zeros(len(values) + 1, dtype=np.int32)
    np.cumsum(sizes, out=offsets[1:])
    present = [v for v in values if v is not None]
    flat = (
        np.concatenate(present)
        if present
        else np.array([], dtype=kind.value_type.to_pandas_dtype())
    )
    mask = pa.array([v is None for v in values])
    return pa.ListArray.from_arrays(
        pa.array(offsets), pa.array(flat, type=kind.value_type), mask=mask
    )
