"""Reading source files: a snapshot of the bytes, then records with line numbers.

A snapshot is the content of a file up to the size it had when it was opened,
decompressed when it is gzip, cut after its last complete line. Everything an
ingest lands or records comes from that one snapshot: a file that grows while
it is read lands its new lines on the next ingest, never twice.

JSON lines are parsed by the standard library, one line at a time, with one set
of rules (see ``parse_json_line``); there is no second parser that could
disagree with it.
"""

from __future__ import annotations

import base64
import datetime
import io
import json
import math
import os
import re
import zlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from decimal import Decimal
from json.encoder import c_encode_basestring, c_make_encoder  # type: ignore[attr-defined]
from pathlib import Path
from typing import Any, TypeAlias

import pyarrow as pa
import pyarrow.parquet as pq
from obs.ingest.errors import IngestError

RAW_LIMIT = 65_536
GZIP_CHUNK = 1 << 16
GZIP_RATIO_ENV = "OBS_GZIP_MAX_RATIO"  # the default gzip limit's ratio (GzipLimit)
# A lone UTF-16 surrogate written as a JSON escape (\ud800 .. \udfff); pairs are fine.
SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
BOM = "\ufeff"


# A file's bytes: ``bytes``, or a pyarrow buffer (JSON lines read as they are).
Content: TypeAlias = "bytes | pa.Buffer"


@dataclass
class Snapshot:
    """The bytes of a file as one ingest sees them."""

    path: Path
    size: int  # on-disk size when opened
    mtime_ns: int
    content: Content  # decompressed content up to ``size``
    complete_end: int  # end of the last complete line (== len(content) for tables)
    # complete, truncated (gzip still being written), damaged, limited (cut at the gzip limit)
    status: str = "complete"
    note: str = ""


def snapshot(path: Path, *, line_based: bool, gzip_limit: GzipLimit | None = None) -> Snapshot:
    """Read ``path`` once: its size and time, and its content up to that size.

    Gzip is decompressed up to ``gzip_limit`` (default: ``GzipLimit.from_env``).
    """
    gzip = path.name.endswith(".gz")
    try:
        with path.open("rb") as handle:
            stat = os.fstat(handle.fileno())
            raw: Content = (
                read_buffer(handle, stat.st_size)
                if line_based and not gzip
                else handle.read(stat.st_size)
            )
    except FileNotFoundError as exc:
        raise IngestError(
            f"{path}: vanished before it was read (deleted or moved); nothing of it landed"
        ) from exc
    except OSError as exc:
        raise IngestError(f"{path}: cannot read ({exc.strerror}); check permissions") from exc
    status, note = "complete", ""
    content = raw
    if gzip:
        limit = gzip_limit or GzipLimit.from_env(os.environ)
        content, status, note = gunzip(bytes(raw), limit)
    complete_end = last_line_end(content) if line_based else len(content)
    return Snapshot(path, stat.st_size, stat.st_mtime_ns, content, complete_end, status, note)


def read_buffer(handle: io.BufferedIOBase, size: int) -> pa.Buffer:
    """Up to ``size`` bytes of ``handle`` (fewer at its end), in memory of pyarrow's pool.

    A fresh ``bytes`` of many MB is new memory from the system, a page fault
    every 4 KiB (dear in a virtual machine); the pool's memory is reused from
    one file to the next.
    """
    buffer = pa.allocate_buffer(size)
    view = memoryview(buffer)
    done = 0
    while done < size:
        count = handle.readinto(view[done:])
        if not count:
            return buffer.slice(0, done)
        done += count
    return buffer


def last_line_end(content: Content) -> int:
    """Where the last complete line of ``content`` ends (0: no complete line)."""
    if isinstance(content, bytes):
        return content.rfind(b"\n") + 1
    view = memoryview(content)
    end, step = len(view), 1 << 16
    while end > 0:
        begin = max(0, end - step)
        found = bytes(view[begin:end]).rfind(b"\n")
        if found >= 0:
            return begin + found + 1
        end, step = begin, step * 2
    return 0


