"""Named sessions: a conversation's managed memory (turns.py) kept on disk across processes.

Where: `<home>/sessions/<name>.json`, home = $SELFRAG_HOME, else $XDG_STATE_HOME/selfrag, else
~/.local/state/selfrag. A name is 1 to 64 letters, digits, `.`, `_` or `-`, starting with a letter or digit
(so never `/`, `..` or a NUL byte: it cannot leave the folder).

A file is one JSON object: {"format": "selfrag-session", "version": 1, "sha256": ..., "memory": {...}}, the
sha256 taken over the memory's canonical JSON. Written like the index (store.py): a temporary file in the same
folder, fsynced, `os.replace`d over the old one, the folder fsynced, so a crash leaves the old session or the
new one, never half of one; mode 0600, as a conversation is private. Each turn is added under an exclusive
`flock` on `<name>.lock`, re-reading the file first: two processes answering in one session both keep their
turns; `ask`, `chat` and `ChatSession.ask` hold that lock for the whole turn (`ChatSession.holding`), from
reading the memory to adding the answer, so another process waits or is refused before its model work and no
answered turn is lost to a busy lock. Reading refuses, in one line and without touching the file, a session
larger than `MAX_SESSION_BYTES`, one that is not valid JSON (truncated), fails its checksum, or was written by
a newer selfrag, and a FIFO, socket or device named like a session (opened without blocking,
`files.read_regular`).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import errno
import fcntl
import hashlib
import json
import os
import re
import secrets
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import InputError, SessionError
from ..files import read_regular
from ..text import without_surrogates
from .turns import DEFAULT_BUDGET, Budget, Memory, MemoryTurn, noted, recall, remember, render

if TYPE_CHECKING:
    from ..config import Config
    from ..result import Result

FORMAT = "selfrag-session"
VERSION = 1
MAX_SESSION_BYTES = 4 * 2**20  # a memory within its budget (memory.MAX_MEMORY_CHARS) stays far below
LOCK_WAIT = 10.0  # seconds to wait for another process writing the same session
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


def state_home(environ: Mapping[str, str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    if env.get("SELFRAG_HOME"):
        return Path(env["SELFRAG_HOME"])
    return Path(env.get("XDG_STATE_HOME") or os.path.expanduser("~/.local/state")) / "selfrag"


def check_name(name: object) -> str:
    """The session name, or InputError saying what a name may hold."""
    if not isinstance(name, str) or not _NAME.fullmatch(name) or ".." in name:
        shown = repr(name)[:80]
        raise InputError(
            f"session name {shown} is not allowed: use 1 to 64 letters, digits, '.', '_' or '-', starting with "
            "a letter or digit (no '/', '..' or NUL)"
        )
    return name


@dataclass(frozen=True, slots=True)
class SessionInfo:
    name: str
    turns: int
    updated: str  # time of the last turn ("" when empty)
    size: int  # bytes on disk
    problem: str | None = None  # why it cannot be read, when it cannot


class SessionStore:
    """The sessions under one folder."""

    def __init__(self, folder: str | Path, *, lock_wait: float = LOCK_WAIT) -> None:
        self.folder = Path(folder)
        self.lock_wait = lock_wait  # seconds to wait for another process writing the same session
        self._held: dict[str, int] = {}  # sessions this store holds locked, and how deep (the lock is reentrant)

    @classmethod
    def default(cls, environ: Mapping[str, str] | None = None) -> SessionStore:
        return cls(state_home(environ) / "sessions")

    def path(self, name: str) -> Path:
        return self.folder / f"{check_name(name)}.json"

    def load(self, name: str) -> Memory:
        """The session's memory (empty when it does not exist yet); SessionError when it cannot be used."""
        path = self.path(name)
        try:
            data = read_regular(path, MAX_SESSION_BYTES)  # a FIFO named like a session is refused, never waited on
        except FileNotFoundError:
            return Memory()
        except OSError as error:
            raise SessionError(
                f"cannot read session {name!r} at {path}: {error.strerror}; it was left as it is: delete it with "
                f"`selfrag session delete {name}` or use another session name"
            ) from error
        if len(data) > MAX_SESSION_BYTES:
            raise self._refused(name, f"is larger than {MAX_SESSION_BYTES // 2**20} MiB")
        return self._parse(name, data)

    def _parse(self, name: str, data: bytes) -> Memory:
        try:
            body = json.loads(data)
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
            raise self._refused(name, "is damaged (not valid JSON; it may be truncated)") from None
        if not isinstance(body, dict) or body.get("format") != FORMAT:
            raise self._refused(name, "is not a selfrag session file")
        version = body.get("version")
        if version != VERSION:
            newer = isinstance(version, int) and version > VERSION
            raise SessionError(
                f"session {name!r} was written by {'a newer' if newer else 'another'} selfrag (session format "
                f"{version!r}; this one reads {VERSION}); it was left as it is: upgrade selfrag or use another name"
            )
        if body.get("sha256") != _digest(body.get("memory")):
            raise self._refused(name, "is damaged (checksum mismatch)")
        try:
            return _memory(body["memory"])
        except (KeyError, TypeError, ValueError) as error:
            raise self._refused(name, f"is damaged ({error})") from None

    def _refused(self, name: str, why: str) -> SessionError:
        return SessionError(
            f"session {name!r} at {self.path(name)} {why}; it was left as it is: delete it with "
            f"`selfrag session delete {name}` or use another session name"
        )

    def add(
        self, name: str, turn: MemoryTurn, recalled: Sequence[MemoryTurn] = (), budget: Budget = DEFAULT_BUDGET
    ) -> Memory:
        """Add one turn under the session's lock, re-reading it first (another process may have added turns)."""
        turn = turn if turn.time else replace(turn, time=now())
        with self.locked(name):
            memory = remember(noted(self.load(name), recalled), turn, budget)
            self._write(name, memory)
        return memory

    def clear(self, name: str) -> None:
        with self.locked(name):
            self.load(name)  # a damaged session is refused, not silently replaced
            self._write(name, Memory())

    def delete(self, name: str) -> bool:
        """Remove a session (even a damaged one); False when there was none."""
        path = self.path(name)
        with self.locked(name):
            try:
                path.unlink()
            except FileNotFoundError:
                return False
        return True  # the lock file stays: removing it could let two writers lock two different files

    def list(self) -> list[SessionInfo]:
        if not self.folder.is_dir():
            return []
        infos = []
        for path in sorted(self.folder.glob("*.json")):
            name = path.stem
            if not _NAME.fullmatch(name):
                continue
            try:
                memory = self.load(name)
                updated = memory.turns[-1].time if memory.turns else ""
                infos.append(SessionInfo(name, len(memory.turns), updated, path.stat().st_size))
            except SessionError as error:
                infos.append(SessionInfo(name, 0, "", path.stat().st_size, str(error)))
        return infos

    def _write(self, name: str, memory: Memory) -> None:
        payload = _payload(memory)
        data = json.dumps(
            {"format": FORMAT, "version": VERSION, "sha256": _digest(payload), "memory": payload},
            ensure_ascii=False,
            sort_keys=True,
        ).encode("utf-8")
        if len(data) > MAX_SESSION_BYTES:  # cannot happen within the memory budget; refuse rather than lose it
            raise SessionError(f"session {name!r} would exceed {MAX_SESSION_BYTES // 2**20} MiB; it was not saved")
        path = self.path(name)
        temp = self.folder / f".{name}.tmp-{secrets.token_hex(6)}"
        try:
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(temp, path)
            _fsync_dir(self.folder)
        except OSError as error:
            raise SessionError(
                f"could not save session {name!r} to {path} ({error.strerror or error}); the previous version is "
                "untouched"
            ) from error
        finally:
            temp.unlink(missing_ok=True)

    @contextlib.contextmanager
    def locked(self, name: str) -> Iterator[None]:
        """Hold the session's lock (an exclusive `flock` on `<name>.lock`) for a whole turn, from reading the
        memory to adding the answer, so the turn cannot be lost to a busy lock once the answer is written.
        Reentrant within this store; SessionError after `lock_wait` seconds of another process holding it."""
        if name in self._held:
            self._held[name] += 1
            try:
                yield
            finally:
                self._held[name] -= 1
            return
        with self._flock(name):
            self._held[name] = 1
            try:
                yield
            finally:
                del self._held[name]

    @contextlib.contextmanager
    def _flock(self, name: str) -> Iterator[None]:
        check_name(name)
        try:
            self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd = os.open(self.folder / f"{name}.lock", os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)
        except OSError as error:
            raise SessionError(f"cannot open the session folder {self.folder}: {error.strerror}") from error
        try:
            deadline = time.monotonic() + self.lock_wait
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except OSError as error:
                    if error.errno not in (errno.EWOULDBLOCK, errno.EAGAIN) or time.monotonic() > deadline:
                        raise SessionError(
                            f"another process has been writing session {name!r} for {self.lock_wait:g}s; try again"
                        ) from error
                    time.sleep(0.05)
            yield
        finally:
            os.close(fd)


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _payload(memory: Memory) -> dict[str, Any]:
    return {
        "topics": memory.topics,
        "evicted": memory.evicted,
        "collapsed": memory.collapsed,
        "turns": [asdict(t) for t in memory.turns],
    }


