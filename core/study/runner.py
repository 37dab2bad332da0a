"""Runs a study's (run, query) jobs on one thread pool and commits rows as they arrive.

LLM calls run on the pool; retrieval runs on the calling thread, batched; rows are committed as they
arrive (whatever finished since the last commit goes in one transaction), so a run killed at any
point resumes with `resume=True` and ends with every (run, query) row exactly once. The pool takes a
query's finishing step before the next query's stub call, so PtR's rows are stored as they are done
rather than after every stub call of the invocation: a stopped study loses only the calls in flight.
A study stopped by a store that cannot be written (a full or read-only disk) or by the user marks its
unfinished runs interrupted, not failed: nothing is wrong with them, and `--resume` continues them.
"""
from __future__ import annotations

import itertools
import logging
import queue
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from core.data.toolbench import Query
from core.progress import progress_bar
from core.study.rows import error_row
from core.store.dburl import StoreNotWritable
from core.store.store import RunRecord, RunSpec, Store

log = logging.getLogger(__name__)

INSERT_CHUNK = 1000
INTERRUPTIONS = (StoreNotWritable, KeyboardInterrupt)  # a study stopped by these is continued, not redone


@dataclass(frozen=True)
class Job:
    """How one run computes a query's row: `prepare` (thread pool: the stub LLM call), then `retrieve`
    (this thread, batched over whatever is prepared), then `finish` (thread pool: the planner call).
    A job without `prepare` (RtP, retrieved up front) goes straight to `finish`."""

    run_id: int
    todo: tuple[Query, ...]
    k: int
    finish: Callable[[int, Query, Any], dict[str, Any]]
    prepare: Callable[[Query], Any] | None = None
    retrieve: Callable[[list[tuple[Query, Any]]], list[Any]] | None = None


FINISH, PREPARE, STOP = 0, 1, 2  # task priorities: lower runs first


class _UrgentFirstPool:
    """Worker threads that take the most urgent task first (lowest priority, then oldest): with plain FIFO every
    stub call of an invocation ran before the first planner call, and no PtR row was stored until all had."""

    def __init__(self, workers: int) -> None:
        self._tasks: queue.PriorityQueue[tuple[int, int, Callable[[], None] | None]] = queue.PriorityQueue()
        self._order = itertools.count()
        self._cancelled = False
        self._threads = [threading.Thread(target=self._work, daemon=True, name=f"bench-{i}") for i in range(workers)]
        for thread in self._threads:
            thread.start()

    def submit(self, priority: int, task: Callable[[], None]) -> None:
        self._tasks.put((priority, next(self._order), task))

    def _work(self) -> None:
        while True:
            _, _, task = self._tasks.get()
            if task is None:
                return
            if not self._cancelled:
                task()

    def cancel(self) -> None:
        """Drop the queued tasks; the ones already running finish."""
        self._cancelled = True

    def shutdown(self) -> None:
        """Wait for the workers: after every queued task, or after the running ones when cancelled."""
        for _ in self._threads:
            self._tasks.put((STOP, next(self._order), None))
        for thread in self._threads:
            thread.join()


def open_run(store: Store, spec: RunSpec, queries: Sequence[Query], resume: bool, commit: str,
             config: dict[str, Any] | None = None) -> tuple[int, list[Query]] | None:
    """(run id, queries still to do) for a spec, the run claimed by this store; None when resuming and the run
    already finished.

    Resuming redoes a run's failed rows (an exception, or an LLM failure: core.study.rows.llm_failure),
    a complete run's too, so an outage during a study is repaired by `--resume` once the server is back.
    A run another live process is writing is refused with RunBusy (core.store.claims) before anything in it changes.
    """
    if resume:
        found = store.find_run(spec)
        if found is not None:
            if _finished(store, found):
                return None
            found = store.claim(found.id)
            if _finished(store, found):  # the process that held it finished it meanwhile
                store.release(found.id)
                return None
            done = store.reopen(found.id, len(queries))
            return found.id, [q for q in queries if q.uid not in done]
    return store.start_run(spec, len(queries), commit, config), list(queries)


def _finished(store: Store, run: RunRecord) -> bool:
    """Nothing for a resume to do: skipped, or complete without a failed row."""
    return run.status == "skipped" or (run.status == "complete" and not failed_rows(store, run.id))


def failed_rows(store: Store, run_id: int) -> int:
    """How many of a run's rows failed (their `error` says why); such rows count in no mean."""
    return sum(1 for row in store.results(run_id, ("error",)) if row["error"])


def finish_note(failed: int, total: int) -> str | None:
    """A complete run's note when some rows failed: what the Runs table and `report` show."""
    return f"{failed:,} of {total:,} rows failed; `--resume` redoes them" if failed else None