def count_lines(content: Content, start: int, end: int) -> int:
    """Line ends in content[start:end]."""
    if isinstance(content, bytes):
        return content.count(b"\n", start, end)
    view = memoryview(content)
    step = 1 << 20
    return sum(bytes(view[at : min(at + step, end)]).count(b"\n") for at in range(start, end, step))


def _gzip_header(raw: bytes, at: int) -> int:
    """Where the deflate data of the gzip member starting at ``at`` begins."""
    head = raw[at : at + 10]
    if len(head) < 10 and b"\x1f\x8b\x08".startswith(head[:3]):
        raise EOFError  # a member whose header is still being written
    if head[:3] != b"\x1f\x8b\x08":
        raise ValueError("not a gzip member")
    flags = raw[at + 3]
    position = at + 10
    if flags & 4:  # FEXTRA
        if len(raw) < position + 2:
            raise EOFError
        position += 2 + int.from_bytes(raw[position : position + 2], "little")
    for bit in (8, 16):  # FNAME, FCOMMENT: zero-terminated
        if flags & bit:
            end = raw.find(b"\x00", position)
            if end < 0:
                raise EOFError
            position = end + 1
    if flags & 2:  # FHCRC
        position += 2
    if position > len(raw):
        raise EOFError
    return position


@dataclass(frozen=True)
class GzipLimit:
    """How far a gzip file may expand before it is cut (a gzip bomb stops there).

    The first ``free_bytes`` of content are always read; past them a file may
    hold at most ``ratio`` times its compressed size. JSON lines compress 3 to
    30 times; a bomb (a few MB holding GBs) a thousand times.
    """

    ratio: float = 50.0
    free_bytes: int = 64 << 20

    def cap(self, compressed: int) -> int:
        return max(self.free_bytes, int(self.ratio * compressed))

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> GzipLimit:
        """The default limit, its ratio from ``OBS_GZIP_MAX_RATIO`` when set."""
        text = environ.get(GZIP_RATIO_ENV, "").strip()
        if not text:
            return cls()
        try:
            ratio = float(text)
        except ValueError:
            ratio = math.nan
        if not math.isfinite(ratio) or ratio < 1:
            raise IngestError(f"{GZIP_RATIO_ENV}={text!r}: give a number of 1 or more (default 50)")
        return cls(ratio=ratio)


GZIP_PIECE = 4 << 20  # most content one decompress call makes: memory stays near the content


def gunzip(raw: bytes, limit: GzipLimit | None = None) -> tuple[Content, str, str]:
    """Decompress every gzip member; keep everything that decompresses.

    Returns the content, ``complete``/``truncated``/``damaged``/``limited`` and
    a note saying where and how the stream stopped. Each member's CRC-32 and
    length are checked here (not by zlib, which would drop the last output).
    Content is decompressed a piece at a time into one buffer, never past the
    limit's cap: a file that would expand further is cut there (``limited``).
    """
    limit = limit or GzipLimit()
    cap = limit.cap(len(raw))
    out = bytearray()
    view = memoryview(raw)
    position = 0
    members = 0
    while position < len(raw):
        if members and not raw[position:].strip(b"\x00"):
            break  # zero padding after the last member
        try:
            data_start = _gzip_header(raw, position)
        except EOFError:
            return _cut(out, raw)
        except ValueError:
            what = "not gzip data" if not members else "bytes after the last gzip member"
            return _damaged(out, f"{what} at byte {position:,}")
        decompressor = zlib.decompressobj(-zlib.MAX_WBITS)
        member_start, crc = len(out), 0
        position = data_start
        try:
            while position < len(raw) and not decompressor.eof:
                room = cap - len(out)
                if room <= 0:
                    return _limited(out, raw, cap, limit)
                chunk = view[position : position + GZIP_CHUNK]
                piece = decompressor.decompress(chunk, min(room, GZIP_PIECE))
                crc = zlib.crc32(piece, crc)
                out += piece
                position += len(chunk) - len(decompressor.unconsumed_tail)
                position -= len(decompressor.unused_data)
        except zlib.error as exc:
            return _damaged(out, f"{exc} near byte {position:,}")
        if not decompressor.eof:
            out += decompressor.flush()
            return _cut(out, raw)
        trailer = raw[position : position + 8]
        if len(trailer) < 8:
            return _cut(out, raw)
        position += 8
        members += 1
        crc_read = int.from_bytes(trailer[:4], "little")
        size = int.from_bytes(trailer[4:], "little")
        if crc_read != crc or size != (len(out) - member_start) & 0xFFFFFFFF:
            # Corrupt somewhere in this member, and nothing says where: keep none of it.
            del out[member_start:]
            return _damaged(out, f"member {members} fails its checksum: its data is corrupt")
    return _content_of(out), "complete", ""