def _digest(payload: object) -> str:
    canonical = json.dumps(payload, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def _memory(payload: Mapping[str, Any]) -> Memory:
    turns = []
    for row in payload["turns"]:
        turn = MemoryTurn(**{**row, "cited": tuple(row["cited"])})
        texts = (turn.question, turn.answer, turn.time, *turn.cited)
        if not all(isinstance(s, str) for s in texts) or not all(
            type(n) is int for n in (turn.number, turn.topic, turn.recalls)
        ):
            raise TypeError("a turn has a field of the wrong type")
        turns.append(turn)
    counts = (payload["topics"], payload["evicted"], payload["collapsed"])
    if not all(type(n) is int for n in counts):
        raise TypeError("a counter is not an integer")
    return Memory(tuple(turns), *counts)


def now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Answerer(Protocol):
    """What a session needs of an engine (`SelfRAG` is one): an answer given the conversation so far."""

    async def aanswer(self, question: str, *, conversation: str = "", config: Config | None = None) -> Result: ...

    def answer(self, question: str, *, conversation: str = "", config: Config | None = None) -> Result: ...


class ChatSession:
    """A conversation with an engine: recalls from memory before each answer, remembers each turn after.

    With a store and a name the memory lives on disk (a named session, shared across processes); without, it
    lives in this object (the chat's default)."""

    def __init__(
        self,
        rag: Answerer,
        store: SessionStore | None = None,
        name: str | None = None,
        budget: Budget = DEFAULT_BUDGET,
    ) -> None:
        self.rag, self.store, self.budget = rag, store, budget
        self.name = check_name(name) if store is not None else None
        self._memory = Memory()
        if store is not None:
            store.load(self.name)  # type: ignore[arg-type]  # refuse a damaged session before any answer

    @property
    def memory(self) -> Memory:
        return self.store.load(self.name) if self.store is not None else self._memory  # type: ignore[arg-type]

    def prepare(self, question: str) -> tuple[str, tuple[MemoryTurn, ...]]:
        """The conversation text for the question's prompts, and the turns it holds."""
        recalled = recall(self.memory, question, self.budget)
        return render(recalled, self.budget.recall_chars), recalled

    @contextlib.contextmanager
    def holding(self) -> Iterator[None]:
        """A named session's lock held for one turn (nothing for a session in memory): taken before the question
        is read against the memory and the answer written, released after the turn is added. Another process
        answering in the same session waits (up to the store's `lock_wait`), then is refused before its model
        work, so no answered turn is lost to a busy lock."""
        if self.store is None:
            yield
            return
        with self.store.locked(self.name):  # type: ignore[arg-type]
            yield

    def record(self, question: str, result: Result, recalled: Sequence[MemoryTurn]) -> None:
        """Add the turn; SessionError saying the turn was not saved when it cannot be written."""
        turn = MemoryTurn(question, result.answer, tuple(f"{s.doc_id}#{s.chunk_id}" for s in result.sources), now())
        if self.store is not None:
            try:
                self.store.add(self.name, turn, recalled, self.budget)  # type: ignore[arg-type]
            except SessionError as error:
                raise SessionError(f"this turn was not saved to session {self.name!r}: {error}") from error
        else:
            self._memory = remember(noted(self._memory, recalled), turn, self.budget)

    def clear(self) -> None:
        if self.store is not None:
            self.store.clear(self.name)  # type: ignore[arg-type]
        self._memory = Memory()

    async def aask(self, question: str, *, config: Config | None = None) -> Result:
        question = without_surrogates(question)  # as the answer reads it, so the session file can hold it
        with self.holding():
            conversation, recalled = self.prepare(question)
            result = await self.rag.aanswer(question, conversation=conversation, config=config)
            self.record(question, result, recalled)
        return result

    def ask(self, question: str, *, config: Config | None = None) -> Result:
        """The sync door (as `SelfRAG.answer`)."""
        question = without_surrogates(question)
        with self.holding():
            conversation, recalled = self.prepare(question)
            result = self.rag.answer(question, conversation=conversation, config=config)
            self.record(question, result, recalled)
        return result