def execute(store: Store, jobs: Sequence[Job], concurrency: int, progress: bool = False, desc: str = "") -> None:
    """Run every (run, query) of `jobs` on one thread pool and commit rows as they arrive.

    LLM calls (prepare, finish) run on the pool; retrieval runs here, batched over every query whose
    stubs arrived since the last pass, so FAISS and the encoder see batches, not single queries.
    Whatever rows arrived since the last commit go in one transaction. One pool for all runs keeps
    every worker busy to the end. A step that raises becomes an error row, which a resume redoes.
    A run is marked complete with its last row; on an exception here, unfinished runs are marked failed, or
    interrupted when the store could not be written or the user stopped the study (_stop_runs).
    """
    remaining = {job.run_id: len(job.todo) for job in jobs}
    sizes = {job.run_id: store.count_results(job.run_id) + len(job.todo) for job in jobs}
    for run_id, left in remaining.items():
        if left == 0:
            store.finish_run(run_id, note=finish_note(failed_rows(store, run_id), sizes[run_id]))
    total = sum(remaining.values())
    if total == 0:
        return
    events: queue.Queue[tuple[str, Job, Query, Any]] = queue.Queue()

    def guarded(kind: str, job: Job, query: Query, step: Callable[[], Any]) -> None:
        event: tuple[str, Job, Query, Any] | None = None
        try:
            event = (kind, job, query, step())
        except Exception as exc:  # one bad query must not stop a benchmark; it is stored and redone on resume
            log.warning("%s failed in run %d: %s", query.uid, job.run_id, exc)
            event = ("row", job, query, error_row(job.run_id, query, job.k, exc))
        finally:
            events.put(event or ("row", job, query, error_row(job.run_id, query, job.k, RuntimeError("interrupted"))))

    def submit_finish(job: Job, query: Query, payload: Any) -> None:
        pool.submit(FINISH, lambda: guarded("row", job, query, lambda: job.finish(job.run_id, query, payload)))

    bar = progress_bar(total, desc, progress)
    pool = _UrgentFirstPool(max(1, concurrency))
    try:
        for job in jobs:
            for query in job.todo:
                if job.prepare is None:
                    submit_finish(job, query, None)
                else:
                    pool.submit(PREPARE, lambda j=job, q=query: guarded("prepared", j, q, lambda: j.prepare(q)))
        received = 0
        while received < total:
            batch = [events.get()]
            while True:
                try:
                    batch.append(events.get_nowait())
                except queue.Empty:
                    break
            rows = [value for kind, _, _, value in batch if kind == "row"]
            ready: dict[int, tuple[Job, list[tuple[Query, Any]]]] = {}
            for kind, job, query, value in batch:
                if kind == "prepared":
                    ready.setdefault(job.run_id, (job, []))[1].append((query, value))
            for job, items in ready.values():
                try:
                    payloads = job.retrieve(items)  # a job with `prepare` always has `retrieve`
                except Exception as exc:  # the batch's queries become error rows
                    rows += [error_row(job.run_id, q, job.k, exc) for q, _ in items]
                    continue
                for (query, _), payload in zip(items, payloads):
                    submit_finish(job, query, payload)
            store.add_results(rows)
            received += len(rows)
            bar.update(len(rows))
            for row in rows:
                remaining[row["run_id"]] -= 1
                if remaining[row["run_id"]] == 0:
                    run_id = row["run_id"]
                    store.finish_run(run_id, note=finish_note(failed_rows(store, run_id), sizes[run_id]))
    except BaseException as exc:
        pool.cancel()
        _stop_runs(store, [run_id for run_id, left in remaining.items() if left > 0], exc)
    finally:
        bar.close()
        pool.shutdown()


def insert_run(store: Store, run_id: int, rows: list[dict[str, Any]]) -> None:
    """A run computed in one go (no LLM calls): its rows in chunks, then marked complete."""
    try:
        for start in range(0, len(rows), INSERT_CHUNK):
            store.add_results(rows[start:start + INSERT_CHUNK])
        store.finish_run(run_id, note=finish_note(sum(1 for row in rows if row.get("error")), len(rows)))
    except INTERRUPTIONS as exc:
        _stop_runs(store, [run_id], exc)


def _stop_runs(store: Store, run_ids: Sequence[int], exc: BaseException) -> None:
    """Mark the unfinished runs a study stopped on, then raise: interrupted after one of INTERRUPTIONS, failed
    otherwise. A store that refuses the mark too leaves a run running, which `--resume` continues as well; a store
    that cannot be written is raised in one line that says how to go on."""
    interrupted = isinstance(exc, INTERRUPTIONS)
    status = "interrupted" if interrupted else "failed"
    note = (f"interrupted: {str(exc) or 'stopped by the user'}; `--resume` continues it" if interrupted
            else _failure_note(exc))
    for run_id in run_ids:
        try:
            store.finish_run(run_id, status, note[:1000])
        except StoreNotWritable:
            store.release(run_id)
    if isinstance(exc, StoreNotWritable):
        runs = f"its {len(run_ids)} interrupted run{'s' if len(run_ids) != 1 else ''}" if run_ids else "it"
        raise StoreNotWritable(f"{exc}; the study stopped, and `--resume` continues {runs}") from None
    raise exc


def _failure_note(exc: BaseException) -> str:
    """A failed run's note: the exception in one line; for a database error the driver's words, without the
    statement, its parameters and the library's help link."""
    text = re.sub(r"\(Background on this error at: [^)]*\)", "",
                  f"{type(exc).__name__}: {getattr(exc, 'orig', None) or exc}")
    return " ".join(text.split())