def _content_of(out: bytearray) -> Content:
    """The decompressed bytes without a copy (a pyarrow buffer over them)."""
    return pa.py_buffer(out)


def _damaged(out: bytearray, what: str) -> tuple[Content, str, str]:
    return (
        _content_of(out),
        "damaged",
        f"damaged gzip ({what}); only the {len(out):,} bytes before it can be read",
    )


def _cut(out: bytearray, raw: bytes) -> tuple[Content, str, str]:
    return (
        _content_of(out),
        "truncated",
        f"gzip stream ends early after {len(raw):,} bytes (still being written, or cut); "
        f"{len(out):,} bytes read so far",
    )


def _limited(out: bytearray, raw: bytes, cap: int, limit: GzipLimit) -> tuple[Content, str, str]:
    return (
        _content_of(out),
        "limited",
        f"gzip expands past its limit of {cap:,} bytes ({limit.ratio:g} times its "
        f"{len(raw):,} compressed bytes, at least {limit.free_bytes >> 20} MiB); only the lines "
        "before the limit land (a gzip bomb? if not, raise the limit with --gzip-max-ratio "
        "or OBS_GZIP_MAX_RATIO and ingest again)",
    )


# --------------------------------------------------------------------------- records


@dataclass
class Record:
    """One source row: its 1-based line (or row) number, the raw text, the value."""

    line: int
    raw: str
    value: Any = None
    error: str | None = None  # why it could not even be parsed
    numeric: frozenset[str] = frozenset()  # a typed source's numeric columns
    size: int = 0  # the line's length in the source (JSON lines), for batching by bytes
    text: str | bytes = ""  # the line as written (JSON lines), for a reject's raw text

    def as_written(self) -> str:
        """The row's raw text for ``_rejects``: the line as written, else the value rendered."""
        if self.raw:
            return self.raw
        if self.text:
            line = self.text
            return raw_text(
                line.encode("utf-8", "surrogatepass") if isinstance(line, str) else line
            )
        return raw_of(self.value)


class RowError(ValueError):
    """A row that cannot land, with the reason written to ``_rejects``."""

    def __init__(
        self, reason: str, *, fixable_by: str | None = None, whole_file: bool = False
    ) -> None:
        super().__init__(reason)
        self.reason = reason
        # An option that lets the row land. With ``whole_file`` it applies to a
        # file none of whose rows landed (no reward column: score it); without,
        # one such row keeps the whole file back (no iteration: pass one).
        self.fixable_by = fixable_by
        self.whole_file = whole_file


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    value = dict(pairs)
    if len(value) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise RowError(f"duplicate key {key!r} in one object")
            seen.add(key)
    return value


_DECODER = json.JSONDecoder(object_pairs_hook=_unique_keys)


def raw_text(line: bytes) -> str:
    text = line[:RAW_LIMIT].decode("utf-8", "backslashreplace")
    return text if len(line) <= RAW_LIMIT else text + " ...(cut)"


def parse_json_line(line: bytes) -> Any:
    """The value of one JSON line, or RowError saying why it has none.

    The rules: UTF-8 text (a leading byte-order mark is ignored); exactly one
    JSON value; no key twice in one object; no lone surrogate escape (it has
    no UTF-8 form). NaN and Infinity parse here and are judged by the field
    they sit in.
    """
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RowError(f"not valid UTF-8 text (byte {exc.start + 1} of the line)") from exc
    return _parse_text(text, SURROGATE_ESCAPE.search(line) is not None)


# Arrays and objects may nest this deep in one value; deeper is a reject. Python's
# parser and every recursive step after it would otherwise run out of stack.
MAX_DEPTH = 200
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')
_BRACKET = re.compile(r"[\[\]{}]")
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')


def json_depth(text: str) -> int:
    """How deep arrays and objects nest in JSON ``text`` (brackets in strings do not count)."""
    depth = deepest = 0
    for match in _BRACKET.finditer(_STRING.sub("", text)):
        if match.group() in "[{":
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth -= 1
    return deepest


def check_depth(text: str) -> None:
    """RowError when ``text`` nests deeper than MAX_DEPTH (counted only past that many brackets)."""
    if _deep(text):
        raise RowError(too_deep())


def too_deep() -> str:
    return f"nested more than {MAX_DEPTH} deep (arrays and objects; flatten the value)"


class TooDeep(ValueError):
    """A JSON value nested deeper than MAX_DEPTH."""


# What ``loads_cut`` puts where a value nested too deep was.
CUT_TOO_DEEP = "\x00obs: nested too deep"


def _deep(text: str | bytes) -> bool:
    if isinstance(text, bytes):
        if text.count(b"[") + text.count(b"{") <= MAX_DEPTH:
            return False
        return json_depth(text.decode("utf-8", "replace")) > MAX_DEPTH
    if text.count("[") + text.count("{") <= MAX_DEPTH:
        return False
    return json_depth(text) > MAX_DEPTH


def loads(text: str | bytes) -> Any:
    """``json.loads``, refusing a value nested deeper than MAX_DEPTH (TooDeep, a ValueError)."""
    if _deep(text):
        raise TooDeep(too_deep())
    try:
        return json.loads(text)
    except RecursionError as exc:
        raise TooDeep(too_deep()) from exc


def loads_cut(text: str) -> Any:
    """``json.loads`` of a document (a run export): every array or object that starts
    deeper than MAX_DEPTH is replaced by the text CUT_TOO_DEEP, so the record holding
    it can be rejected and the rest read (see ``holds_cut``)."""
    if not _deep(text):
        return loads(text)
    pieces, depth, start, kept = [], 0, 0, 0
    marker = json.dumps(CUT_TOO_DEEP)
    for match in _TOKEN.finditer(text):
        token = match.group()
        if token[0] == '"':
            continue
        if token in "[{":
            depth += 1
            if depth == MAX_DEPTH + 1:
                start = match.start()
        else:
            if depth == MAX_DEPTH + 1:
                pieces += [text[kept:start], marker]
                kept = match.end()
            depth -= 1
    pieces.append(text[kept:])
    try:
        return json.loads("".join(pieces))
    except RecursionError as exc:  # brackets that never close
        raise TooDeep(too_deep()) from exc


def holds_cut(value: Any) -> bool:
    """Whether a value read by ``loads_cut`` lost a part nested too deep."""
    if isinstance(value, dict):
        return any(holds_cut(v) for v in value.values())
    if isinstance(value, list):
        return any(holds_cut(v) for v in value)
    return value == CUT_TOO_DEEP


def _parse_text(text: str, may_hold_surrogates: bool) -> Any:
    if text.startswith(BOM):
        text = text[1:]
    check_depth(text)
    try:
        value = _DECODER.decode(text)
    except RowError:
        raise
    except RecursionError as exc:
        raise RowError(too_deep()) from exc
    except ValueError as exc:
        raise RowError(f"malformed JSON: {str(exc).splitlines()[0]}") from exc
    if may_hold_surrogates:
        try:
            json.dumps(value, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError as exc:
            raise RowError(
                "text holds a lone surrogate escape (\\ud800-\\udfff), which is not Unicode"
            ) from exc
    return value


def json_records(content: Content, start: int, end: int, first_line: int) -> Iterator[Record]:
    """Every non-blank line of content[start:end] as a Record (parsed, or with its error).

    The common case, valid UTF-8 throughout, decodes once; a chunk with a bad
    byte is read line by line so that only the lines holding one are rejected.
    """
    chunk = bytes(memoryview(content)[start:end])
    try:
        lines: list[str] | list[bytes] = chunk.decode("utf-8").split("\n")
    except UnicodeDecodeError:
        lines = chunk.split(b"\n")
    surrogates = SURROGATE_ESCAPE.search(chunk) is not None
    number = first_line - 1
    for line in lines:
        number += 1
        stripped = line.strip()
        if not stripped or stripped in (BOM, BOM.encode()):
            continue
        try:
            if isinstance(stripped, bytes):
                value = parse_json_line(stripped)
            else:
                value = _parse_text(stripped, surrogates)
        except RowError as exc:
            raw = line.encode("utf-8", "surrogatepass") if isinstance(line, str) else line
            yield Record(number, raw_text(raw), error=exc.reason, size=len(stripped))
            continue
        yield Record(number, "", value, size=len(stripped), text=stripped)


def parquet_records(content: Content, path: Path, batch_rows: int) -> Iterator[list[Record]]:
    """Rows of a parquet file, in batches, numbered from 1."""
    try:
        handle = pq.ParquetFile(io.BytesIO(content))
    except (pa.ArrowException, OSError) as exc:
        message = str(exc).splitlines()[0]
        raise IngestError(f"{path}: not a readable parquet file ({message})") from exc
    number = 0
    numeric = frozenset(
        f.name
        for f in handle.schema_arrow
        if pa.types.is_integer(f.type) or pa.types.is_floating(f.type)
    )
    try:
        for batch in handle.iter_batches(batch_size=batch_rows):
            records = []
            for row in batch.to_pylist():
                number += 1
                records.append(Record(number, "", row, numeric=numeric))
            yield records
    except (pa.ArrowException, OSError) as exc:
        message = str(exc).splitlines()[0]
        raise IngestError(
            f"{path}: parquet data damaged after row {number} ({message}); "
            "rewrite the file and ingest it again"
        ) from exc


def raw_of(value: Any) -> str:
    """A JSON rendering of a parsed row, for ``_rejects.raw``."""
    try:
        text = json.dumps(value, ensure_ascii=False, default=str, allow_nan=True)
    except (TypeError, ValueError):
        text = repr(value)
    text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text if len(text) <= RAW_LIMIT else text[:RAW_LIMIT] + " ...(cut)"


def _not_json(value: object) -> object:
    """JSON forms of the typed values a parquet table can hold."""
    if isinstance(value, datetime.datetime | datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, datetime.timedelta):
        return value.total_seconds()
    if isinstance(value, Decimal):
        return float(value) if value.is_finite() else str(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    return str(value)


# The C encoder json.dumps builds on every call, built once (compact, no NaN, UTF-8 kept).
_ENCODE = c_make_encoder(None, _not_json, c_encode_basestring, None, ":", ",", False, False, False)


def finite_json(value: Any) -> str:
    """``value`` as JSON text, objects without their null members.

    NaN and Infinity (not JSON) become the strings "NaN", "Infinity". A member
    whose value is null says no more than an absent one, and typed readers
    cannot tell the two apart, so every path drops it (list items stay).
    """
    try:
        text = "".join(_ENCODE(value, 0))
    except ValueError:
        value = _finite(value)
        text = "".join(_ENCODE(value, 0))
    if ":null" in text:
        text = "".join(_ENCODE(_without_nulls(value), 0))
    return text


def _without_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value
